/*
 * http_reply.c: how atriumd-http answers and logs a request (http_req.h).
 * Called by the routes' handlers and by http_server.c.
 *
 * Every answer carries headers that make it inert in a browser unless
 * its route says otherwise: no sniffing, no framing, no referrer, no
 * caching, and a Content-Security-Policy that allows nothing (a route
 * that serves a page sets its own first).  Errors are JSON,
 * {"error": "what was wrong and what to do"}.  Each request is logged
 * once, at its end, in one line; the token never appears in it, its id
 * does.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "http_req.h"
#include "http_server.h"
#include "log.h"
#include "util.h"

/* The headers of every answer, each unless the response has it. */
static void
http_reply_headers(struct MHD_Response *resp)
{
	static const char *const h[][2] = {
		{ "X-Content-Type-Options", "nosniff" },
		{ "X-Frame-Options", "DENY" },
		{ "Referrer-Policy", "no-referrer" },
		{ "Cache-Control", "no-store" },
		{ "Content-Security-Policy",
		    "default-src 'none'; frame-ancestors 'none'" },
	};

	for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
		if (!MHD_get_response_header(resp, h[i][0]))
			MHD_add_response_header(resp, h[i][0], h[i][1]);
}

/* Count a refusal by its status. */
static void
http_reply_count(struct http_server *srv, unsigned status)
{
	int why = -1;

	if (status == 401)
		why = HTTP_REFUSED_AUTH;
	else if (status == 403)
		why = HTTP_REFUSED_FORBIDDEN;
	else if (status == 413 || status == 414 || status == 431 ||
	    status == 429)
		why = HTTP_REFUSED_LIMIT;
	else if (status == 400 || status == 404 || status == 405)
		why = HTTP_REFUSED_BAD;
	else if (status == 502 || status == 503)
		why = HTTP_REFUSED_UNAVAILABLE;
	if (why >= 0)
		srv->stats.refused[why]++;
}

/* See http_req.h. */
int
http_reply_queue(struct http_req *r, unsigned status, struct MHD_Response *resp)
{
	if (!resp)
		return MHD_NO;
	http_reply_headers(resp);
	if (status == 401)
		MHD_add_response_header(resp, "WWW-Authenticate",
		    "Bearer realm=\"atrium\"");
	return http_reply_queue_as_is(r, status, resp);
}

/* See http_req.h. */
int
http_reply_queue_as_is(struct http_req *r, unsigned status,
    struct MHD_Response *resp)
{
	int ret;

	r->status = status;
	r->answered = 1;
	http_reply_count(r->srv, status);
	ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* See http_req.h. */
int
http_reply_text(struct http_req *r, unsigned status, const char *content_type,
    const char *text, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len,
	    (void *)text, MHD_RESPMEM_MUST_COPY);

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", content_type);
	r->bytes = strcmp(r->method, "HEAD") == 0 ? 0 : len;
	return http_reply_queue(r, status, resp);
}

/* See http_req.h. */
int
http_reply_json(struct http_req *r, unsigned status, json_object *obj)
{
	const char *text = json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char *line = malloc(len + 2);
	int ret;

	if (!line)
		return MHD_NO;
	memcpy(line, text, len);
	line[len++] = '\n';
	ret = http_reply_text(r, status, "application/json", line, len);
	free(line);
	return ret;
}

/* See http_req.h. */
int
http_reply_error(struct http_req *r, unsigned status, const char *why)
{
	json_object *o = json_object_new_object();
	int ret;

	if (!o)
		return MHD_NO;
	json_object_object_add(o, "error", json_object_new_string(why));
	ret = http_reply_json(r, status, o);
	json_object_put(o);
	return ret;
}

/* See http_req.h. */
void
http_req_resume(struct http_req *r)
{
	if (r && r->suspended && r->conn) {
		r->suspended = 0;
		MHD_resume_connection(r->conn);
	}
}

/* A field for the log: "-" when empty. */
static const char *
http_reply_field(const char *s)
{
	return s && s[0] ? s : "-";
}

/* See http_req.h. */
void
http_reply_log(const struct http_req *r)
{
	log_info("%s %s %u %llu %lldms user=%s room=%s token=%s addr=%s",
	    r->method, r->path, r->status, (unsigned long long)r->bytes,
	    time_mono_ms() - r->start_ms, http_reply_field(r->user),
	    http_reply_field(r->room), http_reply_field(r->token_id),
	    http_reply_field(r->addr));
}
