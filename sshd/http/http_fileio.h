/*
 * http_fileio.h: reads and writes of workspace files off atriumd-http's
 * loop (http_fileio.c), for the file routes (api_files.c).  The files
 * are on a room's FUSE mount: a read or a write there may wait for the
 * room's filesystem daemon, and the loop must not.  So one worker thread
 * does them, a job at a time, and the loop hears of each end through an
 * eventfd; meanwhile the HTTP request that asked is suspended.
 *
 * A job is one pread of up to len bytes at off into buf, or one write of
 * all of buf[0..len) at the descriptor's position.  Its done runs on the
 * loop, never inside http_fileio_post.  A job whose request ended while
 * it ran is orphaned (http_fileio_orphan): its end closes its descriptor
 * and frees it, since the worker may still be using both.
 */
#ifndef ATRIUMD_HTTP_FILEIO_H
#define ATRIUMD_HTTP_FILEIO_H

#include <stddef.h>
#include <sys/types.h>

struct http_server;
struct http_fileio;

struct http_fileio_job {
	struct http_fileio_job *next;	/* in the worker's queues */
	int fd;
	int write;			/* 1: write all of buf; 0: pread */
	char *buf;
	size_t len;
	off_t off;			/* pread's offset */
	ssize_t res;			/* bytes read or written, or -errno */
	int busy;			/* posted, done not yet run */
	int orphan;			/* nobody waits: free at the end */
	void (*done)(struct http_fileio_job *j);	/* on the loop */
	void *arg;
};

/* A new job with a buffer of size bytes (j->buf), or NULL. */
struct http_fileio_job *http_fileio_job_new(size_t size);

/* Free j now if it is not busy; else orphan it (it is freed, and its fd
 * closed, when it ends).  Returns 1 when j (and its fd) are now the
 * worker's to close, 0 when the caller closes fd. */
int http_fileio_orphan(struct http_fileio_job *j);

/* Run j on the worker (started on first use).  0 or -errno (nothing
 * posted: no thread could be started). */
int http_fileio_post(struct http_server *srv, struct http_fileio_job *j);

/* Stop the worker (the process ends). */
void http_fileio_free(struct http_fileio *io);

#endif
