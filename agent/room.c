/*
 * room.c: the room's connections (room.h).  atriumd connects to
 * RUN/agent.sock once per session (and per exec); the first line is `hello`,
 * which names the user and the kind of connection.  Lines are framed with
 * common/jsonl (PROTO_MAX_LINE); fds arrive by SCM_RIGHTS and wait in the
 * connection's queue until the `exec` line that announced them claims them.
 *
 * Output is queued per connection (at most ROOM_MAX_OUTPUT bytes) and written
 * only from room_flush, which the loop calls before sleeping after the
 * room.db commit: a client never sees an event that is not yet stored.  A
 * client that falls behind by more than the cap is disconnected with a
 * logged reason; the loop never blocks on a socket.
 *
 * Connections are freed only in room_flush (marked `closing` before), never
 * inside their own callback.  A connection told to go with a last event
 * (room_conn_end: access_denied) is closed by room_flush once that event
 * is written.
 *
 * Who may enter and manage the room is room_access.c's: hello is checked
 * there before the connection joins.
 *
 * Presence is about people: only chat connections (a person at a
 * terminal) are announced as joining and leaving and listed by who;
 * control connections (scripts) get the room's events without being
 * announced.  `sync` is answered in line order, so its `synced` follows
 * every answer the connection's earlier lines got at once (atriumd ends a
 * piped protocol session on it).
 */
#include "room.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "exec.h"
#include "fdpass.h"
#include "log.h"
#include "loop.h"
#include "names.h"
#include "proc.h"
#include "protocol.h"
#include "room_access.h"
#include "room_db.h"
#include "ws_list.h"
#include "wsio.h"
#include "caps.h"
#include "room_limits.h"
#include "settings.h"
#include "term.h"
#include "text.h"
#include "turn.h"
#include "usage.h"
#include "util.h"

static void room_conn_io(struct loop *l, int fd, int mask, void *arg);

json_object *
room_event_new(const char *type)
{
	json_object *ev = json_object_new_object();

	if (ev)
		json_object_object_add(ev, "type", json_object_new_string(type));
	return ev;
}

/* Give ev the next seq and the time. */
static void
room_stamp(struct agent *a, json_object *ev)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	json_object_object_add(ev, "seq", json_object_new_int64(++a->seq));
	json_object_object_add(ev, "time", json_object_new_string(now));
}

/* Queue one line of text to c; close c when it is too far behind. */
static void
room_queue(struct conn *c, const char *line, size_t len)
{
	if (c->closing)
		return;
	if (buf_append(&c->out, line, len) < 0)
		room_conn_close(c, "fell too far behind (output queue full)");
}

/* Queue ev, serialised, to c. */
static void
room_queue_event(struct conn *c, json_object *ev)
{
	const char *s = json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	room_queue(c, s, strlen(s));
	room_queue(c, "\n", 1);
}

/* See room.h. */
void
room_send_link(struct conn *c, const char *line)
{
	room_queue(c, line, strlen(line));
	room_queue(c, "\n", 1);
}

/* See room.h. */
void
room_send_lines(struct conn *c, const char *p, size_t n)
{
	room_queue(c, p, n);
}

static int
room_is_member(const struct conn *c)
{
	return c->kind == CONN_CHAT || c->kind == CONN_CONTROL;
}

int
room_emit(struct agent *a, json_object *ev, int store)
{
	const char *s;
	int r = 0;

	if (!ev)
		return -ENOMEM;
	room_stamp(a, ev);
	s = json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (store) {
		r = room_db_event_add(a->db, a->seq,
		    json_get_string(ev, "time"), json_get_string(ev, "type"), s);
		if (r == 0)
			r = room_db_commit(a->db);
		if (r < 0) {
			/* Never announce what the record lacks. */
			log_error("%s event %lld not recorded, not sent: %s",
			    json_get_string(ev, "type"), a->seq,
			    room_db_strerror(r));
			json_object_put(ev);
			return r;
		}
	}
	for (struct conn *c = a->conns; c; c = c->next)
		if (room_is_member(c))
			room_queue_event(c, ev);
	json_object_put(ev);
	return r;
}

void
room_send(struct conn *c, json_object *ev)
{
	if (!ev)
		return;
	room_stamp(c->a, ev);
	room_queue_event(c, ev);
	json_object_put(ev);
}

