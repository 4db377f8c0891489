/*
 * api_rhema_ws.c: rhema's per-session WebSocket, GET /sessions/{id}/ws
 * (api_rhema.h), over a control connection to the room's agent.
 *
 *   from the client (one JSON object per text message)
 *     {"type":"chat","text"}            -> prompt {text}
 *     {"type":"approve","id","approve"} -> approve {id, approve}
 *     {"type":"stop"}                   -> stop
 *     anything else                     <- {"type":"error","message"}
 *   to the client: the room's live events as rhema's (api_rhema_event),
 *   one per text message.
 *
 * The room is opened before the handshake is answered, so a refusal is
 * an HTTP status (403, 503), not a WebSocket that closes at once.  Once
 * upgraded, the session (struct api_rhema_ws) is on its own: the request
 * is over for MHD, and the session lives until the client or the room
 * ends it, then gives the socket back (MHD_UPGRADE_ACTION_CLOSE) and is
 * freed from its socket's own callback, never from the agent link's
 * (agentlink.h calls on after its line callback returns).
 *
 * Memory: what waits for the client is capped at API_RHEMA_WS_BACKLOG
 * bytes; past it the link to the agent stops being read, so the agent
 * holds the backlog and drops it as it does for any slow member.  A
 * client's message is at most 64 KiB plus framing.
 */
#include "api_rhema.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>
#include <openssl/evp.h>
#include <wslay/wslay.h>

#include "agentlink.h"
#include "api_room.h"
#include "api_util.h"
#include "http_req.h"
#include "http_server.h"
#include "jsonl.h"
#include "log.h"
#include "protocol.h"
#include "util.h"

#define API_RHEMA_WS_BACKLOG	(1024 * 1024)
#define API_RHEMA_WS_MAX_IN	(PROTO_MAX_TEXT + 4096)
#define API_RHEMA_WS_GUID	"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* An upgraded session. */
struct api_rhema_ws {
	struct loop *loop;
	int sock;			/* the client's, MHD's to close */
	struct MHD_UpgradeResponseHandle *urh;
	struct watch w;			/* on sock */
	wslay_event_context_ptr ws;
	struct agentlink link;		/* kind control */
	char *extra;			/* bytes MHD read past the head */
	size_t extra_len, extra_off;
	int closing;			/* end at the next socket callback */
};

/* The request's state until the upgrade. */
struct api_rhema_up {
	struct api_room_wait room;
	int fd;				/* the agent connection, -1 */
	int failed;
	unsigned status;
	char why[512];
	struct api_hangup hup;		/* the client, until the 101 */
};

static void api_rhema_ws_update(struct api_rhema_ws *s);

/* ---- the session --------------------------------------------------------- */

/* Give the socket back and free everything (from the socket's callback,
 * or before the session ever ran). */
static void
api_rhema_ws_free(struct api_rhema_ws *s)
{
	loop_del(&s->w);
	agentlink_close(&s->link);
	if (s->ws)
		wslay_event_context_free(s->ws);
	MHD_upgrade_action(s->urh, MHD_UPGRADE_ACTION_CLOSE);
	free(s->extra);
	free(s);
}

/* Queue one JSON object as a text message. */
static void
api_rhema_ws_send(struct api_rhema_ws *s, json_object *o)
{
	const char *text = json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	struct wslay_event_msg msg = { WSLAY_TEXT_FRAME,
	    (const uint8_t *)text, strlen(text) };

	wslay_event_queue_msg(s->ws, &msg);
}

/* An error event to the client. */
static void
api_rhema_ws_error(struct api_rhema_ws *s, const char *msg)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("error"));
	json_object_object_add(o, "message", json_object_new_string(msg));
	api_rhema_ws_send(s, o);
	json_object_put(o);
}

