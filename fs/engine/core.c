/*
 * core.c: the filesystem operations of fs.h, each one atomic.  Called by
 * fs/daemon/fuse_ops.c (one call per FUSE request), fs/fs_main.c (mkfs) and the
 * unit tests.  Each public function takes fs->lock; a mutating one runs inside
 * db_op_begin/db_op_end so that a failure part way leaves nothing behind.
 *
 * Permission checks are the kernel's (the mount uses default_permissions);
 * this file enforces what the kernel leaves to a filesystem: name rules,
 * types (ENOTDIR, EISDIR), ENOTEMPTY, EEXIST, rename loops, link counts and
 * ownership of new inodes (the caller's uid and gid, or the directory's gid
 * under a setgid directory).
 *
 * Lifecycle: fs_open, the lookup counts and the committer thread live here
 * too, as does statfs.  atime is kept but not updated by reads (as noatime),
 * since a read that writes would serialise every reader behind a commit.
 */
#include "fs_int.h"
#include "fdfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* Free a half-made or closed fs. */
static void
core_free(struct fs *fs)
{
	if (!fs)
		return;
	space_close(fs);
	readers_free(fs);
	db_stmts_free(fs);
	if (fs->db)
		sqlite3_close(fs->db);
	inode_pins_free(fs);
	xattr_cache_free(fs);
	pthread_cond_destroy(&fs->committer_cond);
	pthread_cond_destroy(&fs->reclaim_cond);
	pthread_cond_destroy(&fs->forgot_cond);
	pthread_mutex_destroy(&fs->pin_lock);
	pthread_mutex_destroy(&fs->lock);
	free(fs->dir);
	free(fs->path);
	free(fs);
}

/* Open path as an SQLite database: 0, -ENOENT or -errno. */
static int
core_open_db(const char *path, int readonly, sqlite3 **out)
{
	int flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
	int rc;

	*out = NULL;
	if (fdfiles_access(path, F_OK) < 0)	/* given as a descriptor? */
		return -errno;
	/* The writer's WAL appends go through walbuf.c, in big writes.  A
	 * reader given a path through a directory it holds open (`atrium-fs
	 * fsck --run-as`, which gave root up) opens through a shim, which
	 * keeps that path as it is (common/vfs_shim.h): SQLite's default VFS
	 * would walk the directory's real path, which it may not. */
	rc = sqlite3_open_v2(path, out, flags | SQLITE_OPEN_NOMUTEX,
	    !readonly ? walbuf_vfs_name() : strncmp(path, "/proc/self/fd/",
	    14) == 0 ? readahead_vfs_name() : NULL);
	if (rc != SQLITE_OK) {
		log_error("opening %s: %s", path, sqlite3_errstr(rc));
		sqlite3_close(*out);
		*out = NULL;
		return -EIO;
	}
	if (readonly) {
		sqlite3_busy_timeout(*out, 10000);
		return 0;
	}
	return db_configure(*out);
}

/* Give a new database SQLite's pointer map (auto_vacuum=INCREMENTAL, which
 * frees nothing by itself): a chunk's 64 KiB is a chain of overflow pages,
 * and to read at an offset inside it SQLite reads every page before it to
 * find the next, 8 preads for an average 4 KiB random read; with a pointer
 * map it finds them from one cached map page instead (a 4 KiB random read
 * took 18 to 19 us in the daemon, now 11 to 12).  Only before the first
 * table and the switch to WAL.  0 or -EIO (logged). */
static int
core_set_pointer_map(sqlite3 *db)
{
	char *err = NULL;

	if (sqlite3_exec(db, "PRAGMA auto_vacuum=INCREMENTAL", NULL, NULL,
	    &err) != SQLITE_OK) {
		log_error("setting up the pointer map: %s", err ? err : "?");
		sqlite3_free(err);
		return -EIO;
	}
	return 0;
}

