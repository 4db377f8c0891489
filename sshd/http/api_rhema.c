/*
 * api_rhema.c: rhema's coding agent over Atrium (api_rhema.h): a rhema
 * session id is a room's name (lowercase letters, digits and '-', as
 * rooms are named: a UUID in lowercase is one).  What maps to what:
 *
 *   POST /sessions/{id}/config  -> the room's config request(s)
 *     model                        model (the provider's model name)
 *     approval deny_all | allow_list | allow_all
 *                                  the same policy
 *     approval ask_client          ask: the people in the room (and the
 *                                  session's WebSocket clients) answer;
 *                                  no answer in --approval-timeout (120 s)
 *                                  is a denial
 *     allow_list [tool names]      allow_list (bash entries may be command
 *                                  prefixes, as the room's are)
 *     skills [{name, description, body}]
 *                                  skills
 *     seed_git URL                 seed_git, in a config line of its own
 *                                  (the room's rule): the answer comes once
 *                                  the clone started; its end is a notice
 *     answered with the session's config as rhema names it; a field rhema
 *     does not have is refused (400) rather than ignored
 *   GET /sessions/{id}/session  -> the room's stored history (the latest
 *     500 events, the most one history answer holds) as rhema's events,
 *     with the room's config: {"id", "config", "events", "seq"}
 *   the room's events as rhema's (api_rhema_event):
 *     prompt, message (a person's)  user_message {user, text}
 *     message (the agent's)         assistant_message {text, turn}
 *     agent_delta                   text_delta {text, turn}
 *     turn_start, turn_end          turn_start {turn}, turn_end
 *                                   {turn, stop_reason, usage}
 *     tool_call, tool_output, tool_result, approval_request,
 *     approval_result, config, notice, error
 *                                   the same names and fields
 *                                   (approval_request's seconds is
 *                                   timeout_s; config's approval "ask" is
 *                                   "ask_client")
 *     every other event (presence, typing, the shared terminal...) has no
 *     rhema meaning and is left out.
 */
#include "api_rhema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "api_talk.h"
#include "api_util.h"
#include "http_req.h"
#include "jsonl.h"
#include "protocol.h"

/* ---- names ------------------------------------------------------------- */

/* rhema's approval name for the room's, or the room's for rhema's
 * (to_room).  NULL when it has none. */
const char *
api_rhema_approval(const char *name, int to_room)
{
	static const char *const pairs[][2] = {
		{ "deny_all", "deny_all" }, { "allow_list", "allow_list" },
		{ "allow_all", "allow_all" }, { "ask_client", "ask" },
	};

	for (size_t i = 0; name && i < sizeof(pairs) / sizeof(pairs[0]); i++)
		if (strcmp(name, pairs[i][to_room ? 0 : 1]) == 0)
			return pairs[i][to_room ? 1 : 0];
	return NULL;
}

/* Copy the fields keys[] of ev into o, as they are. */
static void
api_rhema_copy(json_object *o, json_object *ev, const char *const *keys)
{
	json_object *v;

	for (; *keys; keys++)
		if (json_object_object_get_ex(ev, *keys, &v))
			json_object_object_add(o, *keys, json_object_get(v));
}

/* The fields a mapped event keeps, by the room's type (see the head);
 * same name unless rhema's is given. */
static const struct {
	const char *room, *rhema;
	const char *keys[6];
} api_rhema_events[] = {
	{ "prompt", "user_message", { "user", "text" } },
	{ "agent_delta", "text_delta", { "text", "turn" } },
	{ "turn_start", NULL, { "turn", "user" } },
	{ "turn_end", NULL, { "turn", "stop_reason", "usage" } },
	{ "tool_call", NULL, { "turn", "id", "name", "input" } },
	{ "tool_output", NULL, { "id", "stream", "text" } },
	{ "tool_result", NULL, { "turn", "id", "name", "status", "output" } },
	{ "approval_request", NULL, { "turn", "id", "tool", "input",
	    "modifies" } },
	{ "approval_result", NULL, { "turn", "id", "tool", "status", "user",
	    "reason" } },
	{ "config", NULL, { "model", "allow_list", "skills", "user" } },
	{ "notice", NULL, { "text" } },
	{ "error", NULL, { "message" } },
};

