/*
 * http_ws.c: GET /api/rooms/{room}/ws, the room protocol over a
 * WebSocket (http_stream.h).  Each text message is one JSON object of the
 * room protocol, both ways: what the client sends goes to the room's
 * agent as a line (as the `atrium` subsystem passes lines: a hello is
 * refused, the text of a chat or prompt loses its control characters,
 * what is not a JSON object in UTF-8 gets an `error` message back), and
 * each line of the room comes back as one message.  With ?presence=1
 * (the room in the browser)
 * the client joins as a person, as the chat's people do: announced, and
 * listed in presence.
 *
 * The handshake is ours (RFC 6455 4.2.2: Sec-WebSocket-Accept is the
 * SHA-1 of the key and the protocol's GUID, in base64); MHD answers 101
 * and hands the raw socket over (MHD_ALLOW_UPGRADE); libwslay frames on
 * it, driven from the loop: the socket's watch reads and writes, and
 * lines wait in the stream's own capped buffer until wslay's queue has
 * room, so a slow reader's backlog can be dropped (and the reader told)
 * without holding up the room.  The Origin rule is http_auth.h's.
 *
 * A client that breaks the rules is closed with the code RFC 6455 7.4.1
 * names, and nothing more of it is read: a binary message 1003; a
 * message (all its fragments together) over PROTO_MAX_LINE 1009 (wslay's
 * check, before the bytes are kept); text that is not UTF-8 1007
 * (wslay's); more than HTTP_WS_PINGS pings in HTTP_WS_PING_WINDOW_MS
 * 1008; and 1008 when the answers to its own messages (errors, pongs)
 * pile up unread in wslay's queue past HTTP_WS_OWED.  So what one
 * connection holds is bounded: one message being received, the capped
 * backlog, wslay's capped queue.  A reader that takes no byte for
 * http-idle-timeout while bytes wait for it is cut (its close could not
 * reach it anyway).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/evp.h>

#include "http_server.h"
#include "http_stream_int.h"
#include "jsonl.h"
#include "log.h"
#include "protocol.h"
#include "room_request.h"
#include "utf8.h"
#include "util.h"

#define HTTP_WS_GUID	"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define HTTP_WS_MAX_MSG	PROTO_MAX_LINE	/* a client message's bytes */

/* Sec-WebSocket-Accept for key into out (29 bytes with NUL).  0, or -1
 * for a key that is not 24 base64 characters. */
static int
http_ws_accept(const char *key, char out[32])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char text[64];

	if (strlen(key) != 24)
		return -1;
	snprintf(text, sizeof(text), "%s%s", key, HTTP_WS_GUID);
	if (!EVP_Digest(text, strlen(text), md, &mdlen, EVP_sha1(), NULL) ||
	    mdlen != 20)
		return -1;
	EVP_EncodeBlock((unsigned char *)out, md, 20);
	return 0;
}

/* wslay's recv: the socket, without blocking. */
static ssize_t
http_ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
    int flags, void *arg)
{
	struct http_stream *s = arg;
	ssize_t n;

	(void)flags;
	if (s->nextra) {
		n = (ssize_t)(s->nextra < len ? s->nextra : len);
		memcpy(buf, s->extra, (size_t)n);
		s->extra += n;
		s->nextra -= (size_t)n;
		return n;
	}
	do
		n = recv(s->sock, buf, len, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (n <= 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	return n;
}

/* wslay's send: the socket, without blocking. */
static ssize_t
http_ws_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len,
    int flags, void *arg)
{
	struct http_stream *s = arg;
	ssize_t n;

	(void)flags;
	do
		n = send(s->sock, data, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
		return -1;
	}
	if (n < 0) {
		wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
		return -1;
	}
	if (n > 0)
		s->stall_since_ms = time_mono_ms();
	if (s->req)
		s->req->bytes += (uint64_t)n;
	s->srv->stats.bytes_out += (uint64_t)n;
	return n;
}

/* One text message to the client, straight into wslay's queue. */
static void
http_ws_message(struct http_stream *s, const char *text, size_t len)
{
	struct wslay_event_msg msg = { WSLAY_TEXT_FRAME,
	    (const uint8_t *)text, len };

	if (s->ws)
		wslay_event_queue_msg(s->ws, &msg);
}

/* An `error` message to the client, naming id when not NULL. */
static void
http_ws_error_for(struct http_stream *s, const char *id, const char *why)
{
	json_object *ev = room_request_error(id, why);
	const char *text;

	if (!ev)
		return;
	text = json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN);
	http_ws_message(s, text, strlen(text));
	json_object_put(ev);
}