/* Create a filesystem in an empty or missing file: 0, -EEXIST or -errno. */
int
fs_mkfs(const char *path, uint32_t uid, uint32_t gid)
{
	struct stat st;
	sqlite3 *db;
	int rc, r;

	if (stat(path, &st) == 0 && (st.st_size > 0 || !S_ISREG(st.st_mode)))
		return -EEXIST;
	/* A workspace is private to its room: 0600 (SQLite gives its -wal and
	 * -shm files the database's mode). */
	if ((r = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -errno;
	close(r);
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
	    NULL);
	if (rc != SQLITE_OK) {
		r = rc == SQLITE_CANTOPEN ? -ENOENT : -EIO;
		log_error("creating %s: %s", path, sqlite3_errstr(rc));
		sqlite3_close(db);
		return r;
	}
	if ((r = core_set_pointer_map(db)) == 0 && (r = db_configure(db)) == 0)
		r = schema_version(db) != 0 ? -EEXIST : schema_create(db, uid, gid);
	sqlite3_close(db);
	return r;
}

/* Drop the inodes a crash left unlinked.  0 or -errno; a full disk is no
 * reason to refuse the mount (they go next time). */
static int
core_clean_orphans(struct fs *fs)
{
	int r;

	if ((r = db_op_begin(fs, 0, 0)) == 0)
		r = db_op_end(fs, inode_purge_unlinked(fs));
	if (r > 0)
		log_info("removed %d unlinked inodes left by a crash", r);
	if (r >= 0)
		r = db_commit(fs, 0);
	if (r == -ENOSPC) {
		log_warn("%s: no room to remove inodes left unlinked by a crash; "
		    "they are removed at a later mount", fs->path);
		r = 0;
	}
	return r;
}

/* Open (and migrate) a filesystem: 0, -ENOENT, -EPROTO, -EINVAL or -errno. */
int
fs_open(const char *path, int flags, struct fs **out)
{
	struct fs *fs;
	int r;

	*out = NULL;
	if (!(fs = calloc(1, sizeof(*fs))) || !(fs->path = strdup(path))) {
		free(fs);
		return -ENOMEM;
	}
	fs->policy = &db_policy_fs;
	pthread_mutex_init(&fs->lock, NULL);
	pthread_mutex_init(&fs->pin_lock, NULL);
	pthread_cond_init(&fs->committer_cond, NULL);
	pthread_cond_init(&fs->reclaim_cond, NULL);
	pthread_cond_init(&fs->forgot_cond, NULL);
	xattr_cache_init(fs, XATTR_CACHE_MAX);
	fs->readonly = !!(flags & FS_OPEN_READONLY);
	fs->keep_wal = !!(flags & FS_OPEN_KEEP_WAL);
	atomic_store(&fs->changes, (uint64_t)fs_now_ns());
	reclaim_init(fs);
	if ((r = space_init(fs)) < 0 ||
	    (r = core_open_db(path, fs->readonly, &fs->db)) < 0 ||
	    (r = fs_keep_wal(fs, fs->db)) < 0 ||
	    (r = schema_open_check(fs->db, fs->readonly)) < 0 ||
	    (r = snapshot_load(fs)) < 0 ||
	    (r = readers_init(fs)) < 0 ||
	    (r = xattr_cache_load(fs)) < 0 ||
	    (!fs->readonly && (r = stored_install(fs)) < 0) ||
	    ((flags & FS_OPEN_CLEAN_ORPHANS) && (r = core_clean_orphans(fs)) < 0)) {
		core_free(fs);
		return r;
	}
	*out = fs;
	return 0;
}

/* Under FS_OPEN_KEEP_WAL, tell SQLite to truncate db's WAL at its last
 * close rather than remove it (it could not).  0 or -EIO (logged). */
int
fs_keep_wal(struct fs *fs, sqlite3 *db)
{
	int one = 1;

	if (!fs->keep_wal || sqlite3_file_control(db, "main",
	    SQLITE_FCNTL_PERSIST_WAL, &one) == SQLITE_OK)
		return 0;
	log_error("%s: cannot keep the WAL at close", fs->path);
	return -EIO;
}

void
fs_changed(struct fs *fs)
{
	atomic_fetch_add(&fs->changes, 1);
}

uint64_t
fs_changes(struct fs *fs)
{
	return atomic_load(&fs->changes);
}

struct opstats *
fs_opstats(struct fs *fs)
{
	return &fs->ops;
}

/* Commit, drop unlinked inodes, close.  Accepts NULL. */
void
fs_close(struct fs *fs)
{
	if (!fs)
		return;
	fs_committer_stop(fs);
	fs_reclaimer_stop(fs);
	fs_lock(fs);
	/* Nothing is looked up any more: unlinked inodes can go now, in a
	 * group of their own (their size is unknown here, see db.c); big
	 * ones, and what the reclaimer had left, a batch at a time. */
	inode_pins_free(fs);
	if (!fs->readonly && db_commit(fs, 0) == 0 && db_op_begin(fs, 0, 0) == 0)
		db_op_end(fs, inode_purge_unlinked(fs));
	reclaim_at_close(fs);
	db_commit(fs, 1);
	space_close(fs);
	fs_unlock(fs);
	core_free(fs);
}

/* The committer thread: commits an open group once it is interval old,
 * and checkpoints the WAL with the lock released (checkpoint.c). */
static void *
core_committer(void *arg)
{
	struct fs *fs = arg;
	struct timespec ts;

	fs_lock(fs);
	ckpt_start(fs);
	while (!fs->committer_stop) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)fs->commit_interval_ms * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&fs->committer_cond, &fs->lock, &ts);
		if (fs->txn_open)
			db_commit(fs, 0);
		ckpt_run(fs);
	}
	ckpt_stop(fs);
	fs_unlock(fs);
	return NULL;
}

