/*
 * ask_queue.h: a front's requests to the monitor that are answered later
 * (ask_queue.c), in atriumd-net (monitor_ask.h) and atriumd-http
 * (http_ask.h), over the request socket (privsep.h).
 *
 * The monitor answers in the order of the requests.  A request that can
 * take it long (the rooms listing reads a record per room) or whose
 * answer says nothing (cmd_end, net_stats) is sent without waiting and
 * queued here; its answer is read when the socket is readable, or, when
 * another request is waited for meanwhile, before that one's
 * (ask_queue_ask); and each answer is handed to its done callback from
 * the owner's loop turn (ask_queue_deliver), outside every other
 * callback.  So the loop that serves every client never waits on the
 * monitor's slow work.  None of these answers carries fds.
 */
#ifndef ATRIUMD_ASK_QUEUE_H
#define ATRIUMD_ASK_QUEUE_H

#include <json-c/json.h>

#include "loop.h"

/* ask_queue_init's flags. */
#define ASK_QUEUE_WAKE_NOW	1	/* deliver at the next loop turn,
					 * not LOOP_POLL_MS later */
#define ASK_QUEUE_REFUSAL_NULL	2	/* an answer with errno (a refusal)
					 * reaches done as NULL */

struct ask_pending;

struct ask_queue {
	struct loop *loop;		/* the owner's */
	int fd;				/* the request socket; -1: none */
	int flags;			/* ASK_QUEUE_* */
	void (*lost)(void *arg, int err);	/* the monitor is gone or
					 * broke the wire: the owner stops */
	void *arg;			/* lost's */
	struct ask_pending *head;	/* sent, oldest first */
	struct watch w;			/* on fd while an answer is due */
};

/* Set q up on loop and fd (may be -1 until the socket exists). */
void ask_queue_init(struct ask_queue *q, struct loop *loop, int fd,
    int flags, void (*lost)(void *arg, int err), void *arg);

/* Send req (consumed) and wait for the answer (*ans, the caller's), with
 * up to max fds into fds[0..*nfds) (fds NULL: none); answers to requests
 * queued earlier are read first and kept.  0, or -errno (-EINVAL for no
 * req, -EPIPE for no socket); a failure also calls lost. */
int ask_queue_ask(struct ask_queue *q, json_object *req, json_object **ans,
    int *fds, int *nfds, int max);

/* Send req (consumed); done(arg, ans) gets the answer later (borrowed;
 * NULL when the monitor is gone, or a refusal with
 * ASK_QUEUE_REFUSAL_NULL).  The handle for ask_queue_cancel, or NULL
 * when it could not be sent (done is not called then). */
struct ask_pending *ask_queue_later(struct ask_queue *q, json_object *req,
    void (*done)(void *arg, json_object *ans), void *arg);

/* Forget p's answer: its done is not called.  NULL is fine. */
void ask_queue_cancel(struct ask_pending *p);

/* Hand the answers that came to their done callbacks, in order; with
 * all, the requests still unanswered too (with NULL: the process stops).
 * How many were handed (cancelled ones included). */
int ask_queue_deliver(struct ask_queue *q, int all);

/* Drop every request still queued, calling nothing (the process ends). */
void ask_queue_forget(struct ask_queue *q);

#endif
