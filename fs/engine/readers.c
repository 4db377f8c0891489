/*
 * readers.c: reads that never wait for a writer or an fsync.  A pool of
 * read-only SQLite connections (WAL snapshots of the committed state), and
 * the set of inodes the open group has touched, which says when such a
 * snapshot may answer.  Told when a group ends by db_policy.c (as db.c
 * reports it), and called by core.c and xattr.c: each read-side fs_*
 * call (getattr, lookup, read, readlink, readdir, getxattr of an inode
 * that has attributes) tries here first, without
 * fs->lock, and does the read on the writer's connection under fs->lock
 * when this file answers READERS_ASK_WRITER.  The SQL of each read and the
 * decoding of its rows are the writer's own (inode_get_on, core_readlink_on,
 * xattr_get_on, chunks_read_on): they take a statement prepared on the
 * caller's connection, so both paths read alike while each connection
 * keeps its own statement cache.
 *
 * The threading model of atrium-fs (db.c owns the commit rules, this file
 * the rest):
 *   - The writer: one connection (fs->db) behind fs->lock, for every
 *     change, commit and fsync, for the committer and the reclaimer, and for
 *     every read this file turns away.  libfuse's worker threads (up to 16)
 *     serve requests; a change waits for fs->lock, a read normally not.
 *   - The readers: up to READERS_MAX connections, opened read-only on first
 *     need through readahead.c's VFS (which reads the database file ahead
 *     within one read transaction, in a buffer of the connection's own),
 *     each used by one thread at a time (taken from and given back to
 *     a free list under pool_lock, the readers that keep more pages
 *     first; with all of them busy a reader waits for
 *     another reader, never for the writer).  A pooled read runs in the
 *     reader's read transaction (BEGIN ... COMMIT), one WAL snapshot,
 *     which the reader keeps for its next requests while no group has
 *     ended (beginning and ending one cost three system calls, as many as
 *     the rest of a 4 KiB read): it ends when a group ends, at once for a
 *     free reader (readers_group_end, under fs->lock and pool_lock) and at
 *     the end of its request for one in use, so no snapshot outlives the
 *     group after it by more than a request.  It ends the same way when a
 *     checkpoint has copied the whole WAL (readers_wal_copied): a
 *     snapshot begun then reads the database file alone, without looking
 *     each page up in the WAL's index first (a quarter more 4 KiB random
 *     reads per second after a big write), and no longer keeps the writer
 *     from starting the WAL again from its start.
 *   - What a reader remembers, in its struct, of the last file it read:
 *     its mode and size, and where each of its first READERS_MAP_CHUNKS
 *     chunks is (block and length, or a hole), so that a random read of a
 *     big file runs no statement but the blob read.  The rule: it is what
 *     the reader's current snapshot says, and it is forgotten when that
 *     snapshot ends (an epoch that moves with each BEGIN, and with each
 *     other file).  Answers built from it are checked like any other
 *     (readers_clean), so it changes no answer, only how it is found.
 *   - The touched set, under touched_lock: every inode whose inodes row the
 *     open group has inserted, updated or deleted, and seq, which moves on
 *     each time a group ends (committed or given up, db.c).  The writer
 *     connection's update hook adds each row as it is written, so before
 *     the operation is answered.
 *
 * Who answers a read, from the kernel down (the rule issue after issue
 * has to keep):
 *   1. The kernel's page cache, for file bytes (keep_cache, the writeback
 *      cache).  This daemon is the only way to the data, so the cache is
 *      never older than the last completed write: writes land in it first.
 *      The kernel drops or launders its own pages around what changes them
 *      here (truncate: invalidate_inode_pages2 after the setattr, which
 *      writes each dirty page back first; fallocate and copy_file_range:
 *      the range written back and dropped), and whatever this daemon
 *      changes behind it (a snapshot restore, control_socket.c; lseek's holes,
 *      fuse_ops.c) it invalidates itself.  A read the cache misses comes
 *      here, after every write-back it depends on has been answered.
 *   2. A pooled reader, under the one rule below.
 *   3. Otherwise the writer's connection, under fs->lock, which sees the
 *      open group's changes: the newest state there is.
 *
 * The one rule: a pooled read may answer only about inodes the open group
 * has not touched, checked while seq has not moved since before its
 * snapshot was taken.  Data, entries, targets and xattrs follow inode
 * marks: every operation that changes a file's chunks, a directory's
 * entries, a symlink or an xattr marks that inode before it is answered,
 * through its row (its times, or stored through stored.c's triggers,
 * whose writes fire the hook too) or, where it writes no row of main.inodes,
 * with readers_touch.  One path writes none, and marks by hand: a write
 * inside a chunk's length changes the block in place (chunks.c's
 * chunks_patch; incremental blob I/O fires no hook).  A write-back from
 * the kernel's cache that keeps the size writes no inode row itself (the
 * kernel owns the times), so such a patch is then the whole change: left
 * unmarked, it let a kept snapshot answer with the committed bytes from
 * before it (fsx -W -R read stale bytes after a truncate laundered such
 * pages).  A new path that changes data
 * without writing the inode's row must call readers_touch.  A
 * directory's entries are its own: a
 * lookup or readdir needs the directory untouched, readdirplus its entries
 * too (their attributes), a plain readdir only the directory (an entry's
 * type never changes).
 *
 * Why that is enough.  Let s be seq as read before the snapshot (taken for
 * this request or kept from an earlier one).  A change answered before the
 * request began was either committed before the snapshot (which then has
 * it), or committed after it, which ended a group and moved seq past s, or
 * is in the group still open.  That group's inodes leave the set only when
 * it ends, after its COMMIT returned, and seq moves with it: seq still s at
 * the check means no commit since the snapshot and the open group's
 * inodes still in the set, so the read goes to the writer.  A change
 * answered after the request began is concurrent with it, and either
 * answer is right.
 *
 * The races, one by one:
 *   - A write that begins while a pooled read runs is not in its snapshot:
 *     the read answers with what came before (they were concurrent).
 *   - A commit while a pooled read runs moves seq: the check fails and the
 *     writer does the read again (at most once per group for a read).
 *   - Between COMMIT and the clearing of the set a touched inode is still
 *     in it: the read goes to the writer, which sees the same.
 *   - An operation rolled back to its savepoint leaves its marks until the
 *     group ends (too many marks only cost speed).  A group SQLite rolled
 *     back, or the failed state of db.c, ends the group too: the committed
 *     state is then what the writer's connection sees as well.
 *   - Chunks freed (reclaim.c, truncate, unlink) and their pages reused:
 *     the writer writes new pages to the WAL only, a snapshot keeps reading
 *     the frames of its commit, and a checkpoint never copies frames past
 *     the oldest reader's mark into the database, so no snapshot sees a
 *     page change under it.
 *   - Checkpoints (checkpoint.c) are PASSIVE: they stop at readers' marks
 *     and never wait for them.  SQLite starts the WAL again from its start
 *     only when no reader uses it; snapshots end with the group after them,
 *     so the WAL is not held long (a snapshot begun once every frame is
 *     checkpointed reads the database file alone and holds nothing back).
 *   - A kept snapshot's blob handle (reader.blob) keeps the read
 *     transaction open: it is closed before every COMMIT, and after any
 *     error SQLite ended the transaction on (readers_end).
 *   - Lookup counts: a pooled lookup or readdirplus pins the inode before
 *     its check (the pin table has its own lock, fs->pin_lock), so an
 *     unlink racing with it keeps the inode.  When the check then fails the
 *     pin is dropped again (a lookup does the read again on the writer and
 *     drops it through fs_forget; a readdirplus page is finished by the
 *     writer from there, and the pin dropped alone: an inode unlinked in
 *     that instant stays until the reclaimer's next scan or the next
 *     mount, as after a crash).
 *   - More than READERS_TOUCHED_MAX touched inodes: every read goes to the
 *     writer until the group ends.  So does every read once a snapshot
 *     restore has begun (readers_touch_all), which rewrites entries and
 *     chunks of many inodes at once and reads the pins first.
 *   - A reader's SQLite error (busy, I/O, no memory): the writer does the
 *     read, and reports the error if it has it too.
 *
 * Lock order: fs->lock, then touched_lock or fs->pin_lock (each taken
 * alone, never together); fs->lock, then pool_lock (readers_group_end,
 * readers_wal_copied); nothing is taken while pool_lock is held.  None is
 * held across I/O except fs->lock, and pool_lock while those two end free
 * readers' read transactions (no I/O but the -shm lock's fcntl).
 * Memory: each reader has a page cache of READERS_CACHE_KIB, a read-ahead
 * buffer of 64 KiB, kept pages (readahead.c: READERS_KEEP_BIG for the
 * first READERS_BIG readers, READERS_KEEP_SMALL for the others) and a map
 * of 256 KiB of its last file's chunks.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Read-only connections at most: two cores, and more readers than
 * threads that read at once only cost memory. */