/* An `error` message to the client. */
static void
http_ws_error(struct http_stream *s, const char *why)
{
	http_ws_error_for(s, NULL, why);
}

/* See http_stream_int.h. */
void
http_ws_queue(struct http_stream *s, const char *line, size_t len)
{
	static const char notice[] = "{\"type\":\"dropped\",\"message\":\"you "
	    "fell behind: events were dropped; reconnect with since to have "
	    "them again\"}\n";

	if (s->state == HTTP_STREAM_ENDING || s->state == HTTP_STREAM_DEAD)
		return;
	if (buf_room(&s->out) < len + 1) {
		buf_reset(&s->out);
		buf_append(&s->out, notice, sizeof(notice) - 1);
		s->srv->stats.streams_dropped++;
		log_info("room %s: a slow WebSocket's backlog dropped", s->room);
	}
	if (buf_room(&s->out) >= len + 1) {
		buf_append(&s->out, line, len);
		buf_append(&s->out, "\n", 1);
	}
}

/* May s's user start one more command (max-commands-per-user, counted by
 * the monitor over SSH and HTTP together: http_cap.h; each exec line
 * until its exec_done)?  1, or 0 with the refusal sent, naming the
 * exec's id. */
static int
http_ws_under_cap(struct http_stream *s, json_object *o)
{
	char msg[400];

	if (http_cap_take(s->srv, s->token, s->addr, &s->cap, msg,
	    sizeof(msg)) == 0)
		return 1;
	http_ws_error_for(s, json_get_string(o, "id"), msg);
	return 0;
}

/* A checked client line to the agent (or held until the room is up). */
static void
http_ws_forward(struct http_stream *s, json_object *o)
{
	const char *type = json_get_string(o, "type");
	const char *text;
	int r;

	if (room_request_clean(type, o) < 0) {
		http_ws_error(s, "out of memory; send it again");
		return;
	}
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (s->state != HTTP_STREAM_LIVE) {
		if (buf_room(&s->held) < strlen(text) + 1 ||
		    buf_append(&s->held, text, strlen(text)) < 0 ||
		    buf_append(&s->held, "\n", 1) < 0)
			http_ws_error(s, "the room is starting: wait for its "
			    "welcome before sending more");
		return;
	}
	if (type && strcmp(type, "exec") == 0 && !http_ws_under_cap(s, o))
		return;
	r = type && strcmp(type, "exec") == 0 ?
	    agentlink_send_exec(&s->link, o, NULL, 0) :
	    agentlink_send(&s->link, o);
	if (r < 0)
		http_ws_error(s, "the room is not taking requests now; slow "
		    "down or reconnect");
}

/* See http_stream_int.h. */
void
http_ws_queue_event(struct http_stream *s, json_object *ev, const char *line,
    size_t len)
{
	json_object *m;
	const char *text;

	if (!s->map) {
		http_ws_queue(s, line, len);
		return;
	}
	if (!(m = s->map->out(ev)))
		return;
	text = json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	http_ws_queue(s, text, strlen(text));
	json_object_put(m);
}

/* A client's message through the map, to the room. */
static void
http_ws_client_mapped(struct http_stream *s, json_object *o)
{
	const char *why = "not a request";
	json_object *req = s->map->in(o, &why);

	if (!req) {
		http_ws_error(s, why);
		return;
	}
	http_ws_forward(s, req);
	json_object_put(req);
}

/* A message from the client. */
static void
http_ws_client(struct http_stream *s, const uint8_t *data, size_t len)
{
	json_object *o;
	const char *err, *type;

	if (!utf8_valid((const char *)data, len) ||
	    memchr(data, '\n', len)) {
		http_ws_error(s, "not one JSON object in UTF-8 text");
		return;
	}
	if (!(o = jsonl_parse_object((const char *)data, len, &err))) {
		http_ws_error(s, "not a JSON object: send one JSON object per "
		    "message");
		return;
	}
	type = json_get_string(o, "type");
	if (s->map)
		http_ws_client_mapped(s, o);
	else if (!type)
		http_ws_error(s, "a request needs a \"type\"");
	else if (strcmp(type, "hello") == 0)
		http_ws_error(s, "hello is sent by the server: start with your "
		    "first request (chat, prompt, exec...)");
	else
		http_ws_forward(s, o);
	json_object_put(o);
}

