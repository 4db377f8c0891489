/*
 * ask_queue.c: requests to the monitor answered later (ask_queue.h).
 * Called by atriumd-net's monitor_ask.c and atriumd-http's http_ask.c,
 * on their one loop thread; the owner calls ask_queue_deliver once a loop
 * turn and ask_queue_forget at its end.
 *
 * Invariant: the answers on the socket belong, in order, to the queued
 * requests not yet marked arrived, then to the one request waited for, if
 * any; so an answer is always read into the oldest request that has none.
 */
#include "ask_queue.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "jsonl.h"
#include "privsep.h"
#include "util.h"

struct ask_pending {
	struct ask_pending *next;	/* in q->head, oldest first */
	void (*done)(void *arg, json_object *ans);	/* NULL: cancelled */
	void *arg;
	json_object *ans;		/* once it came */
	int arrived;
};

/* See ask_queue.h. */
void
ask_queue_init(struct ask_queue *q, struct loop *loop, int fd, int flags,
    void (*lost)(void *arg, int err), void *arg)
{
	q->loop = loop;
	q->fd = fd;
	q->flags = flags;
	q->lost = lost;
	q->arg = arg;
}

/* The oldest request still waiting for its answer, or NULL. */
static struct ask_pending *
ask_queue_waiting(struct ask_queue *q)
{
	struct ask_pending *p = q->head;

	while (p && p->arrived)
		p = p->next;
	return p;
}

/* Read the next answer, which is p's (the oldest waiting).  0 or -errno. */
static int
ask_queue_take(struct ask_queue *q, struct ask_pending *p)
{
	int r = privsep_recv(q->fd, PRIVSEP_MAX_ANSWER, &p->ans, NULL, NULL,
	    0);

	if (r == 0) {
		p->arrived = 1;
		if (q->flags & ASK_QUEUE_WAKE_NOW)
			loop_wake_at(q->loop, time_mono_ms());
		else
			loop_wake_soon(q->loop);
	}
	if (!ask_queue_waiting(q) && q->w.loop)
		loop_want(&q->w, 0);
	return r;
}

/* The socket is readable while a queued request waits. */
static void
ask_queue_readable(struct watch *w, int revents)
{
	struct ask_queue *q = w->arg;
	struct ask_pending *p = ask_queue_waiting(q);
	int r;

	(void)revents;
	if (!p) {
		loop_want(w, 0);
		return;
	}
	if ((r = ask_queue_take(q, p)) < 0) {
		loop_want(w, 0);
		q->lost(q->arg, r);
	}
}

/* See ask_queue.h. */
int
ask_queue_ask(struct ask_queue *q, json_object *req, json_object **ans,
    int *fds, int *nfds, int max)
{
	struct ask_pending *p;
	int r;

	*ans = NULL;
	if (nfds)
		*nfds = 0;
	if (!req)
		return -EINVAL;
	r = q->fd < 0 ? -EPIPE : privsep_send(q->fd, req, NULL, 0);
	json_object_put(req);
	while (r == 0 && (p = ask_queue_waiting(q)))
		r = ask_queue_take(q, p);
	if (r == 0)
		r = privsep_recv(q->fd, PRIVSEP_MAX_ANSWER, ans, fds, nfds,
		    max);
	if (r < 0)
		q->lost(q->arg, r);
	return r;
}

/* See ask_queue.h. */
struct ask_pending *
ask_queue_later(struct ask_queue *q, json_object *req,
    void (*done)(void *arg, json_object *ans), void *arg)
{
	struct ask_pending *p, **pp;
	int r;

	if (!req || q->fd < 0 || !(p = calloc(1, sizeof(*p)))) {
		json_object_put(req);
		return NULL;
	}
	r = privsep_send(q->fd, req, NULL, 0);
	json_object_put(req);
	if (r < 0) {
		free(p);
		q->lost(q->arg, r);
		return NULL;
	}
	p->done = done;
	p->arg = arg;
	for (pp = &q->head; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	if (q->w.loop)
		loop_want(&q->w, POLLIN);
	else
		loop_add(q->loop, &q->w, q->fd, POLLIN, ask_queue_readable, q);
	return p;
}

/* See ask_queue.h. */
void
ask_queue_cancel(struct ask_pending *p)
{
	if (p)
		p->done = NULL;
}

/* See ask_queue.h. */
int
ask_queue_deliver(struct ask_queue *q, int all)
{
	struct ask_pending *p;
	json_object *ans;
	int n = 0;

	while ((p = q->head) && (p->arrived || all)) {
		q->head = p->next;
		ans = p->ans;
		if (ans && (q->flags & ASK_QUEUE_REFUSAL_NULL) &&
		    json_get_int(ans, "errno", 0) > 0)
			ans = NULL;
		if (p->done)
			p->done(p->arg, ans);
		json_object_put(p->ans);
		free(p);
		n++;
	}
	return n;
}

/* See ask_queue.h. */
void
ask_queue_forget(struct ask_queue *q)
{
	struct ask_pending *p;

	loop_del(&q->w);
	while ((p = q->head)) {
		q->head = p->next;
		json_object_put(p->ans);
		free(p);
	}
}
