/*
 * settings.c: the room's settings (settings.h).  The command line gives the
 * defaults; a `config` line from the room's owner or an admin
 * (room_access_list.h) changes them for this room; they
 * live in room.db's config table so they survive restarts, and every change
 * is announced with a stored `config` event naming who made it.
 *
 * A room picks its provider and model, never where requests go or with
 * which key: a field naming a URL or a key is refused, and so is a switch
 * to a provider the operator has not configured (endpoint.h).  Switching
 * provider without naming a model takes that provider's default model
 * (the operator's --model when it is the operator's provider, anthropic's
 * default otherwise); openai has none, so the switch must name one.
 *
 * `skills` (skills.h) replaces the room's config skills as a whole; they
 * are stored parsed, as one JSON array under the key "skills".  `seed_git`
 * is an action, not a setting (seed.h): it comes in a line of its own.
 * `mcp` (mcp_config.h) replaces the room's MCP servers as a whole, stored
 * checked under the key "mcp"; mcp.c restarts what changed.
 */
#include "settings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "approval.h"
#include "endpoint.h"
#include "journal.h"
#include "jsonl.h"
#include "log.h"
#include "mcp.h"
#include "mcp_config.h"
#include "provider.h"
#include "room_events.h"
#include "room_access_list.h"
#include "room_db.h"
#include "seed.h"
#include "skills.h"

#define SETTINGS_MAX_ALLOW	256	/* allow_list entries */
#define SETTINGS_MAX_ENTRY	256	/* bytes of one entry */

/* 1 when v is an array of at most SETTINGS_MAX_ALLOW short strings. */
static int
settings_allow_valid(json_object *v)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return 0;
	n = json_object_array_length(v);
	if (n > SETTINGS_MAX_ALLOW)
		return 0;
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i);

		if (!json_object_is_type(e, json_type_string) ||
		    json_object_get_string_len(e) == 0 ||
		    json_object_get_string_len(e) > SETTINGS_MAX_ENTRY)
			return 0;
	}
	return 1;
}

/* The room's MCP servers from room.db into a->mcp_config, checked again
 * (an operator's key may have changed), and handed to mcp.c. */
static void
settings_load_mcp(struct agent *a)
{
	char *v = malloc(MCP_CONFIG_MAX + 1);
	json_object *stored = NULL, *set = NULL;
	char why[300];

	if (v && room_db_config_get(a->db, "mcp", v, MCP_CONFIG_MAX + 1) == 1 &&
	    (stored = json_tokener_parse(v)) &&
	    !(set = mcp_config_parse(stored, &a->keys, why, sizeof(why))))
		log_warn("the room's stored MCP servers are ignored: %s", why);
	free(v);
	json_object_put(stored);
	json_object_put(a->mcp_config);
	a->mcp_config = set ? set : json_object_new_array();
	if (mcp_configure(a, a->mcp_config) < 0)
		log_warn("the room's MCP servers could not be set up: out of "
		    "memory");
}

/* The config skills from room.db into a->config_skills (and a->skills,
 * until a turn reads the workspace's): an empty set when there are none or
 * the stored value is not a valid set. */
static void
settings_load_skills(struct agent *a)
{
	char *v = malloc(SKILLS_MAX_CONFIG + 1);
	json_object *stored = NULL, *set = NULL;
	char why[256];

	if (v && room_db_config_get(a->db, "skills", v,
	    SKILLS_MAX_CONFIG + 1) == 1 && (stored = json_tokener_parse(v)) &&
	    !(set = skills_from_config(stored, why, sizeof(why))))
		log_warn("the room's stored skills are ignored: %s", why);
	json_object_put(stored);
	free(v);
	json_object_put(a->config_skills);
	a->config_skills = set ? set : json_object_new_array();
	json_object_put(a->skills);
	a->skills = json_object_get(a->config_skills);
}

