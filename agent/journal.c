/*
 * journal.c: record, commit, then announce (journal.h).  The room's one
 * path from "this happened" to a client's socket.
 *
 * Sequence numbers.  j->seq is the last seq handed out.  A stored event's
 * seq is committed with its row (events.seq), in the transaction that
 * stores it; a live event (not stored) takes a seq from a block reserved in
 * room.db's meta last_seq (JOURNAL_SEQ_RESERVE ahead), so that it goes out
 * without a commit of its own and a crash never hands out a seq twice: on
 * start the next seq follows the highest stored or reserved one.  j->durable
 * is that committed high-water mark; a seq above it is announced only after
 * the commit that makes it durable.
 *
 * Announcing.  Stamped events wait in j->pending, in seq order, until
 * they may go: a stored one once its commit succeeded, a live one once its
 * seq is durable and everything stamped before it went.  Going means being
 * queued to each member whose watermark (conn.seq_out) is below it, which
 * then moves up: every member gets every event once, in seq order.  A
 * member whose hello said "feed" gets it through the feed connection of
 * atriumd's network process instead (conn.h CONN_FEED), written once for
 * all such members of the room.  The
 * connection layer writes its queue whenever the socket takes it: only
 * announced events are ever in it.
 *
 * Failure.  When a commit fails, SQLite rolled the transaction back: its
 * stored events are dropped unannounced, the live ones whose seq is not
 * durable too, and j->seq falls back to the last announced seq (numbers
 * nobody saw may be used again; numbers somebody saw never are).  j->err
 * keeps the failure until a commit with writes succeeds: the turn reads
 * it (journal_failed) and stays stopped, saying so to the room.
 *
 * Holding.  The loop commits before each sleep (journal_before_sleep), so
 * that nothing recorded waits for a commit while the agent waits.  A hold
 * (journal_hold) lets those commits pass for a while, so that a step whose
 * calls change nothing commits once (turn.c); it stands only while nothing
 * else is written or waits to be announced, so it delays no one else's
 * record, and a timer on the loop ends it.  A hold never outlives a commit
 * or an abort.  Writes held across sleeps can be committed, or rolled
 * back by a failed commit, by someone else meanwhile: j->watched tells
 * their writer which (journal_watch).
 *
 * Replies to one connection (errors, answers to who, usage, sync) take no
 * seq: they carry the last announced one, like the welcome, so a client
 * that reconnects with since=seq sees no gap.
 */
#include "journal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "conn.h"
#include "jsonl.h"
#include "log.h"
#include "loop_uring.h"
#include "room_db.h"
#include "stored_event.h"
#include "util.h"

#define JOURNAL_LINE_KEEP	4096	/* of its line buffer, kept between
					 * events */

/* A stamped event waiting for its commit. */
struct journal_pending {
	struct journal_pending *next;
	long long seq;
	int stored;			/* in room.db's open transaction */
	json_object *ev;		/* owned */
};

struct journal {
	struct agent *a;
	long long seq;			/* last seq handed out */
	long long durable;		/* highest seq committed (stored or
					 * reserved) */
	long long reserving;		/* reservation written in the open
					 * transaction, not yet committed */
	long long announced;		/* last seq queued to the members */
	struct journal_pending *head, *tail;	/* oldest first */
	size_t npending;
	int err;			/* last failed commit's -errno, 0 */
	int watched;			/* journal_watched */
	struct buf line;		/* the event being announced, as the
					 * line every member is sent */
	long long hold_timer;		/* a hold stands: its end, else 0 */
	unsigned long hold_writes;	/* room_db_writes when it began */
};

int
journal_new(struct agent *a, struct journal **out)
{
	struct journal *j = calloc(1, sizeof(*j));

	*out = NULL;
	if (!j)
		return -ENOMEM;
	j->a = a;
	buf_init(&j->line, ROOM_MAX_OUTPUT);
	j->seq = j->durable = j->announced = room_db_last_seq(a->db);
	*out = j;
	return 0;
}

/* Drop the first pending entry. */
static void
journal_pop(struct journal *j)
{
	struct journal_pending *p = j->head;

	j->head = p->next;
	if (!j->head)
		j->tail = NULL;
	j->npending--;
	json_object_put(p->ev);
	free(p);
}

/* End the hold, if one stands. */
static void
journal_unhold(struct journal *j)
{
	if (!j->hold_timer)
		return;
	loop_del_timer(j->a->loop, j->hold_timer);
	j->hold_timer = 0;
}

