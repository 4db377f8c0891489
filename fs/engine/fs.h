/*
 * fs.h: the atrium-fs core, a POSIX filesystem kept in one SQLite file.
 *
 * The core knows nothing of FUSE: fs/daemon/fuse_ops.c adapts it to the kernel,
 * fs/fs_main.c uses it for mkfs and fsck, and later export, import and
 * snapshots use it the same way.  Everything is keyed by inode number (the
 * SQLite rowid of the inode, which is also the FUSE inode number; the root
 * is FS_ROOT_INO), never by path.
 *
 * Threads: every public fs_* function takes the filesystem's one mutex, so
 * any thread may call any function.  The exception: fs_getxattr and
 * fs_listxattr of an inode that has no extended attribute are answered
 * from a cache under a lock of its own (fs/engine/xattr.c), so they never wait
 * behind another call, a commit or an fsync; nor does fs_error.  Mutating
 * calls run in a savepoint inside a longer transaction that is committed
 * in groups (see fs/engine/db.c), so each call is atomic and the database is
 * consistent at every commit.
 *
 * Errors: every function returns 0 (or a byte count) or -errno.  A call
 * that adds data or names gets -ENOSPC when the disk holding the database is
 * nearly full, and -EDQUOT when it would pass the workspace's quota (calls
 * that free space still work in both cases); once a failed commit has
 * lost work already answered, every mutating call and fs_sync get -EIO
 * until the filesystem is opened again (fs/engine/db.c tells why).
 */
#ifndef ATRIUM_FS_H
#define ATRIUM_FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define FS_ROOT_INO 1
/* The schema version (PRAGMA user_version) this program writes. */
#define FS_SCHEMA_VERSION 3
#define FS_NAME_MAX 255
#define FS_SYMLINK_MAX 4095
#define FS_XATTR_NAME_MAX 255
#define FS_XATTR_VALUE_MAX 65536
/* Largest file: 64 TiB keeps every offset and chunk index in range. */
#define FS_FILE_MAX (1LL << 46)

struct fs;

/* An inode's attributes, as stat(2) shows them. */
struct fs_attr {
	uint64_t ino;
	uint32_t mode;           /* type and permission bits */
	uint32_t nlink;
	uint32_t uid, gid;
	uint64_t size;
	uint64_t rdev;
	uint64_t blocks;         /* 512-byte units of what is stored */
	struct timespec atime, mtime, ctime;
};

/* Who asks: new inodes take this owner (fuse_req_ctx in the adapter). */
struct fs_ctx {
	uint32_t uid, gid;
};

/* fs_setattr's mask. */
enum {
	FS_SET_MODE = 1 << 0,
	FS_SET_UID = 1 << 1,
	FS_SET_GID = 1 << 2,
	FS_SET_SIZE = 1 << 3,
	FS_SET_ATIME = 1 << 4,
	FS_SET_MTIME = 1 << 5,
	FS_SET_ATIME_NOW = 1 << 6,
	FS_SET_MTIME_NOW = 1 << 7,
	FS_SET_CTIME = 1 << 8,
};

struct fs_setattr {
	unsigned valid;          /* FS_SET_* bits */
	uint32_t mode, uid, gid;
	uint64_t size;
	struct timespec atime, mtime, ctime;
};

/* fs_open flags. */
enum {
	FS_OPEN_READONLY = 1 << 0,   /* fsck: no migration, no cleanup */
	FS_OPEN_CLEAN_ORPHANS = 1 << 1, /* mount: drop inodes with nlink 0 */
	FS_OPEN_KEEP_WAL = 1 << 2,   /* the WAL stays (truncated) at close:
				      * the process may not remove files in
				      * the database's directory */
};

/* fs_rename flags: the values of RENAME_NOREPLACE and RENAME_EXCHANGE. */
#define FS_RENAME_NOREPLACE (1 << 0)
#define FS_RENAME_EXCHANGE (1 << 1)

/* fs_setxattr flags: the values of XATTR_CREATE and XATTR_REPLACE. */
#define FS_XATTR_CREATE 1
#define FS_XATTR_REPLACE 2

/*
 * One directory entry for fs_readdir's callback.  off is the cookie to resume
 * after this entry.  attr is filled only when fs_readdir was asked for it.
 * The callback returns 0 when it took the entry (and fs_readdir then pins the
 * inode if asked to), 1 when its buffer is full (the entry is not taken).
 */