#define READERS_MAX 4
/* Each reader's SQLite page cache (file pages are in the kernel's cache).
 * It holds the b-trees' top pages; random reads fill the rest with
 * overflow pages read once, so the pages that find a block (leaves and
 * pointer maps) are kept by readahead.c's VFS instead. */
#define READERS_CACHE_KIB 512
/* Pages that find a block (readahead.c) the first READERS_BIG readers
 * keep, enough for the leaves and pointer maps of a 1 GiB file at 4 KiB
 * pages; and the others.  The free list hands out a big one whenever one
 * is free, so a lone reading thread always has one. */
#define READERS_BIG 2
#define READERS_KEEP_BIG (10u << 20)
#define READERS_KEEP_SMALL (2u << 20)
/* Prepared statements per reader (this file has 12). */
#define READERS_STMTS 16
/* Touched inodes remembered (16 bytes each at most); past it, all of them. */
#define READERS_TOUCHED_MAX (1u << 17)
/* Chunks of the last file read that a reader remembers (16 bytes each):
 * those of a 1 GiB file. */
#define READERS_MAP_CHUNKS 16384

/* Where chunk idx of the reader's file is, as its snapshot has it. */
struct reader_chunk {
	sqlite3_int64 block;      /* 0: a hole */
	uint32_t len;             /* bytes stored */
	uint32_t epoch;           /* valid while the reader's epoch is this */
};

