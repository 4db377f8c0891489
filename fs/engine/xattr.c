/*
 * xattr.c: extended attributes (the xattrs table).  Called by
 * fs/daemon/fuse_ops.c.
 *
 * The user.*, trusted.* and security.* namespaces are stored as given (the
 * kernel has already checked the caller may use them), with two exceptions
 * that are refused with EOPNOTSUPP, as a filesystem without them answers:
 *   - system.* (POSIX ACLs): the kernel would not enforce ACLs it reads
 *     from here (the mount does not turn POSIX ACLs on, so the kernel never
 *     asks for one to check a permission: only programs do, and `ls -l`
 *     stops asking at the first EOPNOTSUPP, as for the label below).
 *   - security.selinux, a label that nothing reads from here: with SELinux
 *     on, the kernel labels a FUSE mount itself and never asks the daemon;
 *     without it, the label means nothing.  getxattr refuses it too, and
 *     that is what makes it worth refusing: coreutils' `ls -l` asks for it
 *     once per file listed until one answer says the filesystem keeps no
 *     labels, and then never again on this device, so a listing of 100,000
 *     files sends one such request instead of 100,000.  A label stored by
 *     an older atrium-fs stays in its row but is neither read nor listed.
 * Names are at most 255 bytes, values 64 KiB, as on Linux.
 *
 * The cache.  Most inodes have no extended attribute, yet the kernel asks
 * for security.capability before every write(2) to a file (FUSE keeps no
 * "has no security attributes" flag on its inodes).  fs->xattr_inos holds
 * every inode that has, or may have, an attribute; for any other inode
 * getxattr answers ENODATA and listxattr an empty list from memory, without
 * SQL and without fs->lock, so that answer never waits behind a commit or
 * an fsync;
 * for an inode that has some, a read-only connection answers unless the
 * open group changed them (readers.c).
 * The one rule that keeps it right: an inode is added before the first row
 * of its attributes is written (fs_setxattr, the only writer of the xattrs
 * table while mounted), and nothing is ever removed from the set while the
 * filesystem is open.  A member that has no attribute any more (removed, its
 * inode deleted, or its setxattr rolled back or lost) costs one SQL query,
 * never a wrong answer, and inode numbers are never reused (AUTOINCREMENT).
 * The set is filled from the xattrs table at open.  It holds at most
 * XATTR_CACHE_MAX inodes; when it would grow past that (or memory runs
 * out) it is dropped, and every call asks SQLite until the next mount.
 * fs->xattr_lock guards it alone; fs_setxattr takes it inside fs->lock.
 */
#include "fs_int.h"

#include <errno.h>

/* Set up the empty, unloaded cache (every call asks SQLite until
 * xattr_cache_load). */
void
xattr_cache_init(struct fs *fs, size_t max)
{
	pthread_mutex_init(&fs->xattr_lock, NULL);
	inoset_init(&fs->xattr_inos, max);
	fs->xattr_inos_known = 0;
}

/* Forget the set: every call asks SQLite from now on. */
static void
xattr_cache_drop(struct fs *fs)
{
	inoset_clear(&fs->xattr_inos);
	fs->xattr_inos_known = 0;
}

/* Fill the cache with the inodes that have attributes: 0 or -errno (the
 * cache is then left unknown, which is slower but right). */
int
xattr_cache_load(struct fs *fs)
{
	sqlite3_stmt *st = NULL;
	int rc, r = 0;

	rc = sqlite3_prepare_v2(fs->db, "SELECT DISTINCT ino FROM xattrs", -1,
	    &st, NULL);
	if (rc != SQLITE_OK)
		return db_errno(fs, rc, "loading the xattr cache");
	pthread_mutex_lock(&fs->xattr_lock);
	xattr_cache_drop(fs);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = inoset_add(&fs->xattr_inos,
		    (uint64_t)sqlite3_column_int64(st, 0));
	if (r == 0 && rc == SQLITE_DONE)
		fs->xattr_inos_known = 1;
	else
		xattr_cache_drop(fs);
	pthread_mutex_unlock(&fs->xattr_lock);
	sqlite3_finalize(st);
	if (r == -ENOSPC)
		log_info("%s: more than %zu inodes have extended attributes; "
		    "they are not cached", fs->path, fs->xattr_inos.max);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 :
	    db_errno(fs, rc, "loading the xattr cache");
}

