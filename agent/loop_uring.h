/*
 * loop_uring.h: the agent's one event loop, on io_uring, with an API shaped
 * like Redis's ae: fd events with a mask and one argument, timers whose
 * callback returns the next interval, and a before-sleep hook (where the agent
 * commits its checkpoint and then flushes socket output: persist before
 * announcing).
 *
 * Single-threaded.  Callbacks may add and remove fds and timers, including
 * their own, at any time; removal takes effect at once (a stale completion is
 * never delivered).
 */
#ifndef ATRIUM_AGENT_LOOP_H
#define ATRIUM_AGENT_LOOP_H

#define LOOP_READ	1
#define LOOP_WRITE	2
#define LOOP_ERROR	4	/* POLLERR / POLLHUP, reported with READ */

#define LOOP_NOMORE	(-1)	/* a timer callback's "do not run again" */

struct loop;

/* fd callback: mask says what is ready (LOOP_READ | LOOP_WRITE | LOOP_ERROR). */
typedef void loop_fd_fn(struct loop *l, int fd, int mask, void *arg);
/* Timer callback: the next interval in ms, or LOOP_NOMORE. */
typedef long loop_timer_fn(struct loop *l, long long id, void *arg);
typedef void loop_hook_fn(struct loop *l, void *arg);

/* A loop with room for about `entries` pending polls.  NULL on failure
 * (logged). */
struct loop *loop_new(unsigned entries);
void loop_free(struct loop *l);

/* Watch fd for mask (replacing an earlier registration of the same fd).
 * 0, -EINVAL (bad fd or mask), -ENOMEM. */
int loop_add_fd(struct loop *l, int fd, int mask, loop_fd_fn *fn, void *arg);

/* Stop watching fd.  Safe when fd is not registered. */
void loop_del_fd(struct loop *l, int fd);

/* Call fn after ms milliseconds.  The timer's id (> 0), or -ENOMEM. */
long long loop_add_timer(struct loop *l, long ms, loop_timer_fn *fn,
    void *arg);

/* Cancel a timer.  Safe with an id that has fired or was deleted. */
void loop_del_timer(struct loop *l, long long id);

/* Call fn before each wait. */
void loop_set_before_sleep(struct loop *l, loop_hook_fn *fn, void *arg);

/* Run until loop_stop.  0, or -errno when io_uring failed. */
int loop_run(struct loop *l);

/* Microseconds the loop has spent working (not waiting in the ring)
 * since loop_new: the agent's own time, for the per-step timing line. */
long long loop_busy_us(struct loop *l);

/* CPU microseconds of the calling thread (the loop's) so far: the part
 * of loop_busy_us that was not spent waiting for a CPU or in a blocking
 * system call. */
long long loop_cpu_us(void);

/* Make loop_run return after the current iteration. */
void loop_stop(struct loop *l);

/*
 * One-shot I/O operations on the loop's ring (the file tools' opens, reads,
 * writes...).  Take an SQE with loop_io_sqe, fill it with an io_uring_prep_*
 * function, then hand it over with loop_io_submit: the
 * completion calls fn with the CQE's result.  Operations are submitted with
 * the next wait.
 */
struct io_uring_sqe;
typedef void loop_io_fn(struct loop *l, int res, void *arg);

/* An SQE to fill.  NULL when the ring is stuck (logged). */
struct io_uring_sqe *loop_io_sqe(struct loop *l);

/* Tag a filled SQE so that its completion calls fn(res, arg).  The
 * operation's id (> 0), or -ENOMEM (the SQE is turned into a no-op). */
long long loop_io_submit(struct loop *l, struct io_uring_sqe *sqe,
    loop_io_fn *fn, void *arg);

/* Forget operation id: its completion, when it comes, calls nothing.  Safe
 * with an id that has completed. */
void loop_io_forget(struct loop *l, long long id);

#endif
