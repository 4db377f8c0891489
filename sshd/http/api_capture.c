/*
 * api_capture.c: a command with its output captured by the room
 * (api_capture.h).  Called by api_cloudflare.c and api_duet.c.
 *
 * States: opening (the room and its agent connection, api_room.h), then
 * running (the exec line sent on a connection of kind exec, waiting for
 * its exec_result or an error about it), then over.  The agent kills a
 * command whose connection closes, so a client that leaves early takes
 * its command with it (api_capture_free).
 */
#include "api_capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "agentlink.h"
#include "api_room.h"
#include "api_util.h"
#include "http_cap.h"
#include "http_req.h"
#include "http_server.h"
#include "jsonl.h"
#include "util.h"

#define API_CAPTURE_ID	"c1"	/* the one exec on its connection */

struct api_capture {
	struct http_req *r;
	struct api_room_wait room;	/* while the room opens */
	struct agentlink link;		/* kind exec */
	json_object *spec;		/* command or argv, cwd */
	json_object *result;		/* exec_result, once over */
	int over;			/* result, or a failure */
	unsigned fail_status;		/* the failure's answer */
	char fail_why[512];
	long long start_ms, end_ms;
	struct api_hangup hup;		/* the client, while it waits */
	struct http_cap cap;		/* the command, counted against its
					 * user's max-commands-per-user */
};

/* The request's state; freed at its completion. */
static void
api_capture_free(void *arg)
{
	struct api_capture *c = arg;

	if (!c)
		return;
	api_room_cancel(&c->room);
	api_hangup_stop(&c->hup);
	agentlink_close(&c->link);
	http_cap_release(c->r->srv, &c->cap);
	json_object_put(c->spec);
	json_object_put(c->result);
	free(c);
}

/* Over: with result (taken) or a failure (status, why). */
static void
api_capture_over(struct api_capture *c, json_object *result, unsigned status,
    const char *why)
{
	if (c->over) {
		json_object_put(result);
		return;
	}
	c->over = 1;
	c->end_ms = time_mono_ms();
	http_cap_release(c->r->srv, &c->cap);
	c->result = result;
	c->fail_status = status;
	snprintf(c->fail_why, sizeof(c->fail_why), "%s", why ? why : "");
	http_req_resume(c->r);
}

/* A line from the agent: our exec_result, or an error about our exec. */
static void
api_capture_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct api_capture *c = arg;
	const char *type = json_get_string(obj, "type");
	const char *id = json_get_string(obj, "id");

	(void)line; (void)len;
	if (!type || (id && strcmp(id, API_CAPTURE_ID) != 0) ||
	    json_get_bool(obj, "replay", 0))
		return;
	if (strcmp(type, "exec_result") == 0)
		api_capture_over(c, json_object_get(obj), 0, NULL);
	else if (strcmp(type, "error") == 0)
		api_capture_over(c, NULL, strstr(json_get_string(obj,
		    "message") ?: "", "read-only") ? 403 : 400,
		    json_get_string(obj, "message"));
	else if (strcmp(type, "access_denied") == 0)
		api_capture_over(c, NULL, 403, json_get_string(obj, "message"));
}

/* The agent went away before the result. */
static void
api_capture_end(void *arg)
{
	api_capture_over(arg, NULL, 503, "the room's agent stopped while the "
	    "command ran; run it again");
}

/* The room's agent connection (or a refusal): send the exec line. */
static void
api_capture_opened(struct http_req *r, int fd, unsigned status,
    const char *why)
{
	struct api_capture *c = r->ctx;
	json_object *line;

	if (fd < 0) {
		api_capture_over(c, NULL, status, why);
		return;
	}
	if (agentlink_attach(&c->link, &r->srv->loop, fd, api_capture_line,
	    api_capture_end, c) < 0) {
		api_capture_over(c, NULL, 503, "cannot reach the room's agent; "
		    "try again");
		return;
	}
	line = json_object_get(c->spec);
	json_object_object_add(line, "type", json_object_new_string("exec"));
	json_object_object_add(line, "id",
	    json_object_new_string(API_CAPTURE_ID));
	if (agentlink_send(&c->link, line) < 0)
		api_capture_over(c, NULL, 503, "cannot reach the room's agent; "
		    "try again");
	json_object_put(line);
}

/* See api_capture.h. */
int
api_capture_begin(struct http_req *r, json_object *spec)
{
	struct api_capture *c = calloc(1, sizeof(*c));
	char why[400];

	if (!c) {
		json_object_put(spec);
		http_reply_error(r, 503, "out of memory; try again");
		return -ENOMEM;
	}
	c->r = r;
	c->spec = spec;
	c->start_ms = time_mono_ms();
	agentlink_init(&c->link);
	r->ctx = c;
	r->ctx_free = api_capture_free;
	api_hangup_watch(&c->hup, r);
	if (http_cap_take(r->srv, r->token, r->addr, &c->cap, why,
	    sizeof(why)) != 0) {
		http_reply_error(r, 429, why);
		return -EBUSY;
	}
	api_room_open(&c->room, r, "exec", 0, api_capture_opened);
	return 0;
}

/* See api_capture.h. */
struct api_capture *
api_capture_of(struct http_req *r)
{
	return r->ctx_free == api_capture_free ? r->ctx : NULL;
}

/* See api_capture.h. */
int
api_capture_wait(struct http_req *r, struct api_capture *c)
{
	if (c->hup.gone)
		return -1;
	if (c->over)
		return 1;
	r->suspended = 1;
	MHD_suspend_connection(r->conn);
	return 0;
}

/* See api_capture.h. */
json_object *
api_capture_result(struct api_capture *c, unsigned *status, const char **why)
{
	*status = c->fail_status;
	*why = c->fail_why;
	return c->result;
}

/* See api_capture.h. */
long long
api_capture_ms(const struct api_capture *c)
{
	return (c->end_ms ? c->end_ms : time_mono_ms()) - c->start_ms;
}

/* See api_capture.h. */
json_object *
api_capture_spec(struct api_capture *c)
{
	return c->spec;
}

/* See api_capture.h. */
int
api_capture_serve(struct http_req *r, int (*begin)(struct http_req *r),
    int (*answer)(struct http_req *r, json_object *res))
{
	struct api_capture *c = api_capture_of(r);
	json_object *res;
	const char *why;
	unsigned status;
	int w;

	if (!c) {
		int ret = begin(r);

		if (r->answered || !(c = api_capture_of(r)))
			return ret;
	}
	if ((w = api_capture_wait(r, c)) <= 0)
		return w < 0 ? MHD_NO : MHD_YES;
	if (!(res = api_capture_result(c, &status, &why)))
		return http_reply_error(r, status, why);
	return answer(r, res);
}
