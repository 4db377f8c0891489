/*
 * loop_uring.c: the agent's event loop (loop_uring.h) on io_uring.
 *
 * Each watched fd has one oneshot IORING_OP_POLL_ADD in flight; it is armed
 * again after its callback runs, so readiness is level-triggered as with
 * poll(2).  A poll's user_data is (generation << 32 | fd): deleting or
 * re-registering an fd bumps its generation, so a completion that was
 * already queued for the old registration is recognised and dropped.
 * POLL_REMOVE requests carry LOOP_UD_REMOVE and their completions are
 * ignored.
 *
 * One-shot I/O operations (loop_io_*) carry LOOP_UD_IO with a slot of the
 * io table and the slot's generation; a slot is free again as soon as its
 * completion arrives (before its callback runs, which may submit the next
 * operation).  A forgotten operation keeps its slot, with no callback, until
 * its completion arrives, so the slot is never reused while the kernel may
 * still answer for it.
 *
 * Timers are few (a handful per room): a small array scanned linearly; the
 * nearest deadline is the wait's timeout.
 *
 * One iteration: before-sleep hook, submit and wait (up to the nearest
 * timer), copy the completions out of the ring, dispatch them, run due timers.
 */
#include "loop_uring.h"

#include <errno.h>
#include <liburing.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "util.h"

#define LOOP_UD_REMOVE	(1ULL << 63)
#define LOOP_UD_IO	(1ULL << 62)
#define LOOP_MAX_IOS	4096	/* I/O operations in flight at most */
#define LOOP_MAX_FDS	65536	/* highest fd number the table grows to */
#define LOOP_BATCH	64	/* completions handled per peek */

struct loop_fd {
	int mask;		/* LOOP_READ | LOOP_WRITE; 0: not watched */
	int armed;		/* a poll is in flight for this generation */
	uint32_t gen;		/* bumped on every delete / re-registration */
	loop_fd_fn *fn;
	void *arg;
};

struct loop_timer {
	long long id;
	long long when;		/* monotonic ms */
	loop_timer_fn *fn;
	void *arg;
};

struct loop_io {
	int busy;		/* submitted, completion not yet seen */
	uint32_t gen;		/* bumped each time the slot is freed */
	loop_io_fn *fn;		/* NULL once forgotten */
	void *arg;
};

struct loop {
	struct io_uring ring;
	struct loop_io *ios;	/* one-shot operations, by slot */
	int nios;		/* slots in ios */
	struct loop_fd *fds;	/* indexed by fd */
	int nfds;		/* entries in fds */
	struct loop_timer *timers;
	int ntimers, captimers;
	long long next_timer_id;
	loop_hook_fn *before_sleep;
	void *before_sleep_arg;
	int stop;
	long long born_us;	/* monotonic us at loop_new */
	long long waited_us;	/* spent in the ring's wait since then */
	int skipped_wait;	/* the last turn ran a due timer without
				 * entering the ring's wait */
};

static long long loop_now_us(void);

struct loop *
loop_new(unsigned entries)
{
	struct loop *l = calloc(1, sizeof(*l));
	int r;

	if (!l)
		return NULL;
	r = io_uring_queue_init(entries, &l->ring, 0);
	if (r < 0) {
		log_error("io_uring_queue_init: %s", strerror(-r));
		free(l);
		return NULL;
	}
	l->next_timer_id = 1;
	l->born_us = loop_now_us();
	return l;
}

void
loop_free(struct loop *l)
{
	if (!l)
		return;
	io_uring_queue_exit(&l->ring);
	free(l->ios);
	free(l->fds);
	free(l->timers);
	free(l);
}

/* An SQE, submitting queued ones first when the ring is full.  NULL only if
 * the ring is broken (logged). */
static struct io_uring_sqe *
loop_sqe(struct loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

	if (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
		if (!sqe)
			log_error("io_uring submission queue stuck");
	}
	return sqe;
}

