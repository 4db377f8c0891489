/*
 * checkpoint.c: WAL checkpoints outside fs->lock.  Called by core.c: the
 * committer thread starts, runs and stops it.
 *
 * Why: SQLite checkpoints at the commit that takes the WAL past 1000 pages
 * (wal_autocheckpoint): it copies them into the database and fsyncs it,
 * 20 to 200 ms on a busy disk, and the commit runs under fs->lock, so every
 * request of the workspace waited for it.  Freeing a big file in the
 * background (reclaim.c) commits often, and its checkpoints were what a
 * stat still waited for.
 *
 * How: while the committer runs, the main connection's WAL hook only notes
 * the WAL's size (fs->wal_pages) and wakes the committer past CKPT_BYTES;
 * the committer then releases fs->lock and runs a PASSIVE checkpoint on a
 * connection of its own (fs->ckpt_db), which copies committed frames while
 * the main connection goes on reading and writing.  SQLite restarts the WAL
 * from its start at the first write transaction after a checkpoint that
 * copied everything.  Should the WAL still grow past CKPT_BYTES_MAX, and
 * whenever the disk is near full (space.c: fs->space_low), the committing
 * thread checkpoints itself at CKPT_BYTES, as SQLite would.  Without the
 * committer (fsck, the unit tests) SQLite's own checkpoints stay.
 *
 * Why CKPT_BYTES_MAX is large (1.25 GiB: a write of 1 GiB and the
 * b-tree and pointer-map pages that come with it, with room to spare): a
 * big write commits a group of 16 MiB every few milliseconds, so the
 * background checkpoint, which copies into the database and syncs it,
 * never finds the WAL all copied at a moment when no group is open, and
 * the WAL only restarts after a checkpoint by the committing thread.  At
 * 64 MiB that happened every 64 MiB of a big write: a 1 GiB write (fio,
 * 1 MiB blocks) spent a third of its time with the writer checkpointing
 * under fs->lock, waiting for the disk to take the database's copy as
 * well as the WAL (2.4 s of 6.5 s, 21 checkpoints, on a loaded machine).
 * With room for 1 GiB, a burst that size is answered at the speed the
 * WAL is written, while the background checkpoint copies behind it on the
 * other core; the WAL restarts after the burst.  A writer
 * that never pauses is still held to what the disk takes for both copies.
 * The WAL keeps its largest size on disk until the first commit after the
 * restart (journal_size_limit cuts it to 64 MiB), and what it holds and
 * the database does not yet is counted against the disk's free room
 * (ckpt_pending_bytes, space.c), so a near-full disk turns to small WALs
 * (fs->space_low) long before a checkpoint could find no room.  Recovery
 * after a crash reads the whole WAL: up to about a second per GiB.
 *
 * Threading: fs->ckpt_db is used only by the committer thread, with or
 * without fs->lock; fs->wal_pages, wal_size, wal_backfilled and
 * ckpt_failed only under fs->lock.
 */
#include "fs_int.h"

#include <errno.h>

/* WAL sizes, the same whatever the database's page size: checkpoint in the
 * background past CKPT_BYTES (SQLite's default of 1000 pages of 4 KiB),
 * and in the committing thread, under the lock, past CKPT_BYTES_MAX (see
 * the top) or, near a full disk, past CKPT_BYTES.  In bytes so that a
 * database with bigger pages checkpoints as often, not four times less
 * often with a four times longer wait under the lock. */
#define CKPT_BYTES (4000 << 10)
#define CKPT_BYTES_MAX (1280 << 20)

/* The main connection's WAL hook (after each commit, fs->lock held). */
static int
ckpt_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
	struct fs *fs = arg;

	if (pages < fs->wal_size)
		fs->wal_backfilled = 0;         /* the WAL restarted */
	fs->wal_size = pages;
	fs->wal_pages = pages;
	if (pages >= fs->ckpt_pages_max ||
	    (pages >= fs->ckpt_pages && fs->space_low)) {
		int logged = -1, copied = -1;

		if (sqlite3_wal_checkpoint_v2(db, name,
		    SQLITE_CHECKPOINT_PASSIVE, &logged, &copied) == SQLITE_OK &&
		    copied >= 0)
			fs->wal_backfilled = copied;
	} else if (pages >= fs->ckpt_pages)
		pthread_cond_signal(&fs->committer_cond);
	return SQLITE_OK;
}

/* The WAL is part of a room's footprint on the host's disk, and a room
 * with a quota may not have 1.25 GiB of it: under a quota the committing
 * thread checkpoints past an eighth of it (at least CKPT_BYTES_QUOTA_MIN,
 * so that a small room's big write is not all checkpoints), and the WAL
 * then restarts; so it holds at most that and the commit group that took
 * it past (db.c: DB_COMMIT_BYTES).  atrium-fs(8), QUOTA, says so. */
#define CKPT_BYTES_QUOTA_MIN (16 << 20)