/* One read-only connection and its statements.  Its owner (the request
 * that took it, or under pool_lock, readers_group_end while it is free)
 * alone uses it. */
struct reader {
	sqlite3 *db;
	struct { const char *sql; sqlite3_stmt *st; } stmts[READERS_STMTS];
	int nstmts;
	int in_snap;              /* a read transaction is open (a snapshot) */
	uint64_t snap_seq;        /* seq as read before it began */
	uint64_t snap_copies;     /* wal_copies as read before it began */
	sqlite3_blob *blob;       /* on blocks, in the snapshot, or NULL */
	/* The last file read, as this snapshot has it: a random read of a
	 * big file finds its inode and chunk here instead of running two
	 * statements.  All of it is valid while epoch is unchanged, and
	 * epoch moves with each new snapshot and each other file. */
	uint32_t epoch;
	uint64_t file_ino;        /* the file (0: none) */
	uint32_t file_epoch;      /* its mode and size are of this epoch */
	uint32_t file_mode;
	uint64_t file_size;
	struct reader_chunk *map; /* READERS_MAP_CHUNKS by idx, or NULL */
	int big;                  /* keeps READERS_KEEP_BIG of pages */
	struct reader *next;      /* in the free list */
};

struct readers {
	pthread_mutex_t pool_lock;   /* guards free, nopen, broken */
	pthread_cond_t pool_cond;    /* a reader came back */
	struct reader *free;
	int nopen;                   /* connections opened (free or in use) */
	int broken;                  /* opening failed: the writer reads */
	pthread_mutex_t touched_lock;   /* guards touched, touched_all, seq */
	struct inoset touched;
	int touched_all;             /* the set overflowed: all are touched */
	uint64_t seq;                /* groups ended so far */
	uint64_t last_marked;        /* the writer's last mark (fs->lock) */
	uint64_t wal_copies;         /* whole-WAL checkpoints so far (atomic) */
};

/* Mark ino touched by the open group (fs->lock held). */
static void
readers_mark(struct fs *fs, uint64_t ino)
{
	struct readers *rs = fs->readers;

	/* A write of 1 MiB updates its inode's row 17 times. */
	if (ino == rs->last_marked)
		return;
	pthread_mutex_lock(&rs->touched_lock);
	if (!rs->touched_all && inoset_add(&rs->touched, ino) < 0)
		rs->touched_all = 1;
	pthread_mutex_unlock(&rs->touched_lock);
	rs->last_marked = ino;
}

/* Mark ino touched by the open group for a change that writes no row of
 * main.inodes: the hook below cannot see it (fs->lock held). */
void
readers_touch(struct fs *fs, uint64_t ino)
{
	if (fs->readers)
		readers_mark(fs, ino);
}

/* Every read goes to the writer until the open group ends (fs->lock
 * held), as when the touched set overflows: for a change that rows of
 * main.inodes do not describe alone.  A snapshot restore (restore.c) calls
 * it before it reads which inodes the kernel holds: a pooled lookup pins
 * its inode before its check, so one whose check came first has pinned by
 * then, and one whose check comes after asks the writer, which answers
 * once the restore is committed. */
void
readers_touch_all(struct fs *fs)
{
	struct readers *rs = fs->readers;

	if (!rs)
		return;
	pthread_mutex_lock(&rs->touched_lock);
	rs->touched_all = 1;
	pthread_mutex_unlock(&rs->touched_lock);
}

/* The writer connection's update hook: a row of main.inodes written. */
static void
readers_hook(void *arg, int op, const char *db, const char *table,
    sqlite3_int64 rowid)
{
	(void)op;
	if (rowid > 0 && strcmp(table, "inodes") == 0 && strcmp(db, "main") == 0)
		readers_mark(arg, (uint64_t)rowid);
}

static void reader_end_snapshot(struct reader *rd);

/* End the snapshots of the readers not in use (fs->lock held); moved, when
 * not NULL, is bumped under pool_lock first, so that a reader in use ends
 * its own when its request is done (readers_end). */
static void
readers_end_free_snapshots(struct readers *rs, uint64_t *moved)
{
	struct reader *rd;

	pthread_mutex_lock(&rs->pool_lock);
	if (moved)
		__atomic_add_fetch(moved, 1, __ATOMIC_RELAXED);
	for (rd = rs->free; rd; rd = rd->next)
		reader_end_snapshot(rd);
	pthread_mutex_unlock(&rs->pool_lock);
}

/* The open group has ended (committed, or given up): nothing is touched
 * any more, reads in flight check again, and the free readers' snapshots,
 * now older than the committed state, end, so that none holds back a
 * checkpoint (fs->lock held).  A reader in use ends its own when its
 * request is done (readers_end). */
