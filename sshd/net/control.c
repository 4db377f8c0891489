/*
 * control.c: the `atrium` subsystem (control.h).  Called by chan_requests.c
 * through chan_ops.  JSON lines go both ways unchanged, except that a client
 * may not send `hello` (atriumd says who the user is), lines over
 * PROTO_MAX_LINE, not valid UTF-8 or not JSON objects are answered with an
 * `error` line, and the text of a chat or prompt loses its control
 * characters before the room sees it (room_request.h, as over the
 * room's WebSocket).
 *
 * Backpressure both ways: client lines are taken only while the agent link
 * has room; agent lines are read only while the channel's queue is under
 * CONTROL_MAX_QUEUED.
 *
 * Two requests are atriumd's own, answered here and never sent to the
 * agent (they reach beyond one room's agent): `rooms` (the rooms the
 * user may enter: room_access.h) and `delete` (room: this room's name, to
 * confirm; its owner or an admin only).  The monitor answers `rooms`
 * later (monitor_ask_rooms: the loop does not wait for it); the client's
 * lines after it wait, framed, until it is answered, so answers keep the
 * order of the requests.  An `access_denied` event from the
 * room (the user was removed, or the room went private) is passed on, its
 * message goes to stderr, and the session ends with status 1.
 *
 * Client EOF ends the session once what the client asked for is answered:
 * every line it sent before EOF was handled by the room and answered (a
 * `sync` request goes to the agent after the last of them; its `synced`
 * answer, which is not passed on, comes after every answer to the lines
 * before it), the turns its prompts (and @agent chat lines) started have
 * ended and its execs have their results.  Lines sent before the room is
 * up wait in libssh (input is not taken before hello), and EOF is seen
 * only once every byte before it was taken, whatever the timing.  So a
 * script can pipe requests in and read every answer out:
 *
 *   echo '{"type":"prompt","text":"run the tests"}' | ssh -s ROOM@HOST atrium
 */
#include "control.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agentlink.h"
#include "jsonl.h"
#include "log.h"
#include "protocol.h"
#include "monitor_ask.h"
#include "room_access.h"
#include "room_request.h"
#include "server.h"
#include "user_cap.h"
#include "utf8.h"

#define CONTROL_MAX_QUEUED	(PROTO_MAX_LINE)
#define CONTROL_MAX_EXECS	4096	/* execs waiting for a result */
#define CONTROL_EXEC_ID		64	/* longest id remembered, with NUL */

struct control {
	struct chan *c;			/* owner */
	struct agentlink link;		/* to the room's agent */
	struct jsonl in;		/* client bytes, framed */
	int started;			/* hello sent */
	int ended;			/* the agent went away */
	int denied;			/* access_denied came: the end */
	int eof;			/* the client sends no more */
	int sync_sent;			/* our sync follows its last line */
	int synced;			/* ... and was answered */
	char sync_id[64];		/* its id */
	int turns_owed;			/* its prompts whose turn has not ended */
	long long our_turn;		/* running turn it started, or -1 */
	int nexecs;			/* its execs without a result */
	int capexecs;			/* execs allocated */
	char (*execs)[CONTROL_EXEC_ID];	/* their ids */
};

/* 1 while client lines wait in ct->in, framed, not yet handled. */
static int
control_lines_held(const struct control *ct)
{
	return ct->in.in.len > ct->in.taken + ct->in.partial;
}

/* An error line to the client only, naming id when not NULL. */
static void
control_error_for(struct control *ct, const char *id, const char *msg)
{
	json_object *o = room_request_error(id, msg);
	struct buf line;

	if (!o)
		return;
	buf_init(&line, CHAN_MAX_OUT);
	if (jsonl_format(&line, o) == 0)
		chan_write(ct->c, line.data, line.len);
	buf_free(&line);
	json_object_put(o);
}

/* An error line to the client only. */
static void
control_error(struct control *ct, const char *msg)
{
	control_error_for(ct, NULL, msg);
}

/* Room for one more exec id: 0, or -ENOBUFS past CONTROL_MAX_EXECS,
 * -ENOMEM. */
static int
control_exec_room(struct control *ct)
{
	int cap = ct->capexecs ? ct->capexecs * 2 : 16;
	void *p;

	if (ct->nexecs < ct->capexecs)
		return 0;
	if (ct->nexecs >= CONTROL_MAX_EXECS)
		return -ENOBUFS;
	if (cap > CONTROL_MAX_EXECS)
		cap = CONTROL_MAX_EXECS;
	if (!(p = realloc(ct->execs, (size_t)cap * sizeof(ct->execs[0]))))
		return -ENOMEM;
	ct->execs = p;
	ct->capexecs = cap;
	return 0;
}

