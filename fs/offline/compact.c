/*
 * compact.c: `atrium-fs compact DB`, giving the disk back the pages that
 * deleted files and dropped snapshots left free inside an unmounted
 * database.  Called by fs/fs_main.c.
 *
 * Why: SQLite keeps freed pages in the file for later writes (space.c
 * counts them as free room), so a workspace that once held a big file
 * stays that big on the disk.
 *
 * How: fs_vacuum (vacuum.c), in bounded batches, as the mounted daemon
 * does it when asked through its control socket (fs/fs_main.c sends the
 * command there when the database is mounted).  A database made before the
 * pointer map (auto_vacuum NONE, older releases) cannot shrink that way:
 * unmounted, it is rewritten whole once with VACUUM, which also gives it
 * the pointer map, and needs free disk space the size of the database
 * meanwhile.
 *
 * It holds the mount lock, as repair.c does, so no daemon mounts the
 * database meanwhile.
 */
#include "commands.h"
#include "fs_int.h"
#include "fsctl_client.h"
#include "mount.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* How long the command waits for a mounted daemon's compact. */
#define COMPACT_TIMEOUT_S 600

/* Run sql; 0 or -EIO (logged). */
static int
compact_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		log_error("%s: %s", sql, err ? err : sqlite3_errmsg(db));
		sqlite3_free(err);
		return -EIO;
	}
	return 0;
}

/* Rewrite a database without the pointer map whole, giving it one.  0
 * or -errno. */
static int
compact_full(sqlite3 *db)
{
	if (compact_exec(db, "PRAGMA auto_vacuum=INCREMENTAL") < 0 ||
	    compact_exec(db, "VACUUM") < 0)
		return -EIO;
	return compact_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
}

/* Compact fs's database.  0 or -errno. */
static int
compact_db(struct fs *fs)
{
	int64_t r = fs_vacuum(fs);

	if (r != -EOPNOTSUPP)
		return r < 0 ? (int)r : 0;
	fs_lock(fs);
	r = compact_full(fs->db);
	fs_unlock(fs);
	return (int)r;
}

/* The bytes of path and its WAL on the disk (0 when missing). */
static long long
compact_file_bytes(const char *path)
{
	char wal[4200];
	struct stat st;
	long long n = 0;

	if (stat(path, &st) == 0)
		n += (long long)st.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &st) == 0)
		n += (long long)st.st_size;
	return n;
}

/* The unmounted db (its lock held as lock_fd): 0, or -errno said. */
static int
compact_offline(const char *db, int lock_fd)
{
	struct fs *fs;
	int r;

	if ((r = fs_open(db, 0, &fs)) < 0) {
		fs_explain_open(db, r, "compact");
		return r;
	}
	r = compact_db(fs);
	fs_close(fs);
	if (r < 0)
		fprintf(stderr, "atrium-fs: compacting %s failed: %s; what was "
		    "compacted before stays, the rest is as it was\n", db,
		    strerror(-r));
	return r;
}

/* db mounted by the daemon h names: through its control socket.  0, or
 * -errno said. */
static int
compact_mounted(const char *db, const struct lockfile_holder *h)
{
	int r = fsctl_compact(db, COMPACT_TIMEOUT_S);

	if (r == -ECONNREFUSED && h->pid > 0 && h->dir[0])
		fprintf(stderr, "atrium-fs: %s is mounted at %s by atrium-fs pid "
		    "%ld but its daemon does not answer on %s-ctl; unmount it "
		    "and try again\n", db, h->dir, (long)h->pid, db);
	else if (r == -ECONNREFUSED)
		mount_holder_refuse(db, h, "compact");
	else if (r == -EOPNOTSUPP)
		fprintf(stderr, "atrium-fs: %s was made without SQLite's pointer "
		    "map, so it can only be compacted unmounted (rewritten once, "
		    "which gives it one); unmount it and run compact again\n", db);
	else if (r < 0)
		fprintf(stderr, "atrium-fs: compacting the mounted %s failed: %s; "
		    "what was compacted before stays\n", db, strerror(-r));
	return r;
}

int
compact_run(const char *db)
{
	struct lockfile_holder h;
	long long before = compact_file_bytes(db);
	int lock_fd, r;

	if (access(db, F_OK) < 0) {
		fs_explain_open(db, -errno, "compact");
		return 2;
	}
	if ((r = lockfile_acquire(db, &lock_fd, &h)) == -EBUSY) {
		r = compact_mounted(db, &h);
	} else if (r < 0) {
		fs_explain_open(db, r, "compact");
		return 2;
	} else {
		r = compact_offline(db, lock_fd);
		lockfile_release(lock_fd);
	}
	if (r < 0)
		return r == -ECONNREFUSED || r == -EOPNOTSUPP ? 2 : 1;
	printf("%s: %lld bytes on the disk, was %lld\n", db,
	    compact_file_bytes(db), before);
	return 0;
}
