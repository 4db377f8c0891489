/*
 * http_routes.c: the route table of atriumd-http and the matching of a
 * request's path against it (http_routes.h).  Called by http_server.c on
 * MHD's first call for each request.
 *
 * The table is the one list of what atriumd-http serves: a route that is
 * not a row here does not exist.  Rows are tried in order; the first
 * whose pattern matches the path and whose method matches wins.
 */
#include "http_routes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api_cloudflare.h"
#include "api_duet.h"
#include "api_exec.h"
#include "api_files.h"
#include "api_rhema.h"
#include "http_api.h"
#include "http_req.h"
#include "http_stream.h"
#include "http_web.h"
#include "names.h"
#include "util.h"

static const struct http_route http_routes[] = {
	{ "GET", "/health", 0, http_api_health, NULL },
	{ "GET", "/metrics", 0, http_api_metrics, NULL },
	{ "GET", "/r/{room}", 0, http_web_page, NULL },
	{ "GET", "/assets/{path...}", 0, http_web_asset, NULL },
	{ "POST", "/api/session", HTTP_AUTH, http_api_session_new, NULL },
	{ "DELETE", "/api/session", 0, http_api_session_end, NULL },
	{ "GET", "/api/rooms", HTTP_AUTH, http_api_rooms, NULL },
	{ "GET", "/api/rooms/{room}/events", HTTP_AUTH, http_sse_open, NULL },
	{ "GET", "/api/rooms/{room}/ws", HTTP_AUTH | HTTP_UPGRADE, http_ws_open,
	    NULL },
	/* commands (api_exec.h) */
	{ "POST", "/api/rooms/{room}/exec", HTTP_AUTH | HTTP_CHANGES |
	    HTTP_BODY_STREAM, api_exec_run, api_exec_body },
	/* Duet's worker (api_duet.h) */
	{ "POST", "/api/rooms/{room}/messages", HTTP_AUTH | HTTP_CHANGES |
	    HTTP_BODY_JSON, api_duet_message, NULL },
	{ "POST", "/api/rooms/{room}/message", HTTP_AUTH | HTTP_CHANGES |
	    HTTP_BODY_JSON, api_duet_message, NULL },
	{ "POST", "/api/rooms/{room}/sandbox/exec", HTTP_AUTH | HTTP_CHANGES |
	    HTTP_BODY_JSON, api_duet_exec, NULL },
	{ "DELETE", "/api/rooms/{room}", HTTP_AUTH | HTTP_CHANGES,
	    api_duet_delete, NULL },
	/* rhema's coding agent (api_rhema.h) */
	{ "POST", "/sessions/{room}/config", HTTP_AUTH | HTTP_CHANGES |
	    HTTP_BODY_JSON, api_rhema_config, NULL },
	{ "GET", "/sessions/{room}/session", HTTP_AUTH, api_rhema_session,
	    NULL },
	{ "GET", "/sessions/{room}/ws", HTTP_AUTH | HTTP_UPGRADE,
	    api_rhema_ws_open, NULL },
	/* the workspace's files (api_files.h) */
	{ "GET", "/api/rooms/{room}/files", HTTP_AUTH, api_files_get, NULL },
	{ "GET", "/api/rooms/{room}/files/", HTTP_AUTH, api_files_get, NULL },
	{ "GET", "/api/rooms/{room}/files/{path...}", HTTP_AUTH,
	    api_files_get, NULL },
	{ "PUT", "/api/rooms/{room}/files/{path...}", HTTP_AUTH |
	    HTTP_CHANGES | HTTP_BODY_STREAM, api_files_put,
	    api_files_put_body },
	{ "DELETE", "/api/rooms/{room}/files/{path...}", HTTP_AUTH |
	    HTTP_CHANGES, api_files_delete, NULL },
	{ "GET", "/c/{room}/file/workspace/{path...}", HTTP_AUTH,
	    api_files_cf_get, NULL },
	{ "PUT", "/c/{room}/file/workspace/{path...}", HTTP_AUTH |
	    HTTP_CHANGES | HTTP_BODY_STREAM, api_files_cf_put,
	    api_files_cf_put_body },
	{ "GET", "/c/{room}/file/{path...}", HTTP_AUTH, api_files_cf_outside,
	    NULL },
	{ "PUT", "/c/{room}/file/{path...}", HTTP_AUTH | HTTP_BODY_STREAM,
	    api_files_cf_outside, api_files_cf_outside_body },
	/* Cloudflare's workspace example (api_cloudflare.h) */
	{ "POST", "/c/{room}/exec", HTTP_AUTH | HTTP_CHANGES | HTTP_BODY_JSON,
	    api_cloudflare_exec, NULL },
};

