/*
 * vacuum.c: giving the pages that deletes freed inside the database back
 * to the disk (fs.h: fs_vacuum), mounted or not.  Called by compact.c
 * (`atrium-fs compact` on an unmounted database) and control_socket.c (the same
 * command through a mounted daemon).
 *
 * Why: SQLite keeps freed pages in the file for later writes (space.c
 * counts them as free room), so a workspace that once held a big file
 * stays that big on the disk.  mkfs sets auto_vacuum=INCREMENTAL (core.c):
 * `PRAGMA incremental_vacuum(N)` moves up to N pages from the end of the
 * file into free ones and shortens the database; in WAL mode the file is
 * cut at the first checkpoint that copies every frame after it.
 *
 * How: batches of VACUUM_BATCH_PAGES, each an ordinary operation of the
 * group transaction (db.c) under fs->lock, with the lock released for at
 * least VACUUM_PAUSE_MS between two, so a request waits at most one batch
 * (moving 1 MiB of pages: milliseconds on a warm cache), as the reclaimer
 * does (reclaim.c); a crash keeps or loses whole batches, and every one
 * leaves a consistent database.  At the end the group is committed and
 * checkpointed under the lock, so the file is cut before the command
 * returns.  SQLite cuts it only at a checkpoint that copies the whole WAL,
 * which a reader still in a request begun before the last commit prevents
 * (its snapshot needs the frames before it; readers.c ends it when the
 * request does): the commit and checkpoint are tried again, the lock
 * released for VACUUM_PAUSE_MS between two, up to VACUUM_FINISH_TRIES
 * times.  It stops when nothing is free, or when a batch gives nothing
 * back.
 */
#include "fs_int.h"

#include <errno.h>
#include <time.h>

/* Pages moved per batch: 1 MiB of 4 KiB pages. */
#define VACUUM_BATCH_PAGES 256
#define VACUUM_STR_(x) #x
#define VACUUM_STR(x) VACUUM_STR_(x)
#define VACUUM_PAUSE_MS 2
/* Checkpoints tried at the end, at most: about a second of readers. */
#define VACUUM_FINISH_TRIES 500
/* SQLite's auto_vacuum value for INCREMENTAL. */
#define VACUUM_INCREMENTAL 2

/* One integer from a pragma (fs->lock held), or -errno. */
static int64_t
vacuum_pragma(struct fs *fs, const char *sql)
{
	sqlite3_stmt *st = db_stmt(fs, sql);
	int64_t v;
	int rc;

	if (!st)
		return -EIO;
	rc = sqlite3_step(st);
	v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? v : db_errno(fs, rc, sql);
}

/* Run the pragma that moves VACUUM_BATCH_PAGES pages: it returns a row
 * per page moved, so it is stepped to its end.  0 or -errno. */
static int
vacuum_pages(struct fs *fs)
{
	static const char sql[] = "PRAGMA incremental_vacuum("
	    VACUUM_STR(VACUUM_BATCH_PAGES) ")";
	sqlite3_stmt *st = db_stmt(fs, sql);
	int rc;

	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		;
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : db_errno(fs, rc, sql);
}

/* One batch under fs->lock: the free pages left after it into *left.  0
 * or -errno. */
static int
vacuum_batch(struct fs *fs, int64_t *left)
{
	int64_t page = vacuum_pragma(fs, "PRAGMA page_size");
	int r;

	if (page < 0)
		return (int)page;
	/* An operation that frees, as a reclaim batch is: admitted on a full
	 * disk, where giving pages back matters most, and may use the
	 * reserve (space.c); near full it commits alone. */
	if ((r = db_op_begin(fs, 0, VACUUM_BATCH_PAGES * (uint64_t)page)) < 0)
		return r;
	r = vacuum_pages(fs);
	if ((r = db_op_end(fs, r)) < 0)
		return r;
	*left = vacuum_pragma(fs, "PRAGMA freelist_count");
	return *left < 0 ? (int)*left : 0;
}

/* Sleep ms milliseconds. */
static void
vacuum_sleep(long ms)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Commit what the batches did (and what other operations did since) and
 * checkpoint it all.  1 when the whole WAL was copied, so the file is cut;
 * 0 when a reader's snapshot kept some of it; -errno. */
static int
vacuum_checkpoint(struct fs *fs)
{
	int r, rc, log = 0, copied = 0;

	fs_lock(fs);
	if ((r = db_commit(fs, 0)) == 0) {
		rc = sqlite3_wal_checkpoint_v2(fs->db, NULL,
		    SQLITE_CHECKPOINT_PASSIVE, &log, &copied);
		if (rc != SQLITE_OK && rc != SQLITE_BUSY)
			r = db_errno(fs, rc, "checkpointing after a compact");
		else
			r = rc == SQLITE_OK && copied == log;
	}
	fs_unlock(fs);
	return r;
}

/* Checkpoint until the file is cut (see the head).  0 or -errno; a file
 * that readers kept from being cut meanwhile is cut by a later
 * checkpoint. */
static int
vacuum_finish(struct fs *fs)
{
	int r;

	for (int tries = 1; (r = vacuum_checkpoint(fs)) == 0; tries++) {
		if (tries == VACUUM_FINISH_TRIES) {
			log_warn("compact: readers kept the WAL from being "
			    "copied whole; the file is cut at a later "
			    "checkpoint");
			break;
		}
		vacuum_sleep(VACUUM_PAUSE_MS);
	}
	return r < 0 ? r : 0;
}

/* Give the free pages of fs's database back to the disk, in batches (see
 * the head): the pages given back, or -EOPNOTSUPP for a database without
 * the pointer map (auto_vacuum not INCREMENTAL: only a VACUUM of the
 * unmounted file shrinks it), or -errno. */
int64_t
fs_vacuum(struct fs *fs)
{
	int64_t start, left, before, mode;
	int r = 0;

	fs_lock(fs);
	mode = vacuum_pragma(fs, "PRAGMA auto_vacuum");
	start = left = vacuum_pragma(fs, "PRAGMA freelist_count");
	fs_unlock(fs);
	if (mode < 0 || start < 0)
		return mode < 0 ? mode : start;
	if (mode != VACUUM_INCREMENTAL)
		return -EOPNOTSUPP;
	while (left > 0 && r == 0) {
		before = left;
		fs_lock(fs);
		r = vacuum_batch(fs, &left);
		fs_unlock(fs);
		if (r == 0 && left >= before)
			break;              /* nothing moved: do not loop */
		vacuum_sleep(VACUUM_PAUSE_MS);
	}
	if (r == 0)
		r = vacuum_finish(fs);
	return r < 0 ? r : start - left;
}
