/*
 * test_agent_room_db.c: room.db on a temp file (agent/room_db.c): creation
 * and forward migration, refusal of a newer schema, read transactions,
 * the checkpoint tables a resumed turn relies on, and whose work an undo
 * takes back (audit rows, reported changes, the turns people prompted).
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/room_db.h"
#include "../../agent/usage.h"
#include "util.h"
#include "unit.h"

static char path[64];

static int
count_json(long long seq, const char *time, const char *json, void *arg)
{
	int *n = arg;

	(void)seq; (void)time; (void)json;
	(*n)++;
	return 0;
}

static void
test_create_and_reopen(void)
{
	struct room_db *db;

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_config_set(db, "model", "m1", "alice"), 0);
	room_db_close(db);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	{
		char v[32];

		CHECK_INT(room_db_config_get(db, "model", v, sizeof(v)), 1);
		CHECK_STR(v, "m1");
		CHECK_INT(room_db_config_get(db, "nope", v, sizeof(v)), 0);
	}
	room_db_close(db);
}

/* A room.db of schema 2 with people in it: the migration to 3 makes the
 * first person seen the owner and those who joined members, open. */
static void
test_access_migration(void)
{
	char p2[80];
	sqlite3 *s;
	struct room_db *db;
	struct access_list l;

	snprintf(p2, sizeof(p2), "%s-v2", path);
	CHECK_INT(room_db_open(p2, &db), 0);
	room_db_close(db);
	CHECK_INT(sqlite3_open(p2, &s), SQLITE_OK);
	CHECK_INT(sqlite3_exec(s, "DROP TABLE access; DROP TABLE usage_users;"
	    "DROP TABLE turn_undo; ALTER TABLE audit DROP COLUMN wrote;"
	    "PRAGMA user_version = 2;"
	    "INSERT INTO members VALUES ('bob', '2026-01-02', '2026-01-03');"
	    "INSERT INTO members VALUES ('carol', '2026-01-04', '2026-01-04');"
	    "INSERT INTO audit (user, kind, command, started) VALUES"
	    " ('alice', 'exec', 'make', '2026-01-01');"
	    "INSERT INTO audit (user, kind, command, started) VALUES"
	    " ('agent', 'tool', 'ls', '2025-01-01')", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(s);
	CHECK_INT(room_db_open(p2, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "alice");
	CHECK_INT(l.visibility, ACCESS_OPEN);
	CHECK_INT(l.nmembers, 2);
	CHECK_INT(access_is_member(&l, "bob"), 1);
	CHECK_INT(access_is_member(&l, "carol"), 1);
	room_db_close(db);
	unlink(p2);
}

/* Sums the usage rows gave, per model or per user. */
struct usage_seen {
	char rows[4][96];
	int n;
};

static int
usage_seen_row(const char *user, const char *model, long long in,
    long long out, long long requests, void *arg)
{
	struct usage_seen *u = arg;

	if (u->n < 4)
		snprintf(u->rows[u->n++], sizeof(u->rows[0]), "%s/%s %lld %lld "
		    "%lld", user, model, in, out, requests);
	return 0;
}

/* A room.db of schema 3 keeps its usage; from 4 on each request is
 * counted per model and per person, summed over a day or a month. */
static void
test_usage_rows(void)
{
	char p2[80], day[40];
	sqlite3 *s;
	struct room_db *db;
	struct usage_seen u = { .n = 0 };

	snprintf(p2, sizeof(p2), "%s-usage", path);
	CHECK_INT(room_db_open(p2, &db), 0);
	room_db_close(db);
	CHECK_INT(sqlite3_open(p2, &s), SQLITE_OK);
	CHECK_INT(sqlite3_exec(s, "DROP TABLE usage_users;"
	    "DROP TABLE turn_undo; ALTER TABLE audit DROP COLUMN wrote;"
	    "PRAGMA user_version = 3;"
	    "INSERT INTO usage VALUES ('2026-01-05', 'm1', 10, 1, 1)", NULL,
	    NULL, NULL), SQLITE_OK);
	sqlite3_close(s);
	CHECK_INT(room_db_open(p2, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_usage_add(db, "alice", "m1", 100, 20), 0);
	CHECK_INT(room_db_usage_add(db, "alice", "m1", 1, 2), 0);
	CHECK_INT(room_db_usage_add(db, "bob", "m2", 5, 6), 0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(room_db_usage_rows(db, "2026-01", 0, usage_seen_row, &u), 0);
	CHECK_INT(u.n, 1);
	CHECK_STR(u.rows[0], "m1/ 10 1 1");
	time_now_iso(day, sizeof(day));
	day[10] = '\0';
	u.n = 0;
	CHECK_INT(room_db_usage_rows(db, day, 1, usage_seen_row, &u), 0);
	CHECK_INT(u.n, 2);
	CHECK_STR(u.rows[0], "alice/m1 101 22 2");
	CHECK_STR(u.rows[1], "bob/m2 5 6 1");
	room_db_close(db);
	unlink(p2);
}

/* Owner, members and visibility as the agent changes them. */
static void
test_access_rows(void)
{
	char p2[80];
	struct room_db *db;
	struct access_list l;

	snprintf(p2, sizeof(p2), "%s-acc", path);
	CHECK_INT(room_db_open(p2, &db), 0);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "");
	CHECK_INT(room_db_access_set(db, "alice", "owner", NULL), 0);
	CHECK_INT(room_db_access_set(db, "bob", "member", "alice"), 0);
	CHECK_INT(room_db_commit(db), 0);
	/* A second owner is refused by the schema. */
	CHECK_INT(room_db_access_set(db, "eve", "owner", NULL), -EIO);
	room_db_commit(db);
	CHECK_INT(room_db_config_set(db, "visibility", "private", "alice"), 0);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "alice");
	CHECK_INT(l.visibility, ACCESS_PRIVATE);
	CHECK_INT(l.nmembers, 1);
	CHECK_STR(l.members[0], "bob");
	/* The owner is never removed as a member. */
	CHECK_INT(room_db_access_remove(db, "alice"), 0);
	CHECK_INT(room_db_access_remove(db, "bob"), 0);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "alice");
	CHECK_INT(l.nmembers, 0);
	room_db_close(db);
	unlink(p2);
}

static void
test_newer_schema_refused(void)
{
	char p2[80];
	sqlite3 *s;
	struct room_db *db = NULL;

	snprintf(p2, sizeof(p2), "%s-new", path);
	CHECK_INT(sqlite3_open(p2, &s), SQLITE_OK);
	CHECK_INT(sqlite3_exec(s, "PRAGMA user_version = 99", NULL, NULL,
	    NULL), SQLITE_OK);
	sqlite3_close(s);
	CHECK_INT(room_db_open(p2, &db), -EPROTO);
	CHECK(db == NULL);
	unlink(p2);
}

static void
test_events_and_seq(void)
{
	struct room_db *db;
	int n = 0;

	CHECK_INT(room_db_open(path, &db), 0);
	for (int i = 1; i <= 5; i++)
		CHECK_INT(room_db_event_add(db, i * 2, "t", "message",
		    "{\"type\":\"message\"}"), 0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(room_db_last_seq(db), 10);
	CHECK_INT(room_db_seq_mark(db, 15), 0);
	CHECK_INT(room_db_last_seq(db), 15);
	CHECK_INT(room_db_events_each(db, 0, 0, count_json, &n), 0);
	CHECK_INT(n, 5);
	n = 0;
	CHECK_INT(room_db_events_each(db, 4, 0, count_json, &n), 0);
	CHECK_INT(n, 3);
	n = 0;
	CHECK_INT(room_db_events_each(db, 0, 2, count_json, &n), 0);
	CHECK_INT(n, 2);
	room_db_close(db);
}

/* Events stored now, through a read of db. */
static int
events_now(struct room_db *db)
{
	int n = 0;

	CHECK_INT(room_db_events_each(db, 0, 0, count_json, &n), 0);
	return n;
}

/* room_db_read_begin: one snapshot for its reads, no write inside it, and
 * nothing begun inside a write transaction. */
static void
test_read_transaction(void)
{
	struct room_db *db, *other;
	int begun, before;

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_open(path, &other), 0);
	before = events_now(db);
	begun = room_db_read_begin(db);
	CHECK_INT(begun, 1);
	CHECK_INT(events_now(db), before);
	/* A commit elsewhere is not in the snapshot until its end. */
	CHECK_INT(room_db_event_add(other, 100, "t", "message", "{}"), 0);
	CHECK_INT(room_db_commit(other), 0);
	CHECK_INT(events_now(db), before);
	CHECK_INT(room_db_event_add(db, 101, "t", "message", "{}"), -EINVAL);
	CHECK_INT(room_db_read_begin(db), -EINVAL);
	room_db_read_end(db, begun);
	CHECK_INT(events_now(db), before + 1);
	CHECK_INT(room_db_event_add(db, 101, "t", "message", "{}"), 0);
	CHECK_INT(room_db_read_begin(db), 0);	/* inside the write: in it */
	CHECK_INT(events_now(db), before + 2);
	room_db_read_end(db, 0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(events_now(other), before + 2);
	room_db_close(other);
	room_db_close(db);
}

static void
test_turn_checkpoints(void)
{
	struct room_db *db;
	struct room_db_turn t;
	struct room_db_msg m;
	struct room_db_tool j;
	json_object *msg = json_tokener_parse("{\"role\":\"assistant\","
	    "\"content\":[]}");
	long long id, id2;

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_turn_add(db, "alice", "first", &id), 0);
	CHECK_INT(room_db_turn_add(db, "bob", "second", &id2), 0);
	CHECK_INT(room_db_turns_queued(db), 2);
	CHECK_INT(room_db_turn_next(db, &t), 1);
	CHECK_INT(t.id, id);
	CHECK_INT(t.state, TURN_QUEUED);
	free(t.prompt);
	CHECK_INT(room_db_turn_start(db, id2), 0);	/* running wins */
	CHECK_INT(room_db_turn_next(db, &t), 1);
	CHECK_INT(t.id, id2);
	CHECK_INT(t.state, TURN_RUNNING);
	free(t.prompt);
	CHECK_INT(room_db_turn_step(db, id2, 10, 5), 0);
	CHECK_INT(room_db_transcript_add(db, id2, 0, "assistant", msg), 0);
	CHECK_INT(room_db_transcript_last(db, &m), 1);
	CHECK_STR(m.role, "assistant");
	CHECK_INT(m.turn, id2);
	json_object_put(m.msg);
	CHECK_INT(room_db_tool_start(db, id2, 0, 0, "c1", "bash", "{}"), 0);
	CHECK_INT(room_db_commit(db), 0);
	room_db_close(db);

	/* After a "crash": the call is started and not ended. */
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_turn_next(db, &t), 1);
	CHECK_INT(t.steps, 1);
	CHECK_INT(t.input_tokens, 10);
	free(t.prompt);
	CHECK_INT(room_db_tool_get(db, id2, 0, 0, &j), 1);
	CHECK(j.started && !j.ended);
	CHECK_INT(room_db_tool_get(db, id2, 0, 1, &j), 0);
	CHECK_INT(room_db_tool_end(db, id2, 0, 0, "c1", "bash", "{}",
	    "interrupted", "interrupted"), 0);
	CHECK_INT(room_db_tool_get(db, id2, 0, 0, &j), 1);
	CHECK(j.started && j.ended);
	CHECK_STR(j.status, "interrupted");
	free(j.output);
	CHECK_INT(room_db_turn_end(db, id2, "end_turn"), 0);
	CHECK_INT(room_db_turns_queued(db), 1);
	room_db_close(db);
	json_object_put(msg);
}

/* A turn's undo point is its first writing call, recorded once. */
static void
test_undo_points(void)
{
	struct room_db *db;
	int step = -1, idx = -1;

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_undo_get(db, 77, &step, &idx), 0);
	CHECK_INT(room_db_undo_mark(db, 77, 1, 2, "write", NULL), 0);
	CHECK_INT(room_db_undo_mark(db, 77, 3, 0, "bash", NULL), 0);
	CHECK_INT(room_db_commit(db), 0);
	room_db_close(db);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_undo_get(db, 77, &step, &idx), 1);
	CHECK_INT(step, 1);
	CHECK_INT(idx, 2);
	CHECK_INT(room_db_undo_get(db, 78, &step, &idx), 0);
	room_db_close(db);
}

