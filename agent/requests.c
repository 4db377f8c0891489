/*
 * requests.c: the table of requests a connection may send (requests.h):
 * each line's type, who may send it (which kinds of connection), and its
 * handler.  The transport is conn.c's; what a handler announces goes
 * through room_events.h to the journal, which commits before anything reaches a
 * client.
 *
 * Who may enter and manage the room is room_access_list.c's: hello is checked
 * there before the connection joins.  A connection has exactly one hello,
 * its first line: atriumd's monitor writes it (who the connection is for,
 * and whether that user's key is an admin's, from its own reading of
 * authorized_keys) before it hands the connection to the network process,
 * so any later hello is the network process (or a client through it)
 * trying to be someone else, and ends the connection.
 *
 * Presence is about people: only chat connections (a person at a
 * terminal) are announced as joining and leaving and listed by who;
 * control connections (scripts) get the room's events without being
 * announced.  atriumd's network process reads the room's events once per
 * room on a feed connection (conn.h CONN_FEED) for the chat sessions whose
 * hello said "feed": they stay members (presence, who, their own
 * replies and replays on their own connection), and the journal writes
 * the room's events on the feed alone for them.  A read-only connection (the monitor's hello says so for a
 * read-only token over HTTP) may send only requests_reads' requests:
 * any other gets an `error` naming read-only.  `sync` is answered in
 * line order, so its `synced` follows
 * every answer the connection's earlier lines got at once (atriumd ends a
 * piped protocol session on it).
 */
#include "requests.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "approval.h"
#include "caps.h"
#include "conn.h"
#include "exec.h"
#include "file_requests.h"
#include "journal.h"
#include "log.h"
#include "names.h"
#include "prefs.h"
#include "protocol.h"
#include "room_events.h"
#include "room_access_list.h"
#include "input_limits.h"
#include "room_db.h"
#include "room_limits.h"
#include "settings.h"
#include "term.h"
#include "text.h"
#include "snapshots.h"
#include "consent.h"
#include "undo.h"
#include "turn.h"
#include "usage.h"
#include "utf8.h"
#include "util.h"
#include "ws_list.h"
#include "wsio.h"

/* ---- incoming lines ------------------------------------------------------ */

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
	if (strcmp(kind, "feed") == 0)
		return CONN_FEED;
	room_error(c, NULL, "unknown connection kind \"%s\": use chat,"
	    " control, exec, feed or monitor", kind);
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

	json_object_object_add(ev, "room", json_object_new_string(a->room));
	json_object_object_add(ev, "user", json_object_new_string(c->user));
	json_object_object_add(ev, "provider", json_object_new_string(a->provider));
	json_object_object_add(ev, "model", json_object_new_string(a->model));
	json_object_object_add(ev, "approval", json_object_new_string(a->approval));
	room_access_describe(a, ev);
	room_welcome_usage(a, ev);
	prefs_describe(a, c->user, ev);
	room_send(c, ev);	/* seq is the latest, not a new one */
}

/* A feed (conn.h CONN_FEED) starts: "feed" with the last announced seq,
 * after which it gets every event once.  Nothing is replayed on it: each
 * fed member's own hello replays what it asked for.  0. */
static int
room_feed_start(struct agent *a, struct conn *c)
{
	json_object *ev = room_event_new("feed");

	log_info("a feed for %s's chat sessions opened", c->user);
	room_send(c, ev);	/* seq is the latest, not a new one */
	journal_join(a->journal, c, -1, 0);
	return 0;
}

/* hello: user, kind, admin, may_create, history, since -> welcome and the
 * replay, or access_denied.  0, or -1 when c may not go on (an error or
 * access_denied is queued). */
