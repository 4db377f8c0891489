/*
 * http_stream.c: what an event stream and a WebSocket share
 * (http_stream.h): the room checked, waited for and joined through the
 * monitor, the agent's lines routed to the reader, the ticks (a starting
 * room asked again, pings, WebSocket output), the ends, and the reaping.
 * Called by the two routes (http_sse.c, http_ws.c), the loop
 * (http_server.c: tick before MHD_run, reap after) and the monitor's
 * events (http_ask.c).
 *
 * Lifetime: a stream is in srv->streams from its route's handler until
 * it is DEAD; http_stream_reap frees it after MHD_run, so no callback
 * (MHD's reader, the agent link's, wslay's) ever runs on freed memory.
 * An SSE stream dies when MHD says its request is over; a WebSocket when
 * its socket is closed (MHD_upgrade_action).
 */
#include "http_stream_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http_ask.h"
#include "http_server.h"
#include "jsonl.h"
#include "log.h"
#include "util.h"

/* See http_stream_int.h. */
struct http_stream *
http_stream_new(struct http_req *r, enum http_stream_kind kind)
{
	struct http_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->srv = r->srv;
	s->kind = kind;
	s->state = HTTP_STREAM_WAITING;
	s->req = r;
	s->sock = -1;
	s->since = -1;
	snprintf(s->room, sizeof(s->room), "%s", r->room);
	snprintf(s->token, sizeof(s->token), "%s", r->token);
	snprintf(s->addr, sizeof(s->addr), "%s", r->addr);
	snprintf(s->user, sizeof(s->user), "%s", r->user);
	agentlink_init(&s->link);
	buf_init(&s->out, HTTP_STREAM_BACKLOG);
	buf_init(&s->held, HTTP_WS_HELD);
	s->wait_until_ms = time_mono_ms() + HTTP_STREAM_WAIT_MS;
	s->quiet_since_ms = time_mono_ms();
	r->stream = s;
	s->next = r->srv->streams;
	r->srv->streams = s;
	r->srv->nstreams++;
	return s;
}

/* The monitor's answer to use, for r: 0 ready or starting, or 1 with r
 * answered. */
static int
http_stream_use(struct http_req *r, int *ret)
{
	json_object *ans;
	const char *state, *why;
	char msg[512];

	if (http_ask(r->srv, http_ask_new(r, "use", 1), &ans, NULL, NULL,
	    0) < 0) {
		*ret = http_reply_error(r, 503, "atriumd is stopping");
		return 1;
	}
	state = json_get_string(ans, "state");
	if (http_ask_refused(ans, &why) ||
	    (state && strcmp(state, "refused") == 0)) {
		*ret = http_reply_error(r, 403, why ? why : "refused");
	} else if (http_ask_remote(ans, r->room, msg, sizeof(msg))) {
		*ret = http_reply_error(r, 503, msg);
	} else if (!state || strcmp(state, "failed") == 0) {
		*ret = http_reply_error(r, 503, why ? why : "the room could "
		    "not start; try again");
	} else {
		json_object_put(ans);
		return 0;
	}
	json_object_put(ans);
	return 1;
}

/* See http_stream_int.h. */
int
http_stream_admit(struct http_req *r, int *ret)
{
	json_object *req = http_ask_new(r, "access", 1), *ans;
	const char *why;
	int exists, enter, answered = 1;

	if (r->srv->drain_until_ms) {	/* it would only hold up the restart */
		json_object_put(req);
		*ret = http_reply_error(r, 503, "atriumd-http restarts with "
		    "new settings: connect again in a moment");
		return 1;
	}
	if (req)
		json_object_object_add(req, "for", json_object_new_string(
		    "http"));
	if (http_ask(r->srv, req, &ans, NULL, NULL, 0) < 0) {
		*ret = http_reply_error(r, 503, "atriumd is stopping");
		return 1;
	}
	exists = json_get_bool(ans, "exists", 0);
	enter = json_get_bool(ans, "may_enter", 0);
	if (http_ask_refused(ans, &why))
		*ret = http_reply_error(r, 403, why);
	else if (json_get_int(ans, "errno", 0))
		*ret = http_reply_error(r, 503, "the room cannot be read now "
		    "(it may be being imported); try again");
	else if (!exists && json_get_bool(ans, "cluster", 0))
		*ret = http_reply_error(r, 404, "no such room in this "
		    "cluster: make it over SSH first (ssh -p PORT "
		    "ROOM@HOST); atriumd cluster status shows where each "
		    "room is");
	else if (!exists)
		*ret = http_reply_error(r, 404, "no such room: make it over "
		    "SSH first (ssh -p PORT ROOM@HOST)");
	else if (!enter)
		*ret = http_reply_error(r, 403, "you may not enter this room");
	else
		answered = 0;
	json_object_put(ans);
	if (answered)
		return 1;
	return http_stream_use(r, ret);
}