void
ckpt_quota_changed(struct fs *fs)
{
	int64_t max = CKPT_BYTES_MAX;

	if (fs->ckpt_page_size <= 0)
		return;
	if (fs->quota_bytes > 0 && fs->quota_bytes / 8 < max)
		max = fs->quota_bytes / 8 > CKPT_BYTES_QUOTA_MIN ?
		    fs->quota_bytes / 8 : CKPT_BYTES_QUOTA_MIN;
	fs->ckpt_pages_max = (int)(max / fs->ckpt_page_size);
}

/* The thresholds in pages of this database (fs->lock held).  0 or -EIO. */
static int
ckpt_sizes(struct fs *fs)
{
	sqlite3_stmt *st = db_stmt(fs, "PRAGMA page_size");
	int psize = 0;

	if (st && sqlite3_step(st) == SQLITE_ROW)
		psize = sqlite3_column_int(st, 0);
	if (st)
		sqlite3_reset(st);
	if (psize <= 0)
		return -EIO;
	fs->ckpt_page_size = psize;
	fs->ckpt_pages = CKPT_BYTES / psize;
	ckpt_quota_changed(fs);
	return 0;
}

/* Open the checkpointing connection and take the checkpoints over from
 * SQLite (fs->lock held).  0 or -errno; on failure SQLite's stay. */
int
ckpt_start(struct fs *fs)
{
	int rc, r;

	if (fs->readonly || fs->ckpt_db)
		return 0;
	if ((r = ckpt_sizes(fs)) < 0)
		return r;
	/* Through walbuf.c, which writes the pages a checkpoint appends in
	 * big pieces. */
	rc = sqlite3_open_v2(fs->path, &fs->ckpt_db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, walbuf_vfs_name());
	if (rc != SQLITE_OK) {
		log_warn("%s: no connection for checkpoints (%s); SQLite "
		    "checkpoints as it commits", fs->path, sqlite3_errstr(rc));
		sqlite3_close(fs->ckpt_db);
		fs->ckpt_db = NULL;
		return -EIO;
	}
	/* A connection that has read nothing has not opened the WAL yet, and
	 * SQLite (3.40) takes a checkpoint request on it for "not in WAL
	 * mode": it does nothing and returns SQLITE_OK (and -1 frames).  So
	 * every checkpoint was left to the committing thread, under the lock,
	 * at CKPT_BYTES_MAX.  One read of the header opens the WAL. */
	rc = sqlite3_exec(fs->ckpt_db, "PRAGMA schema_version", NULL, NULL, NULL);
	if (rc == SQLITE_OK && fs_keep_wal(fs, fs->ckpt_db) < 0)
		rc = SQLITE_IOERR;
	if (rc != SQLITE_OK) {
		log_warn("%s: the checkpoint connection cannot read (%s); SQLite "
		    "checkpoints as it commits", fs->path, sqlite3_errstr(rc));
		sqlite3_close(fs->ckpt_db);
		fs->ckpt_db = NULL;
		return -EIO;
	}
	sqlite3_wal_hook(fs->db, ckpt_hook, fs);
	return 0;
}

/* Give the checkpoints back to SQLite and close the connection (fs->lock
 * held).  Accepts a stopped one. */
void
ckpt_stop(struct fs *fs)
{
	if (!fs->ckpt_db)
		return;
	sqlite3_wal_autocheckpoint(fs->db, fs->ckpt_pages);
	sqlite3_close(fs->ckpt_db);
	fs->ckpt_db = NULL;
}

/* Checkpoint if the WAL has grown past CKPT_BYTES, with fs->lock released
 * meanwhile (held on entry and on return). */
void
ckpt_run(struct fs *fs)
{
	int rc, logged = -1, copied = -1;

	if (!fs->ckpt_db || fs->wal_pages < fs->ckpt_pages)
		return;
	fs->wal_pages = 0;
	fs_unlock(fs);
	rc = sqlite3_wal_checkpoint_v2(fs->ckpt_db, "main",
	    SQLITE_CHECKPOINT_PASSIVE, &logged, &copied);
	fs_lock(fs);
	/* What it copied counts only in the WAL it copied from: not when the
	 * writer restarted the WAL meanwhile (it is shorter now). */
	if (rc == SQLITE_OK && copied >= 0 && logged <= fs->wal_size) {
		fs->wal_backfilled = copied;
		if (copied == logged && logged > 0)
			readers_wal_copied(fs);
	}
	if (rc != SQLITE_OK && rc != SQLITE_BUSY && !fs->ckpt_failed)
		log_warn("%s: checkpoint: %s (tried again as the WAL grows)",
		    fs->path, sqlite3_errstr(rc));
	fs->ckpt_failed = rc != SQLITE_OK && rc != SQLITE_BUSY;
}

/* Bytes the WAL holds that are not in the database yet (fs->lock held): at
 * most what copying them will add to the database.  0 without the
 * committer, where SQLite checkpoints every 1000 pages itself. */
int64_t
ckpt_pending_bytes(const struct fs *fs)
{
	int pending = fs->wal_size - fs->wal_backfilled;

	if (!fs->ckpt_db || pending <= 0)
		return 0;
	return (int64_t)pending * fs->ckpt_page_size;
}