/* Start the idle-commit thread: 0 or -errno. */
int
fs_committer_start(struct fs *fs, unsigned interval_ms)
{
	int r;

	fs->commit_interval_ms = interval_ms ? interval_ms : 100;
	fs->committer_stop = 0;
	if ((r = pthread_create(&fs->committer, NULL, core_committer, fs)) != 0)
		return -r;
	fs->committer_running = 1;
	return 0;
}

/* Stop the idle-commit thread, if running. */
void
fs_committer_stop(struct fs *fs)
{
	if (!fs->committer_running)
		return;
	fs_lock(fs);
	fs->committer_stop = 1;
	pthread_cond_signal(&fs->committer_cond);
	fs_unlock(fs);
	pthread_join(fs->committer, NULL);
	fs->committer_running = 0;
}

/* Commit now (durably when full): 0, or -EIO for ever once the mount has
 * failed (see db.c). */
int
fs_sync(struct fs *fs, int full)
{
	int r;

	fs_lock(fs);
	r = db_commit(fs, full);
	fs_unlock(fs);
	return r;
}

/* The sticky error of a failed mount: 0, or -EIO.  Read without fs->lock
 * (db_fail sets it atomically, once), so that asking never waits behind a
 * commit or an fsync. */
int
fs_error(struct fs *fs)
{
	return __atomic_load_n(&fs->failed, __ATOMIC_ACQUIRE);
}

/* Attributes of parent/name, pinned if asked: 0, -ENOENT or -errno. */
int
fs_lookup(struct fs *fs, uint64_t parent, const char *name, int pin,
    struct fs_attr *out)
{
	uint64_t ino;
	int r;

	memset(out, 0, sizeof(*out));
	if (strlen(name) > FS_NAME_MAX)
		return -ENAMETOOLONG;
	if ((r = readers_lookup(fs, parent, name, pin, out)) != READERS_ASK_WRITER)
		return r;
	fs_lock(fs);
	if ((r = dir_lookup(fs, parent, name, &ino)) == 0 &&
	    (r = inode_get(fs, ino, out)) == 0 && pin)
		inode_pin(fs, ino, 1);
	fs_unlock(fs);
	return r;
}

/* Drop n lookups; delete the inode if that was the last hold on it. */
void
fs_forget(struct fs *fs, uint64_t ino, uint64_t n)
{
	struct fs_attr a;

	fs_lock(fs);
	if (inode_unpin(fs, ino, n) == 0 && !fs->readonly &&
	    inode_get(fs, ino, &a) == 0 && a.nlink == 0 &&
	    db_op_begin(fs, 0, a.size) == 0 &&
	    db_op_end(fs, inode_release(fs, ino)) == 0)
		pthread_cond_broadcast(&fs->forgot_cond);   /* reclaim_help */
	fs_unlock(fs);
}

/* Attributes of ino: 0, -ENOENT or -errno. */
int
fs_getattr(struct fs *fs, uint64_t ino, struct fs_attr *out)
{
	int r;

	if ((r = readers_getattr(fs, ino, out)) != READERS_ASK_WRITER)
		return r;
	fs_lock(fs);
	r = inode_get(fs, ino, out);
	fs_unlock(fs);
	return r;
}

/* Apply a size change to a (a regular file): 0 or -errno. */
static int
core_resize(struct fs *fs, struct fs_attr *a, uint64_t size)
{
	int r;

	if (S_ISDIR(a->mode))
		return -EISDIR;
	if (!S_ISREG(a->mode))
		return -EINVAL;
	if (size > (uint64_t)FS_FILE_MAX)
		return -EFBIG;
	if (size < a->size && (r = reclaim_truncate(fs, a, size)) < 0)
		return r;
	if ((r = reclaim_expose(fs, a->ino, a->size, size)) < 0)
		return r;
	a->size = size;
	return 0;
}