/* See api_rhema.h. */
json_object *
api_rhema_event(json_object *ev)
{
	const char *type = json_get_string(ev, "type");
	const char *user = json_get_string(ev, "user");
	static const char *const stamp[] = { "seq", "time", NULL };
	json_object *o;

	if (!type)
		return NULL;
	if (strcmp(type, "message") == 0) {
		static const char *const mine[] = { "user", "text", NULL };
		static const char *const agent[] = { "text", "turn", NULL };
		int is_agent = user && strcmp(user, "agent") == 0;

		o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string(
		    is_agent ? "assistant_message" : "user_message"));
		api_rhema_copy(o, ev, is_agent ? agent : mine);
		api_rhema_copy(o, ev, stamp);
		return o;
	}
	for (size_t i = 0; i < sizeof(api_rhema_events) /
	    sizeof(api_rhema_events[0]); i++) {
		if (strcmp(type, api_rhema_events[i].room) != 0)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string(
		    api_rhema_events[i].rhema ?: type));
		api_rhema_copy(o, ev, api_rhema_events[i].keys);
		api_rhema_copy(o, ev, stamp);
		if (strcmp(type, "approval_request") == 0)
			json_object_object_add(o, "timeout_s",
			    json_object_new_int64(json_get_int(ev, "seconds",
			    0)));
		if (strcmp(type, "config") == 0)
			json_object_object_add(o, "approval",
			    json_object_new_string(api_rhema_approval(
			    json_get_string(ev, "approval"), 0) ?: "deny_all"));
		return o;
	}
	return NULL;
}

/* ---- POST /sessions/{id}/config ---------------------------------------- */

/* NULL when every field of body is one of rhema's config, else the
 * first that is not. */
static const char *
api_rhema_unknown_field(json_object *body)
{
	static const char *const known[] = { "model", "approval",
	    "allow_list", "seed_git", "skills", NULL };

	json_object_object_foreach(body, key, val) {
		int ok = 0;

		(void)val;
		for (int i = 0; known[i]; i++)
			ok |= strcmp(key, known[i]) == 0;
		if (!ok)
			return key;
	}
	return NULL;
}

/* The config line for body's settings but seed_git (which the room
 * takes in a line of its own), or NULL when it sets none of them or is
 * wrong (then why says what, else why is ""). */
static json_object *
api_rhema_config_line(json_object *body, char *why, size_t len)
{
	static const char *const same[] = { "model", "allow_list", "skills",
	    NULL };
	const char *approval = json_get_string(body, "approval");
	const char *unknown = api_rhema_unknown_field(body);
	json_object *line, *v;
	int n = 0;

	why[0] = '\0';
	if (unknown) {
		snprintf(why, len, "unknown field \"%.64s\": a session's "
		    "config has model, approval, allow_list, seed_git and "
		    "skills", unknown);
		return NULL;
	}
	if (json_object_object_get_ex(body, "approval", &v) &&
	    !api_rhema_approval(approval, 1)) {
		snprintf(why, len, "approval must be deny_all, allow_list, "
		    "allow_all or ask_client");
		return NULL;
	}
	line = json_object_new_object();
	json_object_object_add(line, "type", json_object_new_string("config"));
	if (approval) {
		json_object_object_add(line, "approval", json_object_new_string(
		    api_rhema_approval(approval, 1)));
		n++;
	}
	for (int i = 0; same[i]; i++) {
		if (!json_object_object_get_ex(body, same[i], &v))
			continue;
		json_object_object_add(line, same[i], json_object_get(v));
		n++;
	}
	if (n == 0) {
		json_object_put(line);
		return NULL;
	}
	return line;
}

