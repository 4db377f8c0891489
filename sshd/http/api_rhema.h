/*
 * api_rhema.h: rhema's coding agent's routes over Atrium's rooms
 * (api_rhema.c; its WebSocket: api_rhema_ws.c).
 */
#ifndef ATRIUMD_API_RHEMA_H
#define ATRIUMD_API_RHEMA_H

#include <json-c/json.h>

struct http_req;

/* POST /sessions/{id}/config: the room's settings from rhema's names. */
int api_rhema_config(struct http_req *r);

/* GET /sessions/{id}/session: the room's stored history as rhema's. */
int api_rhema_session(struct http_req *r);

/* GET /sessions/{id}/ws: the session's WebSocket. */
int api_rhema_ws_open(struct http_req *r);

/* rhema's event for a room event (new), or NULL when it has none. */
json_object *api_rhema_event(json_object *ev);

/* rhema's approval name for the room's (to_room 0) or the room's for
 * rhema's (to_room 1); NULL when there is none. */
const char *api_rhema_approval(const char *name, int to_room);

#endif