void
readers_group_end(struct fs *fs)
{
	struct readers *rs = fs->readers;

	if (!rs)
		return;
	pthread_mutex_lock(&rs->touched_lock);
	if (rs->touched.count || rs->touched_all)
		inoset_clear(&rs->touched);
	rs->touched_all = 0;
	rs->seq++;
	pthread_mutex_unlock(&rs->touched_lock);
	rs->last_marked = 0;
	readers_end_free_snapshots(rs, NULL);
}

/* A checkpoint has copied the whole WAL into the database (checkpoint.c,
 * fs->lock held).  Snapshots begun before it read through the WAL: each
 * page they read is looked up in the WAL's index first, and their read
 * marks keep the writer from starting the WAL again from its start.  A
 * snapshot begun now reads the database file alone (SQLite takes read
 * mark 0 when every frame is copied), so the free readers' snapshots end
 * now, and one in use ends when its request does (readers_end). */
void
readers_wal_copied(struct fs *fs)
{
	if (fs->readers)
		readers_end_free_snapshots(fs->readers,
		    &fs->readers->wal_copies);
}

/* Whether rd's snapshot is older than the committed state (a group has
 * ended since it began) or than a whole-WAL checkpoint: a new one reads
 * more cheaply. */
static int
reader_snapshot_stale(struct fs *fs, const struct reader *rd, uint64_t seq)
{
	return rd->snap_seq != seq || rd->snap_copies !=
	    __atomic_load_n(&fs->readers->wal_copies, __ATOMIC_RELAXED);
}

/* Set up the pool (no connection yet) and the touched set's hook, before
 * any change is made.  0 or -ENOMEM. */
int
readers_init(struct fs *fs)
{
	struct readers *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return -ENOMEM;
	pthread_mutex_init(&rs->pool_lock, NULL);
	pthread_cond_init(&rs->pool_cond, NULL);
	pthread_mutex_init(&rs->touched_lock, NULL);
	inoset_init(&rs->touched, READERS_TOUCHED_MAX);
	fs->readers = rs;
	sqlite3_update_hook(fs->db, readers_hook, fs);
	return 0;
}

/* From now on every read goes to the writer's connection, under fs->lock:
 * a whole-tree reader (fs/offline/tree.c) holds one read transaction open
 * there, so that all it reads is of one moment, which pooled reads (a snapshot
 * each) would not be.  Before any reader runs. */
void
readers_off(struct fs *fs)
{
	struct readers *rs = fs->readers;

	pthread_mutex_lock(&rs->pool_lock);
	rs->broken = 1;
	pthread_mutex_unlock(&rs->pool_lock);
}

/* Close one reader. */
static void
reader_close(struct reader *rd)
{
	sqlite3_blob_close(rd->blob);
	for (int i = 0; i < rd->nstmts; i++)
		sqlite3_finalize(rd->stmts[i].st);
	sqlite3_close(rd->db);
	free(rd->map);
	free(rd);
}

/* Close every reader (all are back: no request runs) and free the pool.
 * Accepts a pool never set up. */
void
readers_free(struct fs *fs)
{
	struct readers *rs = fs->readers;
	struct reader *rd;

	if (!rs)
		return;
	if (fs->db)
		sqlite3_update_hook(fs->db, NULL, NULL);
	while ((rd = rs->free)) {
		rs->free = rd->next;
		reader_close(rd);
	}
	inoset_clear(&rs->touched);
	pthread_mutex_destroy(&rs->touched_lock);
	pthread_cond_destroy(&rs->pool_cond);
	pthread_mutex_destroy(&rs->pool_lock);
	free(rs);
	fs->readers = NULL;
}

/* A new read-only connection to fs's database, the nth opened (from 1),
 * or NULL (logged). */
static struct reader *
reader_open(struct fs *fs, int nth)
{
	struct reader *rd = calloc(1, sizeof(*rd));
	char sql[64];
	int rc;

	if (!rd)
		return NULL;
	/* Through readahead.c: a block's overflow pages in few preads. */
	rc = sqlite3_open_v2(fs->path, &rd->db,
	    SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, readahead_vfs_name());
	snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%d", READERS_CACHE_KIB);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(rd->db, sql, NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		log_warn("%s: no read-only connection (%s): reads wait for "
		    "writes", fs->path, sqlite3_errstr(rc));
		reader_close(rd);
		return NULL;
	}
	sqlite3_busy_timeout(rd->db, 10000);
	/* SQLite's default VFS, if readahead.c's could not be registered,
	 * keeps nothing: reads still work, with more preads. */
	rd->big = nth <= READERS_BIG;
	readahead_keep(rd->db, rd->big ? READERS_KEEP_BIG : READERS_KEEP_SMALL);
	return rd;
}

/* A free reader, opened if there are fewer than READERS_MAX, else waited
 * for; NULL when none can be opened (then the writer reads). */