/* A name room_db_undo_people calls back with, appended to arg. */
static int
people_add(void *arg, const char *user)
{
	strcat(arg, user);
	strcat(arg, " ");
	return 0;
}

/* An undo names the people whose commands since its point changed the
 * workspace or may have (wrote unknown), never one that only read, nor
 * the agent, nor commands that ended before. */
static void
test_undo_people_by_what_changed(void)
{
	const char *cmd[][2] = {
		{ "alice", "echo > a" }, { "bob", "cat a" },
		{ "carol", "old" }, { "dave", "unknown" }, { "agent", "rm a" },
	};
	long long id[5];
	char seen[128] = "";
	struct room_db *db;
	char since[40];

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_audit_start(db, "carol", "exec", "old", "/", &id[2]),
	    0);
	CHECK_INT(room_db_audit_end(db, id[2], 0, NULL), 0);
	CHECK_INT(room_db_commit(db), 0);
	usleep(5000);
	time_now_iso(since, sizeof(since));
	usleep(5000);
	for (int i = 0; i < 5; i++)
		if (i != 2)
			CHECK_INT(room_db_audit_start(db, cmd[i][0], "exec",
			    cmd[i][1], "/", &id[i]), 0);
	CHECK_INT(room_db_audit_wrote(db, id[0], 1), 0);
	CHECK_INT(room_db_audit_wrote(db, id[1], 0), 0);
	CHECK_INT(room_db_audit_wrote(db, id[2], 1), 0);
	CHECK_INT(room_db_audit_wrote(db, id[4], 1), 0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(room_db_undo_people(db, since, people_add, seen), 0);
	CHECK_STR(seen, "alice dave ");
	room_db_close(db);
}

