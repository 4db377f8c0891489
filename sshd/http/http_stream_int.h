/*
 * http_stream_int.h: the state a stream's three files share
 * (http_stream.c: the room and its agent, ticks and ends; http_sse.c:
 * server-sent events; http_ws.c: WebSocket).  Not for the routes: they
 * see http_stream.h only.
 */
#ifndef ATRIUMD_HTTP_STREAM_INT_H
#define ATRIUMD_HTTP_STREAM_INT_H

#include <stddef.h>

#include <json-c/json.h>
#include <wslay/wslay.h>

#include "agentlink.h"
#include "buf.h"
#include "http_cap.h"
#include "http_req.h"
#include "http_stream.h"
#include "loop.h"

#define HTTP_STREAM_BACKLOG	(1024 * 1024)	/* bytes a reader may owe */
#define HTTP_STREAM_PING_MS	15000	/* an SSE comment after this quiet */
#define HTTP_STREAM_RETRY_MS	100	/* asks for a starting room this often */
#define HTTP_STREAM_WAIT_MS	60000	/* ... this long at most */
#define HTTP_WS_QUEUE		(256 * 1024)	/* handed to wslay at once */
#define HTTP_WS_HELD		(64 * 1024)	/* client lines before the room */
#define HTTP_WS_QUEUE_MSGS	4096		/* messages handed to wslay */
#define HTTP_WS_OWED		(HTTP_WS_QUEUE + 64 * 1024) /* bytes, and */
#define HTTP_WS_OWED_MSGS	(HTTP_WS_QUEUE_MSGS + 256) /* messages,
					 * wslay may hold with the answers to
					 * the client's own messages (errors,
					 * pongs) on top: past either, the
					 * client is not reading them: 1008 */
#define HTTP_WS_LINGER_MS	2000	/* after our close, the client's
					 * bytes are read and dropped so long
					 * at most (a close with unread bytes
					 * would reset the connection and lose
					 * the close frame) */
#define HTTP_WS_PINGS		50	/* pings a client may send ... */
#define HTTP_WS_PING_WINDOW_MS	10000	/* ... in this long */

enum http_stream_kind { HTTP_STREAM_SSE, HTTP_STREAM_WS };

enum http_stream_state {
	HTTP_STREAM_WAITING,	/* the room starts: asked again each retry */
	HTTP_STREAM_LIVE,	/* the agent link is up */
	HTTP_STREAM_ENDING,	/* the last bytes go out, then the end */
	HTTP_STREAM_DEAD,	/* reaped after MHD_run */
};

struct http_stream {
	struct http_stream *next;	/* in srv->streams */
	struct http_server *srv;
	enum http_stream_kind kind;
	enum http_stream_state state;
	struct http_req *req;		/* the request, until MHD's completion
					 * notice (http_stream_detach) */
	char room[64];
	char token[HTTP_MAX_TOKEN + 1];	/* to ask for the room; wiped at free */
	char addr[64];
	char user[64];			/* whom the token is for */
	long long since;		/* Last-Event-ID: replay after it; -1 */
	int person;			/* join as a person (kind chat: in
					 * presence), not a program */
	long long wait_until_ms;	/* give up on a starting room then */
	long long retry_ms;		/* ask again then */
	struct agentlink link;		/* to the room's agent */
	struct buf out;			/* what the reader owes: SSE bytes, or
					 * WebSocket lines not yet in wslay */
	long long quiet_since_ms;	/* last bytes queued (SSE pings) */
	/* SSE */
	int suspended;			/* the response waits for bytes */
	/* WebSocket, once upgraded */
	int sock;			/* the raw socket, -1 */
	struct MHD_UpgradeResponseHandle *urh;
	struct watch sock_w;		/* on sock */
	wslay_event_context_ptr ws;
	struct buf held;		/* client lines before the room is up */
	const struct http_ws_map *map;	/* the messages' translation, or
					 * NULL (http_stream.h) */
	const char *extra;		/* bytes MHD read past the head */
	size_t nextra;
	long long stall_since_ms;	/* bytes wait for the reader and none
					 * went out since then; 0: none wait */
	long long pings_since_ms;	/* the client's pings counted from */
	int pings;			/* and how many */
	long long linger_until_ms;	/* our close is sent, the client's
					 * is not: reading to drop until then;
					 * 0: not lingering */
	long long close_wait_ms;	/* our close is sent while we still
					 * read: the client's close is awaited
					 * until then (HTTP_WS_LINGER_MS) */
	struct http_cap cap;		/* its exec lines, counted against its
					 * user's max-commands-per-user until
					 * their exec_done (http_cap.h) */
};

/* A new stream for r, in srv->streams, WAITING for r's room (the
 * request's token and address copied).  NULL when out of memory. */
struct http_stream *http_stream_new(struct http_req *r,
    enum http_stream_kind kind);

/* Ask the monitor for s's room now, and join it when it is up (an
 * agent link of kind control, or chat for a person, replaying after
 * since).  Called by ticks while WAITING. */
void http_stream_connect(struct http_stream *s);

/* End s: say why to its reader (an "end" event; the WebSocket closes),
 * then reap it. */
void http_stream_end(struct http_stream *s, const char *why);

/* Check the room for r before a stream is made: it exists and r's token
 * may enter it (access), and it is started (use).  0, or 1 with r
 * answered (403, 404, 503) and *ret MHD's result. */
int http_stream_admit(struct http_req *r, int *ret);

/* A line from the agent or a notice, for the reader (each kind's own
 * framing; past HTTP_STREAM_BACKLOG the backlog is dropped and a
 * "dropped" event takes its place). */
void http_sse_queue(struct http_stream *s, const char *type, long long seq,
    const char *line, size_t len);
void http_ws_queue(struct http_stream *s, const char *line, size_t len);

/* A room event for a WebSocket: its line, or the map's message. */
void http_ws_queue_event(struct http_stream *s, json_object *ev,
    const char *line, size_t len);

/* Each kind's part of a tick and of an end. */
void http_sse_tick(struct http_stream *s);
void http_ws_tick(struct http_stream *s);
void http_ws_close(struct http_stream *s);

/* The link is up: send the client lines held while the room started. */
void http_ws_flush_held(struct http_stream *s);

#endif