/* Apply sa to a in memory (and chunks for a size change).  Times are kept
 * as ext4 keeps them (clamped to its range).  ctime follows ext4 too: every
 * setattr sets it, even one that changes nothing (chown(-1, -1)), except a
 * truncate(2) to the size the file has, which changes nothing at all.
 * 0 or -errno. */
static int
core_apply_setattr(struct fs *fs, struct fs_attr *a, const struct fs_setattr *sa)
{
	struct timespec now = inode_now();
	int resized = (sa->valid & FS_SET_SIZE) && sa->size != a->size;
	int r;

	if (sa->valid & FS_SET_SIZE) {
		if ((r = core_resize(fs, a, sa->size)) < 0)
			return r;
		if (resized)
			a->mtime = now;
	}
	if (sa->valid & FS_SET_MODE)
		a->mode = (a->mode & S_IFMT) | (sa->mode & 07777);
	if (sa->valid & FS_SET_UID)
		a->uid = sa->uid;
	if (sa->valid & FS_SET_GID)
		a->gid = sa->gid;
	if (sa->valid & FS_SET_ATIME_NOW)
		a->atime = now;
	else if (sa->valid & FS_SET_ATIME)
		a->atime = inode_time_clamp(sa->atime);
	if (sa->valid & FS_SET_MTIME_NOW)
		a->mtime = now;
	else if (sa->valid & FS_SET_MTIME)
		a->mtime = inode_time_clamp(sa->mtime);
	if (sa->valid & FS_SET_CTIME)
		a->ctime = inode_time_clamp(sa->ctime);
	else if (resized || sa->valid != FS_SET_SIZE)
		a->ctime = now;
	return 0;
}

/* Change attributes (size, mode, owner, times): 0 or -errno. */
int
fs_setattr(struct fs *fs, uint64_t ino, const struct fs_setattr *sa,
    struct fs_attr *out)
{
	uint64_t frees = 0;
	int r;

	fs_lock(fs);
	if ((sa->valid & FS_SET_SIZE) && inode_get(fs, ino, out) == 0)
		frees = out->size;
	if ((r = db_op_begin(fs, 0, frees)) == 0) {
		if ((r = inode_get(fs, ino, out)) == 0 &&
		    (r = core_apply_setattr(fs, out, sa)) == 0)
			r = inode_put(fs, out);
		r = db_op_end(fs, r);
	}
	/* Read back what stat shows (st_blocks follows the chunks kept). */
	if (r == 0)
		r = inode_get(fs, ino, out);
	fs_unlock(fs);
	return r;
}

/* Open-time O_TRUNC: size 0, and mtime and ctime now even when it was
 * empty already (as the kernel's do_truncate asks of ext4): 0 or -errno. */
int
fs_truncate(struct fs *fs, uint64_t ino, uint64_t size)
{
	struct fs_setattr sa = { .valid = FS_SET_SIZE | FS_SET_MTIME_NOW,
	    .size = size };
	struct fs_attr a;

	return fs_setattr(fs, ino, &sa, &a);
}

/* Check that parent is a live directory and name is free there: 0, -ENOTDIR,
 * -ENOENT (parent removed), -EEXIST or -errno.  Fills *pa. */
static int
core_check_new_name(struct fs *fs, uint64_t parent, const char *name,
    struct fs_attr *pa)
{
	uint64_t ino;
	int r;

	if ((r = inode_get(fs, parent, pa)) < 0)
		return r;
	if (!S_ISDIR(pa->mode))
		return -ENOTDIR;
	if (pa->nlink == 0)
		return -ENOENT;
	r = dir_lookup(fs, parent, name, &ino);
	return r == 0 ? -EEXIST : r == -ENOENT ? 0 : r;
}

/* Create an inode of mode named name in parent, owned by ctx (or the
 * parent's gid under a setgid parent).  Its number into *ino.  0 or -errno. */
