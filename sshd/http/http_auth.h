/*
 * http_auth.h: who an HTTP request is for, and whether its origin may ask
 * it (http_auth.c).  Called by http_server.c for every route with
 * HTTP_AUTH, and by the routes that authenticate only sometimes
 * (/metrics: a loopback client needs no token).
 *
 *   the token    "Authorization: Bearer TOKEN", else the cookie
 *                atrium_session (POST /api/session sets it); never a URL
 *                parameter.  The monitor resolves it on every request
 *                (whoami): who it is for is never this process's word.
 *   the origin   a request authenticated by the cookie with a method
 *                other than GET or HEAD must carry an Origin whose host
 *                is the Host it was sent to (no form post or fetch from
 *                another site rides on the cookie); a WebSocket upgrade
 *                must too, whatever authenticates it, when it has an
 *                Origin (browsers always send one), and with the cookie
 *                it must have one.
 *   the address  the connection's peer; X-Forwarded-For (its last entry)
 *                only when the peer is http-trusted-proxy.
 */
#ifndef ATRIUMD_HTTP_AUTH_H
#define ATRIUMD_HTTP_AUTH_H

#include <stddef.h>

struct http_req;

#define HTTP_COOKIE	"atrium_session"

/* 1 when c came relayed from another node of the cluster (http_server.h,
 * http_server_add_relayed): its address was given with port 0, which no
 * TCP peer has. */
struct MHD_Connection;
int http_auth_relayed(struct MHD_Connection *c);

/* Set r->addr from the connection (and a trusted proxy's header, but on
 * a relayed connection), and r->relayed. */
void http_auth_addr(struct http_req *r);

/* 1 when r's client is on a loopback address (and no proxy, nor another
 * node, spoke for it), 0 when not. */
int http_auth_loopback(const struct http_req *r);

/* Authenticate r: its token taken, its origin checked (upgrade: r is a
 * WebSocket upgrade), the monitor asked.  0 with r->user and the rest
 * set; else 1 with r answered (401, 403, 503) and *ret MHD's result. */
int http_auth_check(struct http_req *r, int upgrade, int *ret);

/* Does Origin's host equal Host?  1, or 0 (either missing, or
 * different). */
int http_auth_same_origin(struct http_req *r);

/* The header-reading parts of the above, on the values alone (the
 * fuzzers' way in):
 *
 * The token of an Authorization value h (NULL: absent) or else of the
 * atrium_session cookie's value (NULL: absent) into out (len bytes),
 * *by_cookie set when it is the cookie's.  0, or -1 with why. */
int http_auth_token_of(const char *h, const char *cookie, char *out,
    size_t len, int *by_cookie, const char **why);

/* Does origin ("SCHEME://HOST[:PORT]") name host?  1 or 0 (either
 * NULL). */
int http_auth_origin_is(const char *origin, const char *host);

/* The last entry of an X-Forwarded-For value xff (NULL: absent) into
 * out, when it is a numeric address; else out is left alone. */
void http_auth_forwarded(const char *xff, char *out, size_t len);

#endif