/* Free the cache (at close). */
void
xattr_cache_free(struct fs *fs)
{
	inoset_clear(&fs->xattr_inos);
	pthread_mutex_destroy(&fs->xattr_lock);
}

/* 1 when ino surely has no attribute (answer from memory), else 0. */
static int
xattr_cache_none(struct fs *fs, uint64_t ino)
{
	int none;

	pthread_mutex_lock(&fs->xattr_lock);
	none = fs->xattr_inos_known && !inoset_has(&fs->xattr_inos, ino);
	pthread_mutex_unlock(&fs->xattr_lock);
	return none;
}

/* ino may have attributes from now on (before its row is written). */
static void
xattr_cache_note(struct fs *fs, uint64_t ino)
{
	pthread_mutex_lock(&fs->xattr_lock);
	if (fs->xattr_inos_known && inoset_add(&fs->xattr_inos, ino) < 0) {
		log_info("%s: more than %zu inodes have extended attributes; "
		    "they are not cached any more", fs->path, fs->xattr_inos.max);
		xattr_cache_drop(fs);
	}
	pthread_mutex_unlock(&fs->xattr_lock);
}

/* The one security label refused (see the head); listxattr's SQL skips it
 * by this name. */
#define XATTR_LABEL "security.selinux"

/* 1 when name is the security label this filesystem does not keep. */
static int
xattr_is_label(const char *name)
{
	return strcmp(name, XATTR_LABEL) == 0;
}

/* 0 when name is storable, or -errno. */
static int
xattr_check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return -EINVAL;
	if (n > FS_XATTR_NAME_MAX)
		return -ERANGE;
	if (strncmp(name, "system.", 7) == 0 || xattr_is_label(name))
		return -EOPNOTSUPP;
	return 0;
}

/* 1 when ino has name, 0 when not, or -errno (-ENOENT: no such inode). */
static int
xattr_exists(struct fs *fs, uint64_t ino, const char *name)
{
	sqlite3_stmt *st = db_stmt(fs,
	    "SELECT 1 FROM xattrs WHERE ino = ? AND name = ?");
	struct fs_attr a;
	int rc, r;

	if ((r = inode_get(fs, ino, &a)) < 0)
		return r;
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : db_errno(fs, rc, "xattr_exists");
}

/* The body of fs_setxattr. */
static int
xattr_set(struct fs *fs, uint64_t ino, const char *name, const void *value,
    size_t size, int flags)
{
	sqlite3_stmt *st;
	int r = xattr_exists(fs, ino, name);

	if (r < 0)
		return r;
	if (r == 1 && (flags & FS_XATTR_CREATE))
		return -EEXIST;
	if (r == 0 && (flags & FS_XATTR_REPLACE))
		return -ENODATA;
	xattr_cache_note(fs, ino);
	st = db_stmt(fs, "INSERT OR REPLACE INTO xattrs(ino, name, value) "
	    "VALUES(?, ?, ?)");
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_blob(st, 3, size ? value : "", (int)size, SQLITE_STATIC);
	if ((r = db_done(fs, st)) < 0)
		return r;
	return inode_touch(fs, ino, INODE_CTIME);
}

/* Set an extended attribute: 0, -EEXIST, -ENODATA or -errno. */
int
fs_setxattr(struct fs *fs, uint64_t ino, const char *name, const void *value,
    size_t size, int flags)
{
	int r;

	if ((r = xattr_check_name(name)) < 0)
		return r;
	if (size > FS_XATTR_VALUE_MAX)
		return -E2BIG;
	fs_lock(fs);
	if ((r = db_op_begin(fs, DB_GROW_META + size, 0)) == 0)
		r = db_op_end(fs, xattr_set(fs, ino, name, value, size, flags));
	fs_unlock(fs);
	return r;
}

