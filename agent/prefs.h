/*
 * prefs.h: each person's own chat settings in a room (prefs.c): today the
 * bell (`/set bell off` in the chat).  They belong to the person, not to
 * the room, so anyone may change their own and nobody another's; they
 * live in room.db beside the room's settings and come back at every join
 * in the welcome, as the person's input history comes back from the
 * room's stored lines.
 */
#ifndef ATRIUM_AGENT_PREFS_H
#define ATRIUM_AGENT_PREFS_H

#include <json-c/json.h>

struct agent;
struct conn;

/* The `pref` request ({"key": "bell", "value": "on" | "off"}; no value:
 * the query): store it for c's user, then answer c alone with a `pref`
 * event carrying the key and its value.  A bad key or value, or a write
 * that fails, is answered with an error. */
void prefs_request(struct agent *a, struct conn *c, json_object *req);

/* Add "prefs": {"bell": "on" | "off"} for user to ev (the welcome). */
void prefs_describe(struct agent *a, const char *user, json_object *ev);

#endif