static int
core_new(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
    const char *name, uint32_t mode, uint64_t rdev, uint64_t *ino)
{
	struct fs_attr pa;
	uint32_t gid = ctx->gid;
	int isdir = S_ISDIR(mode), r;

	if ((r = dir_check_name(name)) < 0 ||
	    (r = core_check_new_name(fs, parent, name, &pa)) < 0)
		return r;
	if (pa.mode & S_ISGID) {
		gid = pa.gid;
		if (isdir)
			mode |= S_ISGID;
	}
	if ((r = inode_new(fs, mode, ctx->uid, gid, rdev, isdir ? 2 : 1, ino)) < 0 ||
	    (r = dir_add(fs, parent, name, *ino)) < 0)
		return r;
	if (isdir && (r = inode_add_nlink(fs, parent, 1)) < 0)
		return r;
	return inode_touch(fs, parent, INODE_MTIME | INODE_CTIME);
}

/* Finish a creating call: attributes of ino into out, pinned if asked. */
static int
core_created(struct fs *fs, uint64_t ino, int pin, struct fs_attr *out)
{
	int r = inode_get(fs, ino, out);

	if (r == 0 && pin)
		inode_pin(fs, ino, 1);
	return r;
}

/* Make a file, fifo, node or directory: 0 or -errno. */
int
fs_mknod(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
    const char *name, uint32_t mode, uint64_t rdev, int pin,
    struct fs_attr *out)
{
	uint64_t ino = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if ((mode & S_IFMT) == 0)
		mode |= S_IFREG;
	if (!S_ISREG(mode) && !S_ISDIR(mode) && !S_ISFIFO(mode) &&
	    !S_ISSOCK(mode) && !S_ISCHR(mode) && !S_ISBLK(mode))
		return -EINVAL;
	fs_lock(fs);
	if ((r = db_op_begin(fs, DB_GROW_META, 0)) == 0) {
		r = core_new(fs, ctx, parent, name, mode, rdev, &ino);
		r = db_op_end(fs, r);
	}
	if (r == 0)
		r = core_created(fs, ino, pin, out);
	fs_unlock(fs);
	return r;
}

/* Store a symlink's target and size.  0 or -errno. */
static int
core_set_target(struct fs *fs, uint64_t ino, const char *target)
{
	sqlite3_stmt *st = db_stmt(fs,
	    "INSERT INTO symlinks(ino, target) VALUES(?, ?)");
	size_t n = strlen(target);
	int r;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_blob(st, 2, target, (int)n, SQLITE_STATIC);
	if ((r = db_done(fs, st)) < 0)
		return r;
	return inode_set_size(fs, ino, n);
}

/* Make a symlink: 0, -ENAMETOOLONG or -errno. */
int
fs_symlink(struct fs *fs, const struct fs_ctx *ctx, uint64_t parent,
    const char *name, const char *target, int pin, struct fs_attr *out)
{
	uint64_t ino = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (strlen(target) > FS_SYMLINK_MAX)
		return -ENAMETOOLONG;
	if (target[0] == '\0')
		return -ENOENT;
	fs_lock(fs);
	if ((r = db_op_begin(fs, DB_GROW_META + strlen(target), 0)) == 0) {
		if ((r = core_new(fs, ctx, parent, name, S_IFLNK | 0777, 0, &ino)) == 0)
			r = core_set_target(fs, ino, target);
		r = db_op_end(fs, r);
	}
	if (r == 0)
		r = core_created(fs, ino, pin, out);
	fs_unlock(fs);
	return r;
}

/* Symlink ino's target through st, prepared from READLINK_SQL on the
 * caller's connection (the writer's or a reader's), into buf (size > 0),
 * cut to fit and ended by a NUL; its length into *len.  SQLITE_ROW,
 * SQLITE_DONE when ino is no symlink, or an SQLite error code. */
int
core_readlink_on(sqlite3_stmt *st, uint64_t ino, char *buf, size_t size,
    int *len)
{
	int rc;

	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		if (n > size - 1)
			n = size - 1;
		memcpy(buf, sqlite3_column_blob(st, 0), n);
		buf[n] = '\0';
		*len = (int)n;
	}
	sqlite3_reset(st);
	return rc;
}

/* A symlink's target into buf: its length, -EINVAL or -errno. */
int
fs_readlink(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	sqlite3_stmt *st;
	int rc, r;

	if (size == 0)
		return -ERANGE;
	if ((r = readers_readlink(fs, ino, buf, size)) != READERS_ASK_WRITER)
		return r;
	fs_lock(fs);
	if (!(st = db_stmt(fs, READLINK_SQL))) {
		fs_unlock(fs);
		return -EIO;
	}
	rc = core_readlink_on(st, ino, buf, size, &r);
	if (rc == SQLITE_DONE)
		r = -EINVAL;
	else if (rc != SQLITE_ROW)
		r = db_errno(fs, rc, "readlink");
	fs_unlock(fs);
	return r;
}

