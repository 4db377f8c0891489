/*
 * api_talk.c: a request's conversation with its room (api_talk.h).
 * Called by api_duet.c and api_rhema.c.  The connection is of kind
 * control: it gets the room's events without being announced as a
 * person (agent/requests.c), and its hello (the monitor's) names the
 * token's user, so what it sends is that user's.
 */
#include "api_talk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "agentlink.h"
#include "api_room.h"
#include "api_util.h"
#include "http_req.h"
#include "http_server.h"
#include "jsonl.h"

struct api_talk {
	struct http_req *r;
	struct api_room_wait room;	/* while the room opens */
	struct agentlink link;		/* kind control */
	json_object *lines;		/* sent once connected */
	api_talk_line_fn on_line;
	void *arg;			/* the route's state */
	void (*free_arg)(void *);
	int over;
	unsigned status;		/* 0: success */
	struct api_hangup hup;		/* the client, while it waits */
	char why[512];
};

/* The request's state; freed at its completion. */
static void
api_talk_free(void *p)
{
	struct api_talk *t = p;

	if (!t)
		return;
	api_room_cancel(&t->room);
	api_hangup_stop(&t->hup);
	agentlink_close(&t->link);
	json_object_put(t->lines);
	if (t->free_arg)
		t->free_arg(t->arg);
	free(t);
}

/* See api_talk.h. */
void
api_talk_over(struct api_talk *t, unsigned status, const char *why)
{
	if (t->over)
		return;
	t->over = 1;
	t->status = status;
	snprintf(t->why, sizeof(t->why), "%s", why ? why : "");
	agentlink_pause(&t->link, 1);
	http_req_resume(t->r);
}

/* A line of the room, to the route while the talk goes on. */
static void
api_talk_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct api_talk *t = arg;
	const char *type = json_get_string(obj, "type");

	(void)line; (void)len;
	if (t->over)
		return;
	if (type && strcmp(type, "access_denied") == 0) {
		api_talk_over(t, 403, json_get_string(obj, "message"));
		return;
	}
	t->on_line(t, obj);
}

/* The agent went away first. */
static void
api_talk_end(void *arg)
{
	api_talk_over(arg, 503, "the room's agent stopped; try again");
}

/* Connected (or refused): send the route's lines. */
static void
api_talk_opened(struct http_req *r, int fd, unsigned status, const char *why)
{
	struct api_talk *t = r->ctx;
	size_t n = json_object_array_length(t->lines);

	if (fd < 0) {
		api_talk_over(t, status, why);
		return;
	}
	if (agentlink_attach(&t->link, &r->srv->loop, fd, api_talk_line,
	    api_talk_end, t) < 0) {
		api_talk_over(t, 503, "cannot reach the room's agent; try again");
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (api_talk_send(t, json_object_array_get_idx(t->lines, i)) < 0)
			api_talk_over(t, 503, "cannot reach the room's agent; "
			    "try again");
}

/* See api_talk.h. */
int
api_talk_begin(struct http_req *r, long long history, json_object *lines,
    api_talk_line_fn on_line, void *arg, void (*free_arg)(void *))
{
	struct api_talk *t = calloc(1, sizeof(*t));

	if (!t) {
		json_object_put(lines);
		if (free_arg)
			free_arg(arg);
		http_reply_error(r, 503, "out of memory; try again");
		return -ENOMEM;
	}
	t->r = r;
	t->lines = lines;
	t->on_line = on_line;
	t->arg = arg;
	t->free_arg = free_arg;
	agentlink_init(&t->link);
	r->ctx = t;
	r->ctx_free = api_talk_free;
	api_hangup_watch(&t->hup, r);
	api_room_open(&t->room, r, "control", history, api_talk_opened);
	return 0;
}

/* See api_talk.h. */
struct api_talk *
api_talk_of(struct http_req *r)
{
	return r->ctx_free == api_talk_free ? r->ctx : NULL;
}

/* See api_talk.h. */
void *
api_talk_arg(struct api_talk *t)
{
	return t->arg;
}

/* See api_talk.h. */
const char *
api_talk_user(struct api_talk *t)
{
	return t->r->user;
}

/* See api_talk.h. */
int
api_talk_send(struct api_talk *t, json_object *line)
{
	return agentlink_send(&t->link, line);
}

/* See api_talk.h. */
int
api_talk_wait(struct http_req *r, struct api_talk *t, unsigned *status,
    const char **why)
{
	if (t->hup.gone)
		return -1;
	if (!t->over) {
		r->suspended = 1;
		MHD_suspend_connection(r->conn);
		return 0;
	}
	*status = t->status;
	*why = t->why;
	return 1;
}

/* See api_talk.h. */
int
api_talk_serve(struct http_req *r, int (*begin)(struct http_req *r),
    int (*answer)(struct http_req *r, void *arg))
{
	struct api_talk *t = api_talk_of(r);
	const char *why;
	unsigned status;
	int w;

	if (!t) {
		int ret = begin(r);

		if (r->answered || !(t = api_talk_of(r)))
			return ret;
	}
	if ((w = api_talk_wait(r, t, &status, &why)) <= 0)
		return w < 0 ? MHD_NO : MHD_YES;
	if (status)
		return http_reply_error(r, status, why);
	return answer(r, api_talk_arg(t));
}
