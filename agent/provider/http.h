/*
 * http.h: model requests over libcurl's multi interface, driven by the
 * agent's event loop (http.c), and the GETs that ask a model server about
 * itself (model_window.h).  One call streams its response body to a
 * callback as it arrives; the end (status, headers that matter for retries,
 * an error body) is reported once.
 */
#ifndef ATRIUM_AGENT_HTTP_H
#define ATRIUM_AGENT_HTTP_H

#include <stddef.h>

#include "provider.h"

struct loop;
struct http;
struct http_call;

#define HTTP_MAX_ERROR_BODY	(64 * 1024)	/* kept of a non-2xx body */

struct http_result {
	int status;		/* HTTP status; 0 when no response came */
	int curl_code;		/* CURLcode, 0 on success */
	char error[256];	/* transport error text ("" when none) */
	const char *body;	/* non-2xx body (capped), NUL-terminated */
	size_t body_len;
	const char *retry_after;	/* header values, NULL when absent */
	const char *retry_after_ms;
	int refused;		/* the body callback refused the stream */
};

struct http_cbs {
	void *arg;
	/* Bytes of a 2xx body.  A negative result aborts the transfer. */
	int (*body)(void *arg, const char *p, size_t n);
	/* The transfer ended (not called after http_cancel). */
	void (*done)(void *arg, const struct http_result *r);
};

/* 0 or -errno. */
int http_new(struct loop *l, struct http **out);
void http_free(struct http *h);

/* Start a POST.  connect_s: connect timeout; idle_s: abort when no byte
 * arrives for that long.  The call takes req->body (NULL after, whatever
 * the result): curl sends it from there, without a copy of its own.  0
 * with *out, or -errno (logged). */
int http_start(struct http *h, struct provider_http *req,
    int connect_s, int idle_s, const struct http_cbs *cbs,
    struct http_call **out);

/* Start a GET of req's url with its headers (req->body is not used):
 * what a server says about itself.  As http_start otherwise. */
int http_get(struct http *h, const struct provider_http *req,
    int connect_s, int idle_s, const struct http_cbs *cbs,
    struct http_call **out);

/* Drop a call in flight; its done callback never comes. */
void http_cancel(struct http_call *c);

#endif
