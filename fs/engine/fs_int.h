/*
 * fs_int.h: what the core's files share among themselves (struct fs, the
 * database helpers of db.c, and the row helpers of inode.c, dir.c and
 * chunks.c).  Nothing outside fs/ includes it, and nothing here knows FUSE.
 *
 * Locking: fs->lock is the writer's.  Every public fs_* function that
 * changes something takes it, and every helper declared here expects it
 * held, except where noted.  Three kinds of thread take it: the FUSE
 * workers (one request each), the committer (core.c: commits an idle
 * group; checkpoint.c: checkpoints the WAL on a connection of its own, with
 * the lock released) and the reclaimer (reclaim.c: frees the chunks of
 * deleted and truncated files a batch at a time, releasing the lock between
 * batches).  Nobody sleeps or waits for I/O of its own while holding it,
 * except on the database.  Reads (getattr, lookup, read, readlink,
 * readdir) first try a read-only connection without it (readers.c, which
 * owns the threading model and its locks), and take it only when what they
 * read was changed by the open group.  Besides: fs->pin_lock guards the
 * lookup counts (inode.c) and fs->xattr_lock the xattr cache (xattr.c);
 * each is taken alone or inside fs->lock, never the other way round, so
 * that pooled reads can pin inodes and getxattr of an inode without
 * attributes never waits for fs->lock.
 */
#ifndef ATRIUM_FS_INT_H
#define ATRIUM_FS_INT_H

#include "fs.h"
#include "inoset.h"
#include "opstats.h"
#include "log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#define SCHEMA_VERSION FS_SCHEMA_VERSION
/* Bytes per chunk row: big enough that a 1 MiB write is 16 rows, small
 * enough that a 4 KiB write into an existing chunk copies little. */
#define FS_CHUNK 65536
#define FS_STMT_MAX 128
/* What one directory entry adds to its directory's stored bytes (and so to
 * its st_size): ext4's record, 8 bytes and the name rounded up to 4. */
#define STORED_DIRENT_SQL(col) "(8 + ((length(CAST(" col " AS BLOB)) + 3) & ~3))"
/* A directory's st_size: whole 4 KiB blocks holding "." and ".." (24
 * bytes) and its entries' records, as ext4's grows. */
#define STORED_DIR_BLOCK 4096
#define STORED_DIR_DOTS 24
/* The times ext4 keeps with 256-byte inodes (fs/engine/inode.c clamps to
 * them). */
#define FS_TIME_MIN (-2147483648LL)    /* 1901-12-13 20:45:52 UTC */
#define FS_TIME_MAX 15032385535LL      /* 2446-05-10 22:38:55 UTC */
/* Inodes the reclaimer remembers; more start a scan instead (reclaim.c). */
#define RECLAIM_QUEUE_MAX 256

/* Lookup counts of inodes the kernel (or another user of the core) holds. */
struct pin {
	uint64_t ino;
	uint64_t n;
	uint64_t writers;         /* handles open for writing (fs_writers) */
	struct pin *next;
};

/* What db.c reports to the layers above it, which decide: room on the
 * disk (space.c) and pending deletes that free it (reclaim.c), the quota
 * (quota.c), the pooled readers (readers.c).  db.c is the bottom layer and
 * names none of them; fs_open sets fs->policy to db_policy.c's table.
 * Every member is called with fs->lock held. */
struct db_policy {
	/* May an operation that adds up to grow bytes and deletes up to
	 * frees bytes begin?  0 with the WAL bytes to reserve for it in
	 * *need, or -ENOSPC (no room) or -errno. */
	int (*admit)(struct fs *fs, uint64_t grow, uint64_t frees,
	    int64_t *need);
	/* An operation began (its savepoint is open). */
	void (*op_begun)(struct fs *fs);
	/* The operation succeeded: may it be kept?  0, or -errno (-EDQUOT)
	 * to undo it. */
	int (*op_check)(struct fs *fs);
	/* The operation ended: kept (1) or undone (0). */
	void (*op_ended)(struct fs *fs, int kept);
	/* The group transaction ended, committed or lost. */
	void (*group_ended)(struct fs *fs);
	/* A group that lost no answered work was rolled back for want of
	 * room on the disk. */
	void (*disk_full)(struct fs *fs);
};

