/*
 * api_room.c: a room's agent connection for a request (api_room.h).
 * Called by the routes that speak the room protocol for one request
 * (api_exec.c, api_capture.c, api_talk.c) and, for `wake`,
 * by http_ask.c.
 */
#include "api_room.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "http_ask.h"
#include "http_req.h"
#include "http_server.h"
#include "jsonl.h"
#include "log.h"

/* Take w off the waiting list. */
static void
api_room_unlink(struct api_room_wait *w)
{
	struct api_room_wait **pp;

	if (!w->waiting)
		return;
	for (pp = &w->r->srv->room_waits; *pp; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	w->waiting = 0;
	w->next = NULL;
}

/* Call w's fn once with a refusal. */
static void
api_room_fail(struct api_room_wait *w, unsigned status, const char *why)
{
	api_room_unlink(w);
	w->fn(w->r, -1, status, why);
}

/* The monitor's agent request: the connection, or a refusal to fn. */
static void
api_room_agent(struct api_room_wait *w)
{
	struct http_req *r = w->r;
	json_object *req = http_ask_new(r, "agent", 1), *ans;
	const char *why;
	int fd = -1, nfds = 0;

	if (req) {
		json_object_object_add(req, "kind",
		    json_object_new_string(w->kind));
		json_object_object_add(req, "history",
		    json_object_new_int64(w->history));
	}
	if (http_ask(r->srv, req, &ans, &fd, &nfds, 1) < 0) {
		api_room_fail(w, 503, "atriumd is stopping; try again later");
		return;
	}
	if (nfds == 1 && json_get_bool(ans, "fd", 0)) {
		json_object_put(ans);
		api_room_unlink(w);
		w->fn(r, fd, 0, NULL);
		return;
	}
	if (nfds == 1)
		close(fd);
	if (http_ask_refused(ans, &why))
		api_room_fail(w, 403, why);
	else
		api_room_fail(w, 503, "the room's agent does not answer; try "
		    "again");
	json_object_put(ans);
}

/* Ask `use`: ready goes on to agent, starting waits for a wake, the rest
 * is the client's answer. */
static void
api_room_use(struct api_room_wait *w)
{
	struct http_req *r = w->r;
	json_object *ans;
	const char *state, *why;
	char msg[512];

	if (http_ask(r->srv, http_ask_new(r, "use", 1), &ans, NULL, NULL,
	    0) < 0) {
		api_room_fail(w, 503, "atriumd is stopping; try again later");
		return;
	}
	state = json_get_string(ans, "state");
	why = json_get_string(ans, "error");
	snprintf(msg, sizeof(msg), "%s", why ? why : "");
	if (http_ask_refused(ans, &why) || (state && !strcmp(state, "refused"))) {
		snprintf(msg, sizeof(msg), "%s", why ? why : "refused");
		json_object_put(ans);
		api_room_fail(w, 403, msg);
		return;
	}
	if (http_ask_remote(ans, r->room, msg, sizeof(msg))) {
		json_object_put(ans);
		api_room_fail(w, 503, msg);
		return;
	}
	json_object_put(ans);
	if (state && strcmp(state, "ready") == 0) {
		api_room_agent(w);
	} else if (state && strcmp(state, "starting") == 0) {
		if (!w->waiting) {
			w->next = r->srv->room_waits;
			r->srv->room_waits = w;
			w->waiting = 1;
		}
	} else {
		api_room_fail(w, 503, msg[0] ? msg : "the room could not be "
		    "started; atriumd's log says why");
	}
}

/* See api_room.h. */
void
api_room_open(struct api_room_wait *w, struct http_req *r, const char *kind,
    long long history, api_room_fn fn)
{
	memset(w, 0, sizeof(*w));
	w->r = r;
	snprintf(w->kind, sizeof(w->kind), "%s", kind);
	w->history = history;
	w->fn = fn;
	api_room_use(w);
}

/* See api_room.h. */
void
api_room_cancel(struct api_room_wait *w)
{
	if (w && w->r)
		api_room_unlink(w);
}

/* See api_room.h. */
void
api_room_wake(struct http_server *srv)
{
	struct api_room_wait *list = srv->room_waits, *next;

	/* Each asks again; those still starting join the list anew. */
	srv->room_waits = NULL;
	for (struct api_room_wait *w = list; w; w = next) {
		next = w->next;
		w->waiting = 0;
		w->next = NULL;
		api_room_use(w);
	}
}