static int
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
		return -1;
	}
	if ((kind = room_hello_kind(c, json_get_string(req, "kind"))) ==
	    CONN_NEW)
		return -1;
	snprintf(c->user, sizeof(c->user), "%s", user);
	if (kind == CONN_MONITOR) {
		/* atriumd's liveness probe (only atriumd reaches this socket):
		 * no room access to decide, no welcome, no presence; it keeps
		 * the monitor's record of the access list, so the list goes
		 * first. */
		c->kind = kind;
		room_access_report(a, c);
		return 0;
	}
	c->admin = json_get_bool(req, "admin", 0);
	c->read_only = json_get_bool(req, "read_only", 0);
	if (room_access_hello(a, c, req) < 0)
		return -1;
	c->kind = kind;
	if (kind == CONN_FEED)
		return room_feed_start(a, c);
	c->fed = kind == CONN_CHAT && json_get_bool(req, "feed", 0);
	room_welcome(a, c);
	journal_join(a->journal, c, since, history);
	if (conn_is_member(c)) {
		log_info("%s joined", c->user);
		/* Joining is reading: a room.db that cannot be written (logged
		 * there) still lets people in to read the history. */
		if (room_db_member_seen(a->db, c->user) < 0)
			log_warn("%s: last seen not recorded", c->user);
		if (kind == CONN_CHAT)
			room_presence(a, "joined", c->user);
		turn_joined(a, c);
	}
	return 0;
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
	if (journal_replay(c->a->journal, c, &f) == -EINVAL)
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
room_typing(struct conn *c, json_object *req)
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

/* approve: id, approve [, reason].  A denial's reason reaches the model
 * and every member's screen: cleaned (utf8.h) and bounded here. */
static void
room_approve(struct conn *c, json_object *req)
{
	const char *id = json_get_string(req, "id");
	const char *why = json_get_string(req, "reason");
	char *reason = NULL;
	int r;

	if (why && strlen(why) > APPROVAL_REASON_MAX) {
		room_error(c, id, "the reason is too long: at most %d bytes",
		    APPROVAL_REASON_MAX);
		return;
	}
	if (why && !(reason = utf8_clean_str(why))) {
		room_error(c, id, "out of memory: the answer was not taken");
		return;
	}
	r = id ? turn_approve(c->a, c->user, id, json_get_bool(req, "approve",
	    0), reason) : -ENOENT;
	free(reason);
	if (r < 0)
		room_error(c, id, "no approval request %s is waiting "
		    "(it may have been answered or timed out)",
		    id ? id : "(missing id)");
}

static void
room_pref(struct conn *c, json_object *req)
{
	prefs_request(c->a, c, req);
}

static void
room_stop(struct conn *c, json_object *req)
{
	if (turn_stop(c->a, c->user) < 0)
		room_error(c, NULL, "the agent is not running a turn");
}

static void
room_undo(struct conn *c, json_object *req)
{
	undo_request(c->a, c, req, 0);
}

static void
room_redo(struct conn *c, json_object *req)
{
	undo_request(c->a, c, req, 1);
}

static void
room_consent(struct conn *c, json_object *req)
{
	consent_request(c->a, c, req);
}

static void
room_snapshots(struct conn *c, json_object *req)
{
	snapshots_request(c->a, c, json_get_string(req, "type"), req);
}

static void
room_who(struct conn *c, json_object *req)
{
	room_send(c, room_presence_event(c->a));
}

static void
room_usage(struct conn *c, json_object *req)
{
	room_send(c, usage_event(c->a));
}

static void
room_config(struct conn *c, json_object *req)
{
	settings_request(c->a, c, req);
}

static void
room_limits(struct conn *c, json_object *req)
{
	room_limits_request(c->a, c, req);
}

static void
room_caps(struct conn *c, json_object *req)
{
	caps_request(c->a, c, req);
}

/* invite, kick, remove, visibility, access: room_access_list.c tells them
 * apart. */
static void
room_access(struct conn *c, json_object *req)
{
	room_access_request(c->a, c, json_get_string(req, "type"), req);
}

/* term_open, term_input, term_resize, term_close: term.c's. */
static void
room_term(struct conn *c, json_object *req)
{
	term_line(c, json_get_string(req, "type"), req);
}