/* A line from the room's agent: to the reader, framed by its kind. */
static void
http_stream_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct http_stream *s = arg;

	if (s->state == HTTP_STREAM_DEAD)
		return;
	if (s->kind == HTTP_STREAM_SSE)
		http_sse_queue(s, json_get_string(obj, "type"),
		    json_get_int(obj, "seq", -1), line, len);
	else
		http_ws_queue_event(s, obj, line, len);
}

/* The agent closed the link (the room stopped or restarted). */
static void
http_stream_link_end(void *arg)
{
	http_stream_end(arg, "the room's agent stopped; reconnect (with "
	    "Last-Event-ID) to go on");
}

/* Ask for the agent link once the room is ready.  1 joined, 0 not yet,
 * -1 failed (ended). */
static int
http_stream_join(struct http_stream *s)
{
	json_object *req = http_ask_make("agent", s->token, s->addr, s->room);
	json_object *ans;
	int fd = -1, nfds = 0;

	if (req) {
		json_object_object_add(req, "kind",
		    json_object_new_string(s->person ? "chat" : "control"));
		if (s->since >= 0)
			json_object_object_add(req, "since",
			    json_object_new_int64(s->since));
	}
	if (http_ask(s->srv, req, &ans, &fd, &nfds, 1) < 0)
		return -1;
	if (nfds != 1) {
		int e = (int)json_get_int(ans, "errno", 0);

		json_object_put(ans);
		return e == EACCES ? -1 : 0;
	}
	json_object_put(ans);
	if (agentlink_attach(&s->link, &s->srv->loop, fd, http_stream_line,
	    http_stream_link_end, s) < 0)
		return -1;
	s->state = HTTP_STREAM_LIVE;
	if (s->kind == HTTP_STREAM_WS)
		http_ws_flush_held(s);
	return 1;
}

/* See http_stream_int.h. */
void
http_stream_connect(struct http_stream *s)
{
	json_object *ans;
	const char *state, *why;
	char msg[512];
	int r = 0;

	if (http_ask(s->srv, http_ask_make("use", s->token, s->addr, s->room),
	    &ans, NULL, NULL, 0) < 0) {
		http_stream_end(s, "atriumd is stopping");
		return;
	}
	state = json_get_string(ans, "state");
	if (http_ask_remote(ans, s->room, msg, sizeof(msg))) {
		json_object_put(ans);
		http_stream_end(s, msg);	/* the home moved meanwhile */
		return;
	}
	if (http_ask_refused(ans, &why) || !state ||
	    strcmp(state, "refused") == 0 || strcmp(state, "failed") == 0)
		r = -1;
	else if (strcmp(state, "ready") == 0)
		r = http_stream_join(s);
	json_object_put(ans);
	if (r < 0 || (r == 0 && time_mono_ms() > s->wait_until_ms)) {
		http_stream_end(s, "the room could not be reached; try again");
		return;
	}
	if (r == 0)
		s->retry_ms = time_mono_ms() + HTTP_STREAM_RETRY_MS;
}

