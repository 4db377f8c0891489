/*
 * room_import.c: `atrium-agent import-db --owner USER FILE` (room_import.h),
 * the history of an imported room made fit to be a room.db.  atriumd runs
 * it on ROOM_DIR/room.db.import once `atrium-fs import-room` has unpacked
 * a room's archive (sshd/monitor/room_transfer.c), then renames the file to
 * room.db; nothing of the room starts before that.
 *
 * The file came from a stranger's archive, so before anything reads it as
 * a room's record:
 *   1. SQLite's own checks: it is a database, PRAGMA integrity_check says
 *      ok, its user_version is one room_db knows (1 .. ROOM_DB_VERSION:
 *      a newer one needs a newer atrium-agent);
 *   2. it holds no trigger and no view: the agent's schema has none, and
 *      one would run the stranger's SQL in every write of the agent (a
 *      trigger could grant access long after this check);
 *   3. room_db_open migrates it forward as any room.db, and its schema must
 *      then be exactly the one a new room.db has, object by object;
 *   4. every user name in it (members, turns, access) is a valid one;
 *   5. every stored event is rebuilt through its type's constructor
 *      (stored_event.h), as a live one is made, and stored so: only the
 *      fields that type has, of their JSON types, names checked, text
 *      cleaned.  A row that cannot be one is left out: a type the room
 *      does not store (exec_done, access_denied and every other event
 *      atriumd acts on rather than shows), a field of another type, a
 *      bad name or time, text that is not one JSON object, a line longer
 *      than the protocol's.  So the archive's history replays as events
 *      the room could have sent, never as the bytes the file held;
 *   6. the agent's own record, which the model is sent again and a
 *      resumed turn reads (transcript, tool journal, turns' prompts,
 *      summaries), is checked and rebuilt row by row as the live agent
 *      writes it (import_transcript.h); a row it could not have written
 *      refuses the import, naming the row.
 * Then it becomes the importer's room:
 *   - the access grants of the archive are dropped and the importer is
 *     the only owner (members are invited again by the new owner);
 *   - undo points name workspace snapshots, which an archive does not
 *     carry: they are cleared, so /undo says there is nothing to undo
 *     rather than failing on a missing snapshot;
 *   - the archive's model usage is the room it came from, not this one:
 *     its rows leave the usage tables (which count this room's /cost,
 *     tokens today and daily cap) for meta imported_usage, a total that
 *     /cost shows apart and the `imported` event carries;
 *   - one `imported` event is stored after the archive's last one: who
 *     imported it, when, and the room it says it was exported from and
 *     when (meta export_room and export_time, which export-room writes
 *     into its copy; taken out of meta here).  The archive's events keep
 *     their names, as its history, but nobody here vouches for them: the
 *     mark says where that history came from, and every event before it
 *     is the archive's word.  An `imported` event in the archive itself
 *     is left out: only an import here makes one.
 * A turn that was running when the archive was made is left as it was:
 * the agent resumes it at its first start as after a crash, where a tool
 * call that started and has no end comes back as interrupted.
 */
#include "room_import.h"

#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_transcript.h"
#include "jsonl.h"
#include "log.h"
#include "names.h"
#include "protocol.h"
#include "room_db.h"
#include "stored_event.h"
#include "util.h"

/* Say why on stderr; -1. */
static int
room_import_refuse(const char *path, const char *why, const char *detail)
{
	fprintf(stderr, "atrium-agent: import-db: %s: %s%s%s\n", path, why,
	    detail ? ": " : "", detail ? detail : "");
	return -1;
}

/* One text or integer answer of sql on h into out (len).  0 or -1. */
static int
room_import_ask(sqlite3 *h, const char *sql, char *out, size_t len)
{
	sqlite3_stmt *st;
	const unsigned char *t;
	int rc;

	out[0] = '\0';
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && (t = sqlite3_column_text(st, 0)))
		snprintf(out, len, "%s", (const char *)t);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* Steps 1 and 2 of the head, on a connection of its own that runs none of
 * the file's SQL.  0 or -1 (said). */
