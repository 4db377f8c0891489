/*
 * api_util.c: shared pieces of the command and seed routes (api_util.h).
 */
#include "api_util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http_ask.h"
#include "http_req.h"
#include "http_routes.h"
#include "http_server.h"
#include "jsonl.h"
#include "names.h"
#include "util.h"

/* Decode a query value into out.  0, or -EINVAL. */
static int
api_query_decode(const char *v, char *out, size_t len)
{
	size_t o = 0;

	for (; *v; v++) {
		int c = (unsigned char)*v;

		if (c == '+') {
			c = ' ';
		} else if (c == '%') {
			int hi = hex_value(v[1]), lo = hi < 0 ? -1 : hex_value(v[2]);

			if (lo < 0)
				return -EINVAL;
			c = hi * 16 + lo;
			v += 2;
		}
		if (c == 0 || o + 1 >= len)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* See api_util.h. */
const char *
api_query(struct http_req *r, const char *key, char *out, size_t len)
{
	const char *v = MHD_lookup_connection_value(r->conn,
	    MHD_GET_ARGUMENT_KIND, key);

	if (!v || api_query_decode(v, out, len) < 0)
		return NULL;
	return out;
}

struct api_query_walk {
	const char *key;
	json_object *arr;
	int max;
	int bad;
};

/* MHD_KeyValueIterator: collect the values of one key. */
static enum MHD_Result
api_query_each(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct api_query_walk *w = cls;
	char dec[API_QUERY_MAX];

	(void)kind;
	if (strcmp(key, w->key) != 0)
		return MHD_YES;
	if (!value || api_query_decode(value, dec, sizeof(dec)) < 0 ||
	    (int)json_object_array_length(w->arr) >= w->max) {
		w->bad = 1;
		return MHD_NO;
	}
	json_object_array_add(w->arr, json_object_new_string(dec));
	return MHD_YES;
}

/* See api_util.h. */
json_object *
api_query_all(struct http_req *r, const char *key, int max)
{
	struct api_query_walk w = { key, json_object_new_array(), max, 0 };

	if (!w.arr)
		return NULL;
	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND,
	    api_query_each, &w);
	if (w.bad || json_object_array_length(w.arr) == 0) {
		json_object_put(w.arr);
		return NULL;
	}
	return w.arr;
}

/* See api_util.h. */
json_object *
api_body_object(struct http_req *r, char *why, size_t len)
{
	const char *err = NULL;
	json_object *o;

	if (!r->body.len) {
		snprintf(why, len, "the body must be a JSON object");
		return NULL;
	}
	o = jsonl_parse_object(r->body.data, r->body.len, &err);
	if (!o)
		snprintf(why, len, "the body is not a JSON object: %s",
		    err ? err : "invalid JSON");
	return o;
}

/* See api_util.h. */
int
api_cwd_valid(const char *cwd)
{
	char rel[4096];

	if (strncmp(cwd, "/workspace", 10) == 0 &&
	    (cwd[10] == '/' || cwd[10] == '\0'))
		cwd += 10;
	else if (cwd[0] == '/')
		return 0;
	for (const char *p = cwd; *p; p++)	/* no ".." at all, as the
						 * seeds check it */
		if (p[0] == '.' && p[1] == '.' && (p == cwd || p[-1] == '/') &&
		    (p[2] == '/' || p[2] == '\0'))
			return 0;
	return workspace_path_normalize(cwd, rel, sizeof(rel)) == 0;
}

/* See api_util.h. */
int
api_ask_pipes(struct http_req *r, int p[3][2])
{
	json_object *ans;
	int fds[6], n = 0, rc;

	rc = http_ask(r->srv, http_ask_new(r, "pipes", 0), &ans, fds, &n, 6);
	if (rc == 0 && n != 6) {
		long long e = json_get_int(ans, "errno", EIO);

		rc = e > 0 && e < 4096 ? -(int)e : -EIO;
		for (int i = 0; i < n; i++)
			close(fds[i]);
	}
	json_object_put(ans);
	for (int i = 0; rc == 0 && i < 3; i++) {
		p[i][0] = fds[2 * i];
		p[i][1] = fds[2 * i + 1];
	}
	return rc;
}

/* See api_util.h. */
void
api_base64(struct buf *b, const char *p, size_t n)
{
	static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *u = (const unsigned char *)p;
	char *out = buf_tail(b, (n + 2) / 3 * 4);
	size_t o = 0, i;

	if (!out)
		return;
	for (i = 0; i + 2 < n; i += 3) {
		out[o++] = digits[u[i] >> 2];
		out[o++] = digits[((u[i] & 3) << 4) | (u[i + 1] >> 4)];
		out[o++] = digits[((u[i + 1] & 15) << 2) | (u[i + 2] >> 6)];
		out[o++] = digits[u[i + 2] & 63];
	}
	if (i < n) {
		out[o++] = digits[u[i] >> 2];
		if (i + 1 < n) {
			out[o++] = digits[((u[i] & 3) << 4) | (u[i + 1] >> 4)];
			out[o++] = digits[(u[i + 1] & 15) << 2];
		} else {
			out[o++] = digits[(u[i] & 3) << 4];
			out[o++] = '=';
		}
		out[o++] = '=';
	}
	buf_added(b, o);
}

/* The client's socket hung up (or failed): tell the route. */
static void
api_hangup_cb(struct watch *w, int revents)
{
	struct api_hangup *h = w->arg;

	if (!(revents & (POLLRDHUP | POLLHUP | POLLERR)))
		return;
	h->gone = 1;
	loop_del(&h->w);
	http_req_resume(h->r);
}

/* See api_util.h. */
void
api_hangup_watch(struct api_hangup *h, struct http_req *r)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(r->conn,
	    MHD_CONNECTION_INFO_CONNECTION_FD);

	h->r = r;
	h->gone = 0;
	if (ci && ci->connect_fd >= 0)
		loop_add(&r->srv->loop, &h->w, ci->connect_fd, POLLRDHUP,
		    api_hangup_cb, h);
}

/* See api_util.h. */
void
api_hangup_stop(struct api_hangup *h)
{
	loop_del(&h->w);
}
