/*
 * test_agent_room_import.c: a room.db from an archive (agent/room_import.c):
 * the importer becomes the only owner and the archive's grants are gone;
 * a trigger, an extra table, a damaged file, a newer schema or a bad user
 * name are refused; an older schema is migrated first.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/room_db.h"
#include "../../agent/room_import.h"
#include "log.h"
#include "unit.h"

static char path[64];

/* A current room.db at path owned by alice, with bob a member. */
static void
make_room(void)
{
	struct room_db *db;

	unlink(path);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_access_set(db, "alice", "owner", NULL), 0);
	CHECK_INT(room_db_access_set(db, "bob", "member", "alice"), 0);
	CHECK_INT(room_db_config_set(db, "visibility", "private", "alice"), 0);
	CHECK_INT(room_db_commit(db), 0);
	room_db_close(db);
}

/* Run sql on path with a plain connection. */
static void
poke(const char *sql)
{
	sqlite3 *h;

	CHECK_INT(sqlite3_open(path, &h), SQLITE_OK);
	CHECK_INT(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
}

static void
test_importer_is_the_only_owner(void)
{
	struct room_db *db;
	struct access_list l;

	make_room();
	CHECK_INT(room_import_db(path, "carol"), 0);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "carol");
	CHECK_INT(l.nmembers, 0);
	CHECK_INT(l.visibility, ACCESS_PRIVATE);
	room_db_close(db);
}

static void
test_hostile_files_refused(void)
{
	make_room();
	poke("CREATE TRIGGER t AFTER INSERT ON events BEGIN INSERT INTO access"
	    " VALUES ('eve', 'member', NULL, 'x'); END");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("CREATE VIEW v AS SELECT 1");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("CREATE TABLE extra (x)");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("INSERT INTO members VALUES ('bad name\x1b', 'x', 'x')");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("PRAGMA user_version = 99");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	CHECK_INT(room_import_db(path, "not a user"), -1);
	unlink(path);
	{
		FILE *f = fopen(path, "w");

		CHECK(f != NULL);
		fputs("SQLite format 3 but not really", f);
		fclose(f);
	}
	CHECK_INT(room_import_db(path, "carol"), -1);
}

/* A schema 2 file (before access) comes forward, and its migrated
 * owner gives way to the importer. */
static void
test_older_schema_migrated(void)
{
	struct room_db *db;
	struct access_list l;

	make_room();
	poke("DROP TABLE access; DROP TABLE usage_users; DROP TABLE turn_undo;"
	    " PRAGMA user_version = 2;"
	    " INSERT INTO members VALUES ('bob', '2026-01-02', '2026-01-03')");
	CHECK_INT(room_import_db(path, "dave"), 0);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "dave");
	CHECK_INT(l.nmembers, 0);
	room_db_close(db);
}

int
main(void)
{
	char side[96];

	log_set_level(LOG_ERROR);
	snprintf(path, sizeof(path), "/tmp/test_agent_room_import.%d",
	    (int)getpid());
	TEST(test_importer_is_the_only_owner);
	TEST(test_hostile_files_refused);
	TEST(test_older_schema_migrated);
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	return unit_done("test_agent_room_import");
}