void
room_error(struct conn *c, const char *id, const char *fmt, ...)
{
	json_object *ev = room_event_new("error");
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(ev, "message", json_object_new_string(msg));
	if (id)
		json_object_object_add(ev, "id", json_object_new_string(id));
	room_send(c, ev);
}

void
room_unrecorded(struct conn *c, const char *id, const char *what, int err)
{
	room_error(c, id, "the room could not record %s (%s), so nobody was "
	    "told of it; try again once room.db can be written (history and "
	    "who still work)", what, room_db_strerror(err));
}

void
room_notice(struct agent *a, const char *fmt, ...)
{
	json_object *ev = room_event_new("notice");
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(ev, "text", json_object_new_string(msg));
	room_emit(a, ev, 0);
}

json_object *
room_members(struct agent *a)
{
	json_object *arr = json_object_new_array();

	for (struct conn *c = a->conns; c; c = c->next) {
		int seen = 0;

		if (!room_is_member(c) || c->closing || c->ending)
			continue;
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			if (strcmp(json_object_get_string(
			    json_object_array_get_idx(arr, i)), c->user) == 0)
				seen = 1;
		if (!seen)
			json_object_array_add(arr,
			    json_object_new_string(c->user));
	}
	return arr;
}

/* 1 when c is a person in an interactive session (the terminal chat):
 * only they are announced as joining and leaving, and listed as here. */
static int
room_is_present(const struct conn *c)
{
	return c->kind == CONN_CHAT && !c->closing && !c->ending;
}

/* The people here (room_is_present), each once, and how long each has
 * been idle ({"alice": seconds}, the least of their sessions). */
static json_object *
room_present(struct agent *a, json_object **idle)
{
	json_object *arr = json_object_new_array(), *prev;
	long long now = time_mono_ms();

	*idle = json_object_new_object();
	for (struct conn *c = a->conns; c; c = c->next) {
		long long secs = (now - c->last_line_ms) / 1000;

		if (!room_is_present(c))
			continue;
		if (json_object_object_get_ex(*idle, c->user, &prev)) {
			if (secs < json_object_get_int64(prev))
				json_object_object_add(*idle, c->user,
				    json_object_new_int64(secs));
			continue;
		}
		json_object_array_add(arr, json_object_new_string(c->user));
		json_object_object_add(*idle, c->user,
		    json_object_new_int64(secs));
	}
	return arr;
}

/* A presence event: users (room_present), their idle seconds. */
static json_object *
room_presence_event(struct agent *a)
{
	json_object *ev = room_event_new("presence"), *idle;

	json_object_object_add(ev, "users", room_present(a, &idle));
	json_object_object_add(ev, "idle", idle);
	json_object_object_add(ev, "term", term_members(a));
	return ev;
}

int
room_conn_count(struct agent *a)
{
	int n = 0;

	for (struct conn *c = a->conns; c; c = c->next)
		if (!c->closing && c->kind != CONN_MONITOR)
			n++;
	return n;
}

void
room_conn_end(struct conn *c, const char *reason)
{
	if (!c->closing && !c->ending)
		c->ending = reason;
}

void
room_conn_close(struct conn *c, const char *reason)
{
	if (c->closing)
		return;
	c->closing = reason;
	loop_del_fd(c->a->loop, c->fd);
}

int
room_take_fds(struct conn *c, int *fds, int n)
{
	if (n < 0 || n > c->nfds)
		return -EBADF;
	memcpy(fds, c->fds, (size_t)n * sizeof(int));
	memmove(c->fds, c->fds + n, (size_t)(c->nfds - n) * sizeof(int));
	memmove(c->fd_end, c->fd_end + n,
	    (size_t)(c->nfds - n) * sizeof(c->fd_end[0]));
	c->nfds -= n;
	return 0;
}