/* An exec line may go on only while its result can be waited for (the
 * id remembered): 1, or 0 with an error sent. */
static int
control_exec_allowed(struct control *ct, const char *type, json_object *o)
{
	const char *id = json_get_string(o, "id");
	char msg[160];
	int r;

	if (!type || strcmp(type, "exec") || !id || strlen(id) >= CONTROL_EXEC_ID)
		return 1;
	if ((r = control_exec_room(ct)) == 0)
		return 1;
	snprintf(msg, sizeof(msg), r == -ENOBUFS ? "exec %s was not run: %d "
	    "commands of this session wait for their results; wait for some "
	    "to end" : "exec %s was not run: out of memory", id,
	    CONTROL_MAX_EXECS);
	control_error(ct, msg);
	return 0;
}

/* Remember what a request the client sent will be answered by. */
static void
control_owe(struct control *ct, const char *type, json_object *o)
{
	const char *text = json_get_string(o, "text");
	const char *id = json_get_string(o, "id");

	if (!type)
		return;
	if (strcmp(type, "prompt") == 0 ||
	    (strcmp(type, "chat") == 0 && text && strstr(text, "@agent")))
		ct->turns_owed++;
	else if (strcmp(type, "exec") == 0 && id &&
	    strlen(id) < CONTROL_EXEC_ID && ct->nexecs < ct->capexecs)
		memcpy(ct->execs[ct->nexecs++], id, strlen(id) + 1);
}

/* Strike an exec the room answered (its result, or an error naming it).
 * 1 when id was one of ours. */
static int
control_strike_exec(struct control *ct, const char *id)
{
	for (int i = 0; id && i < ct->nexecs; i++)
		if (strcmp(ct->execs[i], id) == 0) {
			memcpy(ct->execs[i], ct->execs[--ct->nexecs],
			    sizeof(ct->execs[i]));
			return 1;
		}
	return 0;
}

/* After EOF: end the session once nothing is owed. */
static void
control_maybe_done(struct control *ct)
{
	if (ct->eof && ct->synced && ct->turns_owed <= 0 && ct->nexecs == 0)
		chan_exit(ct->c, 0, NULL);
}

/* After EOF, once connected: ask the agent for a `synced` after the
 * client's last line.  A link too full to take it is tried again from
 * the tick. */
static void
control_sync(struct control *ct)
{
	json_object *o;

	if (!ct->eof || !ct->started || ct->sync_sent || ct->ended ||
	    ct->c->rooms_ask || control_lines_held(ct))
		return;
	snprintf(ct->sync_id, sizeof(ct->sync_id), "atriumd-eof-%lu-%p",
	    ct->c->s->num, (void *)ct);
	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string("sync"));
	json_object_object_add(o, "id", json_object_new_string(ct->sync_id));
	if (agentlink_send(&ct->link, o) == 0)
		ct->sync_sent = 1;
	json_object_put(o);
}

/* Strike what an event from the room answers; after EOF, end the session
 * once nothing is owed. */
static void
control_settle(struct control *ct, json_object *o)
{
	const char *type = json_get_string(o, "type");
	const char *id = json_get_string(o, "id");
	const char *user = json_get_string(o, "user");

	if (!type || json_get_bool(o, "replay", 0))
		return;
	if (strcmp(type, "turn_start") == 0 && user &&
	    strcmp(user, ct->c->s->user) == 0 && ct->turns_owed > 0)
		ct->our_turn = json_get_int(o, "turn", -1);
	else if (strcmp(type, "turn_end") == 0 && ct->our_turn >= 0 &&
	    json_get_int(o, "turn", -2) == ct->our_turn) {
		ct->our_turn = -1;
		ct->turns_owed--;
	} else if (strcmp(type, "exec_result") == 0 && id) {
		control_strike_exec(ct, id);
	} else if (strcmp(type, "error") == 0 && id &&
	    control_strike_exec(ct, id)) {
		/* an exec refused (too many running, a bad field) */
	} else if (strcmp(type, "error") == 0 &&
	    json_get_bool(o, "no_turn", 0)) {
		/* a prompt the room refused (input_limits.c): its turn will
		 * never come, whether or not the client's EOF came first */
		if (ct->turns_owed > 0)
			ct->turns_owed--;
	} else if (strcmp(type, "error") == 0 && ct->eof &&
	    !json_object_object_get_ex(o, "turn", NULL)) {
		/* A request refused outright will not be answered otherwise. */
		if (ct->turns_owed > 0 && ct->our_turn < 0)
			ct->turns_owed--;
		else if (ct->nexecs > 0 && !id)
			ct->nexecs--;
	}
	control_maybe_done(ct);
}

