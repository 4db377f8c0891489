/*
 * compact.c: `atrium-fs compact DB`, giving the disk back the pages that
 * deleted files and dropped snapshots left free inside an unmounted
 * database.  Called by fs/main.c.
 *
 * Why: SQLite keeps freed pages in the file for later writes (space.c
 * counts them as free room), so a workspace that once held a big file
 * stays that big on the disk.  mkfs sets auto_vacuum=INCREMENTAL (core.c),
 * under which `PRAGMA incremental_vacuum(N)` moves up to N pages from the
 * end of the file into free ones and cuts the file; in WAL mode the cut
 * reaches the file at the checkpoint after it.
 *
 * How: batches of COMPACT_BATCH_PAGES pages, each its own transaction
 * followed by a checkpoint, so the WAL stays small (a batch rewrites at
 * most that many pages) and a compact killed part way keeps what its
 * batches did.  A database made before the pointer map (auto_vacuum NONE,
 * older releases) cannot shrink that way: it is rewritten whole once with
 * VACUUM, which also gives it the pointer map, and needs free disk space
 * the size of the database meanwhile.
 *
 * It holds the mount lock, as repair.c does, so no daemon mounts the
 * database meanwhile.
 */
#include "commands.h"
#include "fs_int.h"
#include "mount.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Pages moved per transaction: 8 MiB of 4 KiB pages. */
#define COMPACT_BATCH_PAGES 2048
/* SQLite's auto_vacuum value for INCREMENTAL. */
#define COMPACT_INCREMENTAL 2

/* One integer from the pragma query sql, or -EIO (logged). */
static int64_t
compact_pragma(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -EIO;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		log_error("%s: %s", sql, sqlite3_errmsg(db));
		return -EIO;
	}
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		log_error("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return v;
}

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

/* Move free pages out of the file, a batch per transaction, until none
 * is left (or a batch frees nothing).  0 or -errno. */
static int
compact_incremental(sqlite3 *db)
{
	int64_t before, free_pages;
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA incremental_vacuum(%d)",
	    COMPACT_BATCH_PAGES);
	while ((free_pages = compact_pragma(db, "PRAGMA freelist_count")) > 0) {
		before = free_pages;
		if (compact_exec(db, sql) < 0 ||
		    compact_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)") < 0)
			return -EIO;
		if (compact_pragma(db, "PRAGMA freelist_count") >= before)
			return -EIO;          /* no progress: do not loop */
	}
	return free_pages < 0 ? (int)free_pages : 0;
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
	int64_t mode;
	int r;

	fs_lock(fs);
	if ((mode = compact_pragma(fs->db, "PRAGMA auto_vacuum")) < 0)
		r = (int)mode;
	else if (mode == COMPACT_INCREMENTAL)
		r = compact_incremental(fs->db);
	else
		r = compact_full(fs->db);
	fs_unlock(fs);
	return r;
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

int
compact_run(const char *db)
{
	struct lockfile_holder h;
	long long before = compact_file_bytes(db);
	struct fs *fs;
	int lock_fd, r;

	if (access(db, F_OK) < 0) {
		fs_explain_open(db, -errno, "compact");
		return 2;
	}
	if ((r = lockfile_acquire(db, &lock_fd, &h)) < 0) {
		if (r == -EBUSY)
			fprintf(stderr, "atrium-fs: %s is mounted%s%s; unmount it "
			    "before compacting it\n", db, h.dir[0] ? " at " : "",
			    h.dir);
		else
			fs_explain_open(db, r, "compact");
		return 2;
	}
	if ((r = fs_open(db, 0, &fs)) < 0) {
		lockfile_release(lock_fd);
		fs_explain_open(db, r, "compact");
		return 2;
	}
	r = compact_db(fs);
	fs_close(fs);
	lockfile_release(lock_fd);
	if (r < 0) {
		fprintf(stderr, "atrium-fs: compacting %s failed: %s; what was "
		    "compacted before stays, the rest is as it was\n", db,
		    strerror(-r));
		return 1;
	}
	printf("%s: %lld bytes on the disk, was %lld\n", db,
	    compact_file_bytes(db), before);
	return 0;
}