static int
room_import_check_file(const char *path)
{
	sqlite3 *h = NULL;
	char answer[256];
	long v = 0;
	int r = -1;

	if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		room_import_refuse(path, "not a database", sqlite3_errmsg(h));
	} else if (sqlite3_db_config(h, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL),
	    sqlite3_db_config(h, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL),
	    room_import_ask(h, "PRAGMA integrity_check", answer,
	    sizeof(answer)) < 0 || strcmp(answer, "ok") != 0) {
		room_import_refuse(path, "the room's history is damaged (SQLite's "
		    "integrity check failed)", answer[0] ? answer :
		    sqlite3_errmsg(h));
	} else if (room_import_ask(h, "PRAGMA user_version", answer,
	    sizeof(answer)) < 0 || (v = strtol(answer, NULL, 10)) < 1 ||
	    v > ROOM_DB_VERSION) {
		room_import_refuse(path, v > ROOM_DB_VERSION ? "the room's history "
		    "is of a newer schema than this server knows; upgrade it" :
		    "this is not a room's history (no schema version)", answer);
	} else if (room_import_ask(h, "SELECT name FROM sqlite_master WHERE "
	    "type IN ('trigger', 'view') LIMIT 1", answer, sizeof(answer)) < 0 ||
	    answer[0]) {
		room_import_refuse(path, "the room's history holds a trigger or "
		    "view, which no room.db has", answer);
	} else {
		r = 0;
	}
	sqlite3_close(h);
	return r;
}

/* Step 3: db's schema is a new room.db's.  0 or -1 (said). */
static int
room_import_check_schema(const char *path, struct room_db *db)
{
	struct room_db *fresh = NULL;
	char *want = NULL, *have = room_db_schema_text(db);
	int r = -1;

	if (room_db_open(":memory:", &fresh) == 0)
		want = room_db_schema_text(fresh);
	if (!have || !want)
		room_import_refuse(path, "cannot read its schema", NULL);
	else if (strcmp(have, want) != 0)
		room_import_refuse(path, "its tables are not those of a room's "
		    "history", NULL);
	else
		r = 0;
	free(have);
	free(want);
	room_db_close(fresh);
	return r;
}

/* Step 4: every user name in the tables that hold them is a valid one.
 * 0 or -1 (said). */
static int
room_import_check_names(const char *path, sqlite3 *h)
{
	static const char names[] =
	    "SELECT user FROM (SELECT user FROM members UNION ALL SELECT user"
	    " FROM turns UNION ALL SELECT user FROM access UNION ALL SELECT"
	    " by FROM access WHERE by IS NOT NULL)";
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h, names, -1, &st, NULL) != SQLITE_OK)
		return room_import_refuse(path, "cannot read it",
		    sqlite3_errmsg(h));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *u = (const char *)sqlite3_column_text(st, 0);

		if (!u || !user_name_valid(u))
			break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return room_import_refuse(path, "it names a user that is not a "
		    "valid user name", NULL);
	return 0;
}

/* What step 5 did, for the mark. */
struct room_import_count {
	long long kept, dropped;
	long long last_seq;		/* the highest seq the file handed out */
	long long in, out, requests;	/* the model usage kept apart */
	char origin[128];		/* the room it says it came from, or "" */
	char exported[64];		/* when it says it was made, or "" */
};

/* Store ev (a built event) as the row of seq, in place of what was
 * there, or as a new row.  0 or -1. */