static uint64_t
loop_ud(int fd, uint32_t gen)
{
	return ((uint64_t)gen << 32) | (uint32_t)fd;
}

/* Queue the poll for fd's current registration.  0 or -EIO. */
static int
loop_arm(struct loop *l, int fd)
{
	struct loop_fd *f = &l->fds[fd];
	struct io_uring_sqe *sqe = loop_sqe(l);
	unsigned ev = 0;

	if (!sqe)
		return -EIO;
	if (f->mask & LOOP_READ)
		ev |= POLLIN | POLLRDHUP;
	if (f->mask & LOOP_WRITE)
		ev |= POLLOUT;
	io_uring_prep_poll_add(sqe, fd, ev);
	io_uring_sqe_set_data64(sqe, loop_ud(fd, f->gen));
	f->armed = 1;
	return 0;
}

/* Cancel fd's poll in flight, if any, and retire its generation. */
static void
loop_disarm(struct loop *l, int fd)
{
	struct loop_fd *f = &l->fds[fd];
	struct io_uring_sqe *sqe;

	if (f->armed) {
		sqe = loop_sqe(l);
		if (sqe) {
			io_uring_prep_poll_remove(sqe, loop_ud(fd, f->gen));
			io_uring_sqe_set_data64(sqe, LOOP_UD_REMOVE);
		}
		f->armed = 0;
	}
	f->gen = (f->gen + 1) & 0x3fffffff;	/* bit 62 is LOOP_UD_IO's */
}

/* Grow the fd table to hold fd.  0, -EINVAL or -ENOMEM. */
static int
loop_grow(struct loop *l, int fd)
{
	struct loop_fd *n;
	int want;

	if (fd < 0 || fd >= LOOP_MAX_FDS)
		return -EINVAL;
	if (fd < l->nfds)
		return 0;
	want = l->nfds ? l->nfds : 64;
	while (want <= fd)
		want *= 2;
	n = realloc(l->fds, (size_t)want * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + l->nfds, 0, (size_t)(want - l->nfds) * sizeof(*n));
	l->fds = n;
	l->nfds = want;
	return 0;
}

int
loop_add_fd(struct loop *l, int fd, int mask, loop_fd_fn *fn, void *arg)
{
	struct loop_fd *f;
	int r;

	mask &= LOOP_READ | LOOP_WRITE;
	if (!mask || !fn)
		return -EINVAL;
	r = loop_grow(l, fd);
	if (r < 0)
		return r;
	f = &l->fds[fd];
	f->fn = fn;
	f->arg = arg;
	if (f->mask == mask && f->armed)
		return 0;
	if (f->mask)
		loop_disarm(l, fd);
	f->mask = mask;
	return loop_arm(l, fd);
}

void
loop_del_fd(struct loop *l, int fd)
{
	if (fd < 0 || fd >= l->nfds || !l->fds[fd].mask)
		return;
	loop_disarm(l, fd);
	l->fds[fd].mask = 0;
	l->fds[fd].fn = NULL;
	l->fds[fd].arg = NULL;
}

long long
loop_add_timer(struct loop *l, long ms, loop_timer_fn *fn, void *arg)
{
	struct loop_timer *t;

	if (l->ntimers == l->captimers) {
		int cap = l->captimers ? l->captimers * 2 : 16;

		t = realloc(l->timers, (size_t)cap * sizeof(*t));
		if (!t)
			return -ENOMEM;
		l->timers = t;
		l->captimers = cap;
	}
	t = &l->timers[l->ntimers++];
	t->id = l->next_timer_id++;
	t->when = time_mono_ms() + (ms > 0 ? ms : 0);
	t->fn = fn;
	t->arg = arg;
	return t->id;
}

/* Index of timer id, or -1. */
static int
loop_timer_find(struct loop *l, long long id)
{
	for (int i = 0; i < l->ntimers; i++)
		if (l->timers[i].id == id)
			return i;
	return -1;
}