/* One event line of atriumd's own to the client. */
static void
control_event(struct control *ct, json_object *ev)
{
	struct buf line;

	buf_init(&line, CHAN_MAX_OUT);
	if (ev && jsonl_format(&line, ev) == 0)
		chan_write(ct->c, line.data, line.len);
	buf_free(&line);
	json_object_put(ev);
}

static void control_drain(struct control *ct);

/* The rooms listing came (monitor_ask_rooms; ev NULL: refused): send
 * it, then handle the client's lines that waited behind it. */
static void
control_rooms_done(void *arg, json_object *ev)
{
	struct control *ct = arg;

	ct->c->rooms_ask = NULL;
	if (ev)
		control_event(ct, json_object_get(ev));
	else
		control_error(ct, "cannot list the rooms now; try again");
	control_drain(ct);
	control_sync(ct);
}

/* atriumd's own requests: rooms and delete.  1 when o was one.  rooms is
 * asked of the monitor without waiting; the client's later lines wait
 * until it is answered, so answers keep the order of the requests. */
static int
control_own(struct control *ct, json_object *o)
{
	const char *type = json_get_string(o, "type");
	json_object *ev;
	char msg[512];
	int r;

	if (type && strcmp(type, "rooms") == 0) {
		if (!(ct->c->rooms_ask = monitor_ask_rooms(ct->c->s,
		    control_rooms_done, ct)))
			control_error(ct, "cannot list the rooms now; try "
			    "again");
		return 1;
	}
	r = room_access_request(ct->c->s, o, &ev, msg, sizeof(msg));

	if (r < 0)
		control_error(ct, msg);
	else if (ev)
		control_event(ct, ev);
	return r != 0;
}

/* An exec line may go on only while the user is under
 * max-commands-per-user (user_cap.h): 1, or 0 with an error (naming the
 * exec's id, so a client waiting for it is answered) sent. */
static int
control_exec_under_cap(struct control *ct, const char *type, json_object *o)
{
	char msg[512];

	if (!type || strcmp(type, "exec") || !user_cap_full(ct->c, msg,
	    sizeof(msg)))
		return 1;
	control_error_for(ct, json_get_string(o, "id"), msg);
	return 0;
}

/* Queue one checked request to the agent: the line as it came, or o
 * re-encoded when room_request_clean changed it; an exec is counted
 * until its exec_done (agentlink.h).  0 or -errno. */
static int
control_forward(struct control *ct, const char *type, json_object *o,
    const char *line, size_t len)
{
	int r = room_request_clean(type, o);

	if (r < 0)
		return r;
	if (type && strcmp(type, "exec") == 0)
		return agentlink_send_exec(&ct->link, o, r ? NULL : line, len);
	return r ? agentlink_send(&ct->link, o) :
	    agentlink_send_line(&ct->link, line, len);
}

/* Check one client line and pass it on. */
static void
control_client_line(struct control *ct, char *line, size_t len)
{
	const char *err, *type;
	json_object *o;

	if (!utf8_valid(line, len)) {
		/* JSON text is UTF-8 (RFC 8259); raw bytes would reach the
		 * room's history and other members' terminals as they are. */
		control_error(ct, "not valid UTF-8: send JSON text as UTF-8 "
		    "(escape other bytes as \\uXXXX)");
		return;
	}
	o = jsonl_parse_object(line, len, &err);
	if (!o) {
		char msg[160];

		snprintf(msg, sizeof(msg), "not a JSON object (%s): send one "
		    "JSON object per line", err ? err : "parse error");
		control_error(ct, msg);
		return;
	}
	type = json_get_string(o, "type");
	if (type && strcmp(type, "hello") == 0)
		control_error(ct, "hello is sent by the server: start with "
		    "your first request (chat, prompt, exec...)");
	else if (control_own(ct, o))
		;
	else if (!control_exec_allowed(ct, type, o) ||
	    !control_exec_under_cap(ct, type, o))
		;
	else if (control_forward(ct, type, o, line, len) < 0)
		control_error(ct, "the room is not taking requests now; "
		    "slow down or reconnect");
	else
		control_owe(ct, type, o);
	json_object_put(o);
}