int
settings_load(struct agent *a)
{
	char v[16384];
	json_object *list;

	snprintf(a->provider, sizeof(a->provider), "%s", a->cfg.provider);
	snprintf(a->model, sizeof(a->model), "%s", a->cfg.model);
	snprintf(a->approval, sizeof(a->approval), "%s", a->cfg.approval);
	if (!approval_policy_valid(a->approval))
		snprintf(a->approval, sizeof(a->approval), "ask");
	json_object_put(a->allow_list);
	a->allow_list = json_object_new_array();
	room_db_config_get(a->db, "provider", a->provider, sizeof(a->provider));
	room_db_config_get(a->db, "model", a->model, sizeof(a->model));
	if (room_db_config_get(a->db, "approval", v, sizeof(v)) == 1 &&
	    approval_policy_valid(v))
		memcpy(a->approval, v, strlen(v) + 1);
	settings_load_skills(a);
	settings_load_mcp(a);
	if (room_db_config_get(a->db, "allow_list", v, sizeof(v)) == 1 &&
	    (list = json_tokener_parse(v))) {
		if (settings_allow_valid(list)) {
			json_object_put(a->allow_list);
			a->allow_list = list;
		} else {
			json_object_put(list);
		}
	}
	return 0;
}

/* The model a switch to provider p takes when the request names none:
 * the operator's for the operator's provider, anthropic's default, or
 * NULL (openai: the request must name one). */
static const char *
settings_default_model(const struct agent *a, const char *p)
{
	if (strcmp(p, a->cfg.provider) == 0 && a->cfg.model[0])
		return a->cfg.model;
	if (strcmp(p, "anthropic") == 0)
		return CONFIG_ANTHROPIC_MODEL;
	return NULL;
}

/* Refuse a field that would choose a URL or a key: those are the
 * operator's.  0, or -EPERM with the reason sent to c. */
static int
settings_operator_only(struct conn *c, json_object *req)
{
	json_object_object_foreach(req, name, v) {
		(void)v;
		if (strcasestr(name, "url") || strcasestr(name, "key")) {
			room_error(c, NULL, "\"%.64s\" cannot be set by a room: "
			    "the model URLs and API keys are the server "
			    "operator's (atriumd's flags or atrium.conf); a "
			    "room may set provider, model, approval and "
			    "allow_list", name);
			return -EPERM;
		}
	}
	return 0;
}

/* Check the provider switch in req (p, model m).  0, or -EINVAL with the
 * reason sent to c. */
static int
settings_check_provider(struct agent *a, struct conn *c, const char *p,
    const char *m)
{
	enum provider_kind k;
	char why[600];

	if (provider_kind_parse(p, &k) < 0) {
		room_error(c, NULL, "unknown provider \"%s\": use anthropic or "
		    "openai", p);
		return -EINVAL;
	}
	if (!endpoint_ready(a, p)) {
		endpoint_missing(why, sizeof(why), p);
		room_error(c, NULL, "%s; the room stays on %s", why,
		    a->provider);
		return -EINVAL;
	}
	if (!m && strcmp(p, a->provider) != 0 &&
	    !settings_default_model(a, p)) {
		room_error(c, NULL, "switching to %s needs a model name too: "
		    "send \"model\" with \"provider\"", p);
		return -EINVAL;
	}
	return 0;
}

/* Check every field of req before changing anything.  0, or -errno with
 * the reason sent to c. */
static int
settings_check(struct agent *a, struct conn *c, json_object *req)
{
	const char *p = json_get_string(req, "provider");
	const char *m = json_get_string(req, "model");
	const char *ap = json_get_string(req, "approval");
	json_object *al = NULL;

	if (settings_operator_only(c, req) < 0)
		return -EPERM;
	if (p && settings_check_provider(a, c, p, m) < 0)
		return -EINVAL;
	if (m && (!*m || strlen(m) >= sizeof(((struct agent *)0)->model))) {
		room_error(c, NULL, "model must be a name of 1 to 127 bytes");
		return -EINVAL;
	}
	if (ap && !approval_policy_valid(ap)) {
		room_error(c, NULL, "unknown approval policy \"%s\": use "
		    "deny_all, allow_list, allow_all or ask", ap);
		return -EINVAL;
	}
	if (json_object_object_get_ex(req, "allow_list", &al) &&
	    !settings_allow_valid(al)) {
		room_error(c, NULL, "allow_list must be an array of at most %d "
		    "tool names or command prefixes (strings)",
		    SETTINGS_MAX_ALLOW);
		return -EINVAL;
	}
	return 0;
}

/* The names of the room's config skills, a new array. */
static json_object *
settings_skill_names(struct agent *a)
{
	json_object *names = json_object_new_array();
	size_t n = a->config_skills ?
	    json_object_array_length(a->config_skills) : 0;

	for (size_t i = 0; i < n; i++)
		json_object_array_add(names, json_object_new_string(
		    json_get_string(json_object_array_get_idx(a->config_skills,
		    i), "name")));
	return names;
}

/* The stored `config` event with the room's settings now; it commits the
 * settings' rows with it.  0 or -errno (room_emit). */
