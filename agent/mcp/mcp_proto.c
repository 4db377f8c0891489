/*
 * mcp_proto.c: building and reading MCP messages (mcp_proto.h).  Every
 * message read here came from a program the room's owner named and runs
 * in the sandbox: each field is checked for type and bounded before use,
 * and what does not fit is left out with a reason, never trusted.
 */
#include "mcp_proto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "text.h"
#include "tool_bash.h"

/* Make the C string in out[0..outlen) valid UTF-8 without control
 * characters, cut at a character boundary when the cleaning made it
 * longer.  When memory runs out the text is emptied. */
static void
mcp_proto_clean(char *out, size_t outlen)
{
	char *c = utf8_clean_str(out);
	size_t n;

	if (!c) {
		out[0] = '\0';
		return;
	}
	n = strlen(c);
	if (n >= outlen)
		n = utf8_complete(c, outlen - 1);
	memcpy(out, c, n);
	out[n] = '\0';
	free(c);
}

json_object *
mcp_proto_request(long long id, const char *method, json_object *params)
{
	json_object *m = json_object_new_object();

	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "id", json_object_new_int64(id));
	json_object_object_add(m, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(m, "params", params);
	return m;
}

json_object *
mcp_proto_notification(const char *method, json_object *params)
{
	json_object *m = json_object_new_object();

	json_object_object_add(m, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(m, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(m, "params", params);
	return m;
}

json_object *
mcp_proto_initialize_params(void)
{
	json_object *p = json_object_new_object();
	json_object *info = json_object_new_object();

	json_object_object_add(p, "protocolVersion",
	    json_object_new_string(MCP_PROTOCOL_VERSION));
	/* No roots, sampling or elicitation: the agent only calls tools. */
	json_object_object_add(p, "capabilities", json_object_new_object());
	json_object_object_add(info, "name", json_object_new_string("atrium"));
	json_object_object_add(info, "version", json_object_new_string("1"));
	json_object_object_add(p, "clientInfo", info);
	return p;
}

json_object *
mcp_proto_answer(json_object *m)
{
	json_object *id = NULL, *a, *err;
	const char *method = json_get_string(m, "method");

	if (!json_object_object_get_ex(m, "id", &id) ||
	    !(json_object_is_type(id, json_type_int) ||
	    json_object_is_type(id, json_type_string)))
		return NULL;
	a = json_object_new_object();
	json_object_object_add(a, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(a, "id", json_object_get(id));
	if (method && strcmp(method, "ping") == 0) {
		json_object_object_add(a, "result", json_object_new_object());
		return a;
	}
	err = json_object_new_object();
	json_object_object_add(err, "code", json_object_new_int(-32601));
	json_object_object_add(err, "message",
	    json_object_new_string("method not found"));
	json_object_object_add(a, "error", err);
	return a;
}

enum mcp_msg
mcp_proto_classify(json_object *m, long long *id)
{
	json_object *v = NULL, *idv = NULL;
	const char *ver = json_get_string(m, "jsonrpc");

	*id = -1;
	if (!ver || strcmp(ver, "2.0") != 0)
		return MCP_MSG_INVALID;
	if (json_object_object_get_ex(m, "method", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return MCP_MSG_INVALID;
		return json_object_object_get_ex(m, "id", NULL) ?
		    MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
	}
	if (json_object_object_get_ex(m, "id", &idv) &&
	    json_object_is_type(idv, json_type_int))
		*id = json_object_get_int64(idv);
	if (json_object_object_get_ex(m, "result", &v))
		return json_object_is_type(v, json_type_object) ?
		    MCP_MSG_RESULT : MCP_MSG_INVALID;
	if (json_object_object_get_ex(m, "error", &v))
		return json_object_is_type(v, json_type_object) ?
		    MCP_MSG_ERROR : MCP_MSG_INVALID;
	return MCP_MSG_INVALID;
}

void
mcp_proto_error_text(json_object *m, char *out, size_t outlen)
{
	json_object *e = NULL;
	const char *msg;

	json_object_object_get_ex(m, "error", &e);
	msg = json_get_string(e, "message");
	snprintf(out, outlen, "error %lld: %.300s", json_get_int(e, "code", 0),
	    msg ? msg : "(no message)");
	mcp_proto_clean(out, outlen);
}

/* 1 when c may be in a provider's tool name. */
static int
mcp_proto_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int
mcp_proto_tool_name(const char *server, const char *tool, char *out,
    size_t outlen)
{
	int n;

	if (!tool || !*tool)
		return -EINVAL;
	n = snprintf(out, outlen, "mcp__%s__%s", server, tool);
	if (n < 0 || (size_t)n >= outlen || n > MCP_TOOL_NAME_MAX)
		return -EINVAL;
	for (int i = 0; i < n; i++)
		if (!mcp_proto_name_char(out[i]))
			return -EINVAL;
	return 0;
}

/* The model's tool object for MCP tool t, or NULL with the reason. */
static json_object *
mcp_proto_tool(json_object *t, const char *full, const char **why)
{
	json_object *schema = NULL, *tool;
	const char *desc = json_get_string(t, "description");
	const char *type;
	char *d;

	if (!json_object_object_get_ex(t, "inputSchema", &schema) ||
	    !json_object_is_type(schema, json_type_object) ||
	    !(type = json_get_string(schema, "type")) ||
	    strcmp(type, "object") != 0) {
		*why = "its inputSchema is not an object schema";
		return NULL;
	}
	if (strlen(json_object_to_json_string_ext(schema,
	    JSON_C_TO_STRING_PLAIN)) > MCP_SCHEMA_MAX) {
		*why = "its inputSchema is over 16 KiB";
		return NULL;
	}
	d = malloc(MCP_DESC_MAX + 1);
	if (!d) {
		*why = "out of memory";
		return NULL;
	}
	snprintf(d, MCP_DESC_MAX + 1, "%s", desc ? desc : "");
	mcp_proto_clean(d, MCP_DESC_MAX + 1);
	tool = json_object_new_object();
	json_object_object_add(tool, "name", json_object_new_string(full));
	json_object_object_add(tool, "description", json_object_new_string(d));
	json_object_object_add(tool, "input_schema", json_object_get(schema));
	free(d);
	return tool;
}

int
mcp_proto_add_tools(json_object *result, const char *server,
    json_object *tools, json_object *names, size_t max, int *skipped,
    char *note, size_t notelen)
{
	json_object *list = NULL;
	char full[MCP_TOOL_NAME_MAX + 8];

	if (!json_object_object_get_ex(result, "tools", &list) ||
	    !json_object_is_type(list, json_type_array))
		return -EINVAL;
	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *t = json_object_array_get_idx(list, i), *tool;
		const char *name = json_get_string(t, "name"), *why = NULL;

		if (json_object_array_length(tools) >= max)
			why = "the room's limit of MCP tools was reached";
		else if (!name || mcp_proto_tool_name(server, name, full,
		    sizeof(full)) < 0)
			why = "its name does not fit mcp__SERVER__TOOL in 64 "
			    "letters, digits, _ or -";
		else if (json_object_object_get_ex(names, full, NULL))
			why = "the server listed it twice";
		if (!why && (tool = mcp_proto_tool(t, full, &why))) {
			json_object_array_add(tools, tool);
			json_object_object_add(names, full,
			    json_object_new_string(name));
			continue;
		}
		if ((*skipped)++ == 0)
			snprintf(note, notelen, "tool %.64s left out: %s",
			    name ? name : "(no name)", why);
	}
	if (note[0])
		mcp_proto_clean(note, notelen);
	return 0;
}

const char *
mcp_proto_next_cursor(json_object *result)
{
	const char *c = json_get_string(result, "nextCursor");

	return c && *c && strlen(c) <= MCP_CURSOR_MAX ? c : NULL;
}

/* The note or text for one content block, added to cap. */
static void
mcp_proto_block(struct outcap *cap, json_object *b)
{
	const char *type = json_get_string(b, "type");
	const char *mime = json_get_string(b, "mimeType");
	json_object *res = NULL;
	char note[600];

	if (type && strcmp(type, "text") == 0 && json_get_string(b, "text")) {
		outcap_add(cap, json_get_string(b, "text"),
		    strlen(json_get_string(b, "text")));
		return;
	}
	if (type && strcmp(type, "resource") == 0 &&
	    json_object_object_get_ex(b, "resource", &res) &&
	    json_get_string(res, "text")) {
		snprintf(note, sizeof(note), "[resource %.300s]\n",
		    json_get_string(res, "uri") ? json_get_string(res, "uri") :
		    "");
		outcap_add(cap, note, strlen(note));
		outcap_add(cap, json_get_string(res, "text"),
		    strlen(json_get_string(res, "text")));
		return;
	}
	if (type && (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0))
		snprintf(note, sizeof(note), "[%s content (%.100s) not shown: "
		    "the agent passes on only text]", type, mime ? mime :
		    "unknown type");
	else if (type && strcmp(type, "resource_link") == 0)
		snprintf(note, sizeof(note), "[resource link: %.300s]",
		    json_get_string(b, "uri") ? json_get_string(b, "uri") : "");
	else if (type && strcmp(type, "resource") == 0)
		snprintf(note, sizeof(note), "[binary resource %.300s not "
		    "shown]", json_get_string(res, "uri") ?
		    json_get_string(res, "uri") : "");
	else
		snprintf(note, sizeof(note), "[content of type %.40s not "
		    "shown]", type ? type : "(none)");
	outcap_add(cap, note, strlen(note));
}

char *
mcp_proto_call_text(json_object *result, int *is_error)
{
	json_object *content = NULL, *sc = NULL;
	struct outcap cap;
	char *out = NULL;
	int has_content;

	*is_error = json_get_bool(result, "isError", 0);
	has_content = json_object_object_get_ex(result, "content", &content) &&
	    json_object_is_type(content, json_type_array);
	json_object_object_get_ex(result, "structuredContent", &sc);
	if (!has_content && !sc)
		return NULL;
	if (outcap_init(&cap, TOOL_BASH_HEAD, TOOL_BASH_TAIL) < 0)
		return NULL;
	for (size_t i = 0; has_content &&
	    i < json_object_array_length(content); i++) {
		if (i > 0)
			outcap_add(&cap, "\n", 1);
		mcp_proto_block(&cap, json_object_array_get_idx(content, i));
	}
	/* Structured content stands in for content only when there is none
	 * (the spec asks servers to send both). */
	if (cap.total == 0 && sc) {
		const char *s = json_object_to_json_string_ext(sc,
		    JSON_C_TO_STRING_PLAIN);

		outcap_add(&cap, s, strlen(s));
	}
	if (outcap_text(&cap, &out) < 0)
		out = NULL;
	outcap_free(&cap);
	return out;
}
