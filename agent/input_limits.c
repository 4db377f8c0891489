/*
 * input_limits.c: what a member's input may cost the room (input_limits.h).
 * Called by requests.c before every request that stores what it brings
 * (chat, prompt, exec), and by room_limits.c for /limits.
 *
 * Why: room.db had no bound.  300 chat lines of 64 KiB stored 19.5 MB in
 * half a second, and each shared exec stores up to its captured output;
 * the workspace quota covered neither.  Two limits, checked before
 * anything is stored, so a request is refused whole or kept whole (never
 * dropped once accepted):
 *
 * room.db's cap.  --room-db-quota bytes, or a quarter of --quota when it
 * is not set (none when neither is).  What room.db's pages hold and its
 * WAL file are compared with it (room_db_used_bytes: free pages are
 * reused first, so they do not count; the WAL is on the disk as much as
 * the pages are, and may hold a copy of each of them until a checkpoint,
 * so it is kept near an eighth of the cap: input_limits_open).  When it is reached, new chat lines, prompts and
 * commands are refused with the figures; reading history, deleting
 * files, undo and every other request still work.  One accepted request
 * would pass the cap by what it stores is refused too: each is promised
 * its most (input_db_need) when admitted, and what is promised and not
 * stored yet counts as used (a->db_reserved).  A chat line or a prompt
 * is stored while its request is handled, and its promise ends with it
 * (input_limits_settle); a shared command stores its result when it
 * ends, so it takes its promise along (input_limits_take) and gives it
 * back then (input_limits_release).  So requests admitted together, such
 * as many shared commands started at once, cannot pass the cap between
 * them, as they could when it was only checked.
 *
 * The rate.  Each user has a bucket of input-rate requests (30 unless the
 * operator says otherwise; 0: no limit) that refills that many per
 * INPUT_WINDOW_MS, across all of their connections; a request
 * with none left is refused with when to try again.  The table holds the
 * INPUT_USERS users seen last (one agent serves one room, so it is small);
 * a user who drops out of it comes back with a full bucket, which costs
 * at most one burst.
 */
#include "input_limits.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "conn.h"
#include "jsonl.h"
#include "protocol.h"
#include "room_events.h"
#include "room_db.h"

#define INPUT_WINDOW_MS 15000
#define INPUT_USERS 64
/* The least room.db cap derived from --quota: a room that a tiny quota
 * leaves room for must still hold its own history. */
#define INPUT_DB_CAP_MIN (16LL << 20)
/* What a stored chat line or prompt holds besides its text. */
#define INPUT_EVENT_SLACK 4096

struct input_rate {
	char user[64];
	long long tokens_ms;   /* the bucket, in ms of refill (BURST*REFILL) */
	long long last_ms;     /* when it was last filled; 0: slot free */
};

/* The room's buckets (a->input_rates), made on first use. */
struct input_rates {
	struct input_rate r[INPUT_USERS];
};

/* Milliseconds of the monotonic clock. */
static long long
input_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* user's bucket, a free or the least recently used slot taken for a new
 * one (full). */
static struct input_rate *
input_rate_of(struct input_rates *rs, const char *user, long long now)
{
	struct input_rate *old = &rs->r[0];

	for (int i = 0; i < INPUT_USERS; i++) {
		struct input_rate *r = &rs->r[i];

		if (r->last_ms && strcmp(r->user, user) == 0)
			return r;
		if (r->last_ms < old->last_ms)
			old = r;
	}
	snprintf(old->user, sizeof(old->user), "%s", user);
	old->tokens_ms = INPUT_WINDOW_MS;
	old->last_ms = now;
	return old;
}

/* 0 when user has a request left, else the ms until one comes (a
 * request's worth when the buckets cannot be had: refused, fail closed). */
static long long
input_rate_take(struct agent *a, const char *user)
{
	long long now = input_now_ms(), cost;
	struct input_rate *r;

	if (a->cfg.input_rate <= 0)
		return 0;
	cost = INPUT_WINDOW_MS / a->cfg.input_rate;
	if (!a->input_rates && !(a->input_rates = calloc(1,
	    sizeof(*a->input_rates))))
		return cost;
	r = input_rate_of(a->input_rates, user, now);
	r->tokens_ms += now - r->last_ms;
	if (r->tokens_ms > INPUT_WINDOW_MS)
		r->tokens_ms = INPUT_WINDOW_MS;
	r->last_ms = now;
	if (r->tokens_ms < cost)
		return cost - r->tokens_ms;
	r->tokens_ms -= cost;
	return 0;
}