void
loop_del_timer(struct loop *l, long long id)
{
	int i = loop_timer_find(l, id);

	if (i < 0)
		return;
	l->timers[i] = l->timers[--l->ntimers];
}

void
loop_set_before_sleep(struct loop *l, loop_hook_fn *fn, void *arg)
{
	l->before_sleep = fn;
	l->before_sleep_arg = arg;
}

void
loop_stop(struct loop *l)
{
	l->stop = 1;
}

/* Run every timer that is due; each runs at most once per call. */
static void
loop_run_timers(struct loop *l)
{
	long long now = time_mono_ms(), due[64];
	int n = 0;

	for (int i = 0; i < l->ntimers && n < 64; i++)
		if (l->timers[i].when <= now)
			due[n++] = l->timers[i].id;
	for (int k = 0; k < n; k++) {
		int i = loop_timer_find(l, due[k]);
		long next;

		if (i < 0)
			continue;	/* deleted by an earlier callback */
		next = l->timers[i].fn(l, due[k], l->timers[i].arg);
		i = loop_timer_find(l, due[k]);
		if (i < 0)
			continue;
		if (next == LOOP_NOMORE)
			l->timers[i] = l->timers[--l->ntimers];
		else
			l->timers[i].when = time_mono_ms() + (next > 0 ? next : 0);
	}
}

/* Milliseconds until the nearest timer, or -1 when there is none. */
static long long
loop_next_timeout(struct loop *l)
{
	long long now = time_mono_ms(), best = -1;

	for (int i = 0; i < l->ntimers; i++) {
		long long d = l->timers[i].when - now;

		if (d < 0)
			d = 0;
		if (best < 0 || d < best)
			best = d;
	}
	return best;
}

/* ---- one-shot I/O ---------------------------------------------------- */

struct io_uring_sqe *
loop_io_sqe(struct loop *l)
{
	return loop_sqe(l);
}