/* The body of fs_link, inside its savepoint. */
static int
core_link(struct fs *fs, uint64_t ino, uint64_t parent, const char *name)
{
	struct fs_attr a, pa;
	int r;

	if ((r = dir_check_name(name)) < 0 || (r = inode_get(fs, ino, &a)) < 0)
		return r;
	if (S_ISDIR(a.mode))
		return -EPERM;
	if (a.nlink == 0)
		return -ENOENT;
	if (a.nlink >= 65000)
		return -EMLINK;
	if ((r = core_check_new_name(fs, parent, name, &pa)) < 0 ||
	    (r = dir_add(fs, parent, name, ino)) < 0 ||
	    (r = inode_add_nlink(fs, ino, 1)) < 0)
		return r;
	return inode_touch(fs, parent, INODE_MTIME | INODE_CTIME);
}

/* Add a hard link: 0, -EPERM (directory), -EEXIST or -errno. */
int
fs_link(struct fs *fs, uint64_t ino, uint64_t parent, const char *name,
    int pin, struct fs_attr *out)
{
	int r;

	memset(out, 0, sizeof(*out));
	fs_lock(fs);
	if ((r = db_op_begin(fs, DB_GROW_META, 0)) == 0)
		r = db_op_end(fs, core_link(fs, ino, parent, name));
	if (r == 0)
		r = core_created(fs, ino, pin, out);
	fs_unlock(fs);
	return r;
}

/* Remove the entry parent/name of inode a (a directory when isdir) and drop
 * its links; the inode goes when nothing holds it.  0 or -errno. */
static int
core_drop_entry(struct fs *fs, uint64_t parent, const char *name,
    const struct fs_attr *a)
{
	int r;

	if ((r = dir_remove(fs, parent, name)) < 0)
		return r;
	if (S_ISDIR(a->mode)) {
		if ((r = inode_add_nlink(fs, a->ino, -(int)a->nlink)) < 0 ||
		    (r = inode_add_nlink(fs, parent, -1)) < 0)
			return r;
	} else if ((r = inode_add_nlink(fs, a->ino, -1)) < 0) {
		return r;
	}
	if ((r = inode_touch(fs, parent, INODE_MTIME | INODE_CTIME)) < 0)
		return r;
	return inode_release(fs, a->ino);
}

/* The body of fs_unlink (isdir 0) and fs_rmdir (isdir 1). */
static int
core_remove(struct fs *fs, uint64_t parent, const char *name, int isdir)
{
	struct fs_attr a;
	uint64_t ino;
	int r;

	if (strlen(name) > FS_NAME_MAX)
		return -ENAMETOOLONG;
	if (isdir && strcmp(name, ".") == 0)
		return -EINVAL;
	if (isdir && strcmp(name, "..") == 0)
		return -ENOTEMPTY;
	if ((r = dir_lookup(fs, parent, name, &ino)) < 0 ||
	    (r = inode_get(fs, ino, &a)) < 0)
		return r;
	if (!isdir && S_ISDIR(a.mode))
		return -EISDIR;
	if (isdir && !S_ISDIR(a.mode))
		return -ENOTDIR;
	if (isdir && (r = dir_is_empty(fs, ino)) <= 0)
		return r < 0 ? r : -ENOTEMPTY;
	return core_drop_entry(fs, parent, name, &a);
}

/* The size of the inode parent/name names, 0 when none: what removing or
 * replacing it may delete. */
uint64_t
core_entry_size(struct fs *fs, uint64_t parent, const char *name)
{
	struct fs_attr a;
	uint64_t ino;

	if (strlen(name) > FS_NAME_MAX || dir_lookup(fs, parent, name, &ino) < 0 ||
	    inode_get(fs, ino, &a) < 0)
		return 0;
	return a.size;
}

/* Remove a non-directory name: 0, -EISDIR, -ENOENT or -errno. */
int
fs_unlink(struct fs *fs, uint64_t parent, const char *name)
{
	int r;

	fs_lock(fs);
	if ((r = db_op_begin(fs, 0, core_entry_size(fs, parent, name))) == 0)
		r = db_op_end(fs, core_remove(fs, parent, name, 0));
	fs_unlock(fs);
	return r;
}