struct fs_dirent {
	const char *name;
	uint64_t ino;
	uint32_t mode;
	int64_t off;
	const struct fs_attr *attr;
};
typedef int (*fs_readdir_cb)(void *arg, const struct fs_dirent *de);

struct fs_statfs {
	uint64_t bsize, blocks, bfree, bavail, files, ffree, namemax;
};

/* --- lifecycle (fs/engine/core.c) --- */

/* Create a new filesystem at path whose root is owned by uid:gid.
 * -EEXIST when path exists and is not empty. */
int fs_mkfs(const char *path, uint32_t uid, uint32_t gid);

/* Open an existing filesystem.  -ENOENT when missing, -EPROTO when its schema
 * is newer than this program, -EINVAL when it is no atrium-fs database. */
int fs_open(const char *path, int flags, struct fs **out);

/* Commit what is pending, drop unlinked inodes, close.  Accepts NULL. */
void fs_close(struct fs *fs);

/* Start or stop the thread that commits grouped writes every interval. */
int fs_committer_start(struct fs *fs, unsigned interval_ms);
void fs_committer_stop(struct fs *fs);

/* From fs_reclaimer_start on, deleting or truncating a big file frees its
 * chunks in the background (fs/engine/reclaim.c): with thread, a thread of its
 * own does it; else the caller calls fs_reclaim_batch, which does one unit
 * of it: 1 when it did some, 0 when nothing is left, or -errno. */
int fs_reclaimer_start(struct fs *fs, int thread);
void fs_reclaimer_stop(struct fs *fs);
int fs_reclaim_batch(struct fs *fs);

/* Give the pages deletes freed inside the database back to the disk, in
 * bounded batches with fs->lock released between them (fs/engine/vacuum.c): the
 * pages given back, -EOPNOTSUPP for a database without SQLite's pointer
 * map (only `atrium-fs compact` of the unmounted file shrinks it), or
 * -errno. */
int64_t fs_vacuum(struct fs *fs);

/* Commit pending work now; durable on disk when full is set.  0 or -errno;
 * -EIO for ever once a failed commit lost answered work (see
 * fs/engine/db.c). */
int fs_sync(struct fs *fs, int full);

/* 0, or -EIO once the filesystem has failed that way (read-only until it is
 * opened again).  Read without the lock. */
int fs_error(struct fs *fs);

/* --- names and inodes (fs/engine/core.c) --- */

/* Look up name in parent.  With pin, the inode's lookup count goes up by one. */
int fs_lookup(struct fs *fs, uint64_t parent, const char *name, int pin,
    struct fs_attr *out);

/* Drop n lookups; an unlinked inode without lookups is deleted. */
void fs_forget(struct fs *fs, uint64_t ino, uint64_t n);

int fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *out);
int fs_setattr(struct fs *fs, uint64_t ino, const struct fs_setattr *sa,
    struct fs_attr *out);

/* Make a regular file, fifo, socket, device or (S_ISDIR) directory. */
int fs_mknod(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
    const char *name, uint32_t mode, uint64_t rdev, int pin,
    struct fs_attr *out);
int fs_symlink(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
    const char *name, const char *target, int pin, struct fs_attr *out);
/* The target into buf (NUL-terminated); its length or -errno. */
int fs_readlink(struct fs *fs, uint64_t ino, char *buf, size_t size);
int fs_link(struct fs *fs, uint64_t ino, uint64_t parent, const char *name,
    int pin, struct fs_attr *out);
int fs_unlink(struct fs *fs, uint64_t parent, const char *name);
int fs_rmdir(struct fs *fs, uint64_t parent, const char *name);
int fs_rename(struct fs *fs, uint64_t parent, const char *name,
    uint64_t newparent, const char *newname, unsigned flags);

/* Entries after cookie off ("." and ".." first), until cb says full. */
int fs_readdir(struct fs *fs, uint64_t ino, int64_t off, int plus,
    fs_readdir_cb cb, void *arg);

/* --- content (fs/engine/core.c over fs/engine/chunks.c) --- */

/* Read up to size bytes at off into buf; bytes read or -errno. */
ssize_t fs_read(struct fs *fs, uint64_t ino, uint64_t off, void *buf,
    size_t size);
/* Write size bytes at off; bytes written or -errno.  mtime and ctime
 * become now. */
ssize_t fs_write(struct fs *fs, uint64_t ino, uint64_t off, const void *buf,
    size_t size);