static int
room_import_put(sqlite3 *h, long long seq, json_object *ev)
{
	static const char sql[] = "INSERT INTO events (seq, time, type, json)"
	    " VALUES (?1, ?2, ?3, ?4) ON CONFLICT (seq) DO UPDATE SET"
	    " time = ?2, type = ?3, json = ?4";
	const char *json = json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, seq);
	sqlite3_bind_text(st, 2, json_get_string(ev, "time"), -1,
	    SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 3, json_get_string(ev, "type"), -1,
	    SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 4, json, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* 1 when ev (built) may be stored from an archive: not a mark of an
 * earlier import (only this one makes one), and one protocol line with
 * room for the "replay" a replay adds. */
static int
room_import_keeps(json_object *ev)
{
	return strcmp(json_get_string(ev, "type"), "imported") != 0 &&
	    strlen(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE)) + 32 <= PROTO_MAX_LINE;
}

/* One row of step 5: rebuilt in place, or deleted.  0 or -1 (SQLite's
 * error, or memory; a row that is no event is not an error). */
static int
room_import_row(sqlite3 *h, long long seq, const char *time,
    const char *json, struct room_import_count *n)
{
	char note[256], *sql;
	json_object *ev = NULL;
	int r = stored_event_from_row(seq, time, json, &ev, note,
	    sizeof(note));

	if (r == -ENOMEM)
		return -1;
	if (r == 0 && room_import_keeps(ev)) {
		r = room_import_put(h, seq, ev);
		json_object_put(ev);
		n->kept++;
		return r;
	}
	json_object_put(ev);
	n->dropped++;
	sql = sqlite3_mprintf("DELETE FROM events WHERE seq = %lld", seq);
	r = sql && sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	sqlite3_free(sql);
	return r;
}

/* Step 5, in h's open transaction: each row in seq order, one at a time
 * (a row rewritten while a scan of the table is open could be met
 * again).  0 or -1 (said). */
static int
room_import_events(const char *path, sqlite3 *h, struct room_import_count *n)
{
	static const char next[] = "SELECT seq, time, json FROM events"
	    " WHERE seq > ? ORDER BY seq LIMIT 1";
	sqlite3_stmt *st;
	long long seq = LLONG_MIN;
	int rc = SQLITE_ERROR, r = 0;

	if (sqlite3_prepare_v2(h, next, -1, &st, NULL) != SQLITE_OK)
		return room_import_refuse(path, "cannot read its events",
		    sqlite3_errmsg(h));
	for (;;) {
		char *time = NULL, *json = NULL;

		sqlite3_bind_int64(st, 1, seq);
		if ((rc = sqlite3_step(st)) != SQLITE_ROW)
			break;
		n->last_seq = seq = sqlite3_column_int64(st, 0);
		if (sqlite3_column_text(st, 1))
			time = strdup((const char *)sqlite3_column_text(st, 1));
		if (sqlite3_column_text(st, 2))
			json = strdup((const char *)sqlite3_column_text(st, 2));
		sqlite3_reset(st);
		r = room_import_row(h, seq, time, json, n);
		free(time);
		free(json);
		if (r < 0)
			break;
	}
	sqlite3_finalize(st);
	if (r < 0 || rc != SQLITE_DONE)
		return room_import_refuse(path, "cannot rebuild its events",
		    sqlite3_errmsg(h));
	return 0;
}

/* meta's value of key into out (len), "" when there is none or valid()
 * says it is not one; the row is removed either way (what it said goes
 * into the mark, and a later export writes its own). */
static void
room_import_meta_take(sqlite3 *h, const char *key, int (*valid)(const char *),
    char *out, size_t len)
{
	char *sql = sqlite3_mprintf("SELECT value FROM meta WHERE key = %Q",
	    key);

	out[0] = '\0';
	if (sql && room_import_ask(h, sql, out, len) == 0 && !valid(out))
		out[0] = '\0';
	sqlite3_free(sql);
	sql = sqlite3_mprintf("DELETE FROM meta WHERE key = %Q", key);
	if (sql)
		sqlite3_exec(h, sql, NULL, NULL, NULL);
	sqlite3_free(sql);
}

/* "IN OUT REQUESTS" of non-negative integers into the three; 1 when it
 * was that. */
