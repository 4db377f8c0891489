/*
 * loop.c: the threads that serve FUSE requests, in place of libfuse's
 * fuse_session_loop_mt.  Called by fs/mount.c.
 *
 * Why: the round trip of a request through /dev/fuse is what bounds `ls -l`
 * and small-file creation, and the kernel hands each request to the thread
 * that has waited longest in read(2).  With libfuse's pool, a program's
 * consecutive requests therefore alternate between threads, each one a
 * wakeup of another thread: on a 2-core machine a getxattr round trip took
 * 28 to 45 us so, against 12 to 20 us when one thread read and served
 * them all.
 *
 * Threading model: nthreads workers; exactly one of them at a time reads
 * /dev/fuse (it holds "the reading").  A request that is answered at once
 * without fs->lock (loop_inline: getxattr and listxattr of an inode without
 * extended attributes, flush, release, releasedir, ioctl, interrupt) is
 * served by the reader itself, which then reads the next one, so a run of
 * such requests stays on one thread.  Any other request may wait (for
 * fs->lock behind a commit or an fsync, for the disk, or, for lseek, for
 * the kernel to send writes that another thread must serve), so before
 * serving it the reader passes the reading to an idle worker: requests keep
 * being read and served while it waits.  With every worker busy, requests
 * wait in the kernel until one is free (as with libfuse's pool).
 *
 * Ending: libfuse's signal handlers end the session on the main thread (the
 * workers block those signals), which waits on a semaphore and then cancels
 * the workers.  A worker can be cancelled only while it waits (for the
 * reading, or in read(2)), never while it serves a request.  On unmount
 * read(2) fails with ENODEV: the worker that sees it ends the session and
 * wakes the main thread.
 */
#include "loop.h"
#include "log.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LOOP_THREADS_MAX 64

/* The start of every request (the kernel's struct fuse_in_header, a stable
 * ABI) and the opcodes loop_inline knows. */
struct loop_in_header {
	uint32_t len;
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
};
enum {
	LOOP_OP_RELEASE = 18,
	LOOP_OP_GETXATTR = 22,
	LOOP_OP_LISTXATTR = 23,
	LOOP_OP_FLUSH = 25,
	LOOP_OP_RELEASEDIR = 29,
	LOOP_OP_INTERRUPT = 36,
	LOOP_OP_IOCTL = 39,
};

struct loop {
	struct fuse_session *se;
	struct fs *fs;
	pthread_mutex_t lock;     /* guards reading and error */
	pthread_cond_t free_cond; /* the reading was passed on */
	int reading;              /* a worker holds the reading */
	sem_t finish;             /* a worker saw the session end */
	int error;                /* -errno that ended it, or 0 */
};

/* 1 when the request in buf is answered at once without fs->lock, so the
 * reader may serve it itself. */
static int
loop_inline(struct loop *l, const struct fuse_buf *buf)
{
	const struct loop_in_header *in = buf->mem;

	if ((buf->flags & FUSE_BUF_IS_FD) || buf->size < sizeof(*in))
		return 0;
	switch (in->opcode) {
	case LOOP_OP_GETXATTR:
	case LOOP_OP_LISTXATTR:
		return fs_xattr_none(l->fs, in->nodeid);
	case LOOP_OP_FLUSH:
	case LOOP_OP_RELEASE:
	case LOOP_OP_RELEASEDIR:
	case LOOP_OP_INTERRUPT:
	case LOOP_OP_IOCTL:
		return 1;
	default:
		return 0;
	}
}

/* Cancellation cleanup of a wait for the reading. */
static void
loop_unlock(void *arg)
{
	pthread_mutex_unlock(arg);
}

/* Wait until the reading is free and take it (a cancellation point). */
static void
loop_take(struct loop *l)
{
	pthread_mutex_lock(&l->lock);
	pthread_cleanup_push(loop_unlock, &l->lock);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	while (l->reading)
		pthread_cond_wait(&l->free_cond, &l->lock);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	l->reading = 1;
	pthread_cleanup_pop(1);
}

/* Pass the reading on to an idle worker. */
static void
loop_give(struct loop *l)
{
	pthread_mutex_lock(&l->lock);
	l->reading = 0;
	pthread_cond_signal(&l->free_cond);
	pthread_mutex_unlock(&l->lock);
}

/* Read the next request (a cancellation point): > 0, 0 at the end of the
 * session, or -errno. */
static int
loop_receive(struct loop *l, struct fuse_buf *buf)
{
	int r;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	r = fuse_session_receive_buf(l->se, buf);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	return r;
}

/* Cancellation cleanup of a worker: its receive buffer. */
static void
loop_free_buf(void *arg)
{
	free(((struct fuse_buf *)arg)->mem);
	free(arg);
}

/* A worker's round: take the reading, read, serve (passing the reading on
 * first unless the request is served at once), until the session ends. */
static void
loop_run(struct loop *l, struct fuse_buf *buf)
{
	int held = 0, r = 0;

	while (!fuse_session_exited(l->se)) {
		if (!held)
			loop_take(l);
		held = 1;
		r = loop_receive(l, buf);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r <= 0)
			break;
		if (!loop_inline(l, buf)) {
			loop_give(l);
			held = 0;
		}
		fuse_session_process_buf(l->se, buf);
	}
	if (held)
		loop_give(l);
	pthread_mutex_lock(&l->lock);
	if (r < 0 && r != -EINTR && r != -EAGAIN)
		l->error = r;
	pthread_mutex_unlock(&l->lock);
	fuse_session_exit(l->se);
	sem_post(&l->finish);
}

/* A worker thread: loop_run, its buffer freed however it ends. */
static void *
loop_worker(void *arg)
{
	struct fuse_buf *buf = calloc(1, sizeof(*buf));

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	if (!buf) {
		log_error("request thread: out of memory");
		return NULL;
	}
	pthread_cleanup_push(loop_free_buf, buf);
	loop_run(arg, buf);
	pthread_cleanup_pop(1);
	return NULL;
}

/* Start the workers with the session-ending signals blocked (they go to
 * the main thread): how many started. */
static unsigned
loop_start(struct loop *l, pthread_t *threads, unsigned n)
{
	sigset_t block, old;
	unsigned i;
	int r;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	for (i = 0; i < n; i++) {
		if ((r = pthread_create(&threads[i], NULL, loop_worker, l)) != 0) {
			log_warn("starting request thread %u: %s", i, strerror(r));
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return i;
}

int
loop_serve(struct fuse_session *se, struct fs *fs, unsigned nthreads)
{
	pthread_t threads[LOOP_THREADS_MAX];
	struct loop l = { .se = se, .fs = fs };
	unsigned n;

	if (nthreads == 0 || nthreads > LOOP_THREADS_MAX)
		return -EINVAL;
	pthread_mutex_init(&l.lock, NULL);
	pthread_cond_init(&l.free_cond, NULL);
	if (sem_init(&l.finish, 0, 0) < 0)
		return -errno;
	if ((n = loop_start(&l, threads, nthreads)) == 0)
		l.error = -EAGAIN;
	else
		while (!fuse_session_exited(se))
			sem_wait(&l.finish);
	for (unsigned i = 0; i < n; i++)
		pthread_cancel(threads[i]);
	for (unsigned i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	sem_destroy(&l.finish);
	pthread_cond_destroy(&l.free_cond);
	pthread_mutex_destroy(&l.lock);
	fuse_session_reset(se);
	return l.error;
}
