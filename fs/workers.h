/*
 * workers.h: the threads that serve a mount's requests (fs/workers.c says
 * how they take turns and why).  fs/mount.c runs them on a FUSE session;
 * the unit tests run them on a queue of their own through the same
 * struct workers_source.
 */
#ifndef ATRIUM_WORKERS_H
#define ATRIUM_WORKERS_H

struct fuse_session;

/* Where requests come from.  Each worker owns one buffer (buf_new). */
struct workers_source {
	void *arg;
	/* A buffer for one request, or NULL when out of memory. */
	void *(*buf_new)(void *arg);
	void (*buf_free)(void *arg, void *buf);
	/* Wait for the next request and read it into buf: > 0 when one was
	 * read, -EINTR or -EAGAIN to try again, 0 or another -errno when the
	 * source has ended (unmounted, or a signal asked to stop). */
	int (*take)(void *arg, void *buf);
	/* Serve the request in buf (reply to it); may take long. */
	void (*serve)(void *arg, void *buf);
	/* 1 when the request in buf may take long (an fsync, a big write):
	 * its worker hands the turn on before serving it. */
	int (*slow)(void *arg, const void *buf);
	/* 1 when another request waits already, else 0 (no waiting). */
	int (*pending)(void *arg);
	/* 1 once the source asks to stop (a signal), read at any time. */
	int (*ended)(void *arg);
};

/* Serve src's requests on up to max_threads threads until it ends.  A
 * request a worker serves for over tick_ms gets the next ones taken by
 * another worker meanwhile.  0, or -errno when no thread could start. */
int workers_run(const struct workers_source *src, unsigned max_threads,
    unsigned tick_ms);

/* Called by a thread about to wait (fs_set_wait_hook's hook; arg
 * unused): a worker holding the turn to read hands it on first, so that
 * requests behind it do not wait too.  Does nothing in other threads. */
void workers_yield(void *arg);

/* workers_run on a FUSE session.  0 or -errno. */
int workers_run_fuse(struct fuse_session *se, unsigned max_threads,
    unsigned tick_ms);

#endif
