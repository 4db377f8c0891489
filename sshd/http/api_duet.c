/*
 * api_duet.c: Duet's worker over Atrium (api_duet.h): a Duet roomId is a
 * room's name.  What maps to what:
 *
 *   POST /api/rooms/{room}/messages  {"text", "userId"?}
 *       a prompt to the room's agent from the token's user (Duet's
 *       userId is only echoed: who speaks is the token's key); answered
 *       at the end of the turn it started, as Duet answers once its model
 *       did: {"reply": the agent's text in that turn, "messages": the
 *       room's latest people's lines, prompts and agent answers, at most
 *       50, each {"role": "user"|"agent", "userId", "text", "ts" (ms)}}.
 *       Duet runs the commands its model wraps in <run> tags and appends
 *       their output to the reply; the room's agent runs its tools as the
 *       room's approval policy says, and what they did is in the room's
 *       events, not in reply.  POST .../message (Duet's first name for
 *       it) is the same.
 *   POST /api/rooms/{room}/sandbox/exec  {"cmd"}
 *       a command in the room's sandbox, captured (api_capture.h):
 *       {"result": {"success", "exitCode", "stdout", "stderr", "command",
 *       "duration" (ms), "timestamp"}, "sandboxName": "sandbox-ROOM"}
 *   DELETE /api/rooms/{room}
 *       the room and all it holds (the monitor's delete: the owner or an
 *       admin only, 403 otherwise; 404 when there is no such room):
 *       {"deleted": ROOM}
 *   a bad body: 400 {"error": "invalid request", "details": {FIELD:
 *       [why]}}, as Duet's schema check answers.
 */
#include "api_duet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "api_capture.h"
#include "api_talk.h"
#include "api_util.h"
#include "event_time.h"
#include "http_ask.h"
#include "http_req.h"
#include "jsonl.h"
#include "util.h"

#define API_DUET_MESSAGES	50	/* kept in the answer, as Duet keeps */
#define API_DUET_HISTORY	200	/* events replayed to find them */
#define API_DUET_MAX_REPLY	(1024 * 1024)

/* 400 as Duet's schema check words it: one field, one reason. */
static int
api_duet_invalid(struct http_req *r, const char *field, const char *why)
{
	json_object *o = json_object_new_object(), *d = json_object_new_object();
	json_object *a = json_object_new_array();
	int ret;

	json_object_array_add(a, json_object_new_string(why));
	json_object_object_add(d, field, a);
	json_object_object_add(o, "error",
	    json_object_new_string("invalid request"));
	json_object_object_add(o, "details", d);
	ret = http_reply_json(r, 400, o);
	json_object_put(o);
	return ret;
}

/* The non-blank string field of body, or NULL. */
static const char *
api_duet_text(json_object *body, const char *key)
{
	const char *s = body ? json_get_string(body, key) : NULL;

	return s && s[strspn(s, " \t\r\n")] ? s : NULL;
}

/* ---- sandbox/exec ------------------------------------------------------ */

/* The answer for the room's exec_result of cmd. */
static int
api_duet_exec_answer(struct http_req *r, json_object *res)
{
	json_object *o = json_object_new_object(), *x = json_object_new_object();
	int code = (int)json_get_int(res, "exitCode", 255);
	struct api_capture *c = api_capture_of(r);
	json_object *spec = api_capture_spec(c);
	long long ms = api_capture_ms(c);
	char now[32], name[80];
	int ret;

	time_now_iso(now, sizeof(now));
	json_object_object_add(x, "success", json_object_new_boolean(code == 0));
	json_object_object_add(x, "exitCode", json_object_new_int(code));
	json_object_object_add(x, "stdout", json_object_new_string(
	    json_get_string(res, "stdout") ?: ""));
	json_object_object_add(x, "stderr", json_object_new_string(
	    json_get_string(res, "stderr") ?: ""));
	if (json_get_bool(res, "truncated", 0))
		json_object_object_add(x, "truncated",
		    json_object_new_boolean(1));
	json_object_object_add(x, "command", json_object_new_string(
	    json_get_string(spec, "command") ?: ""));
	json_object_object_add(x, "duration", json_object_new_int64(ms));
	json_object_object_add(x, "timestamp", json_object_new_string(now));
	snprintf(name, sizeof(name), "sandbox-%s", r->room);
	json_object_object_add(o, "result", x);
	json_object_object_add(o, "sandboxName", json_object_new_string(name));
	ret = http_reply_json(r, 200, o);
	json_object_put(o);
	return ret;
}