static struct reader *
reader_get(struct fs *fs)
{
	struct readers *rs = fs->readers;
	struct reader *rd = NULL;
	int broken, nth = 0;

	pthread_mutex_lock(&rs->pool_lock);
	while (!rs->free && !rs->broken && rs->nopen >= READERS_MAX)
		pthread_cond_wait(&rs->pool_cond, &rs->pool_lock);
	if ((rd = rs->free))
		rs->free = rd->next;
	else if (!rs->broken)
		nth = ++rs->nopen;
	broken = rs->broken;
	pthread_mutex_unlock(&rs->pool_lock);
	if (rd || broken)
		return rd;
	if (!(rd = reader_open(fs, nth))) {
		pthread_mutex_lock(&rs->pool_lock);
		rs->nopen--;
		rs->broken = 1;
		pthread_cond_broadcast(&rs->pool_cond);
		pthread_mutex_unlock(&rs->pool_lock);
	}
	return rd;
}

/* Give a reader back: a big one first in the free list, a small one
 * last (at most READERS_MAX to walk). */
static void
reader_put(struct fs *fs, struct reader *rd)
{
	struct readers *rs = fs->readers;
	struct reader **at;

	pthread_mutex_lock(&rs->pool_lock);
	at = &rs->free;
	while (!rd->big && *at)
		at = &(*at)->next;
	rd->next = *at;
	*at = rd;
	pthread_cond_signal(&rs->pool_cond);
	pthread_mutex_unlock(&rs->pool_lock);
}

/* The reader's cached statement for sql (a string literal), reset and
 * cleared; NULL on failure. */
static sqlite3_stmt *
reader_stmt(struct reader *rd, const char *sql)
{
	sqlite3_stmt *st;

	for (int i = 0; i < rd->nstmts; i++) {
		if (rd->stmts[i].sql == sql) {
			sqlite3_reset(rd->stmts[i].st);
			sqlite3_clear_bindings(rd->stmts[i].st);
			return rd->stmts[i].st;
		}
	}
	if (rd->nstmts >= READERS_STMTS ||
	    sqlite3_prepare_v3(rd->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st,
	    NULL) != SQLITE_OK)
		return NULL;
	rd->stmts[rd->nstmts].sql = sql;
	rd->stmts[rd->nstmts++].st = st;
	return st;
}

/* Run a statement of no rows on the reader: 0 or -EIO. */
static int
reader_exec(struct reader *rd, const char *sql)
{
	sqlite3_stmt *st = reader_stmt(rd, sql);
	int rc;

	if (!st)
		return -EIO;
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : -EIO;
}

/* The groups ended so far: read before a snapshot is taken. */
static uint64_t
readers_seq(struct fs *fs)
{
	struct readers *rs = fs->readers;
	uint64_t seq;

	pthread_mutex_lock(&rs->touched_lock);
	seq = rs->seq;
	pthread_mutex_unlock(&rs->touched_lock);
	return seq;
}

/* 1 when a snapshot taken after seq was read may answer about ino and ino2
 * (0: none): no group has ended since and neither is touched; else 0. */
static int
readers_clean(struct fs *fs, uint64_t seq, uint64_t ino, uint64_t ino2)
{
	struct readers *rs = fs->readers;
	int ok;

	pthread_mutex_lock(&rs->touched_lock);
	ok = rs->seq == seq && !rs->touched_all &&
	    !inoset_has(&rs->touched, ino) &&
	    (ino2 == 0 || !inoset_has(&rs->touched, ino2));
	pthread_mutex_unlock(&rs->touched_lock);
	return ok;
}

/* End the reader's read transaction, if any, and close its blob handle
 * (which would keep the transaction open). */
static void
reader_end_snapshot(struct reader *rd)
{
	if (!rd->in_snap)
		return;
	sqlite3_blob_close(rd->blob);
	rd->blob = NULL;
	if (reader_exec(rd, "COMMIT") < 0)
		reader_exec(rd, "ROLLBACK");
	rd->in_snap = 0;
}

/* Forget what the reader remembers of its last file: a new snapshot, or
 * another file. */
static void
reader_new_epoch(struct reader *rd)
{
	/* Once in 2^32 epochs, what was of the epoch that comes back goes. */
	if (++rd->epoch == 0) {
		if (rd->map)
			memset(rd->map, 0, READERS_MAP_CHUNKS * sizeof(*rd->map));
		rd->file_ino = 0;
		rd->epoch = 1;
	}
}

/* A reader in a read transaction, with the seq read before it; NULL when
 * the writer must read (no reader, or ino already touched).  The reader's
 * snapshot is kept from its last request when no group has ended since
 * (its seq is still seq): the one rule holds for it as for a new one, and
 * beginning and ending a read transaction cost three system calls. */