/* fs_write of pages from the kernel's writeback cache: the times are the
 * kernel's to set (it stamped them at write(2) and sends them in a setattr
 * when they changed), so they are kept as they are. */
ssize_t fs_write_back(struct fs *fs, uint64_t ino, uint64_t off,
    const void *buf, size_t size);
/* Open-time O_TRUNC: the size, and mtime and ctime now. */
int fs_truncate(struct fs *fs, uint64_t ino, uint64_t size);
/* fallocate: mode 0 or FALLOC_FL_KEEP_SIZE extend the size (holes are
 * zeros); FALLOC_FL_PUNCH_HOLE|FALLOC_FL_KEEP_SIZE and FALLOC_FL_ZERO_RANGE
 * (with or without KEEP_SIZE) make the range a hole that stores nothing,
 * ZERO_RANGE extending the file as on ext4.  Other modes: -EOPNOTSUPP. */
int fs_fallocate(struct fs *fs, uint64_t ino, int mode, uint64_t off,
    uint64_t len);
/* lseek SEEK_DATA / SEEK_HOLE (fs/engine/holes.c): the offset into *out, -ENXIO
 * at or past the end or when only holes follow off. */
int fs_seek(struct fs *fs, uint64_t ino, uint64_t off, int whence,
    uint64_t *out);

int fs_statfs(struct fs *fs, struct fs_statfs *out);

/* --- quota (fs/engine/quota.c) --- */

/* Limit the bytes stored and the inodes (0: no limit); a call that would
 * grow past one gets -EDQUOT, one that frees always works.  Call before
 * serving; the first limit counts the workspace once.  0 or -errno. */
int fs_quota_set(struct fs *fs, uint64_t bytes, uint64_t inodes);
/* 1 when little of the byte quota is left: writers should bypass the
 * kernel's writeback cache, so that EDQUOT reaches write(2)
 * (fs/engine/quota.c). */
int fs_quota_near(struct fs *fs);
/* What the quota counts now (see fs/engine/quota.c).  0. */
int fs_quota_usage(struct fs *fs, uint64_t *bytes, uint64_t *inodes);
/* The limits fs_quota_set last noted in the database (0: none, or never
 * set): the quota of the daemon that last mounted it.  0 or -errno. */
int fs_quota_recorded(struct fs *fs, uint64_t *bytes, uint64_t *inodes);
/* The quota's figures: what is used, the snapshots' share of it, and
 * for a refused snapshot what it would have kept. */
struct fs_quota_figures {
	uint64_t quota;          /* byte quota, 0: none */
	uint64_t used;           /* bytes counted: live and snapshots only */
	uint64_t snap_only;      /* of used, what only snapshots keep */
	uint64_t keep;           /* a refused snapshot's cost (else 0) */
	uint64_t inodes, quota_inodes;
};
int fs_quota_figures(struct fs *fs, struct fs_quota_figures *out);

/* --- extended attributes (fs/engine/xattr.c) --- */
int fs_setxattr(struct fs *fs, uint64_t ino, const char *name,
    const void *value, size_t size, int flags);
/* Value size, or copied into buf when size > 0 (-ERANGE when too small). */
ssize_t fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void *buf,
    size_t size);
/* NUL-separated names, as listxattr(2). */
ssize_t fs_listxattr(struct fs *fs, uint64_t ino, char *buf, size_t size);
int fs_removexattr(struct fs *fs, uint64_t ino, const char *name);

/* --- space used (fs/offline/du.c) --- */

/* What a database stores against its size on disk. */
struct fs_du {
	uint64_t data_bytes;     /* bytes of file data stored (holes cost 0),
	                          * each block once however many share it */
	uint64_t snap_only_bytes; /* of those, held by snapshots alone */
	uint64_t file_sizes;     /* the regular files' sizes added up */
	uint64_t inodes;
	uint64_t db_bytes;       /* the database file */
	uint64_t wal_bytes;      /* its write-ahead log (0 when there is none) */
};

/* Count them from the last committed state (safe while mounted).
 * 0 or -errno, as fs_open. */
int fs_du(const char *path, struct fs_du *out);

/* --- snapshots (fs/engine/snapshot.c, fs/engine/restore.c) --- */

/* A snapshot name: 1..FS_SNAPSHOT_NAME_MAX bytes of [A-Za-z0-9._:@+-], not
 * starting with '-'. */
#define FS_SNAPSHOT_NAME_MAX 128
/* 0 when name is a valid snapshot name, else -EINVAL. */
int fs_snapshot_name_ok(const char *name);