/* A config request's progress. */
struct api_rhema_cfg {
	int want_config;	/* the config event is still to come */
	int want_seed;		/* seed_git's start is still to come */
	json_object *config;	/* the room's config event, once come */
	json_object *seed;	/* seed_git as sent, for the answer */
};

static void
api_rhema_cfg_free(void *p)
{
	struct api_rhema_cfg *c = p;

	if (c) {
		json_object_put(c->config);
		json_object_put(c->seed);
	}
	free(c);
}

/* The status of the room's error message: 403 when it is about who may,
 * 400 for what was sent. */
static unsigned
api_rhema_error_status(const char *msg)
{
	return msg && (strstr(msg, "owner") || strstr(msg, "admin may") ||
	    strstr(msg, "read-only")) ? 403 : 400;
}

/* The room's answers to the config lines. */
static void
api_rhema_cfg_line(struct api_talk *t, json_object *ev)
{
	struct api_rhema_cfg *c = api_talk_arg(t);
	const char *type = json_get_string(ev, "type");
	const char *user = json_get_string(ev, "user");
	const char *text = json_get_string(ev, "text");

	if (!type || json_get_bool(ev, "replay", 0))
		return;
	if (strcmp(type, "error") == 0) {
		const char *msg = json_get_string(ev, "message");

		api_talk_over(t, api_rhema_error_status(msg), msg);
		return;
	}
	if (c->want_config && strcmp(type, "config") == 0 && user &&
	    strcmp(user, api_talk_user(t)) == 0) {
		c->want_config = 0;
		c->config = json_object_get(ev);
	} else if (c->want_seed && strcmp(type, "notice") == 0 && text &&
	    strstr(text, "started seed_git")) {
		c->want_seed = 0;
	} else if (!c->want_config && strcmp(type, "welcome") == 0) {
		c->config = json_object_get(ev);	/* seed_git alone */
	}
	if (!c->want_config && !c->want_seed)
		api_talk_over(t, 0, NULL);
}

/* The answer: the session's config as rhema names it. */
static int
api_rhema_cfg_answer(struct http_req *r, void *arg)
{
	struct api_rhema_cfg *c = arg;
	json_object *o = json_object_new_object(), *v;
	int ret;

	if (c->config) {
		json_object_object_add(o, "model", json_object_new_string(
		    json_get_string(c->config, "model") ?: ""));
		json_object_object_add(o, "approval", json_object_new_string(
		    api_rhema_approval(json_get_string(c->config, "approval"),
		    0) ?: "deny_all"));
		if (json_object_object_get_ex(c->config, "allow_list", &v))
			json_object_object_add(o, "allow_list",
			    json_object_get(v));
		if (json_object_object_get_ex(c->config, "skills", &v))
			json_object_object_add(o, "skills", json_object_get(v));
	}
	if (c->seed)
		json_object_object_add(o, "seed_git", json_object_get(c->seed));
	ret = http_reply_json(r, 200, o);
	json_object_put(o);
	return ret;
}

/* Start: check the body, send the config line(s). */
static int
api_rhema_cfg_begin(struct http_req *r)
{
	json_object *body, *line, *lines, *seed = NULL, *s;
	struct api_rhema_cfg *c;
	char why[256];

	if (!(body = api_body_object(r, why, sizeof(why))))
		return http_reply_error(r, 400, why);
	line = api_rhema_config_line(body, why, sizeof(why));
	json_object_object_get_ex(body, "seed_git", &seed);
	if (why[0] || (!line && !seed)) {
		json_object_put(body);
		return http_reply_error(r, 400, why[0] ? why : "the body sets "
		    "nothing: send model, approval, allow_list, seed_git or "
		    "skills");
	}
	c = calloc(1, sizeof(*c));
	lines = json_object_new_array();
	if (line && c)
		c->want_config = json_object_array_add(lines, line) == 0;
	if (seed && c) {
		s = json_object_new_object();
		json_object_object_add(s, "type",
		    json_object_new_string("config"));
		json_object_object_add(s, "seed_git", json_object_get(seed));
		c->want_seed = json_object_array_add(lines, s) == 0;
		c->seed = json_object_get(seed);
	}
	json_object_put(body);
	api_talk_begin(r, 0, lines, api_rhema_cfg_line, c, api_rhema_cfg_free);
	return MHD_YES;
}