struct fs {
	pthread_mutex_t lock;     /* guards everything below but changes */
	/* The layers above db.c, as db.c sees them (fs_open sets it). */
	const struct db_policy *policy;
	/* People's changes served so far (fs_changes): atomic, no lock. */
	_Atomic uint64_t changes;
	/* The mount's requests by kind and latency (opstats.h): atomic,
	 * no lock. */
	struct opstats ops;
	sqlite3 *db;              /* the one connection, reads and writes */
	char *path;
	int readonly;
	int keep_wal;		/* FS_OPEN_KEEP_WAL (fs_keep_wal) */
	/* Grouped commits: one transaction spans many operations (db.c). */
	int txn_open;
	long long txn_start_ms;   /* when the open transaction began */
	long long txn_max_ms;     /* the age that commits it; 0: DB_COMMIT_MS
	                           * (tests that must hold a group open set
	                           * more) */
	unsigned txn_ops;         /* operations in it that succeeded (answered) */
	int64_t txn_need;         /* WAL bytes reserved for it (space.c) */
	int in_op;                /* between db_op_begin and db_op_end */
	int last_err;             /* -errno of the last failed statement */
	/* Sticky failure: -EIO once a commit lost answered work; every change,
	 * fsync and flush then fails until the mount is remounted (db.c).
	 * Set once, atomically; fs_error reads it without lock. */
	int failed;
	/* Room on the disk (space.c). */
	char *dir;                /* the database's directory */
	int64_t space_avail;      /* bytes free for the database (estimate) */
	int64_t space_reserve;    /* bytes kept for operations that free space */
	long long space_ms;       /* when space_avail was measured */
	int space_low;            /* near full: commit each operation alone */
	int space_full;           /* growth is refused */
	int space_said_full;      /* the last thing logged was "full" */
	long long space_said_ms;  /* when "full" was last logged */
	int64_t space_reserve_min;   /* settings, from SPACE_* (tests change them) */
	int64_t space_low_margin;
	int wal_fd;               /* the -wal file, for fallocate; -1 */
	int wal_no_reserve;       /* its filesystem cannot preallocate */
	int64_t wal_reserved_end; /* allocated up to here (past its end) */
	int64_t wal_seen_size;    /* its size when last looked at */
	/* The quota (quota.c): limits (0: none) are configuration; used_* are
	 * the kept operations' totals, op_* the running operation's changes. */
	int64_t quota_bytes, quota_inodes;
	int64_t used_bytes, used_inodes;
	int64_t op_bytes, op_inodes;
	/* The part of used_bytes / op_bytes that only snapshots keep: their
	 * blocks no live chunk names, and their rows (quota.c). */
	int64_t used_snap, op_snap;
	/* The running operation may grow past the byte quota: a restore or
	 * an undo point (quota.c says why); cleared at its end. */
	int quota_exempt;
	int quota_counting;       /* triggers installed, used_* counted */
	/* Whether a snapshot may exist (snapshot.c): 0 only when none does,
	 * so that writes skip asking whether a block is shared. */
	int snaps_maybe;
	/* Set by a restore while inodes were held: a kept (unlinked) file
	 * and its restored copy may name one block, so a write asks whether
	 * another live chunk names it too (chunks.c). */
	int blocks_shared_live;
	/* Prepared statements, keyed by the address of their SQL literal. */
	struct { const char *sql; sqlite3_stmt *st; } stmts[FS_STMT_MAX];
	int nstmts;
	/* Lookup counts (inode.c), under pin_lock alone (pooled reads pin
	 * without fs->lock; taken inside fs->lock, never around it). */
	pthread_mutex_t pin_lock;
	struct pin **pins;
	size_t npins, pin_buckets;
	/* The xattr cache (xattr.c): every inode that may have an extended
	 * attribute.  Guarded by xattr_lock alone, not by lock. */
	pthread_mutex_t xattr_lock;
	struct inoset xattr_inos;
	int xattr_inos_known;     /* 0: not loaded or outgrown, ask SQLite */
	/* Read-only connections and what the open group touched (readers.c,
	 * its own locks). */
	struct readers *readers;
	/* The committer thread (core.c). */
	pthread_t committer;
	pthread_cond_t committer_cond;
	int committer_running, committer_stop;
	unsigned commit_interval_ms;
	/* Checkpoints off the lock (checkpoint.c). */
	sqlite3 *ckpt_db;         /* the committer's own connection; NULL */
	int wal_pages;            /* WAL pages after the last commit; 0 once
	                           * the committer has checkpointed them */
	int wal_size;             /* WAL pages after the last commit */
	int wal_backfilled;       /* of them, copied into the database */
	int ckpt_page_size;       /* the database's page size, in bytes */
	int ckpt_pages;           /* checkpoint in the background past this */
	int ckpt_pages_max;       /* checkpoint while committing past this */
	int ckpt_failed;          /* the last checkpoint failed (logged) */
	/* Background freeing (reclaim.c), all guarded by lock. */
	int reclaim_defer;        /* big deletes and truncates are deferred */
	uint64_t reclaim_q[RECLAIM_QUEUE_MAX]; /* inodes that may hold garbage */
	unsigned reclaim_n;
	uint64_t reclaim_scan_from; /* next inode to scan for garbage; 0: none */
	uint64_t reclaim_scan_to;   /* last inode of this scan; 0: not known */
	pthread_t reclaimer;
	pthread_cond_t reclaim_cond;  /* wakes the reclaimer: work, or stop */
	pthread_cond_t forgot_cond;   /* fs_forget released an unlinked inode */
	int reclaimer_running, reclaimer_stop;
};