/* Close s's WebSocket with code and why (at most 123 bytes: a close
 * frame's reason), and read nothing more from it. */
static void
http_ws_refuse(struct http_stream *s, uint16_t code, const char *why)
{
	if (wslay_event_get_close_sent(s->ws) || !wslay_event_get_read_enabled(
	    s->ws))
		return;
	wslay_event_queue_close(s->ws, code, (const uint8_t *)why,
	    strlen(why));
	wslay_event_shutdown_read(s->ws);
	log_info("room %s: a WebSocket of %s closed (%u): %s", s->room,
	    s->user, code, why);
}

/* A ping (wslay has queued its pong): 1 when the client pings more
 * often than HTTP_WS_PINGS in HTTP_WS_PING_WINDOW_MS, and is closed. */
static int
http_ws_pinged(struct http_stream *s)
{
	long long now = time_mono_ms();

	if (now - s->pings_since_ms > HTTP_WS_PING_WINDOW_MS) {
		s->pings_since_ms = now;
		s->pings = 0;
	}
	if (++s->pings <= HTTP_WS_PINGS)
		return 0;
	http_ws_refuse(s, WSLAY_CODE_POLICY_VIOLATION, "too many pings: at "
	    "most 50 in 10 s");
	return 1;
}

/* 1 when wslay holds more than the client may owe (it sends and does
 * not read the answers), and it is closed. */
static int
http_ws_overdue(struct http_stream *s)
{
	if (wslay_event_get_queued_msg_length(s->ws) <= HTTP_WS_OWED &&
	    wslay_event_get_queued_msg_count(s->ws) <= HTTP_WS_OWED_MSGS)
		return 0;
	http_ws_refuse(s, WSLAY_CODE_POLICY_VIOLATION, "the answers to your "
	    "messages are not read: read what the server sends");
	return 1;
}

/* wslay's on_msg_recv: a whole message (wslay answers pings and closes
 * itself). */
static void
http_ws_on_msg(wslay_event_context_ptr ctx,
    const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	struct http_stream *s = user;

	(void)ctx;
	if (arg->opcode == WSLAY_PING && http_ws_pinged(s))
		return;
	if (http_ws_overdue(s))
		return;
	if (arg->opcode == WSLAY_TEXT_FRAME)
		http_ws_client(s, arg->msg, arg->msg_length);
	else if (arg->opcode == WSLAY_BINARY_FRAME)
		http_ws_refuse(s, WSLAY_CODE_UNSUPPORTED_DATA, "binary "
		    "messages are not taken: send JSON as text");
}

/* See http_stream_int.h. */
void
http_ws_flush_held(struct http_stream *s)
{
	char *line;
	size_t len;
	struct jsonl in;

	if (!s->held.len)
		return;
	jsonl_init(&in, PROTO_MAX_LINE);
	jsonl_feed(&in, s->held.data, s->held.len);
	while (jsonl_next(&in, &line, &len) > 0 && line) {
		json_object *o = jsonl_parse_object(line, len, NULL);

		if (o)
			http_ws_forward(s, o);
		json_object_put(o);
	}
	jsonl_free(&in);
	buf_reset(&s->held);
}

/* See http_stream_int.h. */
void
http_ws_close(struct http_stream *s)
{
	loop_del(&s->sock_w);
	if (s->urh)
		MHD_upgrade_action(s->urh, MHD_UPGRADE_ACTION_CLOSE);
	s->urh = NULL;
	s->sock = -1;
	s->state = HTTP_STREAM_DEAD;
}

/* Hand whole lines from s->out to wslay while its queue has room. */
static void
http_ws_feed(struct http_stream *s)
{
	while (s->out.len && wslay_event_get_queued_msg_length(s->ws) <
	    HTTP_WS_QUEUE && wslay_event_get_queued_msg_count(s->ws) <
	    HTTP_WS_QUEUE_MSGS) {
		char *nl = memchr(s->out.data, '\n', s->out.len);
		size_t n = nl ? (size_t)(nl - s->out.data) : s->out.len;

		http_ws_message(s, s->out.data, n);
		buf_consume(&s->out, nl ? n + 1 : n);
	}
}

/* 1 when bytes have waited for s's reader and none went out for
 * http-idle-timeout: the connection is cut (a close frame could not
 * reach a reader that takes nothing).  Else the loop is asked to wake
 * when that time would be up. */
