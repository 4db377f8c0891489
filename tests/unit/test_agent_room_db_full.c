/*
 * test_agent_room_db_full.c: room.db (agent/room_db.c) when the disk is
 * full.  The shim SQLite VFS of shim_vfs.h, installed as the default,
 * fails every write with SQLITE_FULL while shim_full is set.  Checked: a
 * stored event and an audit row that cannot be written come back as
 * -ENOSPC (with a reason people can read) and leave no row; reads keep
 * working; writes work again once the disk has room.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/room_db.h"
#include "unit.h"

static char path[64];

#include "shim_vfs.h"

static int
count_json(long long seq, const char *time, const char *json, void *arg)
{
	int *n = arg;

	(void)seq; (void)time; (void)json;
	(*n)++;
	return 0;
}

static void
test_full_refuses_and_recovers(void)
{
	struct room_db *db;
	long long id = 0;
	int n = 0;

	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_event_add(db, 1, "t", "message", "{\"seq\":1}"), 0);
	CHECK_INT(room_db_commit(db), 0);

	shim_full = 1;
	/* The insert may be cached; the commit that must hold it fails. */
	{
		int r = room_db_event_add(db, 2, "t", "message", "{\"seq\":2}");

		if (r == 0)
			r = room_db_commit(db);
		CHECK_INT(r, -ENOSPC);
	}
	CHECK_INT(room_db_audit_start(db, "alice", "exec", "true", "/", &id),
	    -ENOSPC);
	CHECK_STR(room_db_strerror(-ENOSPC), "the disk holding room.db is full");
	/* Reads still work, and show only what was committed. */
	CHECK_INT(room_db_events_each(db, 0, 0, count_json, &n), 0);
	CHECK_INT(n, 1);
	shim_full = 0;

	/* Room again: the next writes go through without reopening. */
	CHECK_INT(room_db_event_add(db, 3, "t", "message", "{\"seq\":3}"), 0);
	CHECK_INT(room_db_commit(db), 0);
	CHECK_INT(room_db_audit_start(db, "alice", "exec", "true", "/", &id),
	    0);
	CHECK(id > 0);
	room_db_close(db);

	CHECK_INT(room_db_open(path, &db), 0);
	n = 0;
	CHECK_INT(room_db_events_each(db, 0, 0, count_json, &n), 0);
	CHECK_INT(n, 2);
	CHECK_INT(room_db_last_seq(db), 3);
	room_db_close(db);
}

int
main(void)
{
	char wal[96];

	shim_install();
	snprintf(path, sizeof(path), "/tmp/test_agent_room_db_full.%d",
	    (int)getpid());
	TEST(test_full_refuses_and_recovers);
	unlink(path);
	snprintf(wal, sizeof(wal), "%s-wal", path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", path);
	unlink(wal);
	return unit_done("test_agent_room_db_full");
}