static struct reader *
readers_begin(struct fs *fs, uint64_t ino, uint64_t *seq)
{
	struct reader *rd;

	if (!fs->readers)
		return NULL;
	*seq = readers_seq(fs);
	/* Touched now: the writer answers, no use taking a snapshot. */
	if (!readers_clean(fs, *seq, ino, 0) || !(rd = reader_get(fs)))
		return NULL;
	if (rd->in_snap && reader_snapshot_stale(fs, rd, *seq))
		reader_end_snapshot(rd);
	if (!rd->in_snap) {
		rd->snap_copies = __atomic_load_n(&fs->readers->wal_copies,
		    __ATOMIC_RELAXED);
		if (reader_exec(rd, "BEGIN") < 0) {
			reader_put(fs, rd);
			return NULL;
		}
		rd->in_snap = 1;
		rd->snap_seq = *seq;
		reader_new_epoch(rd);
	}
	*seq = rd->snap_seq;
	return rd;
}

/* Give the reader back, its snapshot ended if a group has ended since it
 * began (or SQLite ended it, after an error). */
static void
readers_end(struct fs *fs, struct reader *rd)
{
	if (rd->in_snap && sqlite3_get_autocommit(rd->db)) {
		sqlite3_blob_close(rd->blob);
		rd->blob = NULL;
		rd->in_snap = 0;
	}
	if (rd->in_snap && reader_snapshot_stale(fs, rd, readers_seq(fs)))
		reader_end_snapshot(rd);
	reader_put(fs, rd);
}

/* Inode ino on the reader: 0, -ENOENT or -EIO. */
static int
reader_inode(struct reader *rd, uint64_t ino, struct fs_attr *out)
{
	sqlite3_stmt *st = reader_stmt(rd, INODE_GET_SQL);
	int rc;

	if (!st) {
		memset(out, 0, sizeof(*out));
		return -EIO;
	}
	rc = inode_get_on(st, ino, out);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : -EIO;
}

/* fs_getattr on a reader: 0, -ENOENT, or READERS_ASK_WRITER. */
int
readers_getattr(struct fs *fs, uint64_t ino, struct fs_attr *out)
{
	struct reader *rd;
	uint64_t seq;
	int r;

	if (!(rd = readers_begin(fs, ino, &seq)))
		return READERS_ASK_WRITER;
	r = reader_inode(rd, ino, out);
	readers_end(fs, rd);
	if (r == -EIO || !readers_clean(fs, seq, ino, 0))
		return READERS_ASK_WRITER;
	return r;
}

/* parent/name on the reader: its inode into out, 0, -ENOENT or -EIO. */
static int
reader_lookup(struct reader *rd, uint64_t parent, const char *name,
    struct fs_attr *out)
{
	sqlite3_stmt *st = reader_stmt(rd, "SELECT d.ino, " INODE_COLUMNS("i.")
	    " FROM dirents d JOIN inodes i ON i.ino = d.ino "
	    "WHERE d.parent = ? AND d.name = ?");
	int rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)parent);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		inode_from_row(st, 1, (uint64_t)sqlite3_column_int64(st, 0), out);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT : -EIO;
}

/* fs_lookup on a reader (name checked by the caller): 0, -ENOENT, or
 * READERS_ASK_WRITER (nothing then pinned). */
int
readers_lookup(struct fs *fs, uint64_t parent, const char *name, int pin,
    struct fs_attr *out)
{
	struct reader *rd;
	uint64_t seq;
	int r;

	if (!(rd = readers_begin(fs, parent, &seq)))
		return READERS_ASK_WRITER;
	r = reader_lookup(rd, parent, name, out);
	readers_end(fs, rd);
	if (r == -EIO)
		return READERS_ASK_WRITER;
	/* Pinned before the check: an unlink from now on keeps the inode. */
	if (r == 0 && pin)
		inode_pin(fs, out->ino, 1);
	if (!readers_clean(fs, seq, parent, r == 0 ? out->ino : 0)) {
		if (r == 0 && pin)
			fs_forget(fs, out->ino, 1);
		return READERS_ASK_WRITER;
	}
	return r;
}

/* fs_readlink on a reader: the target's length, -EINVAL, or
 * READERS_ASK_WRITER. */
int
readers_readlink(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	struct reader *rd;
	sqlite3_stmt *st;
	uint64_t seq;
	int rc = SQLITE_ERROR, r = -EINVAL;

	if (!(rd = readers_begin(fs, ino, &seq)))
		return READERS_ASK_WRITER;
	if ((st = reader_stmt(rd, READLINK_SQL)))
		rc = core_readlink_on(st, ino, buf, size, &r);
	readers_end(fs, rd);
	if ((rc != SQLITE_ROW && rc != SQLITE_DONE) ||
	    !readers_clean(fs, seq, ino, 0))
		return READERS_ASK_WRITER;
	return r;
}

/* fs_getxattr on a reader (name checked by the caller): the value's size
 * (or the value into buf when size > 0), -ENODATA, -ERANGE, or
 * READERS_ASK_WRITER. */