/* Client bytes: taken only while the agent link has room for them. */
static size_t
control_input(struct chan *c, const char *p, size_t n)
{
	struct control *ct = c->kind;

	if (!ct->started)
		return 0;
	if (ct->ended)
		return n;
	if (ct->c->rooms_ask || control_lines_held(ct) ||
	    agentlink_pending(&ct->link) + n > AGENTLINK_MAX_OUT / 2)
		return 0;
	if (jsonl_feed(&ct->in, p, n) < 0)
		return 0;
	control_drain(ct);
	return n;
}

/* Handle the client's framed lines, up to one whose answer comes later
 * (rooms): the rest wait in ct->in for it (control_rooms_done). */
static void
control_drain(struct control *ct)
{
	char *line;
	size_t len;
	int r;

	while (!ct->c->rooms_ask && !ct->ended &&
	    (r = jsonl_next(&ct->in, &line, &len)) != 0) {
		if (r < 0)
			control_error(ct, "line too long: at most 1 MiB per "
			    "JSON line");
		else
			control_client_line(ct, line, len);
	}
}

/* Client EOF: the session ends once its requests are answered (see the
 * head of this file) and our queue is out. */
static void
control_eof(struct chan *c)
{
	struct control *ct = c->kind;

	ct->eof = 1;
	if (ct->ended) {
		chan_exit(c, 0, NULL);
		return;
	}
	control_sync(ct);
}

/* A line from the agent goes to the client as it came. */
static void
control_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct control *ct = arg;
	const char *type = obj ? json_get_string(obj, "type") : NULL;
	const char *id = obj ? json_get_string(obj, "id") : NULL;

	if (type && id && ct->sync_sent && !ct->synced &&
	    strcmp(type, "synced") == 0 && strcmp(id, ct->sync_id) == 0) {
		ct->synced = 1;
		control_maybe_done(ct);
		return;
	}
	chan_write(ct->c, line, len);
	chan_write(ct->c, "\n", 1);
	if (obj && !ct->denied && type &&
	    strcmp(type, "access_denied") == 0) {
		ct->denied = ct->ended = 1;
		chan_refuse(ct->c, "%s", json_get_string(obj, "message") ?:
		    "atrium: access denied");
		return;
	}
	if (obj)
		control_settle(ct, obj);
	if (ct->c->out.len > CONTROL_MAX_QUEUED)
		agentlink_pause(&ct->link, 1);
}

/* The agent went away: tell the client and end with status 1. */
static void
control_end(void *arg)
{
	struct control *ct = arg;

	if (ct->denied)
		return;
	ct->ended = 1;
	control_error(ct, "the room's agent stopped; reconnect to go on");
	chan_exit(ct->c, 1, NULL);
}

/* Room ready: connect and say hello for the user. */
static void
control_start(struct chan *c)
{
	struct control *ct = c->kind;
	struct monitor_hello h = { .kind = "control", .since = -1 };
	int rc = chan_start_agent(c, &ct->link, &h, control_line,
	    control_end, ct);

	if (rc > 0)
		return;
	if (rc < 0) {
		chan_refuse(c, "atrium: cannot reach room '%s' (%s); try again",
		    c->s->room, strerror(-rc));
		return;
	}
	ct->started = 1;
	control_sync(ct);
}

/* Resume reading the agent once the client caught up. */
static void
control_tick(struct chan *c)
{
	struct control *ct = c->kind;

	if (ct->link.paused && c->out.len < CONTROL_MAX_QUEUED / 2)
		agentlink_pause(&ct->link, 0);
	control_sync(ct);
}

/* Release the control channel (outside callbacks). */
static void
control_free(struct chan *c)
{
	struct control *ct = c->kind;

	agentlink_close(&ct->link);
	jsonl_free(&ct->in);
	free(ct->execs);
	free(ct);
}

static const struct chan_ops control_ops = {
	.name = "control",
	.input = control_input,
	.eof = control_eof,
	.start = control_start,
	.tick = control_tick,
	.free = control_free,
};

/* See control.h. */
int
control_open(struct chan *c)
{
	struct control *ct = calloc(1, sizeof(*ct));

	if (!ct)
		return -ENOMEM;
	ct->c = c;
	ct->our_turn = -1;
	agentlink_init(&ct->link);
	jsonl_init(&ct->in, PROTO_MAX_LINE);
	c->kind = ct;
	c->ops = &control_ops;
	chan_wait_room(c);
	return 0;
}