/* Remove an empty directory: 0, -ENOTEMPTY, -ENOTDIR or -errno. */
int
fs_rmdir(struct fs *fs, uint64_t parent, const char *name)
{
	int r;

	fs_lock(fs);
	if ((r = db_op_begin(fs, 0, 0)) == 0)
		r = db_op_end(fs, core_remove(fs, parent, name, 1));
	fs_unlock(fs);
	return r;
}

/* List a directory from a cookie: 0, -ENOTDIR or -errno. */
int
fs_readdir(struct fs *fs, uint64_t ino, int64_t off, int plus,
    fs_readdir_cb cb, void *arg)
{
	struct fs_attr a;
	int64_t resume;
	int r;

	if ((r = readers_readdir(fs, ino, off, plus, cb, arg, &resume)) !=
	    READERS_ASK_WRITER)
		return r;
	/* The rest of the page (all of it, or from where the snapshot could
	 * no longer answer) from the writer. */
	fs_lock(fs);
	if ((r = inode_get(fs, ino, &a)) == 0)
		r = S_ISDIR(a.mode) ? dir_list(fs, ino, resume, plus, cb, arg) :
		    -ENOTDIR;
	fs_unlock(fs);
	return r;
}

/* Read from a file: bytes read (0 at or past the end) or -errno. */
ssize_t
fs_read(struct fs *fs, uint64_t ino, uint64_t off, void *buf, size_t size)
{
	struct fs_attr a;
	ssize_t n;
	int r, snap;

	if ((n = readers_read(fs, ino, off, buf, size)) != READERS_ASK_WRITER)
		return n;
	fs_lock(fs);
	snap = db_read_begin(fs);
	if ((r = inode_get(fs, ino, &a)) == 0 && S_ISDIR(a.mode))
		r = -EISDIR;
	if (r == 0) {
		if (off >= a.size)
			size = 0;
		else if (size > a.size - off)
			size = (size_t)(a.size - off);
		r = chunks_read(fs, ino, off, buf, size);
	}
	db_read_end(fs, snap);
	fs_unlock(fs);
	return r < 0 ? r : (ssize_t)size;
}

/* The body of fs_write. */
static int
core_write(struct fs *fs, uint64_t ino, uint64_t off, const void *buf,
    size_t size, int stamp)
{
	uint64_t end = off + size;
	struct fs_attr a;
	int r;

	if ((r = inode_get(fs, ino, &a)) < 0)
		return r;
	if (S_ISDIR(a.mode))
		return -EISDIR;
	if (!S_ISREG(a.mode))
		return -EINVAL;
	if (off > (uint64_t)FS_FILE_MAX || size > (uint64_t)FS_FILE_MAX - off)
		return -EFBIG;
	if ((r = reclaim_expose(fs, ino, a.size, off + size)) < 0 ||
	    (r = chunks_write(fs, ino, a.size, off, buf, size)) < 0)
		return r;
	if (end < a.size)
		end = a.size;
	if (stamp)
		return inode_set_size(fs, ino, end);
	return end == a.size ? 0 : inode_grow(fs, ino, end);
}

/* fs_write and fs_write_back: stamp says whether mtime and ctime become
 * now. */
static ssize_t
core_write_locked(struct fs *fs, uint64_t ino, uint64_t off, const void *buf,
    size_t size, int stamp)
{
	long long deadline = 0;
	int r;

	if (size == 0)
		return 0;
	fs_lock(fs);
	/* Over the quota while deleted files are still being freed: free
	 * them first, or wait for the kernel to forget one just deleted
	 * (reclaim.c; nothing is read before this). */
	while (!quota_fits(fs, size) && reclaim_help_or_wait(fs, &deadline))
		;
	if ((r = quota_admit(fs, size)) == 0 &&
	    (r = db_op_begin(fs, size + 2 * FS_CHUNK, 0)) == 0)
		r = db_op_end(fs, core_write(fs, ino, off, buf, size, stamp));
	fs_unlock(fs);
	return r < 0 ? r : (ssize_t)size;
}

/* Write to a file: bytes written, -EFBIG or -errno. */
ssize_t
fs_write(struct fs *fs, uint64_t ino, uint64_t off, const void *buf,
    size_t size)
{
	return core_write_locked(fs, ino, off, buf, size, 1);
}

/* Write back pages of the kernel's cache, which owns the file's times. */
ssize_t
fs_write_back(struct fs *fs, uint64_t ino, uint64_t off, const void *buf,
    size_t size)
{
	return core_write_locked(fs, ino, off, buf, size, 0);
}