ssize_t
readers_getxattr(struct fs *fs, uint64_t ino, const char *name, void *buf,
    size_t size)
{
	struct reader *rd;
	sqlite3_stmt *st;
	uint64_t seq;
	ssize_t r = -ENODATA;
	int rc = SQLITE_ERROR;

	if (!(rd = readers_begin(fs, ino, &seq)))
		return READERS_ASK_WRITER;
	if ((st = reader_stmt(rd, XATTR_GET_SQL)))
		rc = xattr_get_on(st, ino, name, buf, size, &r);
	readers_end(fs, rd);
	if ((rc != SQLITE_ROW && rc != SQLITE_DONE) ||
	    !readers_clean(fs, seq, ino, 0))
		return READERS_ASK_WRITER;
	return r;
}

/* The mode and size of file ino in the reader's snapshot, remembered as
 * its last file: 0, -ENOENT or -EIO. */
static int
reader_file(struct reader *rd, uint64_t ino, uint32_t *mode, uint64_t *size)
{
	struct fs_attr a;
	int r;

	if (rd->file_ino != ino || rd->file_epoch != rd->epoch) {
		if ((r = reader_inode(rd, ino, &a)) < 0)
			return r;
		if (rd->file_ino != ino)
			reader_new_epoch(rd);
		rd->file_ino = ino;
		rd->file_epoch = rd->epoch;
		rd->file_mode = a.mode;
		rd->file_size = a.size;
	}
	*mode = rd->file_mode;
	*size = rd->file_size;
	return 0;
}

/* Chunk idx (< READERS_MAP_CHUNKS) of the reader's file, remembered:
 * its entry, or NULL (-EIO, or no memory for the map). */
static const struct reader_chunk *
reader_chunk(struct reader *rd, uint64_t idx)
{
	struct reader_chunk *c;
	sqlite3_stmt *find;
	sqlite3_int64 block;
	uint64_t len;

	if (!rd->map && !(rd->map = calloc(READERS_MAP_CHUNKS, sizeof(*rd->map))))
		return NULL;
	c = &rd->map[idx];
	if (c->epoch == rd->epoch)
		return c;
	if (!(find = reader_stmt(rd, CHUNKS_FIND_SQL)) ||
	    chunks_lookup_on(find, rd->file_ino, idx, &block, &len) != SQLITE_OK ||
	    len > FS_CHUNK)
		return NULL;
	c->block = block;
	c->len = (uint32_t)len;
	c->epoch = rd->epoch;
	return c;
}

/* The body of readers_read: bytes read, -EISDIR, -ENOENT or -EIO. */
static ssize_t
reader_read(struct reader *rd, uint64_t ino, uint64_t off, unsigned char *buf,
    size_t size)
{
	const struct reader_chunk *c;
	sqlite3_stmt *find;
	uint64_t fsize, idx = off / FS_CHUNK;
	uint32_t mode;
	int r;

	if ((r = reader_file(rd, ino, &mode, &fsize)) < 0)
		return r;
	if (S_ISDIR(mode))
		return -EISDIR;
	if (off >= fsize)
		return 0;
	if (size > fsize - off)
		size = (size_t)(fsize - off);
	/* Inside one chunk (a random read): through the map. */
	if (idx == (off + size - 1) / FS_CHUNK && idx < READERS_MAP_CHUNKS &&
	    (c = reader_chunk(rd, idx)))
		return chunks_read_chunk_on(rd->db, &rd->blob, idx, c->block,
		    c->len, off % FS_CHUNK, buf, size) == SQLITE_OK ?
		    (ssize_t)size : -EIO;
	if (!(find = reader_stmt(rd, CHUNKS_FIND_SQL)))
		return -EIO;
	if (chunks_read_on(rd->db, find, &rd->blob, ino, off, buf, size) !=
	    SQLITE_OK)
		return -EIO;
	return (ssize_t)size;
}

/* fs_read on a reader: bytes read, -EISDIR, -ENOENT, or
 * READERS_ASK_WRITER. */
ssize_t
readers_read(struct fs *fs, uint64_t ino, uint64_t off, void *buf, size_t size)
{
	struct reader *rd;
	uint64_t seq;
	ssize_t n;

	if (!(rd = readers_begin(fs, ino, &seq)))
		return READERS_ASK_WRITER;
	n = reader_read(rd, ino, off, buf, size);
	readers_end(fs, rd);
	if (n == -EIO || !readers_clean(fs, seq, ino, 0))
		return READERS_ASK_WRITER;
	return n;
}

/* A readdir on a reader: what it is listing and how far it got. */
struct reader_list {
	struct fs *fs;
	struct reader *rd;
	uint64_t seq, ino;
	int plus;
	fs_readdir_cb cb;
	void *arg;
	int given;               /* entries cb took */
	int64_t last;            /* the cookie of the last one */
	int refused;             /* the snapshot could not answer for one */
};

/* Give cb one entry if the snapshot may still answer for it (its inode
 * too for readdirplus, pinned before the check and kept when taken).
 * 0 to go on; 1 when cb is full or the check failed (stop here: the writer
 * goes on from the last entry given). */
