/*
 * http_ask.c: atriumd-http's side of the request and event sockets
 * (http_ask.h).  Called by the routes (http_api.c, http_auth.c,
 * http_stream.c) and by the loop (http_ask_event).  The requests answered
 * later are queued in ask_queue.h's queue, as atriumd-net's are.
 */
#include "http_ask.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api_room.h"
#include "ask_queue.h"
#include "http_proxy.h"
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

/* The monitor is gone, or broke the wire: stop (ask_queue's lost). */
static void
http_ask_lost(void *arg, int r)
{
	struct http_server *srv = arg;

	if (!srv->stopping)
		log_error("the monitor does not answer (%s); stopping",
		    strerror(-r));
	srv->stopping = 1;
}

/* See http_ask.h. */
void
http_ask_init(struct http_server *srv)
{
	ask_queue_init(&srv->asks, &srv->loop, srv->req_fd, ASK_QUEUE_WAKE_NOW,
	    http_ask_lost, srv);
}

/* See http_ask.h. */
struct ask_pending *
http_ask_later(struct http_server *srv, json_object *req,
    void (*done)(void *arg, json_object *ans), void *arg)
{
	if (srv->stopping) {
		json_object_put(req);
		return NULL;
	}
	return ask_queue_later(&srv->asks, req, done, arg);
}

/* See http_ask.h. */
void
http_ask_deliver(struct http_server *srv)
{
	ask_queue_deliver(&srv->asks, srv->stopping);
}

/* See http_ask.h. */
int
http_ask(struct http_server *srv, json_object *req, json_object **ans,
    int *fds, int *nfds, int maxfds)
{
	*ans = NULL;
	if (nfds)
		*nfds = 0;
	if (!req)
		return -ENOMEM;
	if (srv->stopping) {
		json_object_put(req);
		return -EPIPE;
	}
	return ask_queue_ask(&srv->asks, req, ans, fds, nfds, maxfds) < 0 ?
	    -EPIPE : 0;
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
int
http_ask_remote(json_object *ans, const char *room, char *msg, size_t len)
{
	const char *state = json_get_string(ans, "state");
	const char *node = json_get_string(ans, "node");
	const char *addr = json_get_string(ans, "addr");

	if (!state || strcmp(state, "remote") != 0)
		return 0;
	/* A request is relayed before its route runs (http_proxy.h): this
	 * is a room that moved to another host meanwhile. */
	snprintf(msg, len, "room %s is served by host %s (%s) now: it moved "
	    "while the request began; try again", room, node ? node : "?",
	    addr ? addr : "?");
	return 1;
}

/* See http_ask.h. */
void
http_ask_event(struct watch *w, int revents)
{
	struct http_server *srv = w->arg;
	json_object *ev = NULL;
	const char *type;
	int fd = -1, nfds = 0;
	int r = privsep_recv(srv->ev_fd, PRIVSEP_MAX_REQUEST, &ev, &fd, &nfds,
	    1);

	(void)revents;
	if (r < 0) {
		loop_del(w);
		http_ask_lost(srv, r);
		return;
	}
	type = json_get_string(ev, "type");
	if (nfds == 1 && type && strcmp(type, "http_conn") == 0)
		http_server_add_relayed(srv, fd, json_get_string(ev, "addr"));
	else if (nfds == 1)
		close(fd);	/* no other event carries one */
	if (type && strcmp(type, "end_room") == 0)
		http_stream_end_room(srv, json_get_string(ev, "room"),
		    json_get_string(ev, "message"));
	else if (type && strcmp(type, "wake") == 0) {
		http_stream_wake(srv);
		api_room_wake(srv);
		http_proxy_wake(srv, 1);
	}
	json_object_put(ev);
}