void
journal_free(struct journal *j)
{
	if (!j)
		return;
	journal_unhold(j);
	while (j->head)
		journal_pop(j);
	buf_free(&j->line);
	free(j);
}

/* Give ev the next seq and the time. */
static long long
journal_stamp(struct journal *j, json_object *ev)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	json_object_object_add(ev, "seq", json_object_new_int64(++j->seq));
	json_object_object_add(ev, "time", json_object_new_string(now));
	return j->seq;
}

/* Queue ev to every connection that gets the room's events below it, and
 * move the watermarks (a member fed through a feed moves too: it has the
 * event through the feed).  The line is made once for all of them:
 * serialising a chat line once per member was most of the agent's own
 * time in a room of a thousand. */
static void
journal_announce(struct journal *j, long long seq, json_object *ev)
{
	int made = 0;	/* 1 made, -1 too long for a client's queue */

	for (struct conn *c = j->a->conns; c; c = c->next) {
		if (!conn_gets_events(c) || c->seq_out >= seq) {
			if (conn_is_member(c) && c->seq_out < seq)
				c->seq_out = seq;
			continue;
		}
		if (made == 0)
			made = conn_event_line(ev, &j->line) < 0 ? -1 : 1;
		if (made < 0)	/* as a queue that cannot take it */
			conn_close(c, "fell too far behind (output queue "
			    "full)");
		else
			conn_queue(c, j->line.data, j->line.len);
		c->seq_out = seq;
	}
	buf_shrink(&j->line, JOURNAL_LINE_KEEP);
	j->announced = seq;
}

/* Announce the pending events that may go now (journal.c's head); with
 * committed set, every stored one may. */
static void
journal_release(struct journal *j, int committed)
{
	while (j->head && (j->head->stored ? committed :
	    j->head->seq <= j->durable)) {
		journal_announce(j, j->head->seq, j->head->ev);
		journal_pop(j);
	}
}

/* Append ev (stamped seq) to the pending list.  Takes ev. */
static int
journal_wait(struct journal *j, long long seq, int stored, json_object *ev)
{
	struct journal_pending *p;

	if (j->npending >= JOURNAL_MAX_PENDING ||
	    !(p = calloc(1, sizeof(*p)))) {
		json_object_put(ev);
		return -ENOMEM;
	}
	p->seq = seq;
	p->stored = stored;
	p->ev = ev;
	if (j->tail)
		j->tail->next = p;
	else
		j->head = p;
	j->tail = p;
	j->npending++;
	return 0;
}

/* ev (stamped) as its type's constructor makes it (stored_event.h): what
 * room.db keeps is what a replay of it will send, so a live event and its
 * replay never differ.  Takes ev; the built event, or NULL (logged). */
static json_object *
journal_build(json_object *ev)
{
	char note[256];
	json_object *built;
	int r = stored_event_build(ev, &built, note, sizeof(note));

	if (r < 0)
		log_error("%s event not recorded, not sent: %s (a stored "
		    "event's fields must be its constructor's, "
		    "agent/stored_event.c)", json_get_string(ev, "type"),
		    r == -EINVAL ? note : strerror(-r));
	else if (note[0])
		log_warn("%s event: %s (not fields of its constructor, "
		    "agent/stored_event.c)", json_get_string(ev, "type"), note);
	json_object_put(ev);
	return built;
}

int
journal_record(struct journal *j, json_object *ev)
{
	long long seq;
	const char *s;
	int r;

	if (!ev)
		return -ENOMEM;
	seq = journal_stamp(j, ev);
	if (!(ev = journal_build(ev))) {
		j->seq--;
		return -EINVAL;
	}
	s = json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	r = room_db_event_add(j->a->db, seq, json_get_string(ev, "time"),
	    json_get_string(ev, "type"), s);
	if (r < 0) {
		log_error("%s event %lld not recorded, not sent: %s",
		    json_get_string(ev, "type"), seq, room_db_strerror(r));
		j->seq--;
		json_object_put(ev);
		return r;
	}
	return journal_wait(j, seq, 1, ev);
}

/* Reserve seqs ahead of seq in the open transaction, unless reserved. */
static void
journal_reserve(struct journal *j, long long seq)
{
	if (seq <= j->durable || seq <= j->reserving)
		return;
	if (room_db_seq_mark(j->a->db, seq + JOURNAL_SEQ_RESERVE) == 0)
		j->reserving = seq + JOURNAL_SEQ_RESERVE;
}