static int
reader_give(struct reader_list *l, struct fs_dirent *de, int pin)
{
	uint64_t ino = l->plus ? de->ino : 0;
	int full;

	if (pin)
		inode_pin(l->fs, de->ino, 1);
	if (!readers_clean(l->fs, l->seq, l->ino, ino)) {
		if (pin)
			inode_unpin(l->fs, de->ino, 1);
		l->refused = 1;
		return 1;
	}
	if ((full = l->cb(l->arg, de)) && pin)
		inode_unpin(l->fs, de->ino, 1);
	if (!full) {
		l->given++;
		l->last = de->off;
	}
	return full ? 1 : 0;
}

/* The parent of directory ino on the reader (the root's is itself):
 * 0 or -EIO. */
static int
reader_parent(struct reader *rd, uint64_t ino, uint64_t *parent)
{
	sqlite3_stmt *st;
	int rc;

	*parent = FS_ROOT_INO;
	if (ino == FS_ROOT_INO)
		return 0;
	if (!(st = reader_stmt(rd,
	    "SELECT parent FROM dirents WHERE ino = ? LIMIT 1")))
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		*parent = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

/* "." (cookie 1) and ".." (cookie 2) after cookie off, as dir.c gives
 * them (never pinned).  0 to go on, 1 to stop, or -EIO. */
static int
reader_list_dots(struct reader_list *l, const struct fs_attr *self,
    int64_t off)
{
	struct fs_attr pa;
	struct fs_dirent de;
	uint64_t parent;

	for (int64_t c = off + 1; c <= 2; c++) {
		const struct fs_attr *a = self;
		if (c == 2) {
			if (reader_parent(l->rd, l->ino, &parent) < 0 ||
			    reader_inode(l->rd, parent, &pa) < 0)
				return -EIO;
			a = &pa;
		}
		de.name = c == 1 ? "." : "..";
		de.ino = a->ino;
		de.mode = a->mode;
		de.off = c;
		de.attr = l->plus ? a : NULL;
		if (reader_give(l, &de, 0))
			return 1;
	}
	return 0;
}

/* The entries of the directory after cookie off (dir.c's cookies: an
 * entry's id + 2), with attributes for readdirplus.  0 or -EIO. */
static int
reader_list_entries(struct reader_list *l, int64_t off)
{
	sqlite3_stmt *st = reader_stmt(l->rd, l->plus ?
	    "SELECT d.id, d.name, d.ino, " INODE_COLUMNS("i.") " FROM dirents d "
	    "JOIN inodes i ON i.ino = d.ino "
	    "WHERE d.parent = ? AND d.id > ? ORDER BY d.id" :
	    "SELECT d.id, d.name, d.ino, i.mode FROM dirents d "
	    "JOIN inodes i ON i.ino = d.ino "
	    "WHERE d.parent = ? AND d.id > ? ORDER BY d.id");
	struct fs_attr a;
	struct fs_dirent de;
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)l->ino);
	sqlite3_bind_int64(st, 2, off < 2 ? 0 : off - 2);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		de.off = sqlite3_column_int64(st, 0) + 2;
		de.name = (const char *)sqlite3_column_text(st, 1);
		de.ino = (uint64_t)sqlite3_column_int64(st, 2);
		de.mode = (uint32_t)sqlite3_column_int64(st, 3);
		de.attr = NULL;
		if (l->plus) {
			inode_from_row(st, 3, de.ino, &a);
			de.attr = &a;
		}
		if (!de.name || reader_give(l, &de, l->plus))
			break;
	}
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

/* The body of readers_readdir: 0, -ENOENT, -ENOTDIR or -EIO. */
static int
reader_list(struct reader_list *l, int64_t off)
{
	struct fs_attr a;
	int r;

	if ((r = reader_inode(l->rd, l->ino, &a)) < 0)
		return r;
	if (!S_ISDIR(a.mode))
		return -ENOTDIR;
	if (off < 2 && (r = reader_list_dots(l, &a, off)) != 0)
		return r < 0 ? r : 0;
	return reader_list_entries(l, off);
}

/* fs_readdir on a reader: 0, -ENOENT or -ENOTDIR; or READERS_ASK_WRITER
 * with the cookie the writer is to go on from in *resume (off when this
 * gave nothing, else where the snapshot could no longer answer). */
int
readers_readdir(struct fs *fs, uint64_t ino, int64_t off, int plus,
    fs_readdir_cb cb, void *arg, int64_t *resume)
{
	struct reader_list l = { .fs = fs, .ino = ino, .plus = plus, .cb = cb,
	    .arg = arg, .last = off };
	int r;

	*resume = off;
	if (!(l.rd = readers_begin(fs, ino, &l.seq)))
		return READERS_ASK_WRITER;
	r = reader_list(&l, off);
	readers_end(fs, l.rd);
	*resume = l.last;
	if (l.given > 0 && !l.refused && r != -EIO)
		return 0;
	if (r == -EIO || l.refused || !readers_clean(fs, l.seq, ino, 0))
		return READERS_ASK_WRITER;
	return r;
}