/* fallocate PUNCH_HOLE (always with KEEP_SIZE) and ZERO_RANGE on a:
 * the range becomes a hole (fs/engine/holes.c); ZERO_RANGE without KEEP_SIZE
 * extends the file to its end, as on ext4.  mtime and ctime now. */
static int
core_zero_range(struct fs *fs, const struct fs_attr *a, int mode, uint64_t off,
    uint64_t len)
{
	int grow = !(mode & FALLOC_FL_KEEP_SIZE) && off + len > a->size;
	int r;

	if ((mode & FALLOC_FL_PUNCH_HOLE) && !(mode & FALLOC_FL_KEEP_SIZE))
		return -EOPNOTSUPP;
	/* Growing uncovers what a shrink left for reclaim.c: gone first. */
	if (grow && (r = reclaim_expose(fs, a->ino, a->size, off + len)) < 0)
		return r;
	if ((r = holes_punch(fs, a->ino, a->size, off, len)) < 0)
		return r;
	if (grow)
		return inode_set_size(fs, a->ino, off + len);
	return inode_touch(fs, a->ino, INODE_MTIME | INODE_CTIME);
}

/* The body of fs_fallocate. */
static int
core_fallocate(struct fs *fs, uint64_t ino, int mode, uint64_t off,
    uint64_t len)
{
	struct fs_attr a;
	int r;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE |
	    FALLOC_FL_ZERO_RANGE) ||
	    ((mode & FALLOC_FL_PUNCH_HOLE) && (mode & FALLOC_FL_ZERO_RANGE)))
		return -EOPNOTSUPP;
	if ((r = inode_get(fs, ino, &a)) < 0)
		return r;
	if (!S_ISREG(a.mode))
		return S_ISDIR(a.mode) ? -EISDIR : -ENODEV;
	if (off > (uint64_t)FS_FILE_MAX || len > (uint64_t)FS_FILE_MAX - off)
		return -EFBIG;
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE))
		return core_zero_range(fs, &a, mode, off, len);
	/* Holes are not stored, so fallocate stores nothing; but it promises
	 * that writing the range will not fail for room, which the quota
	 * must be able to keep: len is what the range may come to store. */
	if ((r = quota_reserve_check(fs, len)) < 0)
		return r;
	if ((mode & FALLOC_FL_KEEP_SIZE) || off + len <= a.size)
		return 0;
	if ((r = reclaim_expose(fs, ino, a.size, off + len)) < 0)
		return r;
	return inode_set_size(fs, ino, off + len);
}

/* Reserve (extend) a file, or punch or zero a range of it: 0, -EOPNOTSUPP
 * or -errno. */
int
fs_fallocate(struct fs *fs, uint64_t ino, int mode, uint64_t off, uint64_t len)
{
	uint64_t frees = (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)) ?
	    len : 0;
	int r;

	fs_lock(fs);
	/* A punch rewrites at most the two chunks at its ends. */
	if ((r = db_op_begin(fs, DB_GROW_META + (frees ? 2 * FS_CHUNK : 0),
	    frees)) == 0)
		r = db_op_end(fs, core_fallocate(fs, ino, mode, off, len));
	fs_unlock(fs);
	return r;
}

/* SEEK_DATA or SEEK_HOLE from off: the offset into *out; -ENXIO at or past
 * the end or when no data follows, -EINVAL for another whence, or -errno. */
int
fs_seek(struct fs *fs, uint64_t ino, uint64_t off, int whence, uint64_t *out)
{
	struct fs_attr a;
	int r;

	*out = 0;
	fs_lock(fs);
	if ((r = inode_get(fs, ino, &a)) == 0 && !S_ISREG(a.mode))
		r = S_ISDIR(a.mode) ? -EISDIR : -EINVAL;
	if (r == 0)
		r = holes_seek(fs, ino, a.size, off, whence, out);
	fs_unlock(fs);
	return r;
}

/* Space of the disk holding the database, less the reserve kept for
 * deletions (fs/engine/space.c), within the quota (fs/engine/quota.c): 0 or
 * -errno. */
int
fs_statfs(struct fs *fs, struct fs_statfs *out)
{
	int r;

	fs_lock(fs);
	if ((r = space_statfs(fs, out)) == 0)
		quota_statfs(fs, out);
	fs_unlock(fs);
	return r;
}
