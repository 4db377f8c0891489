/*
 * http_api.h: the routes of atriumd-http that answer at once (http_api.c):
 * health, the rooms a token may enter, the session cookie, and the
 * operator's metrics.  Each is a row of http_routes.c; each returns MHD's
 * result.
 */
#ifndef ATRIUMD_HTTP_API_H
#define ATRIUMD_HTTP_API_H

struct http_req;

/* GET /health: "ok", to anyone (a load balancer's probe). */
int http_api_health(struct http_req *r);

/* GET /api/rooms: {"rooms": [...]}, the rooms the token may enter (its
 * key's, narrowed by the token's own list), as the room protocol's rooms
 * event lists them. */
int http_api_rooms(struct http_req *r);

/* POST /api/session (with the Bearer header): set the atrium_session
 * cookie to the token, HttpOnly, SameSite=Strict, Path=/, Secure unless
 * http-insecure-cookie.  {"user": ...}. */
int http_api_session_new(struct http_req *r);

/* DELETE /api/session: clear the cookie. */
int http_api_session_end(struct http_req *r);

/* GET /metrics: Prometheus's text format, to a loopback client or an
 * atrium-admin key's token; 403 to anyone else. */
int http_api_metrics(struct http_req *r);

#endif
