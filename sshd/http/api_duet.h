/*
 * api_duet.h: Duet's worker's routes over Atrium's rooms (api_duet.c).
 * GET /health is atriumd-http's own (http_api.h).
 */
#ifndef ATRIUMD_API_DUET_H
#define ATRIUMD_API_DUET_H

struct http_req;

/* POST /api/rooms/{room}/messages (and .../message): a prompt to the
 * room's agent, answered at its turn's end with {"reply", "messages"}. */
int api_duet_message(struct http_req *r);

/* POST /api/rooms/{room}/sandbox/exec {"cmd"}: {"result", "sandboxName"}. */
int api_duet_exec(struct http_req *r);

/* DELETE /api/rooms/{room}: the room and all it holds. */
int api_duet_delete(struct http_req *r);

#endif