/* --- schema.c --- */
int schema_version(sqlite3 *db);
int schema_create(sqlite3 *db, uint32_t uid, uint32_t gid);
int schema_open_check(sqlite3 *db, int readonly);

/* --- db.c --- */
/* db_op_begin's grow for an operation that adds a row or two. */
#define DB_GROW_META 4096
int64_t fs_now_ns(void);
int db_errno_map(int rc, int sys_errno);
int db_errno(struct fs *fs, int rc, const char *what);
sqlite3_stmt *db_stmt(struct fs *fs, const char *sql);
int db_done(struct fs *fs, sqlite3_stmt *st);
int db_exec(struct fs *fs, const char *sql);
int db_op_begin(struct fs *fs, uint64_t grow, uint64_t frees);
int db_op_end(struct fs *fs, int rc);
int db_commit(struct fs *fs, int full);
void db_stmts_free(struct fs *fs);
int db_read_begin(struct fs *fs);
void db_read_end(struct fs *fs, int began);
int db_configure(sqlite3 *db);

/* --- db_policy.c --- */
extern const struct db_policy db_policy_fs;

/* --- common/walbuf.c --- */
#include "walbuf.h"

/* --- readahead.c --- */
const char *readahead_vfs_name(void);
int readahead_keep(sqlite3 *db, size_t bytes);

/* --- readers.c --- */
/* A pooled read's answer when the writer must do the read (fs->lock). */
#define READERS_ASK_WRITER (-EAGAIN)
int readers_init(struct fs *fs);
void readers_free(struct fs *fs);
void readers_group_end(struct fs *fs);
void readers_touch(struct fs *fs, uint64_t ino);
void readers_touch_all(struct fs *fs);
void readers_wal_copied(struct fs *fs);
void readers_off(struct fs *fs);
int readers_getattr(struct fs *fs, uint64_t ino, struct fs_attr *out);
int readers_lookup(struct fs *fs, uint64_t parent, const char *name, int pin,
    struct fs_attr *out);
int readers_readlink(struct fs *fs, uint64_t ino, char *buf, size_t size);
ssize_t readers_getxattr(struct fs *fs, uint64_t ino, const char *name,
    void *buf, size_t size);
ssize_t readers_read(struct fs *fs, uint64_t ino, uint64_t off, void *buf,
    size_t size);
int readers_readdir(struct fs *fs, uint64_t ino, int64_t off, int plus,
    fs_readdir_cb cb, void *arg, int64_t *resume);

/* --- checkpoint.c --- */
int ckpt_start(struct fs *fs);

/* Under FS_OPEN_KEEP_WAL, db truncates its WAL at its last close rather
 * than removing it (core.c).  0 or -EIO (logged). */
int fs_keep_wal(struct fs *fs, sqlite3 *db);
void ckpt_stop(struct fs *fs);
/* The WAL's bound follows fs->quota_bytes (fs->lock held). */
void ckpt_quota_changed(struct fs *fs);
void ckpt_run(struct fs *fs);
int64_t ckpt_pending_bytes(const struct fs *fs);