static void
room_exec(struct conn *c, json_object *req)
{
	exec_request(c->a, c, req);
}

static void
room_signal(struct conn *c, json_object *req)
{
	exec_signal(c->a, c, req);
}

static void
room_exec_changed(struct conn *c, json_object *req)
{
	exec_changed(c->a, c, req);
}

/* file_open, file_commit, file_abort, file_list, file_stat, file_delete,
 * file_mkdir: file_requests.c's. */
static void
room_file(struct conn *c, json_object *req)
{
	file_request(c, json_get_string(req, "type"), req);
}

/* Who may send a request: a mask of (1 << conn_kind). */
#define MEMBERS	((1u << CONN_CHAT) | (1u << CONN_CONTROL))
#define EXECS	(MEMBERS | (1u << CONN_EXEC))

struct request {
	const char *type;
	unsigned who;
	void (*handle)(struct conn *c, json_object *req);
	int stores;      /* stores what it brings: input_limits_admit first */
};

/* The requests that only read the room: a read-only connection may send
 * these, and no other (every other one changes the room, or speaks in
 * it; a request added to the table is refused to it until named here). */
static const char *const requests_reads[] = {
	"history", "who", "usage", "sync", "snapshots", "complete",
	"file_list", "file_stat",
	"file_open",	/* for reading: file_request refuses a write */
};

/* 1 when type only reads the room. */
static int
requests_only_reads(const char *type)
{
	for (size_t i = 0; i < sizeof(requests_reads) /
	    sizeof(requests_reads[0]); i++)
		if (strcmp(requests_reads[i], type) == 0)
			return 1;
	return 0;
}

/* Every request after hello (hello is CONN_NEW's only one; a monitor's
 * only one is ping, room_monitor_line).  Sorted by nothing: it is short. */
static const struct request requests[] = {
	{ "chat", MEMBERS, room_chat, 1 },
	{ "prompt", MEMBERS, room_prompt, 1 },
	{ "approve", MEMBERS, room_approve, 0 },
	{ "stop", MEMBERS, room_stop, 0 },
	{ "config", MEMBERS, room_config, 0 },
	{ "invite", MEMBERS, room_access, 0 },
	{ "kick", MEMBERS, room_access, 0 },
	{ "remove", MEMBERS, room_access, 0 },
	{ "visibility", MEMBERS, room_access, 0 },
	{ "access", MEMBERS, room_access, 0 },
	{ "limits", MEMBERS, room_limits, 0 },
	{ "caps", MEMBERS, room_caps, 0 },
	{ "history", MEMBERS, room_history, 0 },
	{ "who", MEMBERS, room_who, 0 },
	{ "undo", MEMBERS, room_undo, 0 },
	{ "redo", MEMBERS, room_redo, 0 },
	{ "consent", MEMBERS, room_consent, 0 },
	{ "snapshot", MEMBERS, room_snapshots, 0 },
	{ "restore", MEMBERS, room_snapshots, 0 },
	{ "snapshots", MEMBERS, room_snapshots, 0 },
	{ "typing", MEMBERS, room_typing, 0 },
	{ "complete", MEMBERS, room_complete, 0 },
	{ "usage", MEMBERS, room_usage, 0 },
	{ "sync", MEMBERS, room_sync, 0 },
	{ "term_open", MEMBERS, room_term, 0 },
	{ "term_input", MEMBERS, room_term, 0 },
	{ "term_resize", MEMBERS, room_term, 0 },
	{ "term_close", MEMBERS, room_term, 0 },
	{ "exec", EXECS, room_exec, 1 },
	{ "signal", EXECS, room_signal, 0 },
	{ "exec_changed", 1u << CONN_EXEC, room_exec_changed, 0 },
	{ "pref", MEMBERS, room_pref, 0 },
	{ "file_open", EXECS, room_file, 0 },
	{ "file_commit", EXECS, room_file, 0 },
	{ "file_abort", EXECS, room_file, 0 },
	{ "file_list", EXECS, room_file, 0 },
	{ "file_stat", EXECS, room_file, 0 },
	{ "file_delete", EXECS, room_file, 0 },
	{ "file_mkdir", EXECS, room_file, 0 },
};

