/*
 * api_rhema_ws.c: rhema's per-session WebSocket, GET /sessions/{id}/ws
 * (api_rhema.h): the room's WebSocket (http_ws.c: the handshake, the
 * Origin rule, the room joined through the monitor, a slow reader's
 * backlog dropped and told) with its messages translated:
 *
 *   from the client (one JSON object per text message)
 *     {"type":"chat","text"}            -> prompt {text}
 *     {"type":"approve","id","approve"} -> approve {id, approve}
 *     {"type":"stop"}                   -> stop
 *     anything else                     <- {"type":"error","message"}
 *   to the client: the room's events as rhema's (api_rhema_event); the
 *   others (welcome, presence, the shared terminal...) are left out.
 */
#include "api_rhema.h"

#include <string.h>

#include "http_stream.h"
#include "jsonl.h"

/* A chat's prompt line, or NULL. */
static json_object *
api_rhema_ws_chat(json_object *m)
{
	const char *text = json_get_string(m, "text");
	json_object *o;

	if (!text)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("prompt"));
	json_object_object_add(o, "text", json_object_new_string(text));
	return o;
}

/* An approve's line, or NULL. */
static json_object *
api_rhema_ws_approve(json_object *m)
{
	json_object *o, *id, *yes;

	if (!json_object_object_get_ex(m, "id", &id) ||
	    !json_object_object_get_ex(m, "approve", &yes) ||
	    !json_object_is_type(yes, json_type_boolean))
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("approve"));
	json_object_object_add(o, "id", json_object_get(id));
	json_object_object_add(o, "approve", json_object_get(yes));
	return o;
}

/* The room's request for a client's message (http_ws_map.in). */
static json_object *
api_rhema_ws_in(json_object *m, const char **why)
{
	const char *type = json_get_string(m, "type");
	json_object *o = NULL;

	*why = "unknown message type: send chat, approve or stop";
	if (type && strcmp(type, "chat") == 0) {
		if (!(o = api_rhema_ws_chat(m)))
			*why = "chat needs \"text\"";
	} else if (type && strcmp(type, "approve") == 0) {
		if (!(o = api_rhema_ws_approve(m)))
			*why = "approve needs \"id\" and \"approve\" (true or "
			    "false)";
	} else if (type && strcmp(type, "stop") == 0) {
		o = json_object_new_object();
		json_object_object_add(o, "type", json_object_new_string("stop"));
	}
	return o;
}

static const struct http_ws_map api_rhema_ws_map = {
	api_rhema_event, api_rhema_ws_in,
};

/* See api_rhema.h. */
int
api_rhema_ws_open(struct http_req *r)
{
	return http_ws_open_mapped(r, &api_rhema_ws_map);
}