static int
room_import_triple(const char *text, long long *in, long long *out,
    long long *requests)
{
	return sscanf(text, "%lld %lld %lld", in, out, requests) == 3 &&
	    *in >= 0 && *out >= 0 && *requests >= 0;
}

/* The archive's model usage (its usage table, plus what an import before
 * kept apart: meta imported_usage) is the room it came from, not this
 * one: it leaves the tables that count this room's own (/cost, "tokens
 * today", the daily cap) for meta imported_usage, "IN OUT REQUESTS".
 * The numbers are the archive's word; a sum that overflows counts none.
 * 0 or -1. */
static int
room_import_usage_apart(sqlite3 *h, struct room_import_count *n)
{
	char answer[128], *sql;
	long long in, out, requests;
	int rc;

	if (room_import_ask(h, "SELECT sum(input_tokens) || ' ' ||"
	    " sum(output_tokens) || ' ' || sum(requests) FROM usage", answer,
	    sizeof(answer)) == 0 && room_import_triple(answer, &in, &out,
	    &requests))
		n->in = in, n->out = out, n->requests = requests;
	if (room_import_ask(h, "SELECT value FROM meta WHERE key ="
	    " 'imported_usage'", answer, sizeof(answer)) == 0 &&
	    room_import_triple(answer, &in, &out, &requests) &&
	    in <= LLONG_MAX - n->in && out <= LLONG_MAX - n->out &&
	    requests <= LLONG_MAX - n->requests)
		n->in += in, n->out += out, n->requests += requests;
	sql = sqlite3_mprintf("DELETE FROM usage; DELETE FROM usage_users;"
	    " INSERT INTO meta (key, value) VALUES ('imported_usage',"
	    " '%lld %lld %lld') ON CONFLICT (key) DO UPDATE SET value ="
	    " excluded.value", n->in, n->out, n->requests);
	rc = sql ? sqlite3_exec(h, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
	sqlite3_free(sql);
	return rc == SQLITE_OK ? 0 : -1;
}

/* The `imported` event (stored_event.c), after every seq the file handed
 * out.  0 or -1. */
static int
room_import_mark(sqlite3 *h, const char *owner, struct room_import_count *n)
{
	char *room = n->origin, *when = n->exported, now[40], note[256],
	    answer[32];
	json_object *ev = json_object_new_object(), *built = NULL;
	long long seq = n->last_seq;
	int r;

	room_import_meta_take(h, "export_room", room_name_valid, room,
	    sizeof(n->origin));
	room_import_meta_take(h, "export_time", stored_event_time_valid, when,
	    sizeof(n->exported));
	if (room_import_ask(h, "SELECT max(coalesce((SELECT max(seq) FROM"
	    " events), 0), coalesce((SELECT CAST(value AS INTEGER) FROM meta"
	    " WHERE key = 'last_seq'), 0))", answer, sizeof(answer)) == 0 &&
	    strtoll(answer, NULL, 10) > seq)
		seq = strtoll(answer, NULL, 10);
	time_now_iso(now, sizeof(now));
	if (!ev)
		return -1;
	json_object_object_add(ev, "type", json_object_new_string("imported"));
	json_object_object_add(ev, "user", json_object_new_string(owner));
	if (room[0])
		json_object_object_add(ev, "origin",
		    json_object_new_string(room));
	if (when[0])
		json_object_object_add(ev, "exported",
		    json_object_new_string(when));
	json_object_object_add(ev, "events", json_object_new_int64(n->kept));
	json_object_object_add(ev, "dropped",
	    json_object_new_int64(n->dropped));
	json_object_object_add(ev, "input_tokens", json_object_new_int64(n->in));
	json_object_object_add(ev, "output_tokens",
	    json_object_new_int64(n->out));
	json_object_object_add(ev, "requests",
	    json_object_new_int64(n->requests));
	json_object_object_add(ev, "seq", json_object_new_int64(seq + 1));
	json_object_object_add(ev, "time", json_object_new_string(now));
	r = stored_event_build(ev, &built, note, sizeof(note));
	json_object_put(ev);
	if (r == 0)
		r = room_import_put(h, seq + 1, built);
	json_object_put(built);
	return r < 0 ? -1 : 0;
}

/* What was imported, for the importer (the client's stderr): the history
 * and where it says it came from, and the usage kept apart. */
static void
room_import_say(const struct room_import_count *n)
{
	if (n->dropped)
		fprintf(stderr, "atrium-agent: import-db: %lld of the archive's "
		    "%lld stored events were left out: none is an event this "
		    "room could have sent\n", n->dropped, n->kept + n->dropped);
	fprintf(stderr, "atrium: imported %lld events of history from %s%s%s"
	    "%s%s%s; its model usage there (%lld tokens in, %lld out, %lld "
	    "request%s) is kept apart from this room's own (/cost shows it as "
	    "before the import)\n", n->kept, n->origin[0] ? "room '" :
	    "an archive", n->origin, n->origin[0] ? "'" : "",
	    n->exported[0] ? " (exported " : "", n->exported,
	    n->exported[0] ? ")" : "", n->in, n->out, n->requests,
	    n->requests == 1 ? "" : "s");
}

/* Steps 4 to 6 and the owner, on a connection of our own (the schema is
 * known good now), in one transaction.  0 or -1 (said). */
static int
room_import_adopt(const char *path, const char *owner)
{
	struct room_import_count n = { 0 };
	char now[40], *sql;
	sqlite3 *h = NULL;
	int r = -1;

	if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK) {
		room_import_refuse(path, "cannot read it", sqlite3_errmsg(h));
		sqlite3_close(h);
		return -1;
	}
	if (room_import_check_names(path, h) < 0) {
		sqlite3_close(h);
		return -1;
	}
	if (sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		room_import_refuse(path, "cannot write it", sqlite3_errmsg(h));
		sqlite3_close(h);
		return -1;
	}
	time_now_iso(now, sizeof(now));
	sql = sqlite3_mprintf("DELETE FROM access;"
	    " INSERT INTO access (user, role, by, time) VALUES (%Q, 'owner',"
	    " NULL, %Q); UPDATE turn_undo SET snapshot = NULL, redo = NULL",
	    owner, now);
	if (!sql || sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK)
		room_import_refuse(path, "cannot make it the importer's room",
		    sqlite3_errmsg(h));
	else if (room_import_events(path, h, &n) < 0 ||
	    import_transcript_check(path, h) < 0)
		;	/* said */
	else if (room_import_usage_apart(h, &n) < 0)
		room_import_refuse(path, "cannot keep its model usage apart",
		    sqlite3_errmsg(h));
	else if (room_import_mark(h, owner, &n) < 0)
		room_import_refuse(path, "cannot mark its history as imported",
		    sqlite3_errmsg(h));
	else if (sqlite3_exec(h, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
		room_import_refuse(path, "cannot store it", sqlite3_errmsg(h));
	else
		r = 0;
	sqlite3_free(sql);
	if (r < 0)
		sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL);
	else
		room_import_say(&n);
	sqlite3_close(h);
	return r;
}

int
room_import_db(const char *path, const char *owner)
{
	struct room_db *db = NULL;
	int r;

	if (!user_name_valid(owner))
		return room_import_refuse(path, "not a user name", owner);
	if (room_import_check_file(path) < 0)
		return -1;
	if (room_db_open(path, &db) < 0)
		return room_import_refuse(path, "it cannot be brought to this "
		    "server's schema", NULL);
	r = room_import_check_schema(path, db);
	room_db_close(db);
	return r < 0 ? -1 : room_import_adopt(path, owner);
}

int
room_import_main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "--owner") != 0) {
		fprintf(stderr, "usage: atrium-agent import-db --owner USER "
		    "FILE\n");
		return 2;
	}
	log_set_level(LOG_WARN);	/* stderr is the importer's: no chatter */
	return room_import_db(argv[3], argv[2]) < 0 ? 1 : 0;
}
