/*
 * dirworker.h: getdents64 on a thread of its own (dirworker.c), for the
 * file tools' directory reads (wsio_getdents): io_uring has no getdents,
 * and a directory read on a stalled or slow filesystem (atrium-fs busy,
 * or stopped) must not stop the agent's loop.
 *
 * A job is posted; the worker reads the directory into the job's buffer,
 * stores the result and then writes 1 to the job's eventfd, which the
 * caller reads through the ring (so the wait is one more ring operation).
 * After that write the worker never touches the job again: the caller
 * frees it once it has read the eventfd.
 */
#ifndef ATRIUM_AGENT_DIRWORKER_H
#define ATRIUM_AGENT_DIRWORKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dirworker;

struct dirworker_job {
	int fd;			/* an open directory (the caller's) */
	void *buf;		/* n bytes the worker fills */
	size_t n;
	ssize_t res;		/* bytes filled, 0 at the end, or -errno;
				 * valid once efd was signalled */
	int efd;		/* eventfd the worker signals when done */
	uint64_t count;		/* where the caller's read of efd lands */
	struct dirworker_job *next;	/* the queue's (worker's lock) */
};

/* A worker; its thread starts with the first job.  NULL on -ENOMEM. */
struct dirworker *dirworker_new(void);

/* Queue j (fd, buf, n and efd filled).  0, or -errno when the thread
 * cannot be started (then j is not queued). */
int dirworker_post(struct dirworker *d, struct dirworker_job *j);

/* Stop the worker: jobs still queued are dropped unsignalled (their
 * callers are being abandoned at shutdown); a job in progress finishes.
 * The thread frees d as it ends; without a thread d is freed now.  NULL
 * is fine. */
void dirworker_free(struct dirworker *d);

#endif
