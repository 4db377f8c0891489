/*
 * db.c: the SQLite connection of a mounted filesystem: statement cache,
 * error mapping and grouped transactions.  Called by the other core files
 * with fs->lock held.
 *
 * Grouped commits: a FUSE write is at most 1 MiB and often 4 KiB; one
 * transaction (and WAL frame set) per request would dominate the cost.  So
 * the first mutating operation opens a transaction (BEGIN IMMEDIATE) that
 * stays open across operations; each operation runs in a savepoint inside it
 * (db_op_begin / db_op_end), so a failed operation rolls back alone and every
 * commit boundary falls between whole operations.  The transaction commits
 * when it is DB_COMMIT_MS old or has DB_COMMIT_OPS operations, when the
 * committer thread finds it idle, on fsync (durably), and on close.  A crash
 * loses at most the last uncommitted group, never consistency.
 *
 * All reads and writes use the one connection, so readers see the open
 * transaction's changes.  synchronous=NORMAL in WAL mode; fsync commits and
 * then syncs the WAL file, so what fsync returned for is on disk.
 */
#include "fs_int.h"

#include <errno.h>
#include <time.h>

#define DB_COMMIT_MS 250
#define DB_COMMIT_OPS 20000

/* Wall-clock time in nanoseconds since the epoch. */
int64_t
fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Monotonic milliseconds. */
static long long
db_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Map an SQLite result code to -errno, logging what failed. */
int
db_errno(struct fs *fs, int rc, const char *what)
{
	int prim = rc & 0xff;

	log_error("%s: %s (%s)", what, sqlite3_errstr(rc),
	    fs && fs->db ? sqlite3_errmsg(fs->db) : "");
	switch (prim) {
	case SQLITE_FULL: return -ENOSPC;
	case SQLITE_NOMEM: return -ENOMEM;
	case SQLITE_BUSY: case SQLITE_LOCKED: return -EBUSY;
	case SQLITE_READONLY: return -EROFS;
	case SQLITE_TOOBIG: return -EFBIG;
	case SQLITE_CONSTRAINT: return -EEXIST;
	default: return -EIO;
	}
}

/* The cached prepared statement for sql (a string literal), reset and with
 * its bindings cleared; NULL (logged) on failure. */
sqlite3_stmt *
db_stmt(struct fs *fs, const char *sql)
{
	sqlite3_stmt *st;
	int i, rc;

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

/* Start a mutating operation: open the group transaction if needed and a
 * savepoint for this operation.  0 or -errno (-EROFS when read-only). */
int
db_op_begin(struct fs *fs)
{
	int r;

	if (fs->readonly)
		return -EROFS;
	if (!fs->txn_open) {
		if ((r = db_exec(fs, "BEGIN IMMEDIATE")) < 0)
			return r;
		fs->txn_open = 1;
		fs->txn_start_ms = db_mono_ms();
		fs->txn_ops = 0;
	}
	return db_exec(fs, "SAVEPOINT op");
}

/* End the operation begun by db_op_begin: keep its changes when rc >= 0,
 * undo them otherwise; commit the group when it is due.  Returns rc. */
int
db_op_end(struct fs *fs, int rc)
{
	if (rc < 0)
		db_exec(fs, "ROLLBACK TO op");
	db_exec(fs, "RELEASE op");
	fs->txn_ops++;
	if (fs->txn_ops >= DB_COMMIT_OPS ||
	    db_mono_ms() - fs->txn_start_ms >= DB_COMMIT_MS)
		db_commit(fs, 0);
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

/* Commit the open group transaction, if any; durably when full.  On failure
 * the group is rolled back and -errno returned. */
int
db_commit(struct fs *fs, int full)
{
	int r = 0;

	if (fs->txn_open) {
		r = db_exec(fs, "COMMIT");
		if (r < 0) {
			log_error("commit of %u operations failed; they are lost",
			    fs->txn_ops);
			db_exec(fs, "ROLLBACK");
		}
		fs->txn_open = 0;
	}
	if (r == 0 && full && !fs->readonly)
		r = db_sync_wal(fs);
	return r;
}

/* Finalize every cached statement. */
void
db_stmts_free(struct fs *fs)
{
	for (int i = 0; i < fs->nstmts; i++)
		sqlite3_finalize(fs->stmts[i].st);
	fs->nstmts = 0;
}

/* Connection settings every opener uses: WAL, a busy timeout, a big cache. */
int
db_configure(sqlite3 *db)
{
	static const char sql[] =
	    "PRAGMA journal_mode=WAL;"
	    "PRAGMA synchronous=NORMAL;"
	    "PRAGMA cache_size=-65536;"
	    "PRAGMA temp_store=MEMORY;"
	    "PRAGMA journal_size_limit=67108864;";
	char *err = NULL;

	sqlite3_busy_timeout(db, 10000);
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		log_error("configuring the database: %s", err ? err : "?");
		sqlite3_free(err);
		return -EIO;
	}
	return 0;
}
