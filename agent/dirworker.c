/*
 * dirworker.c: one thread that runs getdents64 for the agent's loop
 * (dirworker.h).
 *
 * Why a thread: the ring has no getdents, and a synchronous getdents64 on
 * the loop waits for the filesystem, so a slow or stalled atrium-fs (or a
 * huge directory's first read) froze every client of the room.  One thread
 * is enough: listings are short and one at a time per tool call, and
 * another job simply queues behind a slow one (its tool waits; the loop
 * does not).  It is started on the first job, so an agent that never lists
 * a directory has no thread, and with a small stack.
 *
 * Credentials: getdents64 checks nothing; the directory was opened through
 * the ring (wsio_open) with the agent's own, the room's sandbox uid's
 * (confine.h), which is where the rights are checked.  The thread blocks every signal (the agent takes
 * its signals on a signalfd).
 *
 * Ownership.  queue, stopping and the thread's existence are under mu.  A
 * job belongs to the worker from dirworker_post until its eventfd is
 * written, the worker's last touch.  Once stopping is set and the queue
 * is empty the thread frees d and ends: dirworker_free never joins, since
 * a thread inside a getdents64 on a dead FUSE mount would never return.
 */
#include "dirworker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"

#define DIRWORKER_STACK	(128 * 1024)	/* getdents64 needs next to none */

struct dirworker {
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* a job was queued, or stopping */
	struct dirworker_job *head;	/* queued jobs, oldest first (mu) */
	struct dirworker_job *tail;
	int started;			/* the thread exists (mu) */
	int stopping;			/* dirworker_free was called (mu) */
};

struct dirworker *
dirworker_new(void)
{
	struct dirworker *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (pthread_mutex_init(&d->mu, NULL) != 0) {
		free(d);
		return NULL;
	}
	if (pthread_cond_init(&d->cv, NULL) != 0) {
		pthread_mutex_destroy(&d->mu);
		free(d);
		return NULL;
	}
	return d;
}

static void
dirworker_destroy(struct dirworker *d)
{
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

/* The next job, or NULL once stopping (then d is to be freed). */
static struct dirworker_job *
dirworker_take(struct dirworker *d)
{
	struct dirworker_job *j;

	pthread_mutex_lock(&d->mu);
	while (!d->head && !d->stopping)
		pthread_cond_wait(&d->cv, &d->mu);
	if (d->stopping) {
		pthread_mutex_unlock(&d->mu);
		return NULL;
	}
	j = d->head;
	d->head = j->next;
	if (!d->head)
		d->tail = NULL;
	pthread_mutex_unlock(&d->mu);
	return j;
}

/* Read the directory and signal; j is the caller's after the write. */
static void
dirworker_run(struct dirworker_job *j)
{
	long r = syscall(SYS_getdents64, j->fd, j->buf, j->n);

	j->res = r < 0 ? -errno : r;
	while (eventfd_write(j->efd, 1) < 0 && errno == EINTR)
		;
}

static void *
dirworker_main(void *arg)
{
	struct dirworker *d = arg;
	struct dirworker_job *j;

	while ((j = dirworker_take(d)))
		dirworker_run(j);
	dirworker_destroy(d);
	return NULL;
}

/* Start the thread with every signal blocked.  0 or -errno (logged). */
static int
dirworker_start(struct dirworker *d)
{
	sigset_t all, old;
	pthread_attr_t at;
	pthread_t t;
	int r;

	if ((r = pthread_attr_init(&at)) != 0)
		return -r;
	pthread_attr_setstacksize(&at, DIRWORKER_STACK);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&t, &at, dirworker_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&at);
	if (r != 0) {
		log_error("cannot start the directory reader thread: %s",
		    strerror(r));
		return -r;
	}
	pthread_setname_np(t, "atrium-dirs");	/* for ps; may fail */
	d->started = 1;
	return 0;
}

int
dirworker_post(struct dirworker *d, struct dirworker_job *j)
{
	int r = 0;

	j->next = NULL;
	pthread_mutex_lock(&d->mu);
	if (!d->started)
		r = dirworker_start(d);
	if (r == 0) {
		if (d->tail)
			d->tail->next = j;
		else
			d->head = j;
		d->tail = j;
		pthread_cond_signal(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	return r;
}

void
dirworker_free(struct dirworker *d)
{
	int started;

	if (!d)
		return;
	pthread_mutex_lock(&d->mu);
	started = d->started;
	d->stopping = 1;
	d->head = d->tail = NULL;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	if (!started)
		dirworker_destroy(d);
}