/* --- core.c --- */
uint64_t core_entry_size(struct fs *fs, uint64_t parent, const char *name);
/* A symlink's target (core_readlink_on). */
#define READLINK_SQL "SELECT target FROM symlinks WHERE ino = ?"
int core_readlink_on(sqlite3_stmt *st, uint64_t ino, char *buf, size_t size,
    int *len);

/* --- space.c --- */
int space_init(struct fs *fs);
int space_admit(struct fs *fs, uint64_t grow, uint64_t frees, int64_t *need);
void space_close(struct fs *fs);
void space_note_full(struct fs *fs);
int space_statfs(struct fs *fs, struct fs_statfs *out);

/* --- stored.c --- */
int stored_install(struct fs *fs);
void stored_attr(struct fs_attr *a, uint64_t stored);

/* --- holes.c --- */
int holes_seek(struct fs *fs, uint64_t ino, uint64_t size, uint64_t off,
    int whence, uint64_t *out);
int holes_punch(struct fs *fs, uint64_t ino, uint64_t size, uint64_t off,
    uint64_t len);

/* --- quota.c --- */
void quota_op_begin(struct fs *fs);
int quota_op_check(struct fs *fs);
void quota_op_end(struct fs *fs, int kept);
int quota_admit(struct fs *fs, uint64_t bytes);
int quota_fits(struct fs *fs, uint64_t bytes);
int quota_reserve_check(struct fs *fs, uint64_t len);
int quota_snapshot_check(struct fs *fs, int64_t id,
    struct fs_quota_figures *why);
void quota_statfs(struct fs *fs, struct fs_statfs *out);

/* --- xattr.c --- */
/* Most inodes with extended attributes the cache holds (8 bytes of table
 * per member at most twice over, so at most 4 MiB); past it, every getxattr
 * asks SQLite until the next mount. */
#define XATTR_CACHE_MAX (1u << 18)
void xattr_cache_init(struct fs *fs, size_t max);
int xattr_cache_load(struct fs *fs);
void xattr_cache_free(struct fs *fs);
/* One attribute's value (xattr_get_on). */
#define XATTR_GET_SQL "SELECT value FROM xattrs WHERE ino = ? AND name = ?"
int xattr_get_on(sqlite3_stmt *st, uint64_t ino, const char *name, void *buf,
    size_t size, ssize_t *len);
ssize_t xattr_names_on(sqlite3_stmt *st, char *buf, size_t size);

/* --- inode.c --- */
enum { INODE_ATIME = 1, INODE_MTIME = 2, INODE_CTIME = 4 };
struct timespec inode_now(void);
struct timespec inode_time_clamp(struct timespec ts);
/* The columns of inodes (prefixed by a table alias and a dot, or "") that
 * inode_from_row decodes, in its order. */
#define INODE_COLUMNS(t) t "mode, " t "nlink, " t "uid, " t "gid, " t "size, " \
	t "rdev, " t "atime, " t "atime_ns, " t "mtime, " t "mtime_ns, " \
	t "ctime, " t "ctime_ns, " t "stored"
void inode_from_row(sqlite3_stmt *st, int col, uint64_t ino,
    struct fs_attr *out);
/* One inode's row (inode_get_on). */
#define INODE_GET_SQL "SELECT " INODE_COLUMNS("") " FROM inodes WHERE ino = ?"
int inode_get_on(sqlite3_stmt *st, uint64_t ino, struct fs_attr *out);
int inode_get(struct fs *fs, uint64_t ino, struct fs_attr *out);
int inode_new(struct fs *fs, uint32_t mode, uint32_t uid, uint32_t gid,
    uint64_t rdev, uint32_t nlink, uint64_t *ino);
int inode_put(struct fs *fs, const struct fs_attr *a);
int inode_add_nlink(struct fs *fs, uint64_t ino, int delta);
int inode_touch(struct fs *fs, uint64_t ino, int which);
int inode_set_size(struct fs *fs, uint64_t ino, uint64_t size);
int inode_grow(struct fs *fs, uint64_t ino, uint64_t size);
int inode_release(struct fs *fs, uint64_t ino);
int inode_delete(struct fs *fs, uint64_t ino);
int inode_purge_unlinked(struct fs *fs);
void inode_pin(struct fs *fs, uint64_t ino, uint64_t n);
uint64_t inode_unpin(struct fs *fs, uint64_t ino, uint64_t n);
int inode_pinned(struct fs *fs, uint64_t ino);
void inode_pins_free(struct fs *fs);

