/*
 * xattr.c: extended attributes (the xattrs table).  Called by fs/fuse_ops.c.
 *
 * The user.*, trusted.* and security.* namespaces are stored as given (the
 * kernel has already checked the caller may use them); system.* (POSIX
 * ACLs) is refused with EOPNOTSUPP since the kernel would not enforce ACLs
 * it reads from here.  Names are at most 255 bytes, values 64 KiB, as on
 * Linux.
 */
#include "fs_int.h"

#include <errno.h>

/* 0 when name is storable, or -errno. */
static int
xattr_check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return -EINVAL;
	if (n > FS_XATTR_NAME_MAX)
		return -ERANGE;
	if (strncmp(name, "system.", 7) == 0)
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

/* An attribute's value (or size when size is 0): its size or -errno. */
ssize_t
fs_getxattr(struct fs *fs, uint64_t ino, const char *name, void *buf,
    size_t size)
{
	sqlite3_stmt *st;
	ssize_t r = -ENODATA;
	int rc;

	if (xattr_check_name(name) < 0)
		return -ENODATA;
	fs_lock(fs);
	if (!(st = db_stmt(fs, "SELECT value FROM xattrs WHERE ino = ? AND name = ?"))) {
		fs_unlock(fs);
		return -EIO;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(st, 0);
		if (size > 0 && n > size)
			r = -ERANGE;
		else {
			if (size > 0 && n > 0)
				memcpy(buf, sqlite3_column_blob(st, 0), n);
			r = (ssize_t)n;
		}
	} else if (rc != SQLITE_DONE) {
		r = db_errno(fs, rc, "getxattr");
	}
	sqlite3_reset(st);
	fs_unlock(fs);
	return r;
}

/* Attribute names (or their size when size is 0): bytes or -errno. */
ssize_t
fs_listxattr(struct fs *fs, uint64_t ino, char *buf, size_t size)
{
	sqlite3_stmt *st;
	size_t total = 0;
	int rc;

	fs_lock(fs);
	if (!(st = db_stmt(fs, "SELECT name FROM xattrs WHERE ino = ? ORDER BY name"))) {
		fs_unlock(fs);
		return -EIO;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
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
	fs_unlock(fs);
	if (rc == SQLITE_RANGE)
		return -ERANGE;
	return rc == SQLITE_DONE ? (ssize_t)total : -EIO;
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
