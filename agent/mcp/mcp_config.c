/*
 * mcp_config.c: checking the room's list of MCP servers (mcp_config.h).
 * Everything here reads a `config` line written by a room's owner, and a
 * stored copy of one: every field is checked for type, length and shape,
 * and an unknown field is refused rather than ignored.
 */
#include "mcp_config.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "keys.h"

int
mcp_config_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > MCP_NAME_MAX || strstr(name, "__"))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_' &&
		    name[i] != '-')
			return 0;
	return 1;
}

/* 1 when v is a string of 1 (or 0 when may_be_empty) to MCP_STR_MAX
 * bytes with no NUL inside. */
static int
mcp_config_str_ok(json_object *v, int may_be_empty)
{
	size_t len;

	if (!json_object_is_type(v, json_type_string))
		return 0;
	len = (size_t)json_object_get_string_len(v);
	return (len > 0 || may_be_empty) && len <= MCP_STR_MAX &&
	    strlen(json_object_get_string(v)) == len;
}

/* 1 when name is a shell variable name of at most 128 bytes. */
static int
mcp_config_env_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 128 || isdigit((unsigned char)name[0]))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return 0;
	return 1;
}

/* 1 when value holds one of the operator's keys. */
static int
mcp_config_has_key(const char *value, const struct keys *keys)
{
	for (int i = 0; keys && i < KEYS_PROVIDERS; i++)
		if (keys->key[i][0] && strstr(value, keys->key[i]))
			return 1;
	return 0;
}

/* The checked args of server s (a new array), or NULL with why. */
static json_object *
mcp_config_args(json_object *v, const char *s, char *why, size_t whylen)
{
	json_object *out;
	size_t n;

	if (!v)
		return json_object_new_array();
	if (!json_object_is_type(v, json_type_array) ||
	    (n = json_object_array_length(v)) > MCP_MAX_ARGS) {
		snprintf(why, whylen, "the MCP server %s: args must be an "
		    "array of at most %d strings", s, MCP_MAX_ARGS);
		return NULL;
	}
	out = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i);

		if (!mcp_config_str_ok(e, 1)) {
			snprintf(why, whylen, "the MCP server %s: argument %zu "
			    "must be a string of at most %d bytes", s, i + 1,
			    MCP_STR_MAX);
			json_object_put(out);
			return NULL;
		}
		json_object_array_add(out, json_object_get(e));
	}
	return out;
}

/* The checked env of server s (a new object), or NULL with why. */
static json_object *
mcp_config_env(json_object *v, const struct keys *keys, const char *s,
    char *why, size_t whylen)
{
	json_object *out;

	if (!v)
		return json_object_new_object();
	if (!json_object_is_type(v, json_type_object) ||
	    json_object_object_length(v) > MCP_MAX_ENV) {
		snprintf(why, whylen, "the MCP server %s: env must be an "
		    "object of at most %d NAME: \"value\" pairs", s,
		    MCP_MAX_ENV);
		return NULL;
	}
	out = json_object_new_object();
	json_object_object_foreach(v, name, val) {
		const char *bad = NULL;

		if (!mcp_config_env_name_ok(name))
			bad = "is not a variable name";
		else if (!mcp_config_str_ok(val, 1))
			bad = "must be a string of at most 4096 bytes";
		else if (mcp_config_has_key(json_object_get_string(val), keys))
			bad = "holds one of the server operator's API keys, "
			    "which never leave the agent";
		if (bad) {
			snprintf(why, whylen, "the MCP server %s: env %.64s %s",
			    s, name, bad);
			json_object_put(out);
			return NULL;
		}
		json_object_object_add(out, name, json_object_get(val));
	}
	return out;
}