/* --- dir.c --- */
int dir_check_name(const char *name);
int dir_lookup(struct fs *fs, uint64_t parent, const char *name, uint64_t *ino);
int dir_add(struct fs *fs, uint64_t parent, const char *name, uint64_t ino);
int dir_remove(struct fs *fs, uint64_t parent, const char *name);
int dir_move(struct fs *fs, uint64_t parent, const char *name,
    uint64_t newparent, const char *newname);
int dir_set_ino(struct fs *fs, uint64_t parent, const char *name, uint64_t ino);
int dir_is_empty(struct fs *fs, uint64_t ino);
int dir_parent(struct fs *fs, uint64_t ino, uint64_t *parent);
int dir_list(struct fs *fs, uint64_t ino, int64_t after, int plus,
    fs_readdir_cb cb, void *arg);

/* --- chunks.c --- */
/* The chunks of a file that a read meets, in order (chunks_read_on). */
#define CHUNKS_FIND_SQL "SELECT idx, block, len FROM chunks " \
	"WHERE ino = ? AND idx BETWEEN ? AND ? ORDER BY idx"
int chunks_read_on(sqlite3 *db, sqlite3_stmt *find, sqlite3_blob **blob,
    uint64_t ino, uint64_t off, void *buf, size_t size);
int chunks_lookup_on(sqlite3_stmt *find, uint64_t ino, uint64_t idx,
    sqlite3_int64 *block, uint64_t *len);
int chunks_read_chunk_on(sqlite3 *db, sqlite3_blob **blob, uint64_t idx,
    sqlite3_int64 block, uint64_t len, uint64_t coff, void *buf, size_t size);
int chunks_read(struct fs *fs, uint64_t ino, uint64_t off, void *buf,
    size_t size);
int chunks_write(struct fs *fs, uint64_t ino, uint64_t filesize, uint64_t off,
    const void *buf, size_t size);
int chunks_truncate(struct fs *fs, uint64_t ino, uint64_t size);
int chunks_trim(struct fs *fs, uint64_t ino, uint64_t size);
int chunks_store(struct fs *fs, uint64_t ino, uint64_t idx, const void *p,
    size_t n);
int chunks_drop(struct fs *fs, uint64_t ino, uint64_t idx);
int chunks_drop_range(struct fs *fs, uint64_t ino, uint64_t from, uint64_t to);
int chunks_free_batch(struct fs *fs, uint64_t ino, uint64_t from, int max);

/* --- snapshot.c --- */
/* Bytes a snapshot operation writes per row it copies (db.c's grow). */
#define SNAPSHOT_ROW_BYTES 128
int snapshot_load(struct fs *fs);
int snapshot_find(struct fs *fs, const char *name, int64_t *id);
int snapshot_exec_all(struct fs *fs, const char *const *sqls, size_t n,
    int64_t id);
uint64_t snapshot_rows(struct fs *fs, int64_t id);
void snapshot_flush_kernel(struct fs *fs, const struct fs_notify *n);

/* --- reclaim.c --- */
void reclaim_init(struct fs *fs);
int reclaim_big(uint64_t bytes);
int reclaim_defers(struct fs *fs, uint64_t size, uint64_t keep);
int reclaim_defer(struct fs *fs, uint64_t ino);
int reclaim_expose(struct fs *fs, uint64_t ino, uint64_t oldsize,
    uint64_t newsize);
int reclaim_truncate(struct fs *fs, const struct fs_attr *a, uint64_t size);
void reclaim_at_close(struct fs *fs);
int reclaim_help(struct fs *fs, long long *deadline);
int reclaim_help_or_wait(struct fs *fs, long long *deadline);

static inline void
fs_lock(struct fs *fs)
{
	pthread_mutex_lock(&fs->lock);
}

static inline void
fs_unlock(struct fs *fs)
{
	pthread_mutex_unlock(&fs->lock);
}

#endif