/* Close the first n queued fds. */
static void
room_close_fds(struct conn *c, int n)
{
	int fds[ROOM_MAX_FDS_QUEUED];

	if (n <= 0 || room_take_fds(c, fds, n) < 0)
		return;
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

void
room_drop_fds(struct conn *c)
{
	int n = 0;

	while (n < c->nfds && c->fd_end[n] == c->fd_end[0])
		n++;
	room_close_fds(c, n);
}

/* Close the fds no line can claim any more before the line that starts at
 * stream offset pos.  The kernel hands fds over with the first byte of the
 * sendmsg that carried them and ends the read there, so the line they came
 * with starts inside that read: fds from a read that ended at or before
 * pos belonged to an earlier line, which did not take them (not an exec,
 * or a bad one).  Left queued they would be taken by the next exec. */
static void
room_line_fds(struct conn *c, long long pos)
{
	int stale = 0;

	while (stale < c->nfds && c->fd_end[stale] <= pos)
		stale++;
	if (stale > 0)
		log_warn("closed %d fd(s) that came without an exec line",
		    stale);
	room_close_fds(c, stale);
}

/* A presence event: who is here, and who joined or left. */
static void
room_presence(struct agent *a, const char *how, const char *user)
{
	json_object *ev = room_presence_event(a);

	if (how)
		json_object_object_add(ev, how, json_object_new_string(user));
	room_emit(a, ev, 0);
}

/* Free a closed connection: its fds, its commands, its buffers. */
static void
room_conn_free(struct agent *a, struct conn *c)
{
	if (c->kind != CONN_NEW && c->kind != CONN_EXEC)
		log_info("%s left (%s)", c->user, c->closing);
	else if (strcmp(c->closing, "disconnected") != 0)
		log_info("connection closed: %s", c->closing);
	exec_conn_gone(a, c);
	term_conn_gone(a, c);
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	close(c->fd);
	jsonl_free(&c->in);
	buf_free(&c->out);
	if (c->kind == CONN_CHAT)
		room_presence(a, "left", c->user);
	free(c);
}

/* Write what c has queued; watch for writability when the socket is full. */
static void
room_conn_write(struct conn *c)
{
	ssize_t n;

	while (c->out.len > 0 && !c->closing) {
		n = send(c->fd, c->out.data, c->out.len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0) {
			room_conn_close(c, "disconnected");
			return;
		}
		buf_consume(&c->out, (size_t)n);
	}
	if (c->closing)
		return;
	loop_add_fd(c->a->loop, c->fd, LOOP_READ |
	    (c->out.len ? LOOP_WRITE : 0), room_conn_io, c);
}

void
room_flush(struct agent *a)
{
	struct conn **pp = &a->conns, *c;

	for (c = a->conns; c; c = c->next) {
		if (!c->closing && c->out.len)
			room_conn_write(c);
		if (c->ending && !c->closing && !c->out.len)
			room_conn_close(c, c->ending);
	}
	while ((c = *pp)) {
		if (c->closing) {
			*pp = c->next;
			room_conn_free(a, c);
			pp = &a->conns;	/* presence may have queued output */
		} else {
			pp = &c->next;
		}
	}
	for (c = a->conns; c; c = c->next)
		if (!c->closing && c->out.len)
			room_conn_write(c);
}

/* ---- incoming lines ------------------------------------------------------ */

/* Append one stored event's JSON to c, marked as a replay. */
static int
room_replay_one(const char *json, void *arg)
{
	struct conn *c = arg;
	size_t n = strlen(json);

	if (n < 2 || json[n - 1] != '}')
		return 0;
	room_queue(c, json, n - 1);
	room_queue(c, ",\"replay\":true}\n", 16);
	return c->closing != NULL;
}

/* The kind a hello names; CONN_NEW when unknown (error sent). */
static enum conn_kind
room_hello_kind(struct conn *c, const char *kind)
{
	if (!kind || strcmp(kind, "chat") == 0)
		return CONN_CHAT;
	if (strcmp(kind, "control") == 0)
		return CONN_CONTROL;
	if (strcmp(kind, "exec") == 0)
		return CONN_EXEC;
	if (strcmp(kind, "monitor") == 0)
		return CONN_MONITOR;
	room_error(c, NULL, "unknown connection kind \"%s\": use chat,"
	    " control, exec or monitor", kind);
	return CONN_NEW;
}

/* The tokens used today, for the chat's status line. */
static void
room_welcome_usage(struct agent *a, json_object *ev)
{
	long long in = 0, out = 0;
	json_object *u = json_object_new_object();

	room_db_usage_today(a->db, &in, &out);
	json_object_object_add(u, "input_tokens", json_object_new_int64(in));
	json_object_object_add(u, "output_tokens", json_object_new_int64(out));
	json_object_object_add(ev, "usage_today", u);
}

/* The welcome event: who, where, the settings and who owns the room. */
static void
room_welcome(struct agent *a, struct conn *c)
{
	json_object *ev = room_event_new("welcome");
	char now[40];

	json_object_object_add(ev, "room", json_object_new_string(a->room));
	json_object_object_add(ev, "user", json_object_new_string(c->user));
	json_object_object_add(ev, "provider", json_object_new_string(a->provider));
	json_object_object_add(ev, "model", json_object_new_string(a->model));
	json_object_object_add(ev, "approval", json_object_new_string(a->approval));
	room_access_describe(a, ev);
	room_welcome_usage(a, ev);
	json_object_object_add(ev, "seq", json_object_new_int64(a->seq));
	time_now_iso(now, sizeof(now));
	json_object_object_add(ev, "time", json_object_new_string(now));
	room_queue_event(c, ev);	/* seq is the latest, not a new one */
	json_object_put(ev);
}

/* hello: user, kind, admin, may_create, history, since -> welcome and the
 * replay, or access_denied. */
static void
room_hello(struct conn *c, json_object *req)
{
	struct agent *a = c->a;
	const char *user = json_get_string(req, "user");
	long long history = json_get_int(req, "history", 0);
	long long since = json_get_int(req, "since", -1);
	enum conn_kind kind;

	if (!user || !user_name_valid(user)) {
		room_error(c, NULL, "hello needs a valid user name (1-32 of "
		    "A-Z a-z 0-9 . _ -)");
		return;
	}
	if ((kind = room_hello_kind(c, json_get_string(req, "kind"))) ==
	    CONN_NEW)
		return;
	snprintf(c->user, sizeof(c->user), "%s", user);
	if (kind == CONN_MONITOR) {
		/* atriumd's liveness probe (only atriumd reaches this socket):
		 * no room access to decide, no welcome, no presence. */
		c->kind = kind;
		return;
	}
	c->admin = json_get_bool(req, "admin", 0);
	if (room_access_hello(a, c, req) < 0)
		return;
	c->kind = kind;
	room_welcome(a, c);
	if (since >= 0)
		room_db_events_each(a->db, since, history, room_replay_one, c);
	else if (history > 0)
		room_db_events_each(a->db, 0, history, room_replay_one, c);
	if (room_is_member(c)) {
		log_info("%s joined", c->user);
		/* Joining is reading: a room.db that cannot be written (logged
		 * there) still lets people in to read the history. */
		if (room_db_member_seen(a->db, c->user) < 0)
			log_warn("%s: last seen not recorded", c->user);
		if (kind == CONN_CHAT)
			room_presence(a, "joined", c->user);
		turn_joined(a, c);
	}
}

/* The text of chat/prompt, cleaned (utf8.h): what people send each other
 * reaches terminals and the model, so it is stored as valid UTF-8 without
 * control characters whatever the client sent.  A new string to free, or
 * NULL (error sent). */
static char *
room_text(struct conn *c, json_object *req)
{
	const char *text = json_get_string(req, "text");
	char *clean;

	if (text && strlen(text) > PROTO_MAX_TEXT) {
		room_error(c, NULL, "text is %zu bytes; the limit is %d bytes: "
		    "send a shorter message, or put it in a file in the "
		    "workspace and refer to it", strlen(text), PROTO_MAX_TEXT);
		return NULL;
	}
	clean = text ? utf8_clean_str(text) : NULL;
	if (!clean || !clean[strspn(clean, " \t\n")]) {
		room_error(c, NULL, "%s needs a non-empty \"text\" (control "
		    "characters do not count)", json_get_string(req, "type"));
		free(clean);
		return NULL;
	}
	return clean;
}

static void
room_chat(struct conn *c, json_object *req)
{
	char *text = room_text(c, req);
	json_object *ev;
	int r;

	if (!text)
		return;
	ev = room_event_new("message");
	json_object_object_add(ev, "user", json_object_new_string(c->user));
	json_object_object_add(ev, "text", json_object_new_string(text));
	if ((r = room_emit(c->a, ev, 1)) < 0)
		room_unrecorded(c, NULL, "your message", r);
	else if (strstr(text, "@agent"))
		turn_prompt(c->a, c->user, text);
	free(text);
}

/* history: since, before, limit, user, match (protocol.h); at most
 * PROTO_MAX_HISTORY events, the latest that match. */
static void
room_history(struct conn *c, json_object *req)
{
	struct room_db_filter f = {
		.since = json_get_int(req, "since", 0),
		.before = json_get_int(req, "before", 0),
		.limit = (long)json_get_int(req, "limit", 0),
		.user = json_get_string(req, "user"),
		.match = json_get_string(req, "match"),
	};

	if (f.limit <= 0 || f.limit > PROTO_MAX_HISTORY)
		f.limit = PROTO_MAX_HISTORY;
	if (f.match && !*f.match)
		f.match = NULL;
	if (room_db_events_find(c->a->db, &f, room_replay_one, c) == -EINVAL)
		room_error(c, NULL, "history: match is too long (at most 300 "
		    "bytes)");
}

/* A `complete` request on its way: who asked (found again by pointer
 * among the live connections: it may have gone meanwhile), and the word. */
struct room_complete {
	struct agent *a;
	struct conn *c;			/* compared, never followed */
	char user[64];
	char id[64];
	char word[WS_LIST_MAX_PATH];
	size_t dirlen;			/* the word's directory part, with '/' */
};

/* The listing is in: `completions` (id, path, names as full words) to the
 * connection that asked, if it is still there. */
static void
room_complete_done(void *arg, int err, json_object *names)
{
	struct room_complete *rc = arg;
	struct conn *c = rc->a->conns;
	json_object *ev, *full;
	char w[WS_LIST_MAX_PATH + NAME_MAX + 2];

	while (c && c != rc->c)
		c = c->next;
	if (c && !c->closing && strcmp(c->user, rc->user) == 0 &&
	    (ev = room_event_new("completions")) && (full =
	    json_object_new_array())) {
		for (size_t i = 0; names && i < json_object_array_length(names);
		    i++) {
			snprintf(w, sizeof(w), "%.*s%s", (int)rc->dirlen,
			    rc->word, json_object_get_string(
			    json_object_array_get_idx(names, i)));
			json_object_array_add(full, json_object_new_string(w));
		}
		json_object_object_add(ev, "id", json_object_new_string(rc->id));
		json_object_object_add(ev, "path",
		    json_object_new_string(rc->word));
		json_object_object_add(ev, "names", full);
		if (err)
			log_info("completion of %s: %s", rc->word,
			    strerror(-err));
		room_send(c, ev);
	}
	json_object_put(names);
	free(rc);
}

/* complete: id, path (a word as typed after "!"): the workspace's names
 * that complete it, listed through the confined path (ws_list.h). */
static void
room_complete(struct conn *c, json_object *req)
{
	const char *word = json_get_string(req, "path") ?: "";
	const char *slash = strrchr(word, '/');
	struct room_complete *rc;
	char dir[WS_LIST_MAX_PATH], rel[WS_LIST_MAX_PATH], err[256];

	if (strlen(word) >= WS_LIST_MAX_PATH) {
		room_error(c, json_get_string(req, "id"), "complete: the path "
		    "is too long");
		return;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - word + 1) :
	    0, word);
	if (wsio_path(dir, rel, sizeof(rel), err, sizeof(err)) < 0) {
		room_error(c, json_get_string(req, "id"), "complete: %s", err);
		return;
	}
	if (!(rc = calloc(1, sizeof(*rc))))
		return;
	rc->a = c->a;
	rc->c = c;
	snprintf(rc->user, sizeof(rc->user), "%s", c->user);
	snprintf(rc->id, sizeof(rc->id), "%s", json_get_string(req, "id") ?:
	    "");
	snprintf(rc->word, sizeof(rc->word), "%s", word);
	rc->dirlen = strlen(dir);
	if (ws_list_start(c->a, rel, slash ? slash + 1 : word,
	    room_complete_done, rc) < 0) {
		room_error(c, rc->id, "complete: could not list %s", dir);
		free(rc);
	}
}