/* A session that reports its changes (sftp) names its user only when
 * its last change came at or after the point, open or ended, also when
 * it was told late; one that only read names nobody, however long it
 * stays open. */
static void
test_undo_people_by_reported_changes(void)
{
	long long early, reader, late;
	char seen[128] = "";
	struct room_db *db;
	char since[40];

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_audit_start(db, "erin", "exec", "sftp", "/", &early),
	    0);
	CHECK_INT(room_db_audit_start(db, "rita", "exec", "sftp", "/",
	    &reader), 0);
	CHECK_INT(room_db_audit_start(db, "lena", "exec", "sftp", "/", &late),
	    0);
	for (int i = 0; i < 3; i++)
		CHECK_INT(room_db_audit_wrote(db, (long long[]){ early, reader,
		    late }[i], 0), 0);
	CHECK_INT(room_db_audit_changed(db, early, 0), 0);
	CHECK_INT(room_db_commit(db), 0);
	usleep(5000);
	time_now_iso(since, sizeof(since));
	usleep(5000);
	CHECK_INT(room_db_audit_changed(db, late, 0), 0);
	CHECK_INT(room_db_audit_end(db, late, 0, NULL), 0);
	/* Told after the point of a change made a second before it. */
	CHECK_INT(room_db_audit_changed(db, early, 1000),
	    0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(room_db_undo_people(db, since, people_add, seen), 0);
	/* (Earlier tests' commands still run: only these three are asked
	 * about.) */
	CHECK(strstr(seen, "lena ") != NULL);
	CHECK(strstr(seen, "erin") == NULL && strstr(seen, "rita") == NULL);
	room_db_close(db);
}

