/*
 * db.c: the SQLite connection of a mounted filesystem: statement cache,
 * error mapping, grouped transactions and what happens when the disk is
 * full.  Called by the other core files with fs->lock held.
 *
 * Grouped commits: a FUSE write is at most 1 MiB and often 4 KiB; one
 * transaction (and WAL frame set) per request would dominate the cost.  So
 * the first mutating operation opens a transaction (BEGIN IMMEDIATE) that
 * stays open across operations; each operation runs in a savepoint inside it
 * (db_op_begin / db_op_end), so a failed operation rolls back alone and every
 * commit boundary falls between whole operations.  The transaction commits
 * when it is DB_COMMIT_MS old, has DB_COMMIT_OPS operations or
 * DB_COMMIT_BYTES of data, when the committer thread finds it idle, on fsync
 * (durably), and on close.  A crash loses at most the last uncommitted group,
 * never consistency.
 *
 * Changes, and reads of what the open group touched, use the one
 * connection, so they see the open transaction's changes; other reads run
 * on read-only connections of their own (readers.c), which hear when a
 * group ends (through fs->policy, below).  WAL checkpoints use another too: while the
 * committer runs, checkpoint.c takes them out of COMMIT and runs them on a
 * connection of its own without fs->lock.  A background delete
 * (reclaim.c) is an ordinary operation of a group, a batch at a time.
 * synchronous=NORMAL in WAL mode; fsync commits and then syncs the WAL
 * file, so what fsync returned for is on disk.
 *
 * Layers.  db.c is the bottom of the core: it calls SQLite and nothing of
 * fs/ above it.  What the layers above must hear of or decide (room on the
 * disk, deletes still pending, the quota, the pooled readers) goes through
 * fs->policy (fs_int.h: struct db_policy; db_policy.c fills it from
 * space.c, reclaim.c, quota.c and readers.c), which fs_open sets.  Those
 * files, and every other file of the core, call down into this one.  Of
 * their state db.c reads one flag, fs->space_low (space.c sets it: near
 * full, commit each operation alone).
 *
 * A full disk.  The promise: a full disk gives ENOSPC to the writer, never
 * a corrupt database, and nothing a writer was told had succeeded is lost
 * without the mount saying so.  The difficulty: the operations of a group
 * were answered before their commit, and SQLite cannot keep a transaction
 * whose writing failed: SQLITE_FULL (or an I/O error) while writing pages to
 * the WAL, at COMMIT or when a big transaction spills its cache, rolls the
 * whole transaction back.  A failed commit cannot be retried later, so
 * everything below is about never letting a commit fail with answered work
 * in it, and about saying so loudly when it happens anyway:
 *
 *  1. Room is checked before work is accepted (space.c): a growing
 *     operation (write, create, mkdir, link, symlink, rename, setxattr,
 *     fallocate) that would leave less than a reserve free gets ENOSPC
 *     before it touches the database.  Operations that free space (unlink,
 *     rmdir, truncate, chmod, removexattr) may use the reserve, as may
 *     SQLite's checkpoints, so the user can always delete to make room.
 *     Free room counts the database's own free pages, which new data reuses,
 *     so deleting a file makes room even though the file does not shrink.
 *  2. The room a group's commit will write to the WAL is reserved
 *     (fallocate past the WAL's end) as each operation is admitted, so the
 *     commit finds it even if another program fills the disk meanwhile; an
 *     operation that cannot reserve its share gets ENOSPC (a freeing one
 *     runs alone instead, see 3).
 *  3. Near full (less than SPACE_LOW_MARGIN above the reserve), and where
 *     the WAL's filesystem cannot preallocate, each operation is committed
 *     alone before it is answered.  A commit that fails then rolls back only
 *     that operation, whose caller gets ENOSPC; nothing answered is in the
 *     transaction.
 *  4. If a commit (or a statement, on a cache spill) fails anyway with
 *     answered operations in the group, they are lost: the mount enters a
 *     failed state, logged once, in which every change and every fsync
 *     returns EIO until the workspace is remounted (so does a close that
 *     still writes data or times back: those are changes; fuse_ops.c).
 *     It cannot go on serving: the kernel has cached names, inodes and
 *     pages that no longer exist in the database, and inode numbers
 *     would be handed out again.  A failed WAL sync does the same:
 *     after a failed fsync nothing committed can be vouched for.
 *  5. A statement cannot run outside the group by accident: once SQLite has
 *     rolled the group back under an operation, db_stmt refuses statements
 *     until the operation ends, so no half operation is ever committed.
 * What fsync returned 0 for was committed and synced before, and SQLite
 * never loses committed data on ENOSPC, so it survives all of this.
 */