/* See http_stream_int.h. */
void
http_stream_end(struct http_stream *s, const char *why)
{
	json_object *ev;
	const char *text;

	if (s->state == HTTP_STREAM_ENDING || s->state == HTTP_STREAM_DEAD)
		return;
	ev = json_object_new_object();
	json_object_object_add(ev, "type", json_object_new_string("end"));
	json_object_object_add(ev, "message", json_object_new_string(why));
	text = json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN);
	if (s->kind == HTTP_STREAM_SSE)
		http_sse_queue(s, "end", -1, text, strlen(text));
	else
		http_ws_queue(s, text, strlen(text));
	json_object_put(ev);
	s->state = HTTP_STREAM_ENDING;
	if (s->kind == HTTP_STREAM_WS)
		http_ws_tick(s);
	else
		http_sse_tick(s);
}

/* See http_stream.h. */
void
http_stream_detach(struct http_stream *s)
{
	s->req = NULL;
	/* An upgraded WebSocket lives on its socket; one whose request ended
	 * before the upgrade (the client left) never gets one: if MHD hands
	 * it over anyway, http_ws_upgraded closes it at once. */
	if (s->kind == HTTP_STREAM_SSE || s->sock < 0)
		s->state = HTTP_STREAM_DEAD;
}

/* See http_stream.h. */
void
http_stream_end_room(struct http_server *srv, const char *room,
    const char *msg)
{
	for (struct http_stream *s = srv->streams; s && room; s = s->next)
		if (strcmp(s->room, room) == 0)
			http_stream_end(s, msg ? msg : "the room was deleted");
}

/* See http_stream.h. */
void
http_stream_end_all(struct http_server *srv, const char *msg)
{
	for (struct http_stream *s = srv->streams; s; s = s->next)
		http_stream_end(s, msg);
}

/* See http_stream.h. */
void
http_stream_wake(struct http_server *srv)
{
	for (struct http_stream *s = srv->streams; s; s = s->next)
		if (s->state == HTTP_STREAM_WAITING)
			s->retry_ms = 0;
}

/* See http_stream.h. */
void
http_stream_tick(struct http_server *srv)
{
	long long now = time_mono_ms();

	for (struct http_stream *s = srv->streams; s; s = s->next) {
		if (s->state == HTTP_STREAM_WAITING && s->retry_ms <= now &&
		    (s->kind == HTTP_STREAM_SSE || s->ws))
			http_stream_connect(s);
		if (s->state == HTTP_STREAM_WAITING && s->retry_ms)
			loop_wake_at(&srv->loop, s->retry_ms);
		if (s->kind == HTTP_STREAM_SSE)
			http_sse_tick(s);
		else
			http_ws_tick(s);
		/* Its exec lines that got their exec_done are over. */
		http_cap_sync(srv, &s->cap, s->state == HTTP_STREAM_DEAD ? 0 :
		    agentlink_execs(&s->link));
	}
}

/* Free s (DEAD, out of the list). */
static void
http_stream_free(struct http_stream *s)
{
	if (s->req)
		s->req->stream = NULL;
	agentlink_close(&s->link);
	http_cap_release(s->srv, &s->cap);
	buf_free(&s->out);
	buf_free(&s->held);
	if (s->ws)
		wslay_event_context_free(s->ws);
	explicit_bzero(s->token, sizeof(s->token));
	free(s);
}

/* See http_stream.h. */
void
http_stream_reap(struct http_server *srv)
{
	struct http_stream **pp = &srv->streams;

	while (*pp) {
		struct http_stream *s = *pp;

		if (s->state != HTTP_STREAM_DEAD) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		srv->nstreams--;
		http_stream_free(s);
	}
}

/* See http_stream.h. */
void
http_stream_counts(struct http_server *srv, long long *sse, long long *ws,
    long long *commands)
{
	*sse = *ws = *commands = 0;
	for (struct http_stream *s = srv->streams; s; s = s->next) {
		if (s->state == HTTP_STREAM_DEAD)
			continue;
		if (s->kind == HTTP_STREAM_SSE)
			++*sse;
		else
			++*ws;
		*commands += agentlink_execs(&s->link);
	}
}

/* See http_stream.h. */
void
http_stream_free_all(struct http_server *srv)
{
	while (srv->streams) {
		struct http_stream *s = srv->streams;

		srv->streams = s->next;
		if (s->sock >= 0)
			http_ws_close(s);
		http_stream_free(s);
	}
	srv->nstreams = 0;
}