struct fs_snapshot_info {
	const char *name;        /* valid during the callback only */
	int64_t created_ns;      /* when it was taken, ns since the epoch */
	uint64_t inodes;         /* inodes it holds */
	uint64_t shared_bytes;   /* data it shares with the tree or others */
	uint64_t own_bytes;      /* data only it holds: what dropping frees */
};
typedef int (*fs_snapshot_cb)(void *arg, const struct fs_snapshot_info *s);

/* What a snapshot command on a mounted workspace tells the kernel to
 * forget (the adapter's fuse_lowlevel_notify_inval_*); called without the
 * fs's lock.  inode forgets ino's attributes, and with pages its cached
 * pages too, which makes the kernel write the dirty ones back first. */
struct fs_notify {
	void *arg;
	void (*inode)(void *arg, uint64_t ino, int pages);
	void (*entry)(void *arg, uint64_t parent, const char *name);
};
/* Take a snapshot of the whole tree under name, copying metadata only;
 * notify (mounted) flushes the kernel's dirty pages first.  -EINVAL for a
 * bad name, -EEXIST when one has that name, -EDQUOT when what it would
 * keep does not fit in the quota (figures into *why when not NULL), unless
 * flags has FS_SNAPSHOT_UNDO (fs/engine/quota.c: an undo point). */
#define FS_SNAPSHOT_UNDO 1
int fs_snapshot_take(struct fs *fs, const char *name, int flags,
    const struct fs_notify *notify, struct fs_quota_figures *why);
/* Make the tree what snapshot name saw; the snapshot stays
 * (fs/engine/restore.c). Inodes the kernel holds that the snapshot lacks or has
 * otherwise stay, unlinked, for the files open on them (the snapshot's version
 * of such a file comes back under a new inode number).  notify is NULL when
 * nothing is mounted; else it hears of each name and inode the kernel holds
 * whose rows changed.  -ENOENT, -EUCLEAN (a snapshot without its root), -EDQUOT
 * past the quota. */
int fs_snapshot_restore(struct fs *fs, const char *name,
    const struct fs_notify *notify);
/* Drop snapshot name, freeing the data only it held.  -ENOENT. */
int fs_snapshot_drop(struct fs *fs, const char *name);
/* cb for each snapshot, oldest first, until it returns non-zero. */
int fs_snapshot_list(struct fs *fs, fs_snapshot_cb cb, void *arg);

/* --- what changed since a snapshot (fs/engine/snapdiff.c) --- */

/* The most entries a diff answers by default. */
#define FS_DIFF_MAX 1000
/* One changed path: kind 'A' (added since), 'D' (removed since) or 'M'
 * (modified since); non-zero stops the diff. */
typedef int (*fs_diff_cb)(void *arg, char kind, const char *path);
/* cb for each path that differs between snapshot name and the live tree,
 * sorted by path, at most max; *more says there were more.  -ENOENT when
 * there is no such snapshot, -EINVAL for a bad name. */
int fs_snapshot_diff(struct fs *fs, const char *name, size_t max,
    fs_diff_cb cb, void *arg, int *more);

/* A handle of ino was opened (delta 1) or closed (-1) for writing: while
 * one is open the kernel may hold dirty pages, which snapshot and restore
 * have it write back first (fs/engine/inode.c). */
void fs_writers(struct fs *fs, uint64_t ino, int delta);

/* A request from the mount changed the tree (fs/daemon/fuse_ops.c notes each
 * one that succeeded).  fs_changes: the count, which starts at the
 * mount's time in nanoseconds, so that two values from different mounts
 * differ: a caller compares the values it read before and after
 * something ran to learn whether the tree changed meanwhile (the agent's
 * attribution of changes to people's commands, agent/undo.c). */
void fs_changed(struct fs *fs);
uint64_t fs_changes(struct fs *fs);

/* The mount's request counts and latency (fs/engine/opstats.h), noted by
 * fs/daemon/fuse_timed.c and read by fs/daemon/control_socket.c's "stats".
 * Never NULL. */
struct opstats *fs_opstats(struct fs *fs);

/* --- fsck (fs/engine/fsck.c) --- */

/* Check every invariant of fs/engine/schema.c; each problem is passed to report
 * (may be NULL).  The number of problems found, or -errno. */
typedef void (*fsck_report_cb)(void *arg, const char *problem);
int fsck_run(const char *path, int mounted, fsck_report_cb report, void *arg);

#endif