/* The entry for type, or NULL. */
static const struct request *
requests_find(const char *type)
{
	for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++)
		if (strcmp(requests[i].type, type) == 0)
			return &requests[i];
	return NULL;
}

/* A line from atriumd's watchdog.  "pong" is queued like any output and
 * so written once this loop turn ends: the answer proves that the loop
 * turns.  It says what the turn is doing (turn_report), for `atriumd
 * status`, and carries no seq (it is not a room event). */
static void
room_monitor_line(struct conn *c, const char *type)
{
	json_object *pong;

	if (strcmp(type, "ping") != 0) {
		room_error(c, NULL, "a monitor connection may send only ping");
		return;
	}
	if (!(pong = json_object_new_object()))
		return;		/* no answer: the watchdog asks again */
	json_object_object_add(pong, "type", json_object_new_string("pong"));
	turn_report(c->a, pong);
	conn_queue_event(c, pong);
	json_object_put(pong);
}

/* A request of type from c, past hello. */
static void
requests_dispatch(struct conn *c, const char *type, json_object *req)
{
	const struct request *r = requests_find(type);

	if (!r)
		room_error(c, NULL, "unknown request type \"%s\"", type);
	else if (c->read_only && !requests_only_reads(type)) {
		room_error(c, json_get_string(req, "id"), "read-only: this "
		    "connection's token may read the room, not %s in it; ask "
		    "for a token without --read-only", type);
		if (strcmp(type, "exec") == 0)
			exec_refused(c);
	} else if (!(r->who & (1u << c->kind)))
		room_error(c, NULL, "an exec connection may send only exec, "
		    "signal and the file requests");
	else if (r->stores && input_limits_admit(c->a, c, type, req) < 0) {
		if (strcmp(type, "exec") == 0)
			exec_refused(c);
	} else {
		r->handle(c, req);
		input_limits_settle(c->a);
	}
}

/* One framed line from c (NULL: a line over the limit was skipped). */
static void
requests_line(struct conn *c, const char *line, size_t len)
{
	const char *err = NULL, *type;
	json_object *req;

	if (!line) {
		room_error(c, NULL, "line longer than %d bytes ignored",
		    PROTO_MAX_LINE);
		return;
	}
	if (!(req = jsonl_parse_object(line, len, &err))) {
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
		/* The first line, and the only hello: atriumd's monitor writes
		 * it before anyone else holds the connection. */
		if (strcmp(type, "hello") != 0) {
			room_error(c, NULL, "send hello first");
			conn_end(c, "no hello");
		} else if (room_hello(c, req) < 0) {
			conn_end(c, "bad hello");
		}
	} else if (strcmp(type, "hello") == 0) {
		/* Who a connection is for is settled by its first line; a
		 * later hello is someone else speaking on it. */
		log_warn("%s: a second hello on one connection; ending it",
		    c->user);
		room_error(c, NULL, "hello was already sent: a connection has "
		    "one hello, its first line");
		conn_end(c, "second hello");
	} else if (c->kind == CONN_MONITOR) {
		room_monitor_line(c, type);
	} else if (c->kind == CONN_FEED) {
		room_error(c, NULL, "a feed connection sends nothing after "
		    "its hello");
	} else {
		requests_dispatch(c, type, req);
	}
	json_object_put(req);
}

/* c is about to be freed: its commands, its terminal, its presence. */
static void
requests_gone(struct conn *c)
{
	struct agent *a = c->a;

	exec_conn_gone(a, c);
	term_conn_gone(a, c);
	file_requests_conn_gone(a, c);
	if (c->kind == CONN_CHAT)
		room_presence(a, "left", c->user);
}

const struct conn_hooks requests_hooks = {
	.line = requests_line,
	.gone = requests_gone,
};