/* typing: tell the other members that c's user is typing (live only). */
static void
room_typing(struct conn *c)
{
	json_object *ev = room_event_new("typing");

	json_object_object_add(ev, "user", json_object_new_string(c->user));
	room_emit(c->a, ev, 0);
}

/* prompt: the question is shown to the room as the asker's (a stored
 * `prompt` event, so the history has it too), then the turn starts. */
static void
room_prompt(struct conn *c, json_object *req)
{
	char *text = room_text(c, req);
	json_object *ev;
	int r;

	if (!text)
		return;
	ev = room_event_new("prompt");
	json_object_object_add(ev, "user", json_object_new_string(c->user));
	json_object_object_add(ev, "text", json_object_new_string(text));
	if ((r = room_emit(c->a, ev, 1)) < 0)
		room_unrecorded(c, NULL, "your prompt", r);
	else
		turn_prompt(c->a, c->user, text);
	free(text);
}

/* sync: answered with `synced` (same id) once every line c sent before it
 * is handled.  Lines are handled in order and c's output is queued in
 * order, so a client that sees `synced` has seen every answer its earlier
 * lines get at once (a turn's or an exec's later events aside). */
static void
room_sync(struct conn *c, json_object *req)
{
	json_object *ev = room_event_new("synced");
	const char *id = json_get_string(req, "id");

	if (id)
		json_object_object_add(ev, "id", json_object_new_string(id));
	room_send(c, ev);
}