static int
settings_announce(struct agent *a, const char *user, json_object *changed)
{
	json_object *ev = room_event_new("config");

	/* What this request set, so the room is told exactly that. */
	json_object_object_add(ev, "changed", changed);

	json_object_object_add(ev, "provider", json_object_new_string(a->provider));
	json_object_object_add(ev, "model", json_object_new_string(a->model));
	json_object_object_add(ev, "approval", json_object_new_string(a->approval));
	json_object_object_add(ev, "allow_list", json_object_get(a->allow_list));
	json_object_object_add(ev, "skills", settings_skill_names(a));
	json_object_object_add(ev, "mcp", json_object_get(a->mcp_config));
	json_object_object_add(ev, "user", json_object_new_string(user));
	return room_emit(a, ev, 1);
}

/* What one `config` line asks to set; NULL for what it leaves alone. */
struct settings_req {
	const char *provider;
	const char *model;
	const char *approval;
	json_object *allow_list;	/* borrowed */
	json_object *skills;		/* parsed (skills.h), owned */
	json_object *mcp;		/* checked (mcp_config.h), owned */
};

/* The names of the settings a request set, as a new array. */
static json_object *
settings_changed(const struct settings_req *q)
{
	json_object *arr = json_object_new_array();

	if (q->provider)
		json_object_array_add(arr, json_object_new_string("provider"));
	if (q->model)
		json_object_array_add(arr, json_object_new_string("model"));
	if (q->approval)
		json_object_array_add(arr, json_object_new_string("approval"));
	if (q->allow_list)
		json_object_array_add(arr, json_object_new_string("allow_list"));
	if (q->skills)
		json_object_array_add(arr, json_object_new_string("skills"));
	if (q->mcp)
		json_object_array_add(arr, json_object_new_string("mcp"));
	return arr;
}

/* Write q's rows and change a's settings in memory.  0 or -errno (the
 * caller rolls back both). */
static int
settings_write(struct agent *a, const char *user, const struct settings_req *q)
{
	int r = 0;

	if (q->provider) {
		snprintf(a->provider, sizeof(a->provider), "%s", q->provider);
		r = room_db_config_set(a->db, "provider", q->provider, user);
	}
	if (q->model && r == 0) {
		snprintf(a->model, sizeof(a->model), "%s", q->model);
		r = room_db_config_set(a->db, "model", q->model, user);
	}
	if (q->approval && r == 0) {
		snprintf(a->approval, sizeof(a->approval), "%s", q->approval);
		r = room_db_config_set(a->db, "approval", q->approval, user);
	}
	if (q->allow_list && r == 0) {
		json_object_put(a->allow_list);
		a->allow_list = json_object_get(q->allow_list);
		r = room_db_config_set(a->db, "allow_list",
		    json_object_to_json_string_ext(q->allow_list,
		    JSON_C_TO_STRING_PLAIN), user);
	}
	if (q->skills && r == 0) {
		json_object_put(a->config_skills);
		a->config_skills = json_object_get(q->skills);
		r = room_db_config_set(a->db, "skills",
		    json_object_to_json_string_ext(q->skills,
		    JSON_C_TO_STRING_PLAIN), user);
	}
	if (q->mcp && r == 0) {
		json_object_put(a->mcp_config);
		a->mcp_config = json_object_get(q->mcp);
		r = room_db_config_set(a->db, "mcp",
		    json_object_to_json_string_ext(q->mcp,
		    JSON_C_TO_STRING_PLAIN), user);
	}
	return r;
}

/* Store the requested settings and announce them; in memory they change
 * only when both worked.  0 or -errno (all rolled back). */
static int
settings_store(struct agent *a, struct conn *c, const struct settings_req *q)
{
	char old_p[sizeof(a->provider)], old_m[sizeof(a->model)];
	char old_ap[sizeof(a->approval)];
	json_object *old_al = json_object_get(a->allow_list);
	json_object *old_sk = json_object_get(a->config_skills);
	json_object *old_mcp = json_object_get(a->mcp_config);
	int r;

	/* What was written before is kept whatever happens here. */
	if ((r = journal_commit(a->journal)) < 0)
		goto out;
	memcpy(old_p, a->provider, sizeof(old_p));
	memcpy(old_m, a->model, sizeof(old_m));
	memcpy(old_ap, a->approval, sizeof(old_ap));
	r = settings_write(a, c->user, q);
	if (r == 0)
		r = settings_announce(a, c->user, settings_changed(q));
	if (r < 0) {
		journal_abort(a->journal, r);
		memcpy(a->provider, old_p, sizeof(old_p));
		memcpy(a->model, old_m, sizeof(old_m));
		memcpy(a->approval, old_ap, sizeof(old_ap));
		json_object_put(a->allow_list);
		a->allow_list = json_object_get(old_al);
		json_object_put(a->config_skills);
		a->config_skills = json_object_get(old_sk);
		json_object_put(a->mcp_config);
		a->mcp_config = json_object_get(old_mcp);
	}
out:
	json_object_put(old_al);
	json_object_put(old_sk);
	json_object_put(old_mcp);
	return r;
}

