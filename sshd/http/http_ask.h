/*
 * http_ask.h: atriumd-http's requests to the monitor (http_ask.c; the
 * wire is privsep.h, the rules the monitor applies are http_front.h).
 * http_ask sends one request and waits for its answer: the monitor
 * answers from its own loop at once, so the wait is a round trip.  A
 * request that can take the monitor long (the rooms listing reads a
 * record per room: an admin with thousands of rooms) is asked with
 * http_ask_later instead, so the loop serves every other client while
 * the monitor works.  When
 * the monitor is gone every call fails with -EPIPE and the process stops.
 * A request that acts for someone carries the request's token and the
 * client's address, never a user: who it is for is the monitor's finding.
 */
#ifndef ATRIUMD_HTTP_ASK_H
#define ATRIUMD_HTTP_ASK_H

#include <json-c/json.h>

#include "ask_queue.h"

struct http_req;
struct http_server;

/* Set srv's queue of requests answered later up, on srv->req_fd. */
void http_ask_init(struct http_server *srv);

/* A request of type for token from addr (room too when not NULL), or
 * NULL (out of memory). */
json_object *http_ask_make(const char *type, const char *token,
    const char *addr, const char *room);

/* A request of type for r (token and addr; room too when with_room), or
 * NULL (out of memory). */
json_object *http_ask_new(const struct http_req *r, const char *type,
    int with_room);

/* Send req (consumed) and wait for the answer, into *ans (the caller's),
 * with up to maxfds descriptors into fds (*nfds of them).  0; -EPIPE
 * when the monitor is gone (srv->stopping is set); another -errno. */
int http_ask(struct http_server *srv, json_object *req, json_object **ans,
    int *fds, int *nfds, int maxfds);

/*
 * A request answered later.  Answers come in the order of the requests;
 * one that arrives while http_ask waits for its own is kept, and each is
 * handed to its done callback from the loop (http_ask_deliver, before
 * MHD's run), outside every other callback (ask_queue.h).  The one who
 * asked cancels (ask_queue_cancel) before it goes: the answer is then
 * dropped.
 */

/* Send req (consumed); done(arg, ans) gets the answer later (ans NULL
 * when the monitor is gone; borrowed).  A handle for ask_queue_cancel, or
 * NULL when it could not be asked (done is not called then). */
struct ask_pending *http_ask_later(struct http_server *srv,
    json_object *req, void (*done)(void *arg, json_object *ans), void *arg);

/* Hand the answers that came to their done callbacks, in order. */
void http_ask_deliver(struct http_server *srv);


/* Whether the answer is a refusal of who the request is for: 1 with its
 * reason in *why (borrowed from ans), 0 when not. */
int http_ask_refused(json_object *ans, const char **why);

/* Whether a use answer says room is served by another host of the
 * cluster: 1 with what to tell the client in msg, 0 when not.  A request
 * for such a room is relayed before its route runs (http_proxy.h), so a
 * route sees this only for a room that moved meanwhile. */
int http_ask_remote(json_object *ans, const char *room, char *msg,
    size_t len);

/* The monitor's event socket is readable: end_room ends that room's
 * streams, wake lets streams waiting for a room ask again. */
struct watch;
void http_ask_event(struct watch *w, int revents);

#endif