/* Lines a member may send after hello. */
static void
room_member_line(struct conn *c, const char *type, json_object *req)
{
	const char *id = json_get_string(req, "id");

	if (strcmp(type, "chat") == 0) {
		room_chat(c, req);
	} else if (strcmp(type, "prompt") == 0) {
		room_prompt(c, req);
	} else if (strcmp(type, "approve") == 0) {
		if (!id || turn_approve(c->a, c->user, id,
		    json_get_bool(req, "approve", 0)) < 0)
			room_error(c, id, "no approval request %s is waiting "
			    "(it may have been answered or timed out)",
			    id ? id : "(missing id)");
	} else if (strcmp(type, "stop") == 0) {
		if (turn_stop(c->a, c->user) < 0)
			room_error(c, NULL, "the agent is not running a turn");
	} else if (strcmp(type, "config") == 0) {
		settings_request(c->a, c, req);
	} else if (room_access_request(c->a, c, type, req)) {
		/* invite, kick, visibility, access */
	} else if (strcmp(type, "limits") == 0) {
		room_limits_request(c->a, c, req);
	} else if (strcmp(type, "caps") == 0) {
		caps_request(c->a, c, req);
	} else if (strcmp(type, "history") == 0) {
		room_history(c, req);
	} else if (strcmp(type, "who") == 0) {
		room_send(c, room_presence_event(c->a));
	} else if (strcmp(type, "typing") == 0) {
		room_typing(c);
	} else if (strcmp(type, "complete") == 0) {
		room_complete(c, req);
	} else if (strcmp(type, "usage") == 0) {
		room_send(c, usage_event(c->a));
	} else if (strcmp(type, "sync") == 0) {
		room_sync(c, req);
	} else if (term_line(c, type, req)) {
		/* term_open, term_input, term_resize, term_close */
	} else {
		room_error(c, NULL, "unknown request type \"%s\"", type);
	}
}

