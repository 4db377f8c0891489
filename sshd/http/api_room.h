/*
 * api_room.h: a connection to a room's agent for a request (api_room.c),
 * as atriumd-net's channels get theirs: the monitor's `use` (start the
 * room, or say it is starting), then its `agent` (a connection with the
 * hello the monitor writes for the token's user).  A room that is still
 * starting is waited for without blocking the loop: the waiter joins
 * srv->room_waits and asks again at each of the monitor's `wake` events
 * (a room became ready or failed).
 *
 * A waiter lives in its route's request state; the route cancels it when
 * the request ends first (its ctx_free), so no waiter outlives its
 * request.  fn is called exactly once per api_room_open that returned,
 * never after api_room_cancel.
 */
#ifndef ATRIUMD_API_ROOM_H
#define ATRIUMD_API_ROOM_H

struct http_req;
struct http_server;

/* The room's agent connection (fd >= 0, the callee's from now on), or a
 * refusal: fd < 0, status (403, 404, 503...) and why for the client. */
typedef void (*api_room_fn)(struct http_req *r, int fd, unsigned status,
    const char *why);

struct api_room_wait {
	struct api_room_wait *next;	/* in srv->room_waits while waiting */
	struct http_req *r;		/* the request it is for */
	char kind[16];			/* "exec" or "control" */
	long long history;		/* events the hello replays */
	api_room_fn fn;
	int waiting;			/* in srv->room_waits */
};

/* Start connecting r to r->room's agent as kind with history replayed
 * events; fn follows, maybe before this returns. */
void api_room_open(struct api_room_wait *w, struct http_req *r,
    const char *kind, long long history, api_room_fn fn);

/* The request ends: forget w (no fn follows).  Safe when not waiting. */
void api_room_cancel(struct api_room_wait *w);

/* The monitor's wake: every waiter asks again. */
void api_room_wake(struct http_server *srv);

#endif
