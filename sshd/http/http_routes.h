/*
 * http_routes.h: every route of atriumd-http, one table (http_routes.c),
 * and how a request reaches its row.  A row is a method, a path pattern,
 * the handler and what the request needs before the handler runs:
 *
 *   pattern   literal segments, "{room}" (one segment, a valid room name,
 *             else 400) and a last "{path...}" (the rest, every segment
 *             decoded and checked: no "", ".", "..", encoded "/" or NUL,
 *             else 400).  The path is never unescaped as a whole: a
 *             "%2F" in a segment is a 400, never a second segment.
 *   flags     HTTP_AUTH: a token (Bearer, or the session cookie), which
 *             the monitor resolves (whoami) before the handler: 401
 *             without; HTTP_CHANGES: refused to a read-only token (403);
 *             HTTP_BODY_JSON: the body, up to http-max-json, is in
 *             r->body when the handler runs (413 past it);
 *             HTTP_BODY_STREAM: the body goes to the row's body
 *             callback as it comes (up to http-max-body, 413 past it);
 *             HTTP_UPGRADE: a WebSocket upgrade (its Origin is checked
 *             whatever authenticates it).
 *
 * A path that matches no pattern is a 404; one that matches with another
 * method, a 405.  HEAD is served by a GET row.
 */
#ifndef ATRIUMD_HTTP_ROUTES_H
#define ATRIUMD_HTTP_ROUTES_H

#include <stddef.h>
#include <sys/types.h>

struct http_req;
struct MHD_Connection;

#define HTTP_AUTH		0x01
#define HTTP_CHANGES		0x02
#define HTTP_BODY_JSON		0x04
#define HTTP_BODY_STREAM	0x08
#define HTTP_UPGRADE		0x10	/* a WebSocket: the origin rule of
					 * upgrades (http_auth.h) */

/* Answer r (once the flags' needs are met, and the body is in for
 * HTTP_BODY_JSON or ended for HTTP_BODY_STREAM).  MHD's result. */
typedef int (*http_handler)(struct http_req *r);

/* Take a piece of an HTTP_BODY_STREAM body: the bytes taken (0..len;
 * fewer than len suspends the request until http_req_resume, then the
 * rest comes again), or -1 to fail the request (the callback answered
 * it, or it ends with a 500). */
typedef ssize_t (*http_body_fn)(struct http_req *r, const char *data,
    size_t len);

struct http_route {
	const char *method;		/* "GET", "POST", "PUT", "DELETE"... */
	const char *pattern;		/* "/api/rooms/{room}/events" */
	unsigned flags;			/* HTTP_AUTH | ... */
	http_handler fn;
	http_body_fn body;		/* HTTP_BODY_STREAM only, else NULL */
};

/* Find r's row for method and url (as sent, without the query): its
 * captures are set in r.  The row, or NULL with *status (400, 404, 405)
 * and *why for the client. */
const struct http_route *http_routes_match(struct http_req *r,
    const char *method, const char *url, unsigned *status, const char **why);

/* Decode one path segment seg (n bytes) into out (len): %XX escapes
 * only.  0, or -EINVAL for a bad escape, an empty, "." or ".." segment,
 * or a decoded '/', NUL or control byte. */
int http_segment_decode(const char *seg, size_t n, char *out, size_t len);

#endif