#include "fs_int.h"

#include <errno.h>
#include <time.h>

#include "util.h"

#define DB_COMMIT_MS 250
#define DB_COMMIT_OPS 20000
/* WAL bytes a group may need (its reservation) before it commits: well
 * under the page cache (64 MiB), so SQLite does not spill a group to the
 * WAL early, and well under SPACE_LOW_MARGIN (space.c). */
#define DB_COMMIT_BYTES (16u << 20)

/* Wall-clock time in nanoseconds since the epoch. */
int64_t
fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* -errno for an SQLite result code and the system errno behind it (SQLite
 * reports some ENOSPC as I/O errors, e.g. when growing the -shm file). */
int
db_errno_map(int rc, int sys_errno)
{
	switch (rc & 0xff) {
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_IOERR:
		return sys_errno == ENOSPC || sys_errno == EDQUOT ? -ENOSPC : -EIO;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_BUSY: case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_READONLY: return -EROFS;
	case SQLITE_TOOBIG: return -EFBIG;
	case SQLITE_CONSTRAINT: return -EEXIST;
	default: return -EIO;
	}
}

/* Map an SQLite result code to -errno and remember it; log what failed,
 * except a full disk, which space.c reports once rather than per statement. */
int
db_errno(struct fs *fs, int rc, const char *what)
{
	int sys = fs && fs->db ? sqlite3_system_errno(fs->db) : 0;
	int r = db_errno_map(rc, sys);

	if (r != -ENOSPC)
		log_error("%s: %s (%s)", what, sqlite3_errstr(rc),
		    fs && fs->db ? sqlite3_errmsg(fs->db) : "");
	if (fs)
		fs->last_err = r;
	return r;
}

/* The cached prepared statement for sql (a string literal), reset and with
 * its bindings cleared; NULL (logged) on failure. */