/* The room's line for a client message, or NULL with why. */
static json_object *
api_rhema_ws_request(json_object *m, const char **why)
{
	const char *type = json_get_string(m, "type");
	json_object *o, *v;

	*why = "unknown message type: send chat, approve or stop";
	if (!type)
		return NULL;
	o = json_object_new_object();
	if (strcmp(type, "chat") == 0 && json_get_string(m, "text")) {
		json_object_object_add(o, "type", json_object_new_string("prompt"));
		json_object_object_add(o, "text",
		    json_object_new_string(json_get_string(m, "text")));
	} else if (strcmp(type, "approve") == 0 &&
	    json_object_object_get_ex(m, "id", &v) &&
	    json_object_object_get_ex(m, "approve", NULL)) {
		json_object_object_add(o, "type",
		    json_object_new_string("approve"));
		json_object_object_add(o, "id", json_object_get(v));
		json_object_object_add(o, "approve", json_object_new_boolean(
		    json_get_bool(m, "approve", 0)));
	} else if (strcmp(type, "stop") == 0) {
		json_object_object_add(o, "type", json_object_new_string("stop"));
	} else {
		if (!strcmp(type, "chat") || !strcmp(type, "approve"))
			*why = !strcmp(type, "chat") ? "chat needs \"text\"" :
			    "approve needs \"id\" and \"approve\" (true or false)";
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* wslay: a whole message from the client. */
static void
api_rhema_ws_msg(wslay_event_context_ptr ctx,
    const struct wslay_event_on_msg_recv_arg *arg, void *user)
{
	struct api_rhema_ws *s = user;
	json_object *m, *line;
	const char *err = NULL, *why;

	(void)ctx;
	if (arg->opcode != WSLAY_TEXT_FRAME)
		return;		/* close, ping, pong: wslay's; binary: none */
	m = jsonl_parse_object((const char *)arg->msg, arg->msg_length, &err);
	if (!m) {
		api_rhema_ws_error(s, "a message must be one JSON object");
		return;
	}
	if (!(line = api_rhema_ws_request(m, &why)))
		api_rhema_ws_error(s, why);
	else if (agentlink_send(&s->link, line) < 0)
		api_rhema_ws_error(s, "the room is not taking messages now; "
		    "try again");
	json_object_put(line);
	json_object_put(m);
}

/* wslay: read from the client (what MHD read first, then the socket). */
static ssize_t
api_rhema_ws_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len,
    int flags, void *user)
{
	struct api_rhema_ws *s = user;
	ssize_t n;

	(void)flags;
	if (s->extra_off < s->extra_len) {
		n = (ssize_t)(s->extra_len - s->extra_off < len ?
		    s->extra_len - s->extra_off : len);
		memcpy(buf, s->extra + s->extra_off, (size_t)n);
		s->extra_off += (size_t)n;
		return n;
	}
	n = recv(s->sock, buf, len, 0);
	if (n > 0)
		return n;
	wslay_event_set_error(ctx, n < 0 && (errno == EAGAIN ||
	    errno == EINTR) ? WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

/* wslay: write to the client. */
static ssize_t
api_rhema_ws_sendcb(wslay_event_context_ptr ctx, const uint8_t *data,
    size_t len, int flags, void *user)
{
	struct api_rhema_ws *s = user;
	ssize_t n = send(s->sock, data, len, MSG_NOSIGNAL);

	(void)flags;
	if (n >= 0)
		return n;
	wslay_event_set_error(ctx, errno == EAGAIN || errno == EINTR ?
	    WSLAY_ERR_WOULDBLOCK : WSLAY_ERR_CALLBACK_FAILURE);
	return -1;
}

/* A line of the room: a live event, as rhema's. */
static void
api_rhema_ws_line(void *arg, json_object *ev, const char *line, size_t len)
{
	struct api_rhema_ws *s = arg;
	json_object *o;

	(void)line; (void)len;
	if (json_get_bool(ev, "replay", 0) || !(o = api_rhema_event(ev)))
		return;
	api_rhema_ws_send(s, o);
	json_object_put(o);
	api_rhema_ws_update(s);
}

/* The room ended the link: close the WebSocket once it is out. */
static void
api_rhema_ws_link_end(void *arg)
{
	struct api_rhema_ws *s = arg;

	wslay_event_queue_close(s->ws, WSLAY_CODE_GOING_AWAY,
	    (const uint8_t *)"the room ended", 14);
	api_rhema_ws_update(s);
}

/* Poll what wslay wants; read the agent only while the backlog allows. */
static void
api_rhema_ws_update(struct api_rhema_ws *s)
{
	short want = 0;

	/* Both ways done (a close sent and received, or an error): end at
	 * the next callback, which POLLOUT brings at once. */
	if (!wslay_event_want_read(s->ws) && !wslay_event_want_write(s->ws))
		s->closing = 1;
	if (wslay_event_want_read(s->ws))
		want |= POLLIN;
	if (wslay_event_want_write(s->ws) || s->closing)
		want |= POLLOUT;
	loop_want(&s->w, want);
	agentlink_pause(&s->link, wslay_event_get_queued_msg_length(s->ws) >
	    API_RHEMA_WS_BACKLOG);
}

/* The client's socket: move frames both ways; end when both are done. */
static void
api_rhema_ws_cb(struct watch *w, int revents)
{
	struct api_rhema_ws *s = w->arg;

	if (s->closing) {
		api_rhema_ws_free(s);
		return;
	}
	if ((revents & (POLLIN | POLLHUP | POLLERR)) &&
	    wslay_event_recv(s->ws) != 0)
		s->closing = 1;
	if (!s->closing && (revents & POLLOUT) && wslay_event_send(s->ws) != 0)
		s->closing = 1;
	if (!s->closing)
		wslay_event_send(s->ws);	/* what the reads queued */
	api_rhema_ws_update(s);
}

/* MHD_UpgradeHandler: the 101 is out; the session starts. */
static void
api_rhema_ws_upgraded(void *cls, struct MHD_Connection *c, void *con_cls,
    const char *extra_in, size_t extra_in_size, MHD_socket sock,
    struct MHD_UpgradeResponseHandle *urh)
{
	struct http_req *r = con_cls;
	struct api_rhema_up *up = r->ctx;
	struct api_rhema_ws *s = calloc(1, sizeof(*s));
	static const struct wslay_event_callbacks cbs = {
		api_rhema_ws_recv, api_rhema_ws_sendcb, NULL, NULL, NULL, NULL,
		api_rhema_ws_msg,
	};

	(void)cls; (void)c;
	if (!s || (extra_in_size && !(s->extra = malloc(extra_in_size))) ||
	    wslay_event_context_server_init(&s->ws, &cbs, s) != 0) {
		log_warn("room %s: the WebSocket ends: out of memory", r->room);
		if (s)
			free(s->extra);
		free(s);
		MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
		return;
	}
	s->loop = &r->srv->loop;
	s->sock = sock;
	s->urh = urh;
	memcpy(s->extra, extra_in, extra_in_size);
	s->extra_len = extra_in_size;
	wslay_event_config_set_max_recv_msg_length(s->ws, API_RHEMA_WS_MAX_IN);
	agentlink_init(&s->link);
	fd_set_nonblock(sock, 1);
	loop_add(s->loop, &s->w, sock, POLLIN, api_rhema_ws_cb, s);
	if (agentlink_attach(&s->link, s->loop, up->fd, api_rhema_ws_line,
	    api_rhema_ws_link_end, s) < 0)
		api_rhema_ws_link_end(s);
	up->fd = -1;	/* the session's now */
	api_rhema_ws_update(s);
}

/* ---- the handshake ------------------------------------------------------- */

static void
api_rhema_up_free(void *p)
{
	struct api_rhema_up *up = p;

	if (!up)
		return;
	api_room_cancel(&up->room);
	api_hangup_stop(&up->hup);
	if (up->fd >= 0)
		close(up->fd);
	free(up);
}

/* The room's agent connection (or a refusal). */
static void
api_rhema_up_opened(struct http_req *r, int fd, unsigned status,
    const char *why)
{
	struct api_rhema_up *up = r->ctx;

	up->fd = fd;
	up->failed = fd < 0;
	up->status = status;
	snprintf(up->why, sizeof(up->why), "%s", why ? why : "");
	http_req_resume(r);
}

/* Sec-WebSocket-Accept for key into out (at least 32 bytes).  0 or -1. */
static int
api_rhema_ws_accept(const char *key, char *out, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char in[128];
	struct buf b;
	int n = snprintf(in, sizeof(in), "%s%s", key, API_RHEMA_WS_GUID);

	if (n < 0 || (size_t)n >= sizeof(in) ||
	    !EVP_Digest(in, (size_t)n, md, &mdlen, EVP_sha1(), NULL))
		return -1;
	buf_init(&b, 64);
	api_base64(&b, (const char *)md, mdlen);
	snprintf(out, len, "%s", b.data ? b.data : "");
	buf_free(&b);
	return 0;
}

/* A header of r, or "". */
static const char *
api_rhema_hdr(struct http_req *r, const char *name)
{
	const char *v = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    name);

	return v ? v : "";
}

/* The 101 answer. */
static int
api_rhema_ws_answer(struct http_req *r)
{
	char accept[64];
	struct MHD_Response *resp;

	if (api_rhema_ws_accept(api_rhema_hdr(r, "Sec-WebSocket-Key"), accept,
	    sizeof(accept)) < 0)
		return http_reply_error(r, 400, "a bad Sec-WebSocket-Key");
	if (!(resp = MHD_create_response_for_upgrade(api_rhema_ws_upgraded,
	    NULL)))
		return http_reply_error(r, 503, "out of memory; try again");
	MHD_add_response_header(resp, "Upgrade", "websocket");
	MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
	return http_reply_queue(r, 101, resp);
}

/* See api_rhema.h. */
int
api_rhema_ws_open(struct http_req *r)
{
	struct api_rhema_up *up = r->ctx;

	if (!up) {
		if (strcasecmp(api_rhema_hdr(r, "Upgrade"), "websocket") != 0 ||
		    strcmp(api_rhema_hdr(r, "Sec-WebSocket-Version"), "13") ||
		    strlen(api_rhema_hdr(r, "Sec-WebSocket-Key")) != 24)
			return http_reply_error(r, 400, "this is a WebSocket: "
			    "send Upgrade: websocket, Sec-WebSocket-Version: 13 "
			    "and a Sec-WebSocket-Key");
		if (!(up = calloc(1, sizeof(*up))))
			return http_reply_error(r, 503, "out of memory");
		up->fd = -1;
		r->ctx = up;
		r->ctx_free = api_rhema_up_free;
		api_hangup_watch(&up->hup, r);
		api_room_open(&up->room, r, "control", 0, api_rhema_up_opened);
	}
	if (up->hup.gone)
		return MHD_NO;
	if (up->failed)
		return http_reply_error(r, up->status, up->why);
	if (up->fd < 0) {
		r->suspended = 1;
		MHD_suspend_connection(r->conn);
		return MHD_YES;
	}
	api_hangup_stop(&up->hup);	/* the socket is the session's next */
	return api_rhema_ws_answer(r);
}