/* The skills of req parsed into q->skills when it has any.  0, or -EINVAL
 * with the reason sent to c. */
static int
settings_parse_skills(struct conn *c, json_object *req,
    struct settings_req *q)
{
	json_object *v;
	char why[300];

	if (!json_object_object_get_ex(req, "skills", &v))
		return 0;
	if (!(q->skills = skills_from_config(v, why, sizeof(why))) ||
	    strlen(json_object_to_json_string_ext(q->skills,
	    JSON_C_TO_STRING_PLAIN)) > SKILLS_MAX_CONFIG) {
		room_error(c, NULL, "%s", q->skills ? "the skills are over "
		    "512 KiB in all: make them shorter" : why);
		return -EINVAL;
	}
	return 0;
}

/* The MCP servers of req checked into q->mcp when it has any.  0, or
 * -EINVAL with the reason sent to c. */
static int
settings_parse_mcp(struct agent *a, struct conn *c, json_object *req,
    struct settings_req *q)
{
	json_object *v;
	char why[300];

	if (!json_object_object_get_ex(req, "mcp", &v))
		return 0;
	if (!(q->mcp = mcp_config_parse(v, &a->keys, why, sizeof(why)))) {
		room_error(c, NULL, "%s", why);
		return -EINVAL;
	}
	return 0;
}

/* A `config` line with seed_git: alone in its line (besides type and
 * id), a string; then seed.c takes it. */
static void
settings_seed(struct agent *a, struct conn *c, json_object *req,
    json_object *seed)
{
	json_object_object_foreach(req, name, v) {
		(void)v;
		if (strcmp(name, "type") && strcmp(name, "id") &&
		    strcmp(name, "seed_git")) {
			room_error(c, NULL, "send seed_git in a config line of "
			    "its own (this one also has \"%.64s\")", name);
			return;
		}
	}
	if (!json_object_is_type(seed, json_type_string)) {
		room_error(c, NULL, "seed_git must be a string: an https:// "
		    "URL, or a file:// URL or path under the server's seed "
		    "directory");
		return;
	}
	seed_request(a, c, json_object_get_string(seed),
	    (size_t)json_object_get_string_len(seed));
}

void
settings_request(struct agent *a, struct conn *c, json_object *req)
{
	struct settings_req q = {
		.provider = json_get_string(req, "provider"),
		.model = json_get_string(req, "model"),
		.approval = json_get_string(req, "approval"),
	};
	json_object *seed;
	int r;

	if (!room_access_may_manage(a, c, "change the room's model, "
	    "provider, approval policy, skills or MCP servers"))
		return;
	if (json_object_object_get_ex(req, "seed_git", &seed)) {
		settings_seed(a, c, req, seed);
		return;
	}
	if (settings_check(a, c, req) < 0 ||
	    settings_parse_skills(c, req, &q) < 0 ||
	    settings_parse_mcp(a, c, req, &q) < 0)
		goto out;
	if (q.provider && !q.model && strcmp(q.provider, a->provider) != 0)
		q.model = settings_default_model(a, q.provider);
	json_object_object_get_ex(req, "allow_list", &q.allow_list);
	if ((r = settings_store(a, c, &q)) < 0) {
		room_unrecorded(c, NULL, "the change of settings (they are "
		    "as they were)", r);
		goto out;
	}
	if (q.mcp && mcp_configure(a, a->mcp_config) < 0)
		room_notice(a, "the room's MCP servers could not be set up: "
		    "out of memory");
	log_info("%s changed the room's settings: provider %s, model %s, "
	    "approval %s, %zu config skills", c->user, a->provider, a->model,
	    a->approval, json_object_array_length(a->config_skills));
out:
	json_object_put(q.skills);
	json_object_put(q.mcp);
}
