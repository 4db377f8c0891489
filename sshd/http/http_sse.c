/*
 * http_sse.c: GET /api/rooms/{room}/events, the room's events as
 * server-sent events (http_stream.h).  Each event of the room is one
 * message:
 *
 *   id: SEQ            the room's sequence number (none for the few
 *                      lines that have none, nor for welcome, whose seq
 *                      is the room's latest, not its own)
 *   event: TYPE        the event's type (message, agent_delta, ...)
 *   data: LINE         the room protocol's JSON line, as the agent sent it
 *
 * A client that reconnects with Last-Event-ID: N (browsers do it by
 * themselves) gets the events after N, then the live ones: the agent's
 * hello takes since = N.  A comment (": ping") goes out after 15 s of
 * quiet, so proxies keep the connection and a gone client is found.
 *
 * The response is MHD's from a callback: it copies what the stream owes;
 * with nothing owed it suspends the connection (no busy loop), and a
 * line queued for it resumes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "http_server.h"
#include "http_stream_int.h"
#include "log.h"
#include "util.h"

#define HTTP_SSE_BLOCK	(16 * 1024)	/* MHD's buffer for the response */

/* Resume the response if it waits for bytes. */
static void
http_sse_resume(struct http_stream *s)
{
	if (s->suspended && s->req) {
		s->suspended = 0;
		s->req->suspended = 0;
		MHD_resume_connection(s->req->conn);
	}
}

/* The backlog is over its cap: drop it, and say so in its place. */
static void
http_sse_drop(struct http_stream *s)
{
	static const char notice[] = "event: dropped\ndata: {\"type\":"
	    "\"dropped\",\"message\":\"you fell behind: events were dropped; "
	    "reconnect with Last-Event-ID to have them again\"}\n\n";

	buf_reset(&s->out);
	buf_append(&s->out, notice, sizeof(notice) - 1);
	s->srv->stats.streams_dropped++;
	log_info("room %s: a slow event stream's backlog dropped", s->room);
}

/* See http_stream_int.h. */
void
http_sse_queue(struct http_stream *s, const char *type, long long seq,
    const char *line, size_t len)
{
	char head[160];
	int n;

	if (s->state == HTTP_STREAM_ENDING || s->state == HTTP_STREAM_DEAD ||
	    memchr(line, '\n', len) || memchr(line, '\r', len))
		return;
	if (!type || strspn(type, "abcdefghijklmnopqrstuvwxyz_") !=
	    strlen(type) || strlen(type) > 64)
		type = "message";
	/* welcome carries the latest seq, not its own: as an id it would
	 * let a reconnect skip the replay that follows it. */
	if (strcmp(type, "welcome") == 0)
		seq = -1;
	n = seq >= 0 ? snprintf(head, sizeof(head), "id: %lld\nevent: %s\n"
	    "data: ", seq, type) : snprintf(head, sizeof(head), "event: %s\n"
	    "data: ", type);
	if (buf_room(&s->out) < (size_t)n + len + 2)
		http_sse_drop(s);
	if (buf_room(&s->out) >= (size_t)n + len + 2) {
		buf_append(&s->out, head, (size_t)n);
		buf_append(&s->out, line, len);
		buf_append(&s->out, "\n\n", 2);
	}
	s->quiet_since_ms = time_mono_ms();
	http_sse_resume(s);
}

/* See http_stream_int.h. */
void
http_sse_tick(struct http_stream *s)
{
	long long now = time_mono_ms();

	if (s->state == HTTP_STREAM_DEAD)
		return;
	if (now - s->quiet_since_ms >= HTTP_STREAM_PING_MS) {
		if (buf_room(&s->out) >= 8)
			buf_append(&s->out, ": ping\n\n", 8);
		s->quiet_since_ms = now;
		http_sse_resume(s);
	}
	if (s->state == HTTP_STREAM_ENDING)
		http_sse_resume(s);
	loop_wake_at(&s->srv->loop, s->quiet_since_ms + HTTP_STREAM_PING_MS);
	/* The reader caught up: read the agent again. */
	if (s->link.paused && s->out.len < HTTP_STREAM_BACKLOG / 2)
		agentlink_pause(&s->link, 0);
}

/* MHD_ContentReaderCallback: what the stream owes, or a suspension. */
static ssize_t
http_sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct http_stream *s = cls;
	size_t n;

	(void)pos;
	if (s->state == HTTP_STREAM_DEAD)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (!s->out.len) {
		if (s->state == HTTP_STREAM_ENDING)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (s->req && !s->suspended) {
			s->suspended = 1;
			s->req->suspended = 1;
			MHD_suspend_connection(s->req->conn);
		}
		return 0;
	}
	n = s->out.len < max ? s->out.len : max;
	memcpy(out, s->out.data, n);
	buf_consume(&s->out, n);
	if (s->req)
		s->req->bytes += n;
	return (ssize_t)n;
}

/* Last-Event-ID as a seq, or -1 (none, or not a number). */
static long long
http_sse_last_id(struct http_req *r)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Last-Event-ID");
	char *end;
	long long n;

	if (!v || !*v || strspn(v, "0123456789") != strlen(v) ||
	    strlen(v) > 18)
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	return errno ? -1 : n;
}

/* See http_stream.h. */
int
http_sse_open(struct http_req *r)
{
	struct MHD_Response *resp;
	struct http_stream *s;
	int ret;

	if (http_stream_admit(r, &ret))
		return ret;
	if (!(s = http_stream_new(r, HTTP_STREAM_SSE)))
		return http_reply_error(r, 503, "out of memory");
	s->since = http_sse_last_id(r);
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN,
	    HTTP_SSE_BLOCK, http_sse_read, s, NULL);
	if (!resp) {
		s->state = HTTP_STREAM_DEAD;
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type",
	    "text/event-stream; charset=utf-8");
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	http_stream_connect(s);
	return http_reply_queue(r, 200, resp);
}