/* A line from atriumd's watchdog.  "pong" is queued like any output and
 * so written once this loop turn ends: the answer proves that the loop
 * turns.  It carries no seq (it is not a room event). */
static void
room_monitor_line(struct conn *c, const char *type)
{
	static const char pong[] = "{\"type\":\"pong\"}\n";

	if (strcmp(type, "ping") == 0)
		room_queue(c, pong, sizeof(pong) - 1);
	else
		room_error(c, NULL, "a monitor connection may send only ping");
}

/* One framed line from c. */
static void
room_line(struct conn *c, const char *line, size_t len)
{
	const char *err = NULL, *type;
	json_object *req = jsonl_parse_object(line, len, &err);

	if (!req) {
		room_error(c, NULL, "bad line (%s): send one JSON object per "
		    "line", err ? err : "not JSON");
		return;
	}
	type = json_get_string(req, "type");
	c->last_line_ms = time_mono_ms();
	if (c->ending) {
		/* on its way out: nothing more is taken from it */
	} else if (!type) {
		room_error(c, NULL, "a request needs a \"type\"");
	} else if (c->kind == CONN_NEW) {
		if (strcmp(type, "hello") == 0)
			room_hello(c, req);
		else
			room_error(c, NULL, "send hello first");
	} else if (strcmp(type, "hello") == 0) {
		room_error(c, NULL, "hello was already sent");
	} else if (c->kind == CONN_MONITOR) {
		room_monitor_line(c, type);
	} else if (strcmp(type, "exec") == 0) {
		exec_request(c->a, c, req);
	} else if (strcmp(type, "signal") == 0) {
		exec_signal(c->a, c, req);
	} else if (c->kind == CONN_EXEC) {
		room_error(c, NULL, "an exec connection may send only exec "
		    "and signal");
	} else {
		room_member_line(c, type, req);
	}
	json_object_put(req);
}