/* See api_rhema.h. */
int
api_rhema_config(struct http_req *r)
{
	return api_talk_serve(r, api_rhema_cfg_begin, api_rhema_cfg_answer);
}

/* ---- GET /sessions/{id}/session ---------------------------------------- */

/* The record as it is gathered. */
struct api_rhema_rec {
	json_object *welcome;	/* the room's settings */
	json_object *config;	/* the latest stored config event */
	json_object *events;	/* rhema's events */
	long long seq;
};

static void
api_rhema_rec_free(void *p)
{
	struct api_rhema_rec *s = p;

	if (!s)
		return;
	json_object_put(s->welcome);
	json_object_put(s->config);
	json_object_put(s->events);
	free(s);
}

/* The hello's replay, then synced. */
static void
api_rhema_rec_line(struct api_talk *t, json_object *ev)
{
	struct api_rhema_rec *s = api_talk_arg(t);
	const char *type = json_get_string(ev, "type");
	json_object *o;

	if (!type)
		return;
	if (strcmp(type, "welcome") == 0) {
		json_object_put(s->welcome);
		s->welcome = json_object_get(ev);
		s->seq = json_get_int(ev, "seq", 0);
	} else if (strcmp(type, "synced") == 0) {
		api_talk_over(t, 0, NULL);
	} else if (json_get_bool(ev, "replay", 0)) {
		if (strcmp(type, "config") == 0) {
			json_object_put(s->config);
			s->config = json_object_get(ev);
		}
		if ((o = api_rhema_event(ev)))
			json_object_array_add(s->events, o);
	}
}

/* The record: {"id", "config", "events", "seq"}. */
static int
api_rhema_rec_answer(struct http_req *r, void *arg)
{
	struct api_rhema_rec *s = arg;
	json_object *o = json_object_new_object(), *cfg = json_object_new_object();
	json_object *v;
	int ret;

	json_object_object_add(cfg, "model", json_object_new_string(
	    json_get_string(s->welcome, "model") ?: ""));
	json_object_object_add(cfg, "approval", json_object_new_string(
	    api_rhema_approval(json_get_string(s->welcome, "approval"), 0) ?:
	    "deny_all"));
	if (s->config && json_object_object_get_ex(s->config, "allow_list", &v))
		json_object_object_add(cfg, "allow_list", json_object_get(v));
	if (s->config && json_object_object_get_ex(s->config, "skills", &v))
		json_object_object_add(cfg, "skills", json_object_get(v));
	json_object_object_add(o, "id", json_object_new_string(r->room));
	json_object_object_add(o, "config", cfg);
	json_object_object_add(o, "events", json_object_get(s->events));
	json_object_object_add(o, "seq", json_object_new_int64(s->seq));
	ret = http_reply_json(r, 200, o);
	json_object_put(o);
	return ret;
}

/* Start: a sync, with every history event replayed before its answer. */
static int
api_rhema_rec_begin(struct http_req *r)
{
	struct api_rhema_rec *s;
	json_object *lines, *sync;

	if (!(s = calloc(1, sizeof(*s))) ||
	    !(s->events = json_object_new_array())) {
		free(s);
		return http_reply_error(r, 503, "out of memory");
	}
	lines = json_object_new_array();
	sync = json_object_new_object();
	json_object_object_add(sync, "type", json_object_new_string("sync"));
	json_object_array_add(lines, sync);
	api_talk_begin(r, PROTO_MAX_HISTORY, lines, api_rhema_rec_line, s,
	    api_rhema_rec_free);
	return MHD_YES;
}

/* See api_rhema.h. */
int
api_rhema_session(struct http_req *r)
{
	return api_talk_serve(r, api_rhema_rec_begin, api_rhema_rec_answer);
}
