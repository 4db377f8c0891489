/*
 * kexpool.h: the handshake threads of atriumd's network process.
 *
 * A new connection's key exchange (the ECDH and the host key's signature:
 * the expensive part of a handshake) runs on one of a few threads, each
 * with its own ssh_event and its own connections, never on the loop that
 * serves established sessions.  A thread gives a connection back once the
 * client asks for the ssh-userauth service, which it can do only after
 * the key exchange is done; authentication, which reads authorized_keys
 * and the rest of the main loop's state, stays on the main loop.
 *
 * Hand-overs go through bounded queues (kexq.h): to a thread, its inbox
 * and an eventfd; back, one outbox and one eventfd (kexpool_fd) that the
 * main loop watches.  A thread never touches anything of the main loop but
 * the job it was given; the main loop never touches a job's session while
 * a thread has it.  A thread drops a connection at the job's deadline or
 * when the main loop cancels it, and hands it back failed.
 */
#ifndef ATRIUMD_KEXPOOL_H
#define ATRIUMD_KEXPOOL_H

#include <pthread.h>
#include <stdatomic.h>

#include "kexq.h"

#define KEXPOOL_MAX_THREADS	4	/* never more, whatever the CPUs */
#define KEXPOOL_PER_THREAD	1024	/* handshakes one thread holds at most */
#define KEXPOOL_TICK_MS		100	/* a thread looks at deadlines this often */
/* The threads' nice value: anyone may start a handshake, so under a flood
 * of them the work of sessions already in (the main loop, the rooms'
 * processes) comes first.  Measured with 20 hostile clients: a login's
 * median 239 -> 199 ms, its unloaded time unchanged. */
#define KEXPOOL_NICE		10

struct kexpool;

struct kex_worker {
	struct kexpool *pool;
	pthread_t thread;
	int started;		/* thread is running (to join) */
	int wake_fd;		/* eventfd: something in inbox, or stop */
	struct kexq inbox;	/* jobs to start */
	ssh_event ev;		/* the thread's own: its connections */
	size_t load;		/* jobs it holds (main loop's count) */
};

struct kexpool {
	struct kex_worker *w;
	int n;			/* threads */
	struct kexq done;	/* jobs handed back */
	int done_fd;		/* eventfd: something in done; -1 */
	atomic_int stop;	/* threads: hand everything back and end */
};

/* Threads for the CPUs this process may use (1 to KEXPOOL_MAX_THREADS),
 * or n when n > 0.  0, or -errno with the reason logged (nothing left
 * running). */
int kexpool_start(struct kexpool *p, int n);

/* The eventfd the main loop watches for jobs handed back. */
int kexpool_fd(const struct kexpool *p);

/* Hand j (ssh already accepted and non-blocking; deadline_ms and owner
 * set) to the least loaded thread.  0, or -EAGAIN when every thread holds
 * KEXPOOL_PER_THREAD handshakes (j is untouched and still the caller's). */
int kexpool_submit(struct kexpool *p, struct kex_job *j);

/* Ask the thread that has j to drop it soon (it comes back failed). */
void kexpool_cancel(struct kexpool *p, struct kex_job *j);

/* Clear the outbox's eventfd; call before the kexpool_collect calls it
 * wakes (a job handed back after this wakes the loop again). */
void kexpool_ack(struct kexpool *p);

/* A job handed back (result set, its session out of every thread's
 * event), or NULL when none is waiting. */
struct kex_job *kexpool_collect(struct kexpool *p);

/* End the threads; every job they had is then in the done queue for
 * kexpool_collect.  Safe on a pool that never started. */
void kexpool_stop(struct kexpool *p);

/* Free the queues and fds (after kexpool_stop and the last collect). */
void kexpool_free(struct kexpool *p);

#endif
