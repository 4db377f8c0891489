/*
 * workers.c: the threads that serve a mount's requests, and how they take
 * turns reading them.  Used by fs/mount.c in place of libfuse's
 * fuse_session_loop_mt.
 *
 * Why: libfuse's loop keeps every idle worker blocked in read(2) of
 * /dev/fuse, and the kernel hands each request to the worker that has
 * waited longest.  A program's requests come one after the other (a create
 * is a lookup, a create, a getxattr, a write: each waits for the last), so
 * each one woke a different sleeping thread, often on the other CPU, and
 * on the virtual machines measured (2 CPUs, Linux 6.18) a wakeup across
 * CPUs costs several times the request itself.  Served as below, 4 KiB
 * creates went from a median of 2,190 a second to 3,900 in runs side by
 * side on a busy machine, and the daemon's CPU per create from 226 us to
 * 154; on a quiet one by a fifth (man/atrium-fs.8, WHAT A SMALL FILE
 * COSTS).
 *
 * The rule: at most one worker, the holder of the turn, reads requests.
 * Having read one, it serves it itself and then reads the next, so a
 * program's requests in sequence are served by one thread that is awake
 * already, with no wakeup between them.  When another request is already
 * waiting as it takes one (pending), it gives the one it took to an idle
 * (or new) worker and reads on: requests that come together are served
 * together.  It hands the turn itself on (waking an idle worker, or
 * starting one, up to max_threads) when:
 *   - the request may take long (src->slow: an fsync, a big read or
 *     write, a listing, an lseek that has the kernel write pages back
 *     first), before serving it;
 *   - serving it is about to wait for the filesystem's lock (a commit, an
 *     fsync: workers_yield, called from fs_lock);
 *   - it has served one request for a whole tick, whatever held it (the
 *     watchdog thread looks once a tick while any request is served), so
 *     a request never waits more than about two ticks behind another.
 * A worker that finishes without the turn takes it if it is free, or
 * waits, idle, until it is handed on or given a request.  The watchdog
 * sleeps while nothing is served.
 *
 * Locking: struct workers' fields are under lock, except src (read-only);
 * lock is taken last of all locks (workers_yield runs under others).
 * Ending: when take() reports the end (unmount), or when src->ended() says
 * a signal asked to stop, every thread is stopped and joined; the holder
 * blocked in take() is cancelled (cancellation is enabled only there).
 * The exit signals are blocked in every thread started here, so that they
 * reach the thread that called workers_run, which checks src->ended(); it
 * also looks once a second, as a signal may reach another thread of the
 * process (the committer's, say) and wake nobody.
 */
#include "workers.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fuse_lowlevel.h>
#include <linux/fuse.h>

/* The most workers workers_run starts; max_threads is capped to it. */
#define WORKERS_MAX 64
/* Request buffers: one per worker, one being read into, and the handed. */
#define WORKERS_BUFS (2 * WORKERS_MAX + 2)

struct workers;

/* One worker thread. */
struct worker {
	struct workers *w;
	pthread_t tid;
	void *buf;               /* the buffer it reads into, or NULL */
};

struct workers {
	const struct workers_source *src;
	unsigned max, tick_ms;
	pthread_mutex_t lock;
	pthread_cond_t idle_cond;    /* idle workers wait for the turn or work */
	pthread_cond_t tick_cond;    /* the watchdog waits for work or a tick */
	sem_t finish;                /* posted when the workers stop */
	struct worker workers[WORKERS_MAX];
	unsigned nthreads;           /* workers started */
	unsigned nidle;              /* workers waiting in idle_cond */
	unsigned nserving;           /* workers serving a request */
	struct worker *holder;       /* who reads next; NULL: the turn is free */
	int holder_taking;           /* 1 while the holder waits in take() */
	uint64_t taken;              /* requests taken so far */
	int watchdog_asleep;         /* 1 while it waits for work */
	int stop;
	void *bufs[WORKERS_BUFS];    /* every buffer made, freed at the end */
	unsigned nbufs;
	void *spare[WORKERS_BUFS];   /* buffers free for reading into */
	unsigned nspare;
	void *handed[WORKERS_BUFS];  /* requests read, for idle workers */
	unsigned hhead, htail;       /* handed[hhead % N .. htail % N) */
};

static void *workers_main(void *arg);

/* The worker this thread is, for workers_yield; NULL in other threads. */
static __thread struct worker *workers_self;

/* Start a thread with the exit signals blocked (see the head).  0 or
 * -errno. */
