/*
 * http_req.h: one HTTP request as atriumd-http serves it (http_routes.c
 * makes it, a route's handler answers it, http_reply.c answers and logs
 * it).  It lives from MHD's first call for the request to its
 * completion notice; a stream (http_stream.h) outlives the handler and
 * points back to it until then.
 */
#ifndef ATRIUMD_HTTP_REQ_H
#define ATRIUMD_HTTP_REQ_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "buf.h"

struct MHD_Connection;
struct http_server;
struct http_route;
struct http_stream;
struct http_proxy;

#define HTTP_MAX_PATH		4096	/* a {path...} capture, decoded */
#define HTTP_MAX_TOKEN		256	/* bytes of a bearer token */

struct http_req {
	struct http_server *srv;
	struct MHD_Connection *conn;
	const struct http_route *route;	/* NULL until matched */
	char method[16];
	char path[512];			/* as sent, without the query, cut
					 * for the log */
	char room[64];			/* the {room} capture, or "" */
	char rest[HTTP_MAX_PATH];	/* the {path...} capture, decoded */
	char addr[64];			/* the client's numeric address */
	int relayed;			/* the connection came from another
					 * node (http_auth_relayed): never
					 * relayed on */
	char token[HTTP_MAX_TOKEN + 1];	/* as sent; never logged */
	int by_cookie;			/* the token came in the cookie */
	char user[64];			/* whom the monitor says it is for */
	char token_id[16];		/* the token's id, for the log */
	int admin;			/* the token's key has atrium-admin */
	int read_only;			/* a read-only token */
	int authed;			/* user and the rest are set */
	struct buf body;		/* a JSON body, up to http-max-json */
	int body_over;			/* more came than the limit */
	int answered;			/* a response is queued */
	unsigned status;		/* the response's status */
	uint64_t bytes;			/* body bytes sent */
	long long start_ms;		/* first call, monotonic */
	struct http_stream *stream;	/* an event stream or WebSocket that
					 * answers it, or NULL */
	void *ctx;			/* the route's own state, or NULL */
	void (*ctx_free)(void *ctx);	/* frees ctx when the request is
					 * over (completion), or NULL */
	struct http_proxy *proxy;	/* relayed to its room's home
					 * (http_proxy.h), or NULL */
	int suspended;			/* MHD_suspend_connection'd by its
					 * route (body or stream): resume with
					 * http_req_resume */
};

/* Resume r if its route suspended it (more body wanted, a stream has
 * data). */
void http_req_resume(struct http_req *r);

/* Answer r with status and a JSON body: {"error": why}.  MHD's result. */
int http_reply_error(struct http_req *r, unsigned status, const char *why);

/* Answer r with status and obj as JSON (obj stays the caller's). */
int http_reply_json(struct http_req *r, unsigned status, json_object *obj);

struct MHD_Response;
/* Queue resp (not freed) as it is: an answer relayed from the room's
 * home, which has its headers already.  MHD's result. */
int http_reply_queue_as_is(struct http_req *r, unsigned status,
    struct MHD_Response *resp);

/* Answer r with status and text of content_type. */
int http_reply_text(struct http_req *r, unsigned status,
    const char *content_type, const char *text, size_t len);

/* Queue resp (not freed) with the headers every answer has (no framing,
 * no sniffing, no caching of what is private).  MHD's result. */
struct MHD_Response;
int http_reply_queue(struct http_req *r, unsigned status,
    struct MHD_Response *resp);

/* The request's one log line: method, path, status, bytes, ms, user,
 * room, token id.  Called once, when MHD says the request is over. */
void http_reply_log(const struct http_req *r);

#endif