/* The people who prompted the turns an act takes back: turns not undone
 * whose undo point is at or after since, or that still ran then; never
 * one that ended before, nor the agent. */
static void
test_undo_prompters(void)
{
	long long t[3];
	char seen[128] = "", since[40];
	struct room_db *db;

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_turn_add(db, "olga", "before", &t[0]), 0);
	CHECK_INT(room_db_undo_mark(db, t[0], 0, 0, "bash", "turn-a"), 0);
	CHECK_INT(room_db_turn_end(db, t[0], "end_turn"), 0);
	CHECK_INT(room_db_commit(db), 0);
	usleep(5000);
	time_now_iso(since, sizeof(since));
	CHECK_INT(room_db_turn_add(db, "bert", "after", &t[1]), 0);
	CHECK_INT(room_db_undo_mark(db, t[1], 0, 0, "bash", "turn-b"), 0);
	CHECK_INT(room_db_turn_add(db, "undone", "after, undone", &t[2]), 0);
	CHECK_INT(room_db_undo_mark(db, t[2], 0, 0, "bash", "turn-c"), 0);
	CHECK_INT(room_db_undo_set(db, t[2], 1, "redo-c"), 0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(room_db_undo_prompters(db, since, people_add, seen), 0);
	CHECK_STR(seen, "bert ");
	room_db_close(db);
}

/* The turn the next undo (redo 0) or redo (redo 1) acts on, 0 for none;
 * its snapshot names into u. */
static long long
undo_next(struct room_db *db, int redo, struct room_db_undo *u)
{
	int r = room_db_undo_target(db, redo, u);

	CHECK(r == 0 || r == 1);
	return r == 1 ? u->turn : 0;
}

/* A writing turn, undone and redone as the chat's /undo and /redo do. */
static void
undo_turn(struct room_db *db, long long turn)
{
	char redo[32];

	snprintf(redo, sizeof(redo), "redo-%lld", turn);
	CHECK_INT(room_db_undo_set(db, turn, 1, redo), 0);
}

static void
write_turn(struct room_db *db, long long turn)
{
	char snap[32];

	snprintf(snap, sizeof(snap), "turn-%lld", turn);
	CHECK_INT(room_db_undo_mark(db, turn, 0, 0, "bash", snap), 0);
}

/* Undo goes back turn by turn and redo forward, the last undone first;
 * a turn that writes after an undo forgets what was undone before it. */