/* Start: the body's cmd, run and captured. */
static int
api_duet_exec_begin(struct http_req *r)
{
	json_object *body, *spec;
	char why[256];
	const char *cmd;

	body = api_body_object(r, why, sizeof(why));
	if (!(cmd = api_duet_text(body, "cmd"))) {
		json_object_put(body);
		return api_duet_invalid(r, "cmd", "Command cannot be empty");
	}
	spec = json_object_new_object();
	json_object_object_add(spec, "command", json_object_new_string(cmd));
	json_object_put(body);
	api_capture_begin(r, spec);
	return MHD_YES;
}

/* See api_duet.h. */
int
api_duet_exec(struct http_req *r)
{
	return api_capture_serve(r, api_duet_exec_begin, api_duet_exec_answer);
}

/* ---- DELETE ------------------------------------------------------------ */

/* Whether r's room exists (the monitor's access): 1, 0, or -1 with r
 * answered (a refusal, the monitor gone). */
static int
api_duet_room_exists(struct http_req *r)
{
	json_object *req = http_ask_new(r, "access", 1), *ans;
	const char *why;
	int exists;

	if (req)
		json_object_object_add(req, "for",
		    json_object_new_string("delete"));
	if (http_ask(r->srv, req, &ans, NULL, NULL, 0) < 0) {
		http_reply_error(r, 503, "atriumd is stopping; try again later");
		return -1;
	}
	if (http_ask_refused(ans, &why)) {
		http_reply_error(r, 403, why);
		json_object_put(ans);
		return -1;
	}
	exists = json_get_bool(ans, "exists", 0);
	json_object_put(ans);
	return exists;
}

/* See api_duet.h. */
int
api_duet_delete(struct http_req *r)
{
	json_object *ans, *o;
	const char *why;
	long long rc;
	int ret;

	if ((ret = api_duet_room_exists(r)) <= 0)
		return ret < 0 ? MHD_YES : http_reply_error(r, 404,
		    "no such room");
	if (http_ask(r->srv, http_ask_new(r, "delete", 1), &ans, NULL, NULL,
	    0) < 0)
		return http_reply_error(r, 503, "atriumd is stopping; try "
		    "again later");
	if (http_ask_refused(ans, &why)) {
		ret = http_reply_error(r, 403, why);
		json_object_put(ans);
		return ret;
	}
	rc = json_get_int(ans, "rc", -EIO);
	json_object_put(ans);
	if (rc == -EPERM || rc == -EACCES)
		return http_reply_error(r, 403, "only the room's owner or an "
		    "admin may delete it");
	if (rc == -ENOENT)
		return http_reply_error(r, 404, "no such room");
	if (rc < 0)
		return http_reply_error(r, 503, "the room could not be "
		    "deleted; atriumd's log says why");
	o = json_object_new_object();
	json_object_object_add(o, "deleted", json_object_new_string(r->room));
	ret = http_reply_json(r, 200, o);
	json_object_put(o);
	return ret;
}

/* ---- messages ---------------------------------------------------------- */

/* A message's state while its turn runs. */
struct api_duet_msg {
	char *text;			/* the prompt as sent */
	char *user_id;			/* Duet's userId, echoed */
	json_object *messages;		/* the room's, then this exchange */
	struct buf reply;		/* the agent's text in our turn */
	int prompted;			/* our prompt's echo came */
	long long turn;			/* our turn, once it started; -1 */
};

static void
api_duet_msg_free(void *p)
{
	struct api_duet_msg *m = p;

	if (!m)
		return;
	free(m->text);
	free(m->user_id);
	json_object_put(m->messages);
	buf_free(&m->reply);
	free(m);
}

/* Add a message of an event to the list, keeping the latest 50. */
static void
api_duet_keep(struct api_duet_msg *m, json_object *ev, const char *role,
    const char *user_id)
{
	json_object *o = json_object_new_object();
	long long ms = 0;

	event_time_ms(json_get_string(ev, "time"), &ms);
	json_object_object_add(o, "role", json_object_new_string(role));
	if (user_id)
		json_object_object_add(o, "userId",
		    json_object_new_string(user_id));
	json_object_object_add(o, "text",
	    json_object_new_string(json_get_string(ev, "text") ?: ""));
	json_object_object_add(o, "ts", json_object_new_int64(ms));
	json_object_array_add(m->messages, o);
	if (json_object_array_length(m->messages) > API_DUET_MESSAGES)
		json_object_array_del_idx(m->messages, 0, 1);
}