/* A free slot of the io table, growing it.  Its index or -ENOMEM. */
static int
loop_io_slot(struct loop *l)
{
	struct loop_io *n;
	int want, first = l->nios;

	for (int i = 0; i < l->nios; i++)
		if (!l->ios[i].busy)
			return i;
	if (l->nios >= LOOP_MAX_IOS)
		return -ENOMEM;
	want = l->nios ? l->nios * 2 : 16;
	n = realloc(l->ios, (size_t)want * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (int i = l->nios; i < want; i++)
		n[i] = (struct loop_io){ .gen = 1 };
	l->ios = n;
	l->nios = want;
	return first;
}

long long
loop_io_submit(struct loop *l, struct io_uring_sqe *sqe, loop_io_fn *fn,
    void *arg)
{
	int slot = loop_io_slot(l);
	struct loop_io *io;

	if (slot < 0) {
		io_uring_prep_nop(sqe);
		io_uring_sqe_set_data64(sqe, LOOP_UD_REMOVE);
		return slot;
	}
	io = &l->ios[slot];
	io->busy = 1;
	io->fn = fn;
	io->arg = arg;
	io_uring_sqe_set_data64(sqe, LOOP_UD_IO | (uint64_t)io->gen << 32 |
	    (uint32_t)slot);
	return (long long)((uint64_t)io->gen << 32 | (uint32_t)slot);
}

void
loop_io_forget(struct loop *l, long long id)
{
	int slot = (int)(id & 0xffffffff);
	uint32_t gen = (uint32_t)((uint64_t)id >> 32);

	if (slot < 0 || slot >= l->nios || !l->ios[slot].busy ||
	    l->ios[slot].gen != gen)
		return;
	l->ios[slot].fn = NULL;
	l->ios[slot].arg = NULL;
}


/* Deliver one I/O completion: free its slot, then call its callback. */
static void
loop_io_dispatch(struct loop *l, uint64_t ud, int res)
{
	int slot = (int)(ud & 0xffffffffu);
	uint32_t gen = (uint32_t)((ud & ~LOOP_UD_IO) >> 32);
	struct loop_io *io;
	loop_io_fn *fn;
	void *arg;

	if (slot >= l->nios)
		return;
	io = &l->ios[slot];
	if (!io->busy || io->gen != gen)
		return;
	fn = io->fn;
	arg = io->arg;
	*io = (struct loop_io){ .gen = (gen + 1) & 0x3fffffff };
	if (!io->gen)
		io->gen = 1;
	if (fn)
		fn(l, res, arg);
}

/* Deliver one poll completion to its fd's callback, then re-arm. */
static void
loop_dispatch(struct loop *l, uint64_t ud, int res)
{
	int fd = (int)(ud & 0xffffffffu), mask = 0;
	uint32_t gen = (uint32_t)(ud >> 32);
	struct loop_fd *f;

	if (ud & LOOP_UD_REMOVE)
		return;
	if (ud & LOOP_UD_IO) {
		loop_io_dispatch(l, ud, res);
		return;
	}
	if (fd >= l->nfds)
		return;
	f = &l->fds[fd];
	if (f->gen != gen || !f->mask)
		return;		/* stale: deleted or re-registered */
	f->armed = 0;
	if (res < 0) {
		mask = LOOP_ERROR | LOOP_READ;
	} else {
		if (res & (POLLIN | POLLRDHUP))
			mask |= LOOP_READ;
		if (res & POLLOUT)
			mask |= LOOP_WRITE;
		if (res & (POLLERR | POLLHUP | POLLNVAL))
			mask |= LOOP_ERROR | LOOP_READ;
	}
	f->fn(l, fd, mask & (f->mask | LOOP_ERROR), f->arg);
	f = &l->fds[fd];	/* the table may have grown */
	if (f->gen == gen && f->mask && !f->armed)
		loop_arm(l, fd);
}

/* One wait and its dispatch.  0, or -errno from io_uring. */
/* Monotonic microseconds. */
static long long
loop_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

long long
loop_busy_us(struct loop *l)
{
	return loop_now_us() - l->born_us - l->waited_us;
}

long long
loop_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int
loop_once(struct loop *l)
{
	struct io_uring_cqe *cqe, *cqes[LOOP_BATCH];
	struct __kernel_timespec ts;
	uint64_t ud[LOOP_BATCH];
	int res[LOOP_BATCH], r;
	long long ms, t0;
	unsigned n;

	if (l->before_sleep)
		l->before_sleep(l, l->before_sleep_arg);
	ms = loop_next_timeout(l);
	if (ms == 0 && !l->skipped_wait) {
		/* A timer is due: no wait, so no system call unless there is
		 * something to submit (completions arrive in the shared ring
		 * without one).  The next turn waits again, so that due
		 * timers never starve the ring. */
		r = io_uring_sq_ready(&l->ring) ? io_uring_submit(&l->ring) : 0;
		l->skipped_wait = 1;
	} else {
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (ms % 1000) * 1000000;
		t0 = loop_now_us();
		r = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1,
		    ms >= 0 ? &ts : NULL, NULL);
		l->waited_us += loop_now_us() - t0;
		l->skipped_wait = 0;
	}
	if (r < 0 && r != -ETIME && r != -EINTR)
		return r;
	while ((n = io_uring_peek_batch_cqe(&l->ring, cqes, LOOP_BATCH)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			ud[i] = cqes[i]->user_data;
			res[i] = cqes[i]->res;
		}
		io_uring_cq_advance(&l->ring, n);
		for (unsigned i = 0; i < n; i++)
			loop_dispatch(l, ud[i], res[i]);
	}
	loop_run_timers(l);
	return 0;
}

int
loop_run(struct loop *l)
{
	int r;

	l->stop = 0;
	while (!l->stop) {
		r = loop_once(l);
		if (r < 0) {
			log_error("io_uring wait: %s", strerror(-r));
			return r;
		}
	}
	return 0;
}