static void
test_undo_redo_order(void)
{
	struct room_db_undo u;
	struct room_db *db;
	char p2[80];

	snprintf(p2, sizeof(p2), "%s-order", path);
	CHECK_INT(room_db_open(p2, &db), 0);
	for (long long t = 1; t <= 3; t++)
		write_turn(db, t);
	CHECK_INT(undo_next(db, 1, &u), 0);
	undo_turn(db, undo_next(db, 0, &u));
	undo_turn(db, undo_next(db, 0, &u));
	CHECK_INT(undo_next(db, 0, &u), 1);
	CHECK_INT(undo_next(db, 1, &u), 2);
	CHECK_STR(u.snapshot, "turn-2");
	CHECK_STR(u.redo, "redo-2");
	CHECK_STR(u.since, "");
	CHECK_INT(room_db_undo_set(db, 2, 0, NULL), 0);
	CHECK_INT(undo_next(db, 1, &u), 3);
	CHECK_INT(undo_next(db, 0, &u), 2);
	CHECK(u.since[0] != '\0');
	CHECK_STR(u.redo, "");

	/* turn 4 writes on top of turn 3 undone: 3 never comes back, and
	 * once 4 is undone too, redo is 4's, then nothing */
	write_turn(db, 4);
	CHECK_INT(undo_next(db, 1, &u), 0);
	undo_turn(db, 4);
	CHECK_INT(undo_next(db, 1, &u), 4);
	CHECK_INT(room_db_undo_set(db, 4, 0, NULL), 0);
	CHECK_INT(undo_next(db, 1, &u), 0);
	CHECK_INT(undo_next(db, 0, &u), 4);
	/* turn 4 recorded again (a resumed call) forgets only the turns
	 * before it */
	undo_turn(db, 4);
	CHECK_INT(room_db_undo_mark(db, 4, 1, 0, "write", NULL), 0);
	CHECK_INT(undo_next(db, 1, &u), 4);
	CHECK_INT(room_db_commit(db), 0);
	room_db_close(db);
	unlink(p2);
}

/* Schema 6 to 7: a pending redo that a later turn's writes superseded is
 * forgotten; the others stay. */
static void
test_undo_migration(void)
{
	struct room_db_undo u;
	struct room_db *db;
	char p2[80];
	sqlite3 *s;

	snprintf(p2, sizeof(p2), "%s-undo6", path);
	CHECK_INT(room_db_open(p2, &db), 0);
	room_db_close(db);
	CHECK_INT(sqlite3_open(p2, &s), SQLITE_OK);
	CHECK_INT(sqlite3_exec(s, "ALTER TABLE audit DROP COLUMN wrote;"
	    "PRAGMA user_version = 6;"
	    "INSERT INTO turn_undo VALUES (1, 0, 0, 'bash', 'turn-1',"
	    " '2026-01-01T00:00:01.000Z', 1, 'redo-1', '2026-01-01T00:00:02.000Z');"
	    "INSERT INTO turn_undo VALUES (2, 0, 0, 'bash', 'turn-2',"
	    " '2026-01-01T00:00:03.000Z', 1, 'redo-2', '2026-01-01T00:00:05.000Z');"
	    "INSERT INTO turn_undo VALUES (3, 0, 0, 'bash', 'turn-3',"
	    " '2026-01-01T00:00:04.000Z', 1, 'redo-3', '2026-01-01T00:00:04.500Z')",
	    NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(s);
	CHECK_INT(room_db_open(p2, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	/* 1 was undone before 2 wrote: gone; 3 then 2 were undone in turn */
	CHECK_INT(undo_next(db, 1, &u), 2);
	CHECK_INT(room_db_undo_set(db, 2, 0, NULL), 0);
	CHECK_INT(undo_next(db, 1, &u), 3);
	CHECK_INT(room_db_undo_set(db, 3, 0, NULL), 0);
	CHECK_INT(undo_next(db, 1, &u), 0);
	CHECK_INT(room_db_commit(db), 0);
	room_db_close(db);
	unlink(p2);
}

int
main(void)
{
	char wal[96];

	snprintf(path, sizeof(path), "/tmp/test_agent_room_db.%d", (int)getpid());
	TEST(test_create_and_reopen);
	TEST(test_newer_schema_refused);
	TEST(test_access_migration);
	TEST(test_access_rows);
	TEST(test_usage_rows);
	TEST(test_events_and_seq);
	TEST(test_read_transaction);
	TEST(test_turn_checkpoints);
	TEST(test_undo_points);
	TEST(test_undo_redo_order);
	TEST(test_undo_migration);
	TEST(test_undo_people_by_what_changed);
	TEST(test_undo_people_by_reported_changes);
	TEST(test_undo_prompters);
	unlink(path);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", path);
	unlink(wal);
	return unit_done("test_agent_room_db");
}