/* A replayed or live line that is a person's or the agent's words; ours
 * (mine: the prompt this request sent) carries Duet's userId when given. */
static void
api_duet_words(struct api_duet_msg *m, json_object *ev, const char *type,
    int mine)
{
	const char *user = json_get_string(ev, "user");

	if (!user || (strcmp(type, "message") && strcmp(type, "prompt")))
		return;
	if (strcmp(user, "agent") == 0)
		api_duet_keep(m, ev, "agent", NULL);
	else
		api_duet_keep(m, ev, "user", mine && m->user_id ? m->user_id :
		    user);
}

/* Our turn's events: its text, its end. */
static void
api_duet_turn(struct api_talk *t, struct api_duet_msg *m, json_object *ev,
    const char *type)
{
	const char *user = json_get_string(ev, "user");
	long long turn = json_get_int(ev, "turn", -1);

	if (m->turn < 0) {
		if (strcmp(type, "turn_start") == 0 && user &&
		    strcmp(user, api_talk_user(t)) == 0)
			m->turn = turn;
		return;
	}
	if (turn != m->turn)
		return;
	if (strcmp(type, "message") == 0 && user &&
	    strcmp(user, "agent") == 0) {
		const char *text = json_get_string(ev, "text") ?: "";

		if (m->reply.len)
			buf_append(&m->reply, "\n\n", 2);
		buf_append(&m->reply, text, strlen(text));
	} else if (strcmp(type, "turn_end") == 0) {
		api_talk_over(t, 0, NULL);
	}
}

/* Every line of the room while the message's turn runs. */
static void
api_duet_line(struct api_talk *t, json_object *ev)
{
	struct api_duet_msg *m = api_talk_arg(t);
	const char *type = json_get_string(ev, "type");
	const char *user = json_get_string(ev, "user");

	if (!type)
		return;
	if (json_get_bool(ev, "replay", 0)) {
		api_duet_words(m, ev, type, 0);
		return;
	}
	if (!m->prompted) {
		if (strcmp(type, "error") == 0)
			api_talk_over(t, strstr(json_get_string(ev, "message")
			    ?: "", "read-only") ? 403 : 429,
			    json_get_string(ev, "message"));
		else if (strcmp(type, "prompt") == 0 && user &&
		    strcmp(user, api_talk_user(t)) == 0) {
			m->prompted = 1;
			api_duet_words(m, ev, type, 1);
		}
		return;
	}
	api_duet_words(m, ev, type, 0);
	api_duet_turn(t, m, ev, type);
}

/* The answer once the turn ended. */
static int
api_duet_msg_answer(struct http_req *r, void *arg)
{
	struct api_duet_msg *m = arg;
	json_object *o = json_object_new_object();
	int ret;

	json_object_object_add(o, "reply", json_object_new_string_len(
	    m->reply.data ? m->reply.data : "", (int)m->reply.len));
	json_object_object_add(o, "messages", json_object_get(m->messages));
	ret = http_reply_json(r, 200, o);
	json_object_put(o);
	return ret;
}

/* Start: the prompt line, with the room's history replayed. */
static int
api_duet_msg_begin(struct http_req *r)
{
	struct api_duet_msg *m;
	json_object *body, *lines, *p;
	const char *text, *uid;
	char why[256];

	body = api_body_object(r, why, sizeof(why));
	if (!(text = api_duet_text(body, "text"))) {
		json_object_put(body);
		return api_duet_invalid(r, "text", "Text cannot be empty");
	}
	uid = json_get_string(body, "userId");
	if (!(m = calloc(1, sizeof(*m))) || !(m->text = strdup(text)) ||
	    (uid && !(m->user_id = strdup(uid))) ||
	    !(m->messages = json_object_new_array())) {
		json_object_put(body);
		api_duet_msg_free(m);
		return http_reply_error(r, 503, "out of memory; try again");
	}
	json_object_put(body);
	m->turn = -1;
	buf_init(&m->reply, API_DUET_MAX_REPLY);
	lines = json_object_new_array();
	p = json_object_new_object();
	json_object_object_add(p, "type", json_object_new_string("prompt"));
	json_object_object_add(p, "text", json_object_new_string(m->text));
	json_object_array_add(lines, p);
	api_talk_begin(r, API_DUET_HISTORY, lines, api_duet_line, m,
	    api_duet_msg_free);
	return MHD_YES;
}

/* See api_duet.h. */
int
api_duet_message(struct http_req *r)
{
	return api_talk_serve(r, api_duet_msg_begin, api_duet_msg_answer);
}