#define HTTP_NROUTES	(sizeof(http_routes) / sizeof(http_routes[0]))

/* See http_routes.h. */
int
http_segment_decode(const char *seg, size_t n, char *out, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)seg[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= n)
				return -EINVAL;
			hi = hex_value(seg[i + 1]);
			lo = hex_value(seg[i + 2]);
			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '/' || c < 0x20 || c == 0x7f || o + 1 >= len)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	if (o == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		return -EINVAL;
	return 0;
}

/* The rest of a path from p (after the "{path...}" point), every segment
 * decoded and checked, joined with '/' into out.  0 or -EINVAL. */
static int
http_rest_decode(const char *p, char *out, size_t len)
{
	size_t o = 0;

	out[0] = '\0';
	while (*p) {
		size_t n = strcspn(p, "/");

		if (o && o + 1 < len)
			out[o++] = '/';
		if (http_segment_decode(p, n, out + o, len - o) < 0)
			return -EINVAL;
		o += strlen(out + o);
		p += n;
		if (*p == '/' && !*++p)
			return -EINVAL;	/* a trailing '/' */
	}
	return 0;
}

/* Does url match pattern?  1 with r's captures set, 0 when not, -EINVAL
 * when it matches but a capture is not well formed (why set). */
static int
http_match_one(const char *pattern, const char *url, struct http_req *r,
    const char **why)
{
	const char *p = pattern, *u = url;
	char seg[64];

	while (*p && *u) {
		size_t pn, un;

		if (*p != '{' && (*p == '/' || *u == '/')) {
			if (*p != *u)
				return 0;
			p++, u++;
			continue;
		}
		pn = strcspn(p, "/");
		un = strcspn(u, "/");
		if (pn == 9 && strncmp(p, "{path...}", 9) == 0) {
			if (http_rest_decode(u, r->rest, sizeof(r->rest)) < 0) {
				*why = "a path segment is empty, '.', '..', or "
				    "holds an encoded '/' or a control byte";
				return -EINVAL;
			}
			return 1;
		}
		if (pn == 6 && strncmp(p, "{room}", 6) == 0) {
			if (http_segment_decode(u, un, seg, sizeof(seg)) < 0 ||
			    !room_name_valid(seg)) {
				*why = "not a room name: 1 to 63 of a-z, 0-9 and "
				    "'-', not first";
				return -EINVAL;
			}
			snprintf(r->room, sizeof(r->room), "%s", seg);
		} else if (pn != un || strncmp(p, u, pn) != 0) {
			return 0;
		}
		p += pn;
		u += un;
	}
	return !*p && !*u;
}

/* See http_routes.h. */
const struct http_route *
http_routes_match(struct http_req *r, const char *method, const char *url,
    unsigned *status, const char **why)
{
	int path_matched = 0;

	*status = 404;
	*why = "no such route: see atriumd(8), HTTP";
	if (url[0] != '/') {
		*status = 400;
		*why = "the path must start with '/'";
		return NULL;
	}
	for (size_t i = 0; i < HTTP_NROUTES; i++) {
		const struct http_route *e = &http_routes[i];
		int m;

		r->room[0] = r->rest[0] = '\0';
		if ((m = http_match_one(e->pattern, url, r, why)) < 0) {
			*status = 400;
			return NULL;
		}
		if (!m)
			continue;
		if (strcmp(e->method, method) == 0 ||
		    (strcmp(method, "HEAD") == 0 &&
		    strcmp(e->method, "GET") == 0))
			return e;
		path_matched = 1;
	}
	if (path_matched) {
		*status = 405;
		*why = "that method is not served at this path: see "
		    "atriumd(8), HTTP";
	}
	return NULL;
}