static int
workers_spawn(pthread_t *tid, void *(*fn)(void *), void *arg)
{
	sigset_t exits, old;
	int r;

	sigemptyset(&exits);
	sigaddset(&exits, SIGTERM);
	sigaddset(&exits, SIGINT);
	sigaddset(&exits, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &exits, &old);
	r = pthread_create(tid, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -r;
}

/* A buffer to read into, under lock: a spare one or a new one; NULL
 * when out of memory or of buffers. */
static void *
workers_buf_get(struct workers *w)
{
	void *b;

	if (w->nspare > 0)
		return w->spare[--w->nspare];
	if (w->nbufs >= WORKERS_BUFS || !(b = w->src->buf_new(w->src->arg)))
		return NULL;
	w->bufs[w->nbufs++] = b;
	return b;
}

/* Start one more worker, under lock.  0 or -errno (logged). */
static int
workers_start(struct workers *w)
{
	struct worker *me = &w->workers[w->nthreads];
	int r;

	if (w->stop || w->nthreads >= w->max)
		return -EAGAIN;
	me->w = w;
	me->buf = NULL;
	if ((r = workers_spawn(&me->tid, workers_main, me)) < 0) {
		log_warn("starting a request worker: %s", strerror(-r));
		return r;
	}
	w->nthreads++;
	return 0;
}

/* Free the turn and give it to an idle worker, or to a new one; with
 * neither, the first worker to finish takes it.  Under lock. */
static void
workers_hand_off(struct workers *w)
{
	if (w->stop)
		return;
	w->holder = NULL;
	if (w->nidle > 0)
		pthread_cond_signal(&w->idle_cond);
	else
		(void)workers_start(w);
}

/* Stop every thread, under lock. */
static void
workers_stop(struct workers *w)
{
	if (w->stop)
		return;
	w->stop = 1;
	pthread_cond_broadcast(&w->idle_cond);
	pthread_cond_broadcast(&w->tick_cond);
	sem_post(&w->finish);
}

/* The holder waits for and reads one request into me->buf: take()'s
 * result.  Called and returns under lock; cancellable only in take(). */
static int
workers_take(struct workers *w, struct worker *me)
{
	const struct workers_source *src = w->src;
	int r, old;

	w->holder_taking = 1;
	pthread_mutex_unlock(&w->lock);
	if (src->ended(src->arg)) {
		r = 0;
	} else {
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
		r = src->take(src->arg, me->buf);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	}
	pthread_mutex_lock(&w->lock);
	w->holder_taking = 0;
	return r;
}

/* Serve the request in buf.  Called and returns under lock. */
static void
workers_serve(struct workers *w, void *buf)
{
	w->nserving++;
	if (w->watchdog_asleep)
		pthread_cond_signal(&w->tick_cond);
	pthread_mutex_unlock(&w->lock);
	w->src->serve(w->src->arg, buf);
	pthread_mutex_lock(&w->lock);
	w->nserving--;
}

/* When another request waits already, give the one just read (in
 * me->buf) to an idle or new worker and take a spare buffer, so that
 * the holder reads on at once: 1 when handed, 0 to serve it here.
 * Called and returns under lock. */
static int
workers_hand_request(struct workers *w, struct worker *me)
{
	void *spare;
	int more;

	pthread_mutex_unlock(&w->lock);
	more = w->src->pending(w->src->arg);
	pthread_mutex_lock(&w->lock);
	/* Buffers are up to a MiB each: the handed ones share two spares
	 * beyond one per worker, as libfuse kept one per worker. */
	if (!more || w->stop || (w->nidle == 0 && w->nthreads >= w->max) ||
	    (w->nspare == 0 && w->nbufs >= w->max + 2) ||
	    !(spare = workers_buf_get(w)))
		return 0;
	w->handed[w->htail++ % WORKERS_BUFS] = me->buf;
	me->buf = spare;
	if (w->nidle > 0)
		pthread_cond_signal(&w->idle_cond);
	else if (workers_start(w) < 0) {
		/* Nobody to give it to: serve it here after all. */
		me->buf = w->handed[--w->htail % WORKERS_BUFS];
		w->spare[w->nspare++] = spare;
		return 0;
	}
	return 1;
}

/* Serve one handed request, and give its buffer back.  Under lock. */
static void
workers_serve_handed(struct workers *w)
{
	void *buf = w->handed[w->hhead++ % WORKERS_BUFS];

	workers_serve(w, buf);
	w->spare[w->nspare++] = buf;
}

/* Take the turn when free, read a request, serve it or hand it on.
 * Under lock: 1 to go on, 0 when the source has ended. */
static int
workers_read_one(struct workers *w, struct worker *me)
{
	int r;

	w->holder = me;
	if (!me->buf && !(me->buf = workers_buf_get(w))) {
		/* Out of memory: let another try, wait for a change. */
		log_warn("no buffer for a request: %s", strerror(ENOMEM));
		workers_hand_off(w);
		w->nidle++;
		pthread_cond_wait(&w->idle_cond, &w->lock);
		w->nidle--;
		return 1;
	}
	r = workers_take(w, me);
	if (r == -EINTR || r == -EAGAIN)
		return 1;
	if (r <= 0)
		return 0;
	w->taken++;
	if (w->src->slow(w->src->arg, me->buf))
		workers_hand_off(w);
	else if (workers_hand_request(w, me))
		return 1;
	workers_serve(w, me->buf);
	return 1;
}

/* A worker: serve handed requests (the holder reads on instead), else
 * hold the turn and read, else wait idle; until stopped. */
static void *
workers_main(void *arg)
{
	struct worker *me = arg;
	struct workers *w = me->w;
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	workers_self = me;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		if (w->hhead != w->htail && w->holder != me) {
			workers_serve_handed(w);
		} else if (w->stop) {
			break;
		} else if (w->holder && w->holder != me) {
			w->nidle++;
			pthread_cond_wait(&w->idle_cond, &w->lock);
			w->nidle--;
		} else if (!workers_read_one(w, me)) {
			workers_stop(w);
			break;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

void
workers_yield(void *arg)
{
	struct worker *me = workers_self;
	struct workers *w;

	(void)arg;
	if (!me)
		return;
	w = me->w;
	pthread_mutex_lock(&w->lock);
	if (w->holder == me && !w->holder_taking)
		workers_hand_off(w);
	pthread_mutex_unlock(&w->lock);
}

/* now + ms on CLOCK_MONOTONIC (the conds' clock). */
static struct timespec
workers_after(unsigned ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += (long)(ms % 1000) * 1000000L;
	t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return t;
}

/* The watchdog: while requests are served, look once a tick whether the
 * holder has served one request all that tick, and hand the turn on if
 * so; sleep while nothing is served. */
static void *
workers_watchdog(void *arg)
{
	struct workers *w = arg;
	struct timespec until;
	uint64_t mark;

	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		if (w->nserving == 0) {
			w->watchdog_asleep = 1;
			pthread_cond_wait(&w->tick_cond, &w->lock);
			w->watchdog_asleep = 0;
			continue;
		}
		mark = w->taken;
		until = workers_after(w->tick_ms);
		while (!w->stop && pthread_cond_timedwait(&w->tick_cond, &w->lock,
		    &until) != ETIMEDOUT)
			;
		if (!w->stop && w->holder && !w->holder_taking && w->nserving > 0 &&
		    w->taken == mark)
			workers_hand_off(w);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Set up w's lock, conds (on CLOCK_MONOTONIC) and semaphore.  0 or -errno. */
static int
workers_init(struct workers *w, const struct workers_source *src,
    unsigned max_threads, unsigned tick_ms)
{
	pthread_condattr_t ca;

	memset(w, 0, sizeof(*w));
	w->src = src;
	w->max = max_threads < 1 ? 1 : max_threads > WORKERS_MAX ? WORKERS_MAX :
	    max_threads;
	w->tick_ms = tick_ms ? tick_ms : 1;
	if (pthread_condattr_init(&ca) != 0)
		return -ENOMEM;
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->idle_cond, &ca);
	pthread_cond_init(&w->tick_cond, &ca);
	pthread_condattr_destroy(&ca);
	if (sem_init(&w->finish, 0, 0) < 0)
		return -errno;
	return 0;
}

/* Wait until the workers stop, or stop them when src->ended() (a signal,
 * which interrupts sem_timedwait here; the timeout is a backstop). */
static void
workers_wait_end(struct workers *w)
{
	struct timespec until;

	for (;;) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		(void)sem_timedwait(&w->finish, &until);
		pthread_mutex_lock(&w->lock);
		if (!w->stop && w->src->ended(w->src->arg)) {
			workers_stop(w);
			if (w->holder && w->holder_taking)
				pthread_cancel(w->holder->tid);
		}
		if (w->stop) {
			pthread_mutex_unlock(&w->lock);
			return;
		}
		pthread_mutex_unlock(&w->lock);
	}
}

int
workers_run(const struct workers_source *src, unsigned max_threads,
    unsigned tick_ms)
{
	struct workers *w = malloc(sizeof(*w));
	pthread_t watchdog;
	int watchdog_up;
	unsigned n;
	int r;

	if (!w)
		return -ENOMEM;
	if ((r = workers_init(w, src, max_threads, tick_ms)) < 0) {
		free(w);
		return r;
	}
	pthread_mutex_lock(&w->lock);
	watchdog_up = (r = workers_spawn(&watchdog, workers_watchdog, w)) == 0;
	if (watchdog_up && (r = workers_start(w)) < 0) {
		log_error("no request worker could start: %s", strerror(-r));
		workers_stop(w);
	}
	pthread_mutex_unlock(&w->lock);
	if (r == 0)
		workers_wait_end(w);
	if (watchdog_up)
		pthread_join(watchdog, NULL);
	/* Once stopped no worker starts another: nthreads is final. */
	pthread_mutex_lock(&w->lock);
	n = w->nthreads;
	pthread_mutex_unlock(&w->lock);
	for (unsigned i = 0; i < n; i++)
		pthread_join(w->workers[i].tid, NULL);
	for (unsigned i = 0; i < w->nbufs; i++)
		src->buf_free(src->arg, w->bufs[i]);
	sem_destroy(&w->finish);
	pthread_cond_destroy(&w->idle_cond);
	pthread_cond_destroy(&w->tick_cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
	return r;
}

/* --- on a FUSE session ---------------------------------------------------- */

static void *
fuse_buf_new(void *arg)
{
	(void)arg;
	return calloc(1, sizeof(struct fuse_buf));
}

static void
fuse_buf_free(void *arg, void *buf)
{
	(void)arg;
	if (buf)
		free(((struct fuse_buf *)buf)->mem);
	free(buf);
}

/* fuse_session_receive_buf: > 0, -EINTR, or 0 once unmounted or exited. */
static int
fuse_take(void *arg, void *buf)
{
	return fuse_session_receive_buf(arg, buf);
}

static void
fuse_serve(void *arg, void *buf)
{
	fuse_session_process_buf(arg, buf);
}

/* Requests served from memory or by a few SQL statements: quick unless
 * they wait for the lock (workers_yield sees to that).  Reads and writes
 * up to QUICK_IO bytes too. */
#define QUICK_IO 65536

static int
fuse_slow(void *arg, const void *buf)
{
	const struct fuse_buf *b = buf;
	const struct fuse_in_header *in = b->mem;
	const struct fuse_read_in *rd = (const void *)(in + 1);

	(void)arg;
	if ((b->flags & FUSE_BUF_IS_FD) || b->size < sizeof(*in))
		return 1;
	switch (in->opcode) {
	case FUSE_LOOKUP: case FUSE_FORGET: case FUSE_BATCH_FORGET:
	case FUSE_GETATTR: case FUSE_SETATTR: case FUSE_READLINK:
	case FUSE_OPEN: case FUSE_RELEASE: case FUSE_OPENDIR:
	case FUSE_RELEASEDIR: case FUSE_FLUSH: case FUSE_STATFS:
	case FUSE_GETXATTR: case FUSE_LISTXATTR: case FUSE_SETXATTR:
	case FUSE_REMOVEXATTR: case FUSE_CREATE: case FUSE_MKNOD:
	case FUSE_MKDIR: case FUSE_SYMLINK: case FUSE_LINK: case FUSE_UNLINK:
	case FUSE_RMDIR: case FUSE_RENAME: case FUSE_RENAME2: case FUSE_ACCESS:
	case FUSE_INIT: case FUSE_INTERRUPT:
		return 0;
	case FUSE_WRITE:
		return in->len > sizeof(*in) + sizeof(struct fuse_write_in) +
		    QUICK_IO;
	case FUSE_READ:
		return b->size < sizeof(*in) + sizeof(*rd) || rd->size > QUICK_IO;
	default:
		return 1;
	}
}

/* 1 when the kernel has another request queued (poll with no wait adds
 * no waiter to the device's queue). */
static int
fuse_pending(void *arg)
{
	struct pollfd p = { fuse_session_fd(arg), POLLIN, 0 };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static int
fuse_ended(void *arg)
{
	return fuse_session_exited(arg);
}

int
workers_run_fuse(struct fuse_session *se, unsigned max_threads,
    unsigned tick_ms)
{
	struct workers_source src = { se, fuse_buf_new, fuse_buf_free,
	    fuse_take, fuse_serve, fuse_slow, fuse_pending, fuse_ended };
	int r = workers_run(&src, max_threads, tick_ms);

	fuse_session_reset(se);
	return r;
}