static int
http_ws_stalled(struct http_stream *s)
{
	long long now = time_mono_ms(), limit;

	if (!wslay_event_want_write(s->ws)) {
		s->stall_since_ms = 0;
		return 0;
	}
	if (!s->stall_since_ms)
		s->stall_since_ms = now;
	limit = s->stall_since_ms + 1000LL * s->srv->cfg.http_idle_timeout;
	if (now < limit) {
		loop_wake_at(&s->srv->loop, limit);
		return 0;
	}
	log_info("room %s: a WebSocket of %s read nothing for %d s: cut",
	    s->room, s->user, s->srv->cfg.http_idle_timeout);
	s->srv->stats.streams_dropped++;
	http_ws_close(s);
	return 1;
}

/* Our close frame is out and the client's has not come: end our side
 * (FIN) and drop what it still sends for HTTP_WS_LINGER_MS at most, so
 * that the close frame is read before the connection goes. */
static void
http_ws_linger(struct http_stream *s)
{
	long long now = time_mono_ms();

	if (!s->linger_until_ms) {
		s->linger_until_ms = now + HTTP_WS_LINGER_MS;
		if (shutdown(s->sock, SHUT_WR) < 0) {
			http_ws_close(s);
			return;
		}
	}
	if (now >= s->linger_until_ms) {
		http_ws_close(s);
		return;
	}
	loop_want(&s->sock_w, POLLIN);
	loop_wake_at(&s->srv->loop, s->linger_until_ms);
}

/* Our close went out (the stream ended) and we still read, for the
 * client's close: HTTP_WS_LINGER_MS at most, then the connection goes (a
 * client that never answers holds nothing).  1 when it went. */
static int
http_ws_close_awaited(struct http_stream *s)
{
	long long now = time_mono_ms();

	if (!wslay_event_get_close_sent(s->ws) ||
	    wslay_event_get_close_received(s->ws))
		return 0;
	if (!s->close_wait_ms)
		s->close_wait_ms = now + HTTP_WS_LINGER_MS;
	if (now < s->close_wait_ms) {
		loop_wake_at(&s->srv->loop, s->close_wait_ms);
		return 0;
	}
	http_ws_close(s);
	return 1;
}

/* Lingering: read and drop the client's bytes; its end ends it. */
static void
http_ws_drain(struct http_stream *s)
{
	char sink[16384];
	ssize_t n;

	do
		n = recv(s->sock, sink, sizeof(sink), 0);
	while (n > 0 || (n < 0 && errno == EINTR));
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		http_ws_close(s);
}

/* See http_stream_int.h. */
void
http_ws_tick(struct http_stream *s)
{
	short want = 0;

	if (!s->ws || s->state == HTTP_STREAM_DEAD)
		return;
	http_ws_feed(s);
	if (wslay_event_want_write(s->ws) && wslay_event_send(s->ws) != 0) {
		http_ws_close(s);
		return;
	}
	/* The close only once the last message (the "end") is out: wslay
	 * sends a control frame ahead of queued messages, and nothing
	 * after it. */
	if (s->state == HTTP_STREAM_ENDING && !s->out.len &&
	    !wslay_event_get_queued_msg_count(s->ws) &&
	    !wslay_event_get_close_sent(s->ws) &&
	    (wslay_event_queue_close(s->ws, WSLAY_CODE_NORMAL_CLOSURE, NULL,
	    0) != 0 || wslay_event_send(s->ws) != 0)) {
		http_ws_close(s);
		return;
	}
	if (http_ws_stalled(s))
		return;
	if (wslay_event_want_read(s->ws))
		want |= POLLIN;
	if (wslay_event_want_write(s->ws))
		want |= POLLOUT;
	if (!want && wslay_event_get_close_sent(s->ws) &&
	    !wslay_event_get_close_received(s->ws)) {
		http_ws_linger(s);
		return;
	}
	if (http_ws_close_awaited(s))
		return;
	if (!want || (wslay_event_get_close_sent(s->ws) &&
	    wslay_event_get_close_received(s->ws) && !s->out.len)) {
		http_ws_close(s);
		return;
	}
	loop_want(&s->sock_w, want);
	/* The reader caught up: read the agent again. */
	if (s->link.paused && s->out.len < HTTP_STREAM_BACKLOG / 2)
		agentlink_pause(&s->link, 0);
}

