/*
 * room_import.c: `atrium-agent import-db --owner USER FILE` (room_import.h),
 * the history of an imported room made fit to be a room.db.  atriumd runs
 * it on ROOM_DIR/room.db.import once `atrium-fs import-room` has unpacked
 * a room's archive (sshd/room_transfer.c), then renames the file to
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
 *   4. every user name in it (members, turns, access) is a valid one.
 * Then it becomes the importer's room:
 *   - the access grants of the archive are dropped and the importer is
 *     the only owner (members are invited again by the new owner);
 *   - undo points name workspace snapshots, which an archive does not
 *     carry: they are cleared, so /undo says there is nothing to undo
 *     rather than failing on a missing snapshot.
 * A turn that was running when the archive was made is left as it was:
 * the agent resumes it at its first start as after a crash, where a tool
 * call that started and has no end comes back as interrupted.
 */
#include "room_import.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "names.h"
#include "room_db.h"
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

/* Step 4 and the owner, on a connection of our own (the schema is known
 * good now).  0 or -1 (said). */
static int
room_import_adopt(const char *path, const char *owner)
{
	static const char names[] =
	    "SELECT user FROM (SELECT user FROM members UNION ALL SELECT user"
	    " FROM turns UNION ALL SELECT user FROM access UNION ALL SELECT"
	    " by FROM access WHERE by IS NOT NULL)";
	char now[40], *sql;
	sqlite3_stmt *st;
	sqlite3 *h = NULL;
	int rc, r = -1;

	if (sqlite3_open_v2(path, &h, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(h, names, -1, &st, NULL) != SQLITE_OK) {
		room_import_refuse(path, "cannot read it", sqlite3_errmsg(h));
		sqlite3_close(h);
		return -1;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *u = (const char *)sqlite3_column_text(st, 0);

		if (!u || !user_name_valid(u))
			break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		room_import_refuse(path, "it names a user that is not a valid "
		    "user name", NULL);
		sqlite3_close(h);
		return -1;
	}
	time_now_iso(now, sizeof(now));
	sql = sqlite3_mprintf("BEGIN IMMEDIATE; DELETE FROM access;"
	    " INSERT INTO access (user, role, by, time) VALUES (%Q, 'owner',"
	    " NULL, %Q); UPDATE turn_undo SET snapshot = NULL, redo = NULL;"
	    " COMMIT", owner, now);
	if (sql && sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK)
		r = 0;
	else
		room_import_refuse(path, "cannot make it the importer's room",
		    sqlite3_errmsg(h));
	sqlite3_free(sql);
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