int
journal_live(struct journal *j, json_object *ev)
{
	long long seq;

	if (!ev)
		return -ENOMEM;
	seq = journal_stamp(j, ev);
	if (!j->head && seq <= j->durable) {
		journal_announce(j, seq, ev);
		json_object_put(ev);
		return 0;
	}
	journal_reserve(j, seq);
	journal_unhold(j);	/* it goes out with the next commit */
	return journal_wait(j, seq, 0, ev);
}

/* The commit failed: drop what it would have made durable. */
static void
journal_drop(struct journal *j, int err)
{
	long long dropped = 0;

	if (j->watched == 0)
		j->watched = err;
	j->reserving = 0;
	journal_release(j, 0);
	for (struct journal_pending *p = j->head; p; p = p->next)
		dropped++;
	while (j->head)
		journal_pop(j);
	if (dropped)
		log_error("%lld event(s) not recorded, not sent: %s",
		    dropped, room_db_strerror(err));
	j->seq = j->announced;
	j->err = err;
}

int
journal_commit(struct journal *j)
{
	int wrote = room_db_in_tx(j->a->db), r;

	journal_unhold(j);
	r = room_db_commit(j->a->db);
	if (r < 0) {
		journal_drop(j, r);
		return r;
	}
	for (struct journal_pending *p = j->head; p; p = p->next)
		if (p->stored && p->seq > j->durable)
			j->durable = p->seq;
	if (j->reserving > j->durable)
		j->durable = j->reserving;
	j->reserving = 0;
	if (wrote) {
		j->err = 0;
		if (j->watched == 0)
			j->watched = 1;
	}
	journal_release(j, 1);
	return 0;
}

void
journal_abort(struct journal *j, int err)
{
	journal_unhold(j);
	room_db_rollback(j->a->db);
	journal_drop(j, err);
}

int
journal_failed(const struct journal *j)
{
	return j->err;
}

void
journal_watch(struct journal *j)
{
	j->watched = 0;
}

int
journal_watched(const struct journal *j)
{
	return j->watched;
}

static long
journal_hold_over(struct loop *l, long long id, void *arg)
{
	struct journal *j = arg;

	j->hold_timer = 0;	/* the loop's next sleep commits */
	return LOOP_NOMORE;
}

void
journal_hold(struct journal *j, long ms)
{
	long long id;

	journal_unhold(j);
	for (struct journal_pending *p = j->head; p; p = p->next)
		if (!p->stored)
			return;
	if ((id = loop_add_timer(j->a->loop, ms, journal_hold_over, j)) < 0)
		return;
	j->hold_timer = id;
	j->hold_writes = room_db_writes(j->a->db);
}

int
journal_before_sleep(struct journal *j)
{
	if (j->hold_timer && room_db_writes(j->a->db) == j->hold_writes)
		return 0;
	return journal_commit(j);
}

long long
journal_seq(const struct journal *j)
{
	return j->announced;
}

void
journal_stamp_reply(const struct journal *j, json_object *ev)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	json_object_object_add(ev, "seq", json_object_new_int64(j->announced));
	json_object_object_add(ev, "time", json_object_new_string(now));
}

/* Queue one stored event to c, marked as a replay: rebuilt through its
 * type's constructor from the row (stored_event.h), never the row's bytes
 * as they are, so that whatever room.db holds (an imported file, a
 * damaged row) reaches the client only as an event the room could have
 * sent; a row that cannot be one is left out. */
static int
journal_replay_one(long long seq, const char *time, const char *json,
    void *arg)
{
	struct conn *c = arg;
	char note[256];
	json_object *ev;
	int r = stored_event_from_row(seq, time, json, &ev, note,
	    sizeof(note));

	if (r < 0) {
		log_warn("stored event %lld not replayed: %s", seq,
		    r == -EINVAL ? note : strerror(-r));
		return 0;
	}
	json_object_object_add(ev, "replay", json_object_new_boolean(1));
	conn_queue_event(c, ev);
	json_object_put(ev);
	return c->closing != NULL;
}

int
journal_replay(struct journal *j, struct conn *c, struct room_db_filter *f)
{
	/* Only what was announced: the open transaction's rows are visible
	 * to this connection to room.db, and may yet be rolled back. */
	if (f->before <= 0 || f->before > j->announced + 1)
		f->before = j->announced + 1;
	return room_db_events_find(j->a->db, f, journal_replay_one, c);
}

int
journal_join(struct journal *j, struct conn *c, long long since, long limit)
{
	struct room_db_filter f = { .since = since < 0 ? 0 : since,
	    .limit = limit };
	int r = 0;

	if (since >= 0 || limit > 0)
		r = journal_replay(j, c, &f);
	c->seq_out = j->announced;
	return r;
}
