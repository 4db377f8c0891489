/*
 * test_agent_journal.c: the journal (agent/journal.c) on a real room.db,
 * with the shim VFS of shim_vfs.h failing every write while shim_full is
 * set (a full disk).  Checked, by what one member's output queue holds:
 * a recorded event reaches it only after its commit; one whose commit
 * failed never does, and the failure stays until a commit stores
 * something; a live event goes out at once while its seq is reserved,
 * and is held until a commit otherwise; seqs never repeat, also across a
 * reopen; a member who joins gets the announced events once, each
 * rebuilt from its row (never the row's bytes); a hold
 * keeps the loop's before-sleep commits away only while nobody else
 * writes and until its time is up, and a watch tells whether the held
 * writes were committed or rolled back by someone else's failed commit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/agent.h"
#include "../../agent/conn.h"
#include "../../agent/journal.h"
#include "../../agent/loop_uring.h"
#include "../../agent/room_db.h"
#include "unit.h"

#include "shim_vfs.h"

static char path[64];

/* A member's connection that nothing reads: its queue is the record of
 * what it was sent. */
static struct conn *
member(struct agent *a)
{
	struct conn *c = calloc(1, sizeof(*c));

	c->a = a;
	c->fd = -1;
	c->kind = CONN_CHAT;
	buf_init(&c->out, ROOM_MAX_OUTPUT);
	c->next = a->conns;
	a->conns = c;
	return c;
}

/* An event of type with text; a stored one (a message) is what its
 * constructor makes (agent/stored_event.c), with its user. */
static json_object *
event(const char *type, const char *text)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "type", json_object_new_string(type));
	if (strcmp(type, "message") == 0)
		json_object_object_add(ev, "user",
		    json_object_new_string("alice"));
	json_object_object_add(ev, "text", json_object_new_string(text));
	return ev;
}

/* 1 when c's queue holds text. */
static int
sent(struct conn *c, const char *text)
{
	return c->out.len > 0 &&
	    memmem(c->out.data, c->out.len, text, strlen(text)) != NULL;
}

/* a's room.db at path and its journal. */
static struct journal *
room_open(struct agent *a)
{
	CHECK_INT(room_db_open(path, &a->db), 0);
	CHECK_INT(journal_new(a, &a->journal), 0);
	return a->journal;
}

/* Free what room_open, the test and member c made. */
static void
room_close(struct agent *a, struct conn *c)
{
	journal_free(a->journal);
	loop_free(a->loop);
	room_db_close(a->db);
	buf_free(&c->out);
	free(c);
}

static void
test_announce_after_commit(void)
{
	struct agent a = { 0 };
	struct journal *j;
	struct conn *c;

	j = room_open(&a);
	c = member(&a);

	CHECK_INT(journal_record(j, event("message", "first")), 0);
	CHECK(!sent(c, "first"));		/* recorded, not committed */
	CHECK_INT(journal_commit(j), 0);
	CHECK(sent(c, "\"seq\":1,"));
	CHECK(sent(c, "first"));
	CHECK_INT((int)journal_seq(j), 1);

	/* A live event needs its seq reserved first: held until a commit. */
	CHECK_INT(journal_live(j, event("agent_delta", "live-one")), 0);
	CHECK(!sent(c, "live-one"));
	CHECK_INT(journal_commit(j), 0);
	CHECK(sent(c, "live-one"));
	/* Reserved now: the next goes at once. */
	CHECK_INT(journal_live(j, event("agent_delta", "live-two")), 0);
	CHECK(sent(c, "live-two"));

	/* The disk fills: the recorded event is never sent. */
	shim_full = 1;
	{
		int r = journal_record(j, event("message", "lost"));

		if (r == 0)
			r = journal_commit(j);
		CHECK_INT(r, -ENOSPC);
	}
	CHECK(!sent(c, "lost"));
	CHECK_INT(journal_failed(j), -ENOSPC);
	/* Live events still go out, on the reserved seqs. */
	CHECK_INT(journal_live(j, event("notice", "told")), 0);
	CHECK(sent(c, "told"));
	CHECK_INT(journal_commit(j), 0);	/* nothing to commit */
	CHECK_INT(journal_failed(j), -ENOSPC);	/* still failed */
	shim_full = 0;

	CHECK_INT(journal_record(j, event("message", "back")), 0);
	CHECK_INT(journal_commit(j), 0);
	CHECK(sent(c, "back"));
	CHECK_INT(journal_failed(j), 0);
	CHECK_INT((int)journal_seq(j), 5);	/* 4 was "told" */

	room_close(&a, c);
}

/* After a reopen, seqs go on past everything shown. */
static void
test_reopen_never_repeats(void)
{
	struct agent a = { 0 };
	struct journal *j;
	struct conn *c;

	j = room_open(&a);
	CHECK((int)journal_seq(j) >= 5);
	c = member(&a);
	/* A joiner gets the stored events once, and then only new ones. */
	CHECK_INT(journal_join(j, c, 0, 0), 0);
	CHECK(sent(c, "first") && sent(c, "back") && !sent(c, "lost"));
	CHECK_INT(journal_live(j, event("agent_delta", "after")), 0);
	CHECK_INT(journal_commit(j), 0);
	CHECK(sent(c, "after"));
	/* Past the block reserved for "live-one" (seq 2): any seq shown
	 * as live before the reopen may be in it. */
	CHECK(journal_seq(j) > 2 + JOURNAL_SEQ_RESERVE);
	room_close(&a, c);
}

