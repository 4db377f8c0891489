/*
 * room_request.c: a client's request on the room protocol, checked alike
 * over SSH and HTTP (room_request.h).  Called by atriumd-net's control.c
 * and atriumd-http's http_ws.c, once per request, on their loop thread.
 */
#include "room_request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "utf8.h"

/* See room_request.h. */
int
room_request_clean(const char *type, json_object *o)
{
	const char *text = json_get_string(o, "text");
	char *clean;
	int changed;

	if (!type || (strcmp(type, "chat") && strcmp(type, "prompt")) || !text)
		return 0;
	if (!(clean = utf8_clean_str(text)))
		return -ENOMEM;
	changed = strcmp(clean, text) != 0;
	if (changed)
		json_object_object_add(o, "text", json_object_new_string(clean));
	free(clean);
	return changed;
}

/* See room_request.h. */
json_object *
room_request_error(const char *id, const char *message)
{
	json_object *ev = json_object_new_object();

	if (!ev)
		return NULL;
	json_object_object_add(ev, "type", json_object_new_string("error"));
	if (id)
		json_object_object_add(ev, "id", json_object_new_string(id));
	json_object_object_add(ev, "message", json_object_new_string(message));
	return ev;
}
