/*
 * http_fileio.c: the file routes' worker thread (http_fileio.h).
 *
 * Two queues under one mutex: todo (posted, the worker takes them in
 * order) and finished (the worker's results, which the loop takes when
 * the eventfd says so).  A job belongs to the worker from post until the
 * loop takes it off finished; only then does its done run or, when it
 * was orphaned meanwhile, its descriptor close and its memory go.  The
 * worker touches nothing of the loop's.
 */
#include "http_fileio.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "http_server.h"
#include "log.h"

struct http_fileio {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct http_fileio_job *todo, *finished;	/* FIFO, LIFO */
	int stop;
	int efd;			/* the worker's "something finished" */
	struct watch w;			/* on efd */
};

/* Append j to the FIFO *head. */
static void
http_fileio_append(struct http_fileio_job **head, struct http_fileio_job *j)
{
	while (*head)
		head = &(*head)->next;
	j->next = NULL;
	*head = j;
}

/* The I/O of one job, blocking. */
static void
http_fileio_do(struct http_fileio_job *j)
{
	size_t done = 0;
	ssize_t n;

	if (!j->write) {
		do
			n = pread(j->fd, j->buf, j->len, j->off);
		while (n < 0 && errno == EINTR);
		j->res = n < 0 ? -errno : n;
		return;
	}
	while (done < j->len) {
		n = write(j->fd, j->buf + done, j->len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			j->res = n < 0 ? -errno : -EIO;
			return;
		}
		done += (size_t)n;
	}
	j->res = (ssize_t)done;
}

static void *
http_fileio_main(void *arg)
{
	struct http_fileio *io = arg;
	struct http_fileio_job *j;

	pthread_mutex_lock(&io->lock);
	for (;;) {
		while (!io->todo && !io->stop)
			pthread_cond_wait(&io->wake, &io->lock);
		if (io->stop)
			break;
		j = io->todo;
		io->todo = j->next;
		pthread_mutex_unlock(&io->lock);
		http_fileio_do(j);
		pthread_mutex_lock(&io->lock);
		j->next = io->finished;
		io->finished = j;
		eventfd_write(io->efd, 1);
	}
	pthread_mutex_unlock(&io->lock);
	return NULL;
}

/* The eventfd: run the ends of the finished jobs, oldest first. */
static void
http_fileio_ready(struct watch *w, int revents)
{
	struct http_fileio *io = w->arg;
	struct http_fileio_job *list, *rev = NULL, *j;
	eventfd_t v;

	(void)revents;
	eventfd_read(io->efd, &v);
	pthread_mutex_lock(&io->lock);
	list = io->finished;
	io->finished = NULL;
	pthread_mutex_unlock(&io->lock);
	while ((j = list)) {		/* LIFO to FIFO */
		list = j->next;
		j->next = rev;
		rev = j;
	}
	while ((j = rev)) {
		rev = j->next;
		j->busy = 0;
		if (j->orphan) {
			close(j->fd);
			free(j);
		} else {
			j->done(j);
		}
	}
}

/* The worker and its eventfd, made on first use.  NULL on failure. */
static struct http_fileio *
http_fileio_get(struct http_server *srv)
{
	struct http_fileio *io = srv->fileio;

	if (io)
		return io;
	if (!(io = calloc(1, sizeof(*io))))
		return NULL;
	io->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pthread_mutex_init(&io->lock, NULL);
	pthread_cond_init(&io->wake, NULL);
	if (io->efd < 0 || pthread_create(&io->thread, NULL, http_fileio_main,
	    io) != 0) {
		log_error("cannot start the file routes' I/O thread: %s",
		    io->efd < 0 ? "no eventfd" : "pthread_create failed");
		if (io->efd >= 0)
			close(io->efd);
		free(io);
		return NULL;
	}
	loop_add(&srv->loop, &io->w, io->efd, POLLIN, http_fileio_ready, io);
	srv->fileio = io;
	return io;
}

struct http_fileio_job *
http_fileio_job_new(size_t size)
{
	struct http_fileio_job *j = calloc(1, sizeof(*j) + size);

	if (j) {
		j->buf = (char *)(j + 1);
		j->fd = -1;
	}
	return j;
}

int
http_fileio_orphan(struct http_fileio_job *j)
{
	if (!j)
		return 0;
	if (j->busy) {
		j->orphan = 1;
		return 1;
	}
	free(j);
	return 0;
}

int
http_fileio_post(struct http_server *srv, struct http_fileio_job *j)
{
	struct http_fileio *io = http_fileio_get(srv);

	if (!io)
		return -EAGAIN;
	j->busy = 1;
	j->res = 0;
	pthread_mutex_lock(&io->lock);
	http_fileio_append(&io->todo, j);
	pthread_cond_signal(&io->wake);
	pthread_mutex_unlock(&io->lock);
	return 0;
}

void
http_fileio_free(struct http_fileio *io)
{
	if (!io)
		return;
	pthread_mutex_lock(&io->lock);
	io->stop = 1;
	pthread_cond_signal(&io->wake);
	pthread_mutex_unlock(&io->lock);
	/* A job stuck on a stalled mount keeps the thread: the process is
	 * ending, and its exit takes both. */
	pthread_detach(io->thread);
	loop_del(&io->w);
}