sqlite3_stmt *
db_stmt(struct fs *fs, const char *sql)
{
	sqlite3_stmt *st;
	int i, rc;

	/* Inside an operation SQLite is always in the group transaction; out
	 * of it, SQLite rolled the group back (full disk, I/O error), and a
	 * statement now would commit on its own, half an operation. */
	if (fs->in_op && sqlite3_get_autocommit(fs->db))
		return NULL;
	for (i = 0; i < fs->nstmts; i++) {
		if (fs->stmts[i].sql == sql) {
			st = fs->stmts[i].st;
			sqlite3_reset(st);
			sqlite3_clear_bindings(st);
			return st;
		}
	}
	rc = sqlite3_prepare_v3(fs->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
	    NULL);
	if (rc != SQLITE_OK) {
		db_errno(fs, rc, sql);
		return NULL;
	}
	if (fs->nstmts < FS_STMT_MAX) {
		fs->stmts[fs->nstmts].sql = sql;
		fs->stmts[fs->nstmts++].st = st;
	} else {
		/* Cache full (a bug: raise FS_STMT_MAX); leak-free fallback. */
		log_error("statement cache full; raise FS_STMT_MAX");
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

/* Step a statement that returns no rows: 0 or -errno. */
int
db_done(struct fs *fs, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return db_errno(fs, rc, sqlite3_sql(st));
	return 0;
}

/* Run a cached statement without bindings: 0 or -errno. */
int
db_exec(struct fs *fs, const char *sql)
{
	sqlite3_stmt *st = db_stmt(fs, sql);

	return st ? db_done(fs, st) : -EIO;
}

/* Enter the sticky failed state, once, saying what was lost (lost answered
 * operations, or 0 when a sync failed).  Every change and fsync then gets
 * EIO until the workspace is remounted. */
static void
db_fail(struct fs *fs, int r, unsigned lost)
{
	const char *todo = r == -ENOSPC ?
	    "free space on the disk holding it, then remount it" :
	    "check that disk (dmesg), then remount it";

	if (fs->failed)
		return;
	/* Atomic: fs_error reads it without fs->lock. */
	__atomic_store_n(&fs->failed, -EIO, __ATOMIC_RELEASE);
	if (lost)
		log_error("%s: %s while saving the last %u changes, which were "
		    "already answered: they are lost.  The workspace is read-only "
		    "from now on (changes and fsync get EIO); %s", fs->path,
		    strerror(-r), lost, todo);
	else
		log_error("%s: %s while syncing to disk: committed changes may not "
		    "be on disk.  The workspace is read-only from now on (changes "
		    "and fsync get EIO); %s", fs->path, strerror(-r), todo);
}

/* The group transaction is gone (rolled back by SQLite or by us) with the
 * first `answered` of its operations already answered: forget it, and fail
 * the mount if that lost answered work. */
static void
db_group_lost(struct fs *fs, int r, unsigned answered)
{
	fs->policy->group_ended(fs);
	fs->txn_open = 0;
	fs->txn_ops = 0;
	fs->txn_need = 0;
	if (answered > 0)
		db_fail(fs, r, answered);
	else if (r == -ENOSPC)
		fs->policy->disk_full(fs);
}

/* 1 when our idea of the group transaction holds; 0 when SQLite rolled it
 * back on its own (it does so on SQLITE_FULL or an I/O error while writing
 * pages), after accounting for the loss. */
static int
db_group_alive(struct fs *fs)
{
	if (!fs->txn_open || !sqlite3_get_autocommit(fs->db))
		return 1;
	db_group_lost(fs, fs->last_err < 0 ? fs->last_err : -EIO, fs->txn_ops);
	return 0;
}

/* Commit the group; `unanswered` of its operations (0 or the last one) have
 * not been answered yet and will be told the result.  0, or -ENOSPC/-errno
 * when it failed and lost only unanswered work, or -EIO (failed state). */
static int
db_commit_group(struct fs *fs, int unanswered)
{
	unsigned answered;
	int r;

	if (!db_group_alive(fs) || !fs->txn_open)
		return fs->failed;
	answered = fs->txn_ops - (unsigned)unanswered;
	if ((r = db_exec(fs, "COMMIT")) == 0) {
		/* After COMMIT returned: pooled reads see the group now. */
		fs->policy->group_ended(fs);
		fs->txn_open = 0;
		fs->txn_ops = 0;
		fs->txn_need = 0;
		return 0;
	}
	/* A COMMIT that fails writing rolls back (sqlite3VdbeHalt); if this
	 * one did not, do it: a half-kept group could not be answered for. */
	if (!sqlite3_get_autocommit(fs->db))
		db_exec(fs, "ROLLBACK");
	db_group_lost(fs, r, answered);
	return fs->failed ? fs->failed : r;
}

/* Start a mutating operation that may add up to grow bytes (0 for one that
 * only frees or rewrites) and delete up to frees bytes: the room checked
 * and reserved (fs->policy->admit), open the group transaction if needed and a savepoint
 * for this operation.  0, -EROFS (read-only), -EIO (failed state), -ENOSPC
 * (no room) or -errno. */
int
db_op_begin(struct fs *fs, uint64_t grow, uint64_t frees)
{
	int64_t need = 0;
	int r;

	if (fs->readonly)
		return -EROFS;
	db_group_alive(fs);     /* a read may have lost it (a cache spill) */
	if (fs->failed)
		return fs->failed;
	if ((r = fs->policy->admit(fs, grow, frees, &need)) < 0)
		return r;
	/* Near full, each operation commits alone before it is answered, so
	 * a commit that fails for room fails only that operation. */
	if (fs->space_low && fs->txn_open && (r = db_commit_group(fs, 0)) < 0)
		return r;
	if (!fs->txn_open) {
		if ((r = db_exec(fs, "BEGIN IMMEDIATE")) < 0)
			return r;
		fs->txn_open = 1;
		fs->txn_start_ms = time_mono_ms();
		fs->txn_ops = 0;
		fs->txn_need = 0;
	}
	if ((r = db_exec(fs, "SAVEPOINT op")) < 0) {
		db_group_alive(fs);
		return fs->failed ? fs->failed : r;
	}
	fs->txn_need += need;
	fs->last_err = 0;
	fs->in_op = 1;
	fs->policy->op_begun(fs);
	return 0;
}

/* 1 when the open group is due for a commit. */
static int
db_group_due(struct fs *fs)
{
	return fs->space_low || fs->txn_ops >= DB_COMMIT_OPS ||
	    fs->txn_need >= DB_COMMIT_BYTES ||
	    time_mono_ms() - fs->txn_start_ms >=
	    (fs->txn_max_ms ? fs->txn_max_ms : DB_COMMIT_MS);
}

/* The body of db_op_end, the policy's check aside. */
static int
db_op_finish(struct fs *fs, int rc)
{
	int lost = fs->last_err < 0 ? fs->last_err : -EIO;
	int r;

	fs->in_op = 0;
	if (!db_group_alive(fs))
		return fs->failed ? fs->failed : rc < 0 ? rc : lost;
	if (rc < 0)
		db_exec(fs, "ROLLBACK TO op");
	db_exec(fs, "RELEASE op");
	if (!db_group_alive(fs))
		return fs->failed ? fs->failed : rc < 0 ? rc : lost;
	if (rc >= 0)
		fs->txn_ops++;
	if (db_group_due(fs) && (r = db_commit_group(fs, rc >= 0)) < 0 &&
	    rc >= 0)
		rc = r;
	return rc;
}

/* End the operation begun by db_op_begin: keep its changes when rc >= 0
 * and fs->policy->op_check lets it (else its -errno: -EDQUOT), undo them
 * otherwise; commit the group when it is due (always when near full).
 * Returns rc, or the error that undid the operation after all: -EDQUOT,
 * -ENOSPC when only it was lost, -EIO when answered work was (failed). */
int
db_op_end(struct fs *fs, int rc)
{
	int r;

	if (rc >= 0 && (r = fs->policy->op_check(fs)) < 0)
		rc = r;
	rc = db_op_finish(fs, rc);
	fs->policy->op_ended(fs, rc >= 0);
	return rc;
}

/* Make what is committed durable: sync the WAL (synchronous=NORMAL leaves
 * that to checkpoints).  0 or -errno. */
static int
db_sync_wal(struct fs *fs)
{
	sqlite3_file *wal = NULL;
	int rc;

	rc = sqlite3_file_control(fs->db, "main", SQLITE_FCNTL_JOURNAL_POINTER,
	    &wal);
	if (rc != SQLITE_OK || !wal || !wal->pMethods)
		return 0;
	rc = wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
	return rc == SQLITE_OK ? 0 : db_errno(fs, rc, "syncing the WAL");
}

/* Commit the open group (every operation in it was answered), durably when
 * full.  0, or -EIO once the mount has failed: the sticky error that every
 * later fsync returns too, as the kernel's errseq does. */
int
db_commit(struct fs *fs, int full)
{
	int r;

	if (fs->failed)
		return fs->failed;
	if ((r = db_commit_group(fs, 0)) < 0)
		return r;
	if (full && !fs->readonly && (r = db_sync_wal(fs)) < 0) {
		/* After a failed fsync the kernel may have dropped the pages:
		 * a later sync could succeed without them (as PostgreSQL
		 * learnt), so nothing committed can be vouched for now. */
		db_fail(fs, r, 0);
		return fs->failed;
	}
	return 0;
}

/* Open one read transaction for the statements of a read, unless a group
 * is open (then they are in it): each statement run on its own takes and
 * drops SQLite's locks and checks the files, and a 4 KiB read made 6 fcntl
 * and 3 fstat calls where it now makes 2 and 1.  What to pass to
 * db_read_end. */
int
db_read_begin(struct fs *fs)
{
	return sqlite3_get_autocommit(fs->db) && db_exec(fs, "BEGIN") == 0;
}

/* End what db_read_begin opened (began: its result). */
void
db_read_end(struct fs *fs, int began)
{
	if (began && db_exec(fs, "COMMIT") < 0)
		db_exec(fs, "ROLLBACK");
}

/* Finalize every cached statement. */
void
db_stmts_free(struct fs *fs)
{
	for (int i = 0; i < fs->nstmts; i++)
		sqlite3_finalize(fs->stmts[i].st);
	fs->nstmts = 0;
}

/* Connection settings every opener uses: WAL, a busy timeout, a big cache.
 * secure_delete is off: Debian builds SQLite with it on, which overwrites
 * every freed page, so deleting a 300 MB file wrote 300 MB into the WAL
 * (and could fail on a full disk, where deleting must always work). */
int
db_configure(sqlite3 *db)
{
	static const char sql[] =
	    "PRAGMA journal_mode=WAL;"
	    "PRAGMA synchronous=NORMAL;"
	    "PRAGMA cache_size=-65536;"
	    "PRAGMA temp_store=MEMORY;"
	    "PRAGMA journal_size_limit=67108864;"
	    "PRAGMA secure_delete=OFF;";
	char *err = NULL;

	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		log_error("configuring the database: %s", err ? err : "?");
		sqlite3_free(err);
		return -EIO;
	}
	return 0;
}