/* The socket is ready. */
static void
http_ws_ready(struct watch *w, int revents)
{
	struct http_stream *s = w->arg;

	if (s->state == HTTP_STREAM_DEAD)
		return;
	if (s->linger_until_ms) {
		http_ws_drain(s);
		if (s->state != HTTP_STREAM_DEAD)
			http_ws_linger(s);
		return;
	}
	if ((revents & (POLLIN | POLLHUP | POLLERR)) &&
	    wslay_event_recv(s->ws) != 0) {
		http_ws_close(s);
		return;
	}
	http_ws_tick(s);
}

/* MHD_UpgradeHandler: the 101 went out; the socket is ours. */
static void
http_ws_upgraded(void *cls, struct MHD_Connection *c, void *con_cls,
    const char *extra, size_t nextra, MHD_socket sock,
    struct MHD_UpgradeResponseHandle *urh)
{
	static const struct wslay_event_callbacks cb = {
		http_ws_recv, http_ws_send, NULL, NULL, NULL, NULL,
		http_ws_on_msg,
	};
	struct http_stream *s = cls;

	(void)c;
	(void)con_cls;
	s->sock = sock;
	s->urh = urh;
	s->extra = extra;
	s->nextra = nextra;
	fd_set_nonblock(sock, 1);
	if (s->state == HTTP_STREAM_DEAD ||
	    wslay_event_context_server_init(&s->ws, &cb, s) != 0) {
		http_ws_close(s);
		return;
	}
	wslay_event_config_set_max_recv_msg_length(s->ws, HTTP_WS_MAX_MSG);
	loop_add(&s->srv->loop, &s->sock_w, sock, POLLIN, http_ws_ready, s);
	if (s->nextra)
		wslay_event_recv(s->ws);	/* takes them all, now */
	s->extra = NULL;
	s->nextra = 0;
	if (s->state == HTTP_STREAM_WAITING)
		http_stream_connect(s);
	http_ws_tick(s);
}

/* 1 when header name of r holds token word (comma-separated, any case). */
static int
http_ws_header_has(struct http_req *r, const char *name, const char *word)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    name);
	size_t n = strlen(word);

	while (v && *v) {
		v += strspn(v, " \t,");
		if (strncasecmp(v, word, n) == 0 && strchr(" \t,", v[n]))
			return 1;
		v += strcspn(v, ",");
	}
	return 0;
}

/* The query's since=N (replay the events after seq N), or -1. */
static long long
http_ws_since(struct http_req *r)
{
	const char *v = MHD_lookup_connection_value(r->conn,
	    MHD_GET_ARGUMENT_KIND, "since");

	if (!v || !*v || strlen(v) > 18 || strspn(v, "0123456789") !=
	    strlen(v))
		return -1;
	return strtoll(v, NULL, 10);
}

/* 1 when the query says presence=1: the client is a person (the room
 * in the browser), announced and listed as here as the chat's people
 * are; a program is not. */
static int
http_ws_person(struct http_req *r)
{
	const char *v = MHD_lookup_connection_value(r->conn,
	    MHD_GET_ARGUMENT_KIND, "presence");

	return v && strcmp(v, "1") == 0;
}

/* See http_stream.h. */
int
http_ws_open(struct http_req *r)
{
	return http_ws_open_mapped(r, NULL);
}

/* See http_stream.h. */
int
http_ws_open_mapped(struct http_req *r, const struct http_ws_map *map)
{
	const char *key = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Sec-WebSocket-Key");
	const char *version = MHD_lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, "Sec-WebSocket-Version");
	struct MHD_Response *resp;
	struct http_stream *s;
	char accept[32];
	int ret;

	if (!http_ws_header_has(r, "Upgrade", "websocket") ||
	    !http_ws_header_has(r, "Connection", "upgrade") || !key ||
	    !version || strcmp(version, "13") != 0 ||
	    http_ws_accept(key, accept) < 0)
		return http_reply_error(r, 400, "this is a WebSocket: send "
		    "Upgrade: websocket, Connection: Upgrade, "
		    "Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key");
	if (http_stream_admit(r, &ret))
		return ret;
	if (!(s = http_stream_new(r, HTTP_STREAM_WS)))
		return http_reply_error(r, 503, "out of memory");
	s->person = http_ws_person(r);
	s->since = http_ws_since(r);
	s->map = map;
	if (!(resp = MHD_create_response_for_upgrade(http_ws_upgraded, s))) {
		s->state = HTTP_STREAM_DEAD;
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Upgrade", "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	return http_reply_queue(r, 101, resp);
}
