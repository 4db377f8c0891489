/*
 * http_stream.c: streams (http_stream.h), not served yet.
 */
#include "http_stream.h"

#include <stddef.h>

#include "http_req.h"

int
http_sse_open(struct http_req *r)
{
	return http_reply_error(r, 503, "event streams are not served yet");
}

int
http_ws_open(struct http_req *r)
{
	return http_reply_error(r, 503, "WebSockets are not served yet");
}

void http_stream_detach(struct http_stream *s) { (void)s; }
void http_stream_end_room(struct http_server *srv, const char *room,
    const char *msg) { (void)srv; (void)room; (void)msg; }
void http_stream_wake(struct http_server *srv) { (void)srv; }
void http_stream_tick(struct http_server *srv) { (void)srv; }
void http_stream_reap(struct http_server *srv) { (void)srv; }
void http_stream_free_all(struct http_server *srv) { (void)srv; }