/* Attribute name of ino through st, prepared from XATTR_GET_SQL on the
 * caller's connection (the writer's or a reader's): into *len its size
 * when size is 0, else -ERANGE or its size with the value in buf.
 * SQLITE_ROW, SQLITE_DONE when there is no such attribute, or an SQLite
 * error code. */
int
xattr_get_on(sqlite3_stmt *st, uint64_t ino, const char *name, void *buf,
    size_t size, ssize_t *len)
{
	int rc;

	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		if (size > 0 && n > size)
			*len = -ERANGE;
		else {
			if (size > 0 && n > 0)
				memcpy(buf, sqlite3_column_blob(st, 0), n);
			*len = (ssize_t)n;
		}
	}
	sqlite3_reset(st);
	return rc;
}

/* An attribute's value (or size when size is 0): its size, -ENODATA,
 * -EOPNOTSUPP for an ACL or the security label (see the head) or -errno. */
ssize_t
fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void *buf,
    size_t size)
{
	sqlite3_stmt *st;
	ssize_t r;
	int rc;

	if ((r = xattr_check_name(name)) < 0)
		return r == -EOPNOTSUPP ? r : -ENODATA;
	if (xattr_cache_none(fs, ino))
		return -ENODATA;
	/* Not changed by the open group: a read-only connection answers. */
	if ((r = readers_getxattr(fs, ino, name, buf, size)) != READERS_ASK_WRITER)
		return r;
	fs_lock(fs);
	if (!(st = db_stmt(fs, XATTR_GET_SQL))) {
		fs_unlock(fs);
		return -EIO;
	}
	rc = xattr_get_on(st, ino, name, buf, size, &r);
	if (rc == SQLITE_DONE)
		r = -ENODATA;
	else if (rc != SQLITE_ROW)
		r = db_errno(fs, rc, "getxattr");
	fs_unlock(fs);
	return r;
}

/* The names st's rows give, each with its NUL, into buf (or their size
 * when size is 0); st is reset.  Bytes, -ERANGE or -EIO.  Also for the
 * snapshot tree view (tree_snap.c). */
ssize_t
xattr_names_on(sqlite3_stmt *st, char *buf, size_t size)
{
	size_t total = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(st, 0) + 1;
		if (size > 0 && total + n > size) {
			rc = SQLITE_RANGE;
			break;
		}
		if (size > 0)
			memcpy(buf + total, sqlite3_column_text(st, 0), n);
		total += n;
	}
	sqlite3_reset(st);
	if (rc == SQLITE_RANGE)
		return -ERANGE;
	return rc == SQLITE_DONE ? (ssize_t)total : -EIO;
}

/* Attribute names (or their size when size is 0): bytes or -errno. */
ssize_t
fs_listxattr(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	sqlite3_stmt *st;
	ssize_t r;

	if (xattr_cache_none(fs, ino))
		return 0;
	fs_lock(fs);
	if (!(st = db_stmt(fs, "SELECT name FROM xattrs WHERE ino = ? "
	    "AND name <> '" XATTR_LABEL "' ORDER BY name"))) {
		fs_unlock(fs);
		return -EIO;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	r = xattr_names_on(st, buf, size);
	fs_unlock(fs);
	return r;
}

/* The body of fs_removexattr. */
static int
xattr_remove(struct fs *fs, uint64_t ino, const char *name)
{
	sqlite3_stmt *st;
	int r = xattr_exists(fs, ino, name);

	if (r <= 0)
		return r < 0 ? r : -ENODATA;
	if (!(st = db_stmt(fs, "DELETE FROM xattrs WHERE ino = ? AND name = ?")))
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if ((r = db_done(fs, st)) < 0)
		return r;
	return inode_touch(fs, ino, INODE_CTIME);
}

/* Remove an extended attribute: 0, -ENODATA or -errno. */
int
fs_removexattr(struct fs *fs, uint64_t ino, const char *name)
{
	int r;

	if ((r = xattr_check_name(name)) < 0)
		return r == -EOPNOTSUPP ? r : -ENODATA;
	fs_lock(fs);
	if ((r = db_op_begin(fs, 0, 0)) == 0)
		r = db_op_end(fs, xattr_remove(fs, ino, name));
	fs_unlock(fs);
	return r;
}
