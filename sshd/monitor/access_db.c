/*
 * access_db.c: read a room's access list from room.db (access_db.h).
 * Called by access_record.c only, once per room made before the monitor
 * kept its own record (access_record.h): that room's list is read here
 * and recorded, and room.db is never read by atriumd again.  Only a
 * room.db that is root's is read (one made when the agent ran as root);
 * atriumd never parses a file its agent's uid could have written.
 *
 * Read-only, never read-write: room.db has one writer, its agent.  So a
 * read of a cold room leaves an empty room.db-wal and room.db-shm behind
 * (only a writer may remove them); SQLite takes them as they are at the
 * agent's next open.  (immutable=1 would leave nothing, but would read
 * around a WAL an agent that was killed left uncheckpointed, or one that
 * is starting right then.)
 *
 * A busy room.db (WAL recovery) waits ACCESS_DB_BUSY_MS at most, then the
 * read fails and the room fails closed until its agent reports.
 */
#include "access_db.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "protocol.h"
#include "sqlite_int.h"

#define ACCESS_DB_BUSY_MS	500

/* Log an SQLite failure reading path; always -EIO. */
static int
access_db_fail(sqlite3 *db, const char *path, const char *what)
{
	log_error("%s: cannot read the room's %s: %s", path, what,
	    db ? sqlite3_errmsg(db) : "out of memory");
	return -EIO;
}

/* Visibility (config) and owner and members (access) into out. */
static int
access_db_rows(sqlite3 *db, const char *path, struct access_list *out)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, "SELECT value FROM config WHERE key ="
	    " 'visibility'", -1, &st, NULL) != SQLITE_OK)
		return access_db_fail(db, path, "visibility");
	if ((rc = sqlite3_step(st)) == SQLITE_ROW &&
	    access_visibility_parse((const char *)sqlite3_column_text(st, 0),
	    &out->visibility) < 0)
		out->visibility = ACCESS_PRIVATE;	/* unknown: fail closed */
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return access_db_fail(db, path, "visibility");
	if (sqlite3_prepare_v2(db, "SELECT user, role FROM access ORDER BY"
	    " time, user", -1, &st, NULL) != SQLITE_OK)
		return access_db_fail(db, path, "access list");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *user = (const char *)sqlite3_column_text(st, 0);
		const char *role = (const char *)sqlite3_column_text(st, 1);

		if (!user || !role)
			continue;
		if (strcmp(role, "owner") == 0)
			snprintf(out->owner, sizeof(out->owner), "%s", user);
		else
			access_list_add(out, user);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : access_db_fail(db, path, "access list");
}

/* See access_db.h. */
int
access_db_read(const char *room_dir, struct access_list *out)
{
	char path[PATH_MAX + 32];
	sqlite3 *db = NULL;
	struct stat sb;
	int r, v;

	access_list_init(out);
	snprintf(path, sizeof(path), "%s/%s", room_dir, ROOM_DB_NAME);
	if (stat(path, &sb) < 0)
		return errno == ENOENT ? 0 : -EIO;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		r = access_db_fail(db, path, "access list");
		sqlite3_close(db);
		return r;
	}
	sqlite3_busy_timeout(db, ACCESS_DB_BUSY_MS);
	v = (int)sqlite_int(db, "PRAGMA user_version");
	if (v < 0)
		r = access_db_fail(db, path, "schema version");
	else if (v < ACCESS_DB_VERSION)
		r = 0;		/* before access: open, no owner */
	else
		r = access_db_rows(db, path, out);
	sqlite3_close(db);
	if (r < 0)
		access_list_init(out);
	return r;
}
