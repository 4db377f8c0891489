/*
 * http_ask.c: atriumd-http's side of the request and event sockets
 * (http_ask.h).  Called by the routes (http_api.c, http_auth.c,
 * http_stream.c) and by the loop (http_ask_event).
 */
#include "http_ask.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "api_room.h"
#include "http_req.h"
#include "http_server.h"
#include "http_stream.h"
#include "jsonl.h"
#include "log.h"
#include "privsep.h"
#include "util.h"

/* See http_ask.h. */
json_object *
http_ask_make(const char *type, const char *token, const char *addr,
    const char *room)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "type", json_object_new_string(type));
	json_object_object_add(o, "token", json_object_new_string(token));
	json_object_object_add(o, "addr", json_object_new_string(addr));
	if (room)
		json_object_object_add(o, "room", json_object_new_string(room));
	return o;
}

/* See http_ask.h. */
json_object *
http_ask_new(const struct http_req *r, const char *type, int with_room)
{
	return http_ask_make(type, r->token, r->addr, with_room ? r->room :
	    NULL);
}

/* The monitor is gone, or broke the wire: stop. */
static void
http_ask_lost(struct http_server *srv, int r)
{
	if (!srv->stopping)
		log_error("the monitor does not answer (%s); stopping",
		    strerror(-r));
	srv->stopping = 1;
}

struct http_pending {
	struct http_pending *next;
	void (*done)(void *arg, json_object *ans);	/* NULL: cancelled */
	void *arg;
	json_object *ans;
	int arrived;
};

/* The first request asked for later whose answer has not come. */
static struct http_pending *
http_ask_due(struct http_server *srv)
{
	struct http_pending *p = srv->pending;

	while (p && p->arrived)
		p = p->next;
	return p;
}

/* Read p's answer (the next on the socket).  0 or -errno. */
static int
http_ask_take(struct http_server *srv, struct http_pending *p)
{
	int r = privsep_recv(srv->req_fd, PRIVSEP_MAX_ANSWER, &p->ans, NULL,
	    NULL, 0);

	if (r == 0) {
		p->arrived = 1;
		loop_wake_at(&srv->loop, time_mono_ms());	/* deliver */
	}
	return r;
}

/* req_fd is readable while an answer is due. */
static void
http_ask_answer(struct watch *w, int revents)
{
	struct http_server *srv = w->arg;
	struct http_pending *p = http_ask_due(srv);
	int r;

	(void)revents;
	if (!p) {
		loop_want(w, 0);
		return;
	}
	if ((r = http_ask_take(srv, p)) < 0) {
		loop_want(w, 0);
		http_ask_lost(srv, r);
		return;
	}
	if (!http_ask_due(srv))
		loop_want(w, 0);
}

/* See http_ask.h. */
struct http_pending *
http_ask_later(struct http_server *srv, json_object *req,
    void (*done)(void *arg, json_object *ans), void *arg)
{
	struct http_pending *p, **pp;
	int r;

	if (!req || srv->stopping || !(p = calloc(1, sizeof(*p)))) {
		json_object_put(req);
		return NULL;
	}
	r = privsep_send(srv->req_fd, req, NULL, 0);
	json_object_put(req);
	if (r < 0) {
		free(p);
		http_ask_lost(srv, r);
		return NULL;
	}
	p->done = done;
	p->arg = arg;
	for (pp = &srv->pending; *pp; pp = &(*pp)->next)
		;
	*pp = p;
	if (srv->ans_w.loop)
		loop_want(&srv->ans_w, POLLIN);
	else
		loop_add(&srv->loop, &srv->ans_w, srv->req_fd, POLLIN,
		    http_ask_answer, srv);
	return p;
}

/* See http_ask.h. */
void
http_ask_cancel(struct http_pending *p)
{
	if (p)
		p->done = NULL;
}

/* See http_ask.h. */
void
http_ask_deliver(struct http_server *srv)
{
	struct http_pending *p;

	while ((p = srv->pending) && (p->arrived || srv->stopping)) {
		srv->pending = p->next;
		if (p->done)
			p->done(p->arg, p->ans);
		json_object_put(p->ans);
		free(p);
	}
}

/* See http_ask.h. */
void
http_ask_forget(struct http_server *srv)
{
	struct http_pending *p;

	loop_del(&srv->ans_w);
	while ((p = srv->pending)) {
		srv->pending = p->next;
		json_object_put(p->ans);
		free(p);
	}
}

/* See http_ask.h. */
int
http_ask(struct http_server *srv, json_object *req, json_object **ans,
    int *fds, int *nfds, int maxfds)
{
	struct http_pending *p;
	int r;

	*ans = NULL;
	if (nfds)
		*nfds = 0;
	if (!req)
		return -ENOMEM;
	if (srv->stopping) {
		json_object_put(req);
		return -EPIPE;
	}
	r = privsep_send(srv->req_fd, req, NULL, 0);
	json_object_put(req);
	/* The answers to requests asked earlier come first: kept. */
	while (r == 0 && (p = http_ask_due(srv)))
		r = http_ask_take(srv, p);
	if (r == 0)
		r = privsep_recv(srv->req_fd, PRIVSEP_MAX_ANSWER, ans, fds,
		    nfds, maxfds);
	if (r < 0) {
		http_ask_lost(srv, r);
		return -EPIPE;
	}
	return 0;
}

/* See http_ask.h. */
int
http_ask_refused(json_object *ans, const char **why)
{
	*why = json_get_string(ans, "error");
	if (json_get_int(ans, "errno", 0) != EACCES)
		return 0;
	if (!*why)
		*why = "refused";
	return 1;
}

/* See http_ask.h. */
void
http_ask_event(struct watch *w, int revents)
{
	struct http_server *srv = w->arg;
	json_object *ev = NULL;
	const char *type;
	int r = privsep_recv(srv->ev_fd, PRIVSEP_MAX_REQUEST, &ev, NULL, NULL,
	    0);

	(void)revents;
	if (r < 0) {
		loop_del(w);
		http_ask_lost(srv, r);
		return;
	}
	type = json_get_string(ev, "type");
	if (type && strcmp(type, "end_room") == 0)
		http_stream_end_room(srv, json_get_string(ev, "room"),
		    json_get_string(ev, "message"));
	else if (type && strcmp(type, "wake") == 0) {
		http_stream_wake(srv);
		api_room_wake(srv);
	}
	json_object_put(ev);
}