/* The most req (of type) stores in room.db: a shared command's result
 * is one protocol line (exec.c halves its captures to fit); a chat line
 * or prompt its text, whose escaping at most doubles it (controls are
 * cleaned out), and the event around it. */
static long long
input_db_need(const char *type, json_object *req)
{
	const char *text = json_get_string(req, "text");

	if (strcmp(type, "exec") == 0)
		return PROTO_MAX_LINE;
	return 2 * (long long)(text ? strlen(text) : 0) + INPUT_EVENT_SLACK;
}

long long
input_limits_take(struct agent *a)
{
	long long n = a->db_pending;

	a->db_pending = 0;
	return n;
}

void
input_limits_settle(struct agent *a)
{
	input_limits_release(a, input_limits_take(a));
}

void
input_limits_release(struct agent *a, long long n)
{
	a->db_reserved -= n;
	if (a->db_reserved < 0)
		a->db_reserved = 0;
}

long long
input_limits_db_cap(const struct agent *a)
{
	long long derived = a->cfg.quota / 4;

	if (a->cfg.room_db_quota)
		return a->cfg.room_db_quota;
	if (!a->cfg.quota)
		return 0;
	return derived > INPUT_DB_CAP_MIN ? derived : INPUT_DB_CAP_MIN;
}

/* Whether req (of type) would grow room.db by more than a row: a chat
 * line, a prompt (and the turn it starts) or a shared command, whose
 * output is stored.  A command of one's own stores only its audit row, so
 * a full room.db still runs it: `rm` must work in a full room. */
static int
input_stores_much(const char *type, json_object *req)
{
	if (strcmp(type, "exec") == 0)
		return json_get_bool(req, "share", 0);
	return 1;
}

long long
input_limits_db_used(struct agent *a)
{
	return room_db_used_bytes(a->db) + room_db_wal_bytes(a->db);
}

/* Refuse req (of type) from c: an error naming its id, and saying what
 * it refused, so that atriumd strikes what it owes the client for it: a
 * prompt, or a chat line that asks the agent (the same rule as
 * requests.c's), is owed a turn that will now never come. */
static int
input_refuse(struct conn *c, const char *type, json_object *req,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int
input_refuse(struct conn *c, const char *type, json_object *req,
    const char *fmt, ...)
{
	const char *text = json_get_string(req, "text");
	int turn = strcmp(type, "prompt") == 0 || (strcmp(type, "chat") == 0 &&
	    text && strstr(text, "@agent"));
	json_object *ev;
	va_list ap;

	va_start(ap, fmt);
	ev = room_error_vnew(json_get_string(req, "id"), fmt, ap);
	va_end(ap);
	json_object_object_add(ev, "refused", json_object_new_string(type));
	if (turn)
		json_object_object_add(ev, "no_turn", json_object_new_boolean(1));
	room_send(c, ev);
	return -1;
}

int
input_limits_admit(struct agent *a, struct conn *c, const char *type,
    json_object *req)
{
	long long cap = input_limits_db_cap(a), used, wait, need;

	/* `ssh ROOM@host CMD` (atriumd's exec connections: git, rsync and
	 * scp open many at once) is bounded by max-commands-per-user, as an
	 * SSH host bounds sessions; the rate is for what people type and
	 * programs send over the room protocol. */
	if (c->kind != CONN_EXEC && (wait = input_rate_take(a, c->user)) > 0)
		return input_refuse(c, type, req, "%s refused: you sent more "
		    "than %d requests in %d s; try again in %.1f s", type,
		    a->cfg.input_rate, INPUT_WINDOW_MS / 1000, wait / 1000.0);
	if (!cap || !input_stores_much(type, req))
		return 0;
	need = input_db_need(type, req);
	used = input_limits_db_used(a) + a->db_reserved;
	if (used + need > cap)
		return input_refuse(c, type, req, "%s refused: the room's "
		    "history (room.db) is full: %.1f MiB of its %.1f MiB used "
		    "or promised to requests under way, and this one may store "
		    "%.1f MiB; reading, deleting and undo still work, and the "
		    "server's operator can raise room-db-quota", type,
		    used / 1048576.0, cap / 1048576.0, need / 1048576.0);
	a->db_reserved += need;
	a->db_pending = need;
	return 0;
}

void
input_limits_open(struct agent *a)
{
	room_db_wal_bound(a->db, input_limits_db_cap(a) / 8);
}

void
input_limits_free(struct agent *a)
{
	free(a->input_rates);
	a->input_rates = NULL;
}
