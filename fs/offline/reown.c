/*
 * reown.c: `atrium-fs reown DB FROM TO`, giving every file of an unmounted
 * workspace that one uid (or gid) owns to another, in the live tree and
 * in every snapshot.  Called by fs/fs_main.c.
 *
 * Why: rooms made before each room had a sandbox uid of its own all ran as
 * one uid (64222 by default), so their commands could signal and trace one
 * another.  atriumd gives such a room a uid of its own at its next start
 * and runs this before it mounts the workspace, so the room's files follow
 * it (room_ids.h).
 *
 * How: one transaction of four UPDATEs (uid and gid, live and snapshot
 * inodes), so a crash leaves the owners all old or all new; run again, it
 * finds nothing left to change.  It holds the mount lock, as compact.c
 * does: a mounted workspace is refused.
 */
#include "commands.h"
#include "fs_int.h"
#include "mount.h"
#include "room_ids.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

/* The statements, each with ?1 the new id and ?2 the old one. */
static const char *const reown_sqls[] = {
	"UPDATE inodes SET uid = ?1 WHERE uid = ?2",
	"UPDATE inodes SET gid = ?1 WHERE gid = ?2",
	"UPDATE snap_inodes SET uid = ?1 WHERE uid = ?2",
	"UPDATE snap_inodes SET gid = ?1 WHERE gid = ?2",
};

/* Run one of reown_sqls with to and from; the rows it changed, or -EIO
 * (logged). */
static int
reown_one(sqlite3 *db, const char *sql, uint32_t to, uint32_t from)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		log_error("%s: %s", sql, sqlite3_errmsg(db));
		return -EIO;
	}
	sqlite3_bind_int64(st, 1, to);
	sqlite3_bind_int64(st, 2, from);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		log_error("%s: %s", sql, sqlite3_errmsg(db));
		return -EIO;
	}
	return sqlite3_changes(db);
}

/* All four in one transaction: the inodes changed (live and snapshot
 * uid rows), or -EIO. */
static int
reown_db(sqlite3 *db, const struct room_ids *from, const struct room_ids *to)
{
	int n = 0, r = 0;

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		log_error("BEGIN: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(reown_sqls) / sizeof(*reown_sqls); i++) {
		int uid_sql = i % 2 == 0;

		r = reown_one(db, reown_sqls[i], uid_sql ? to->uid : to->gid,
		    uid_sql ? from->uid : from->gid);
		if (r < 0)
			break;
		n += uid_sql ? r : 0;
	}
	if (r >= 0 && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return n;
	log_error("reown: %s; nothing changed", sqlite3_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return -EIO;
}

int
reown_run(const char *db, const char *from_text, const char *to_text)
{
	struct room_ids from, to;
	struct lockfile_holder h;
	struct fs *fs;
	int lock_fd, r;

	if (room_ids_parse(from_text, &from) < 0 ||
	    room_ids_parse(to_text, &to) < 0) {
		fprintf(stderr, "atrium-fs reown: FROM and TO are UID:GID\n");
		return 2;
	}
	/* Before the lock: it would make DB-mount beside a missing DB. */
	if (access(db, F_OK) < 0) {
		fs_explain_open(db, -errno, "reown");
		return 2;
	}
	if ((r = lockfile_acquire(db, &lock_fd, &h)) < 0) {
		if (r == -EBUSY)
			mount_holder_refuse(db, &h, "change the owners in");
		else
			fs_explain_open(db, r, "reown");
		return 2;
	}
	if ((r = fs_open(db, 0, &fs)) < 0) {
		fs_explain_open(db, r, "reown");
		lockfile_release(lock_fd);
		return 2;
	}
	fs_lock(fs);
	r = reown_db(fs->db, &from, &to);
	fs_unlock(fs);
	fs_close(fs);
	lockfile_release(lock_fd);
	if (r < 0) {
		fprintf(stderr, "atrium-fs: changing the owners in %s failed; "
		    "nothing changed\n", db);
		return 1;
	}
	printf("%s: %d inodes of uid %u are now uid %u\n", db, r,
	    (unsigned)from.uid, (unsigned)to.uid);
	return 0;
}