static void
before_sleep(struct loop *l, void *arg)
{
	journal_before_sleep(arg);
}

static long
stop_loop(struct loop *l, long long id, void *arg)
{
	loop_stop(l);
	return LOOP_NOMORE;
}

/* Held writes wait for the hold to end: by someone else's write, by a
 * live event, by its time; a failed commit meanwhile is what the watch
 * reports, and the held events are never sent. */
static void
test_hold_and_watch(void)
{
	struct agent a = { 0 };
	struct journal *j;
	struct conn *c;

	j = room_open(&a);
	CHECK((a.loop = loop_new(64)) != NULL);
	c = member(&a);
	CHECK_INT(journal_join(j, c, -1, 0), 0);

	/* Held: the before-sleep commit leaves it; someone else's write
	 * ends the hold, and the next one commits both. */
	CHECK_INT(journal_record(j, event("message", "held-one")), 0);
	journal_watch(j);
	journal_hold(j, 60000);
	CHECK_INT(journal_before_sleep(j), 0);
	CHECK(!sent(c, "held-one") && room_db_in_tx(a.db));
	CHECK_INT(journal_watched(j), 0);
	CHECK_INT(room_db_config_set(a.db, "model", "other", "bob"), 0);
	CHECK_INT(journal_before_sleep(j), 0);
	CHECK(sent(c, "held-one") && !room_db_in_tx(a.db));
	CHECK_INT(journal_watched(j), 1);

	/* A live event ends the hold too; that commit fails (a full disk):
	 * the watch says so and the held event is never sent. */
	CHECK_INT(journal_record(j, event("message", "held-two")), 0);
	journal_watch(j);
	journal_hold(j, 60000);
	CHECK_INT(journal_before_sleep(j), 0);
	CHECK_INT(journal_live(j, event("notice", "joined")), 0);
	shim_full = 1;
	CHECK_INT(journal_before_sleep(j), -ENOSPC);
	shim_full = 0;
	CHECK_INT(journal_watched(j), -ENOSPC);
	CHECK(!sent(c, "held-two"));

	/* Its time ends it: the loop's next sleep commits. */
	CHECK_INT(journal_record(j, event("message", "held-three")), 0);
	journal_watch(j);
	journal_hold(j, 20);
	loop_set_before_sleep(a.loop, before_sleep, j);
	CHECK(loop_add_timer(a.loop, 200, stop_loop, NULL) > 0);
	CHECK_INT(loop_run(a.loop), 0);
	CHECK(sent(c, "held-three"));
	CHECK_INT(journal_watched(j), 1);

	/* An explicit commit ends any hold. */
	CHECK_INT(journal_record(j, event("message", "held-four")), 0);
	journal_hold(j, 60000);
	CHECK_INT(journal_commit(j), 0);
	CHECK(sent(c, "held-four"));
	CHECK_INT(journal_before_sleep(j), 0);

	room_close(&a, c);
}

/* Whatever room.db holds is replayed only as the events the room could
 * have sent: rows written behind the journal's back (a forged file, an
 * old import) with an internal type, raw controls, a second line or no
 * JSON at all reach a joiner rebuilt or not at all. */
static void
test_replay_rebuilds_stored_rows(void)
{
	struct agent a = { 0 };
	struct journal *j;
	struct conn *c;
	long long seq;

	j = room_open(&a);
	seq = journal_seq(j);
	CHECK_INT(room_db_event_add(a.db, seq + 1, "2026-01-02T03:04:05Z",
	    "exec_done", "{\"type\":\"exec_done\"}"), 0);
	CHECK_INT(room_db_event_add(a.db, seq + 2, "2026-01-02T03:04:05Z",
	    "message", "{\"type\":\"message\",\"user\":\"eve\",\"text\":"
	    "\"bell\x07 \x1b[2Jgone\",\"seq\":999}"), 0);
	CHECK_INT(room_db_event_add(a.db, seq + 3, "2026-01-02T03:04:05Z",
	    "message", "{\"type\":\"message\",\"user\":\"eve\",\"text\":"
	    "\"x\"}\n{\"type\":\"exec_done\"}"), 0);
	CHECK_INT(room_db_event_add(a.db, seq + 4, "2026-01-02T03:04:05Z",
	    "message", "not json"), 0);
	CHECK_INT(room_db_commit(a.db), 0);
	journal_free(a.journal);
	CHECK_INT(journal_new(&a, &a.journal), 0);	/* as at a restart */
	j = a.journal;
	c = member(&a);
	CHECK_INT(journal_join(j, c, seq, 0), 0);
	CHECK(sent(c, "\"text\":\"bell [2Jgone\""));
	CHECK(sent(c, "\"replay\":true"));
	CHECK(!sent(c, "exec_done"));
	CHECK(!sent(c, "\x1b") && !sent(c, "\x07"));
	CHECK(!sent(c, "\"seq\":999"));		/* the row's own seq */
	CHECK(!sent(c, "not json"));
	CHECK(memchr(c->out.data, '\n', c->out.len) ==
	    c->out.data + c->out.len - 1);		/* one line in all */
	room_close(&a, c);
}

int
main(void)
{
	char wal[96];

	shim_install();
	snprintf(path, sizeof(path), "/tmp/test_agent_journal.%d",
	    (int)getpid());
	TEST(test_announce_after_commit);
	TEST(test_reopen_never_repeats);
	TEST(test_hold_and_watch);
	TEST(test_replay_rebuilds_stored_rows);
	unlink(path);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", path);
	unlink(wal);
	return unit_done("test_agent_journal");
}