/* 1 when object e has only the fields a server may have. */
static int
mcp_config_fields_known(json_object *e, char *why, size_t whylen)
{
	json_object_object_foreach(e, k, v) {
		(void)v;
		if (strcmp(k, "name") && strcmp(k, "command") &&
		    strcmp(k, "args") && strcmp(k, "env")) {
			snprintf(why, whylen, "an MCP server has name, "
			    "command, args and env, not \"%.64s\"", k);
			return 0;
		}
	}
	return 1;
}

/* The checked copy of one server object, or NULL with why. */
static json_object *
mcp_config_server(json_object *e, const struct keys *keys, char *why,
    size_t whylen)
{
	json_object *name = NULL, *cmd = NULL, *args = NULL, *env = NULL;
	json_object *out, *a, *en;
	const char *s;

	if (!json_object_is_type(e, json_type_object)) {
		snprintf(why, whylen, "each MCP server must be an object with "
		    "name, command, args and env");
		return NULL;
	}
	if (!mcp_config_fields_known(e, why, whylen))
		return NULL;
	json_object_object_get_ex(e, "name", &name);
	json_object_object_get_ex(e, "command", &cmd);
	json_object_object_get_ex(e, "args", &args);
	json_object_object_get_ex(e, "env", &env);
	s = json_object_is_type(name, json_type_string) ?
	    json_object_get_string(name) : NULL;
	if (!s || !mcp_config_name_valid(s) ||
	    strlen(s) != (size_t)json_object_get_string_len(name)) {
		snprintf(why, whylen, "an MCP server's name must be 1 to %d "
		    "letters, digits, _ or - (without \"__\")", MCP_NAME_MAX);
		return NULL;
	}
	if (!mcp_config_str_ok(cmd, 0)) {
		snprintf(why, whylen, "the MCP server %s needs a command: a "
		    "non-empty string of at most %d bytes", s, MCP_STR_MAX);
		return NULL;
	}
	if (!(a = mcp_config_args(args, s, why, whylen)))
		return NULL;
	if (!(en = mcp_config_env(env, keys, s, why, whylen))) {
		json_object_put(a);
		return NULL;
	}
	out = json_object_new_object();
	json_object_object_add(out, "name", json_object_get(name));
	json_object_object_add(out, "command", json_object_get(cmd));
	json_object_object_add(out, "args", a);
	json_object_object_add(out, "env", en);
	return out;
}

/* 1 when list (checked servers) already has a server called name. */
static int
mcp_config_has_name(json_object *list, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *n = NULL;

		json_object_object_get_ex(json_object_array_get_idx(list, i),
		    "name", &n);
		if (strcmp(json_object_get_string(n), name) == 0)
			return 1;
	}
	return 0;
}

json_object *
mcp_config_parse(json_object *v, const struct keys *keys, char *why,
    size_t whylen)
{
	json_object *out;
	size_t n;

	if (!json_object_is_type(v, json_type_array) ||
	    (n = json_object_array_length(v)) > MCP_MAX_SERVERS) {
		snprintf(why, whylen, "mcp must be an array of at most %d "
		    "servers, each {name, command, args, env}",
		    MCP_MAX_SERVERS);
		return NULL;
	}
	out = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		json_object *s = mcp_config_server(json_object_array_get_idx(v,
		    i), keys, why, whylen);
		const char *name;

		if (!s) {
			json_object_put(out);
			return NULL;
		}
		name = json_object_get_string(json_object_object_get(s,
		    "name"));
		if (mcp_config_has_name(out, name)) {
			snprintf(why, whylen, "two MCP servers are called %s: "
			    "names must differ", name);
			json_object_put(s);
			json_object_put(out);
			return NULL;
		}
		json_object_array_add(out, s);
	}
	if (strlen(json_object_to_json_string_ext(out,
	    JSON_C_TO_STRING_PLAIN)) > MCP_CONFIG_MAX) {
		snprintf(why, whylen, "the MCP servers' config is over %d KiB: "
		    "make it shorter", MCP_CONFIG_MAX / 1024);
		json_object_put(out);
		return NULL;
	}
	return out;
}
