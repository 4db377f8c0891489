/*
 * http_stream.h: a room's events over HTTP (http_sse.c, http_ws.c,
 * http_stream.c): a server-sent event stream or a WebSocket, each joined
 * to a connection to the room's agent (agentlink.h) that the monitor
 * dialled (http_ask.h: use, then agent).  A stream outlives the handler
 * that opened it; it lives in srv->streams until it ends, and is freed
 * only in http_stream_reap, after MHD_run, never inside a callback.
 *
 * A slow reader never holds the room up: what waits for it is capped
 * (HTTP_STREAM_BACKLOG bytes); past the cap the backlog is dropped and
 * the reader is told in its place (an event of type "dropped"), as the
 * chat tells a member that fell behind.
 */
#ifndef ATRIUMD_HTTP_STREAM_H
#define ATRIUMD_HTTP_STREAM_H

#include <json-c/json.h>

struct http_req;
struct http_server;
struct http_stream;

/* GET /api/rooms/{room}/events: the room's events as text/event-stream
 * (id: the room's seq; Last-Event-ID resumes after it).  MHD's result. */
int http_sse_open(struct http_req *r);

/* GET /api/rooms/{room}/ws: a WebSocket carrying the room protocol's
 * JSON lines both ways, one object per text message.  MHD's result. */
int http_ws_open(struct http_req *r);

/* A WebSocket that speaks another system's messages over the room's
 * (api_rhema_ws.c): out turns a room event into the client's message
 * (new; NULL leaves it out), in a client's message into a room request
 * (new; NULL with why, sent back as an error). */
struct http_ws_map {
	json_object *(*out)(json_object *ev);
	json_object *(*in)(json_object *msg, const char **why);
};

/* http_ws_open with every message translated by map (NULL: none). */
int http_ws_open_mapped(struct http_req *r, const struct http_ws_map *map);

/* The request s answers is over (MHD's completion notice): s ends. */
void http_stream_detach(struct http_stream *s);

/* The monitor ended room (deleted): end its streams, with msg. */
void http_stream_end_room(struct http_server *srv, const char *room,
    const char *msg);

/* A room became ready or failed: streams waiting for one ask again. */
void http_stream_wake(struct http_server *srv);

/* Before MHD_run: pings, rooms waited for, output to flush. */
void http_stream_tick(struct http_server *srv);

/* After MHD_run: free the streams that ended. */
void http_stream_reap(struct http_server *srv);

/* Counts for /metrics: open event streams, open WebSockets, and the
 * commands their users started over them that have not ended. */
void http_stream_counts(struct http_server *srv, long long *sse,
    long long *ws, long long *commands);

/* Free every stream (the process ends). */
void http_stream_free_all(struct http_server *srv);

/* End every stream with msg (an "end" event; WebSockets close). */
void http_stream_end_all(struct http_server *srv, const char *msg);

#endif
