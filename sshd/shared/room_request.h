/*
 * room_request.h: what both ways a client sends the room protocol in by
 * (room_request.c) do alike to its requests: the `atrium` subsystem
 * (sshd/net/control.c, a line each) and the room's WebSocket
 * (sshd/http/http_ws.c, a message each).  The text of a chat or prompt
 * loses its control characters (utf8.h) before the room sees it: it
 * reaches every member's terminal and the room's history.  A refusal is
 * an `error` event to that client alone, naming the request's id when it
 * had one (so a client waiting for an exec's answer gets it).
 */
#ifndef ATRIUMD_ROOM_REQUEST_H
#define ATRIUMD_ROOM_REQUEST_H

#include <json-c/json.h>

/* Clean o's text when o (of type, may be NULL) is a chat or a prompt.  1
 * when o changed (send it re-encoded), 0 when it is as it came, -ENOMEM. */
int room_request_clean(const char *type, json_object *o);

/* {"type":"error","id":ID,"message":MESSAGE}, without id when id is
 * NULL: the caller's, or NULL when out of memory. */
json_object *room_request_error(const char *id, const char *message);

#endif