/* Read what is waiting on c and handle its whole lines. */
static void
room_conn_read(struct conn *c)
{
	char chunk[65536], *line;
	int fds[PROTO_MAX_FDS], nfds = 0, r;
	size_t len;
	ssize_t n;

	n = fdpass_recv(c->fd, chunk, sizeof(chunk), fds, &nfds,
	    PROTO_MAX_FDS);
	if (n == -EAGAIN || n == -EINTR)
		return;
	if (n <= 0) {
		room_conn_close(c, n == 0 ? "disconnected" : "receive failed");
		return;
	}
	c->rx += n;
	for (int i = 0; i < nfds; i++) {
		if (c->nfds == ROOM_MAX_FDS_QUEUED) {
			close(fds[i]);
			room_conn_close(c, "sent fds without exec lines");
		} else {
			c->fd_end[c->nfds] = c->rx;
			c->fds[c->nfds++] = fds[i];
		}
	}
	if (jsonl_feed(&c->in, chunk, (size_t)n) < 0) {
		room_conn_close(c, "out of memory");
		return;
	}
	while (!c->closing && (r = jsonl_next(&c->in, &line, &len)) != 0) {
		if (r == -EMSGSIZE) {
			room_error(c, NULL, "line longer than %d bytes ignored",
			    PROTO_MAX_LINE);
		} else if (r == 1) {
			/* The line is at the front of what jsonl holds. */
			room_line_fds(c, c->rx - (long long)c->in.in.len);
			room_line(c, line, len);
		}
	}
}

static void
room_conn_io(struct loop *l, int fd, int mask, void *arg)
{
	struct conn *c = arg;

	if (mask & LOOP_WRITE)
		room_conn_write(c);
	if ((mask & LOOP_READ) && !c->closing)
		room_conn_read(c);
}

/* A new client on the listening socket. */
static void
room_accept(struct loop *l, int lfd, int mask, void *arg)
{
	struct agent *a = arg;
	struct conn *c;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (room_conn_count(a) >= ROOM_MAX_CONNS || !(c = calloc(1, sizeof(*c)))) {
		log_warn("connection refused: %d connections open",
		    room_conn_count(a));
		close(fd);
		return;
	}
	c->a = a;
	c->fd = fd;
	c->last_line_ms = time_mono_ms();
	jsonl_init(&c->in, PROTO_MAX_LINE);
	buf_init(&c->out, ROOM_MAX_OUTPUT);
	c->next = a->conns;
	a->conns = c;
	if (loop_add_fd(l, fd, LOOP_READ, room_conn_io, c) < 0)
		room_conn_close(c, "cannot watch socket");
}

int
room_listen(struct agent *a)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, r;

	if (strlen(a->sock_path) >= sizeof(sa.sun_path)) {
		log_error("socket path too long: %s", a->sock_path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, a->sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(a->sock_path);	/* a stale socket of an earlier run */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(a->sock_path, 0600) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		log_error("cannot listen on %s: %s", a->sock_path, strerror(-r));
		close(fd);
		return r;
	}
	a->listen_fd = fd;
	return loop_add_fd(a->loop, fd, LOOP_READ, room_accept, a);
}

void
room_close_all(struct agent *a)
{
	for (struct conn *c = a->conns; c; c = c->next)
		room_conn_close(c, "agent stopping");
	room_flush(a);
	if (a->listen_fd >= 0) {
		loop_del_fd(a->loop, a->listen_fd);
		close(a->listen_fd);
		a->listen_fd = -1;
		unlink(a->sock_path);
	}
}

void
room_emit_output(struct agent *a, const char *type, const char *id,
    int stream, struct buf *carry, const char *p, size_t n)
{
	json_object *ev;
	struct buf text;
	size_t done;

	if (buf_append(carry, p, n) < 0) {
		log_warn("%s: %zu bytes of output did not fit; dropped", id, n);
		buf_reset(carry);
		return;
	}
	done = utf8_complete(carry->data, carry->len);
	if (!done)
		return;
	buf_init(&text, done * 3 + 4);
	if (utf8_repair(&text, carry->data, done) == 0) {
		ev = room_event_new(type);
		json_object_object_add(ev, "id", json_object_new_string(id));
		json_object_object_add(ev, "stream", json_object_new_string(
		    stream == PROC_STDOUT ? "stdout" : "stderr"));
		json_object_object_add(ev, "text", json_object_new_string_len(
		    text.data, (int)text.len));
		room_emit(a, ev, 0);
	}
	buf_free(&text);
	buf_consume(carry, done);
}
