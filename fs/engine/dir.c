/*
 * dir.c: directory entries (the dirents table).  Called by core.c with
 * fs->lock held.
 *
 * readdir cookies: "." is offset 1, ".." offset 2, and an entry with dirents
 * id N has offset N + 2.  Listing resumes at ids greater than the cookie, so
 * entries added or removed between two readdir calls never make another
 * entry appear twice or vanish (rename keeps an entry's id).
 */
#include "fs_int.h"

#include <errno.h>

#define DIR_FIRST_COOKIE 2

/* Validate a name: 0, -EINVAL (empty, "/", "." or "..") or -ENAMETOOLONG. */
int
dir_check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || strchr(name, '/') || strcmp(name, ".") == 0 ||
	    strcmp(name, "..") == 0)
		return -EINVAL;
	return n > FS_NAME_MAX ? -ENAMETOOLONG : 0;
}

/* The inode named name in parent into *ino: 0, -ENOENT or -errno. */
int
dir_lookup(struct fs *fs, uint64_t parent, const char *name, uint64_t *ino)
{
	sqlite3_stmt *st = db_stmt(fs,
	    "SELECT ino FROM dirents WHERE parent = ? AND name = ?");
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)parent);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*ino = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : db_errno(fs, rc, "dir_lookup");
}

/* Add name -> ino in parent: 0, -EEXIST or -errno. */
int
dir_add(struct fs *fs, uint64_t parent, const char *name, uint64_t ino)
{
	sqlite3_stmt *st = db_stmt(fs,
	    "INSERT INTO dirents(parent, name, ino) VALUES(?, ?, ?)");
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)parent);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)ino);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return 0;
	if ((rc & 0xff) == SQLITE_CONSTRAINT)
		return -EEXIST;
	return db_errno(fs, rc, "dir_add");
}

/* Remove name from parent: 0, -ENOENT or -errno. */
int
dir_remove(struct fs *fs, uint64_t parent, const char *name)
{
	sqlite3_stmt *st = db_stmt(fs,
	    "DELETE FROM dirents WHERE parent = ? AND name = ?");
	int r;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)parent);
	sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
	if ((r = db_done(fs, st)) < 0)
		return r;
	return sqlite3_changes(fs->db) ? 0 : -ENOENT;
}

/* Move the entry parent/name to newparent/newname, keeping its id (the
 * target name must be free).  0 or -errno. */
int
dir_move(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
    const char *newname)
{
	sqlite3_stmt *st = db_stmt(fs, "UPDATE dirents SET parent = ?, name = ? "
	    "WHERE parent = ? AND name = ?");

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)newparent);
	sqlite3_bind_text(st, 2, newname, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)parent);
	sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
	return db_done(fs, st);
}

/* Point the existing entry parent/name at ino.  0 or -errno. */
int
dir_set_ino(struct fs *fs, uint64_t parent, const char *name, uint64_t ino)
{
	sqlite3_stmt *st = db_stmt(fs,
	    "UPDATE dirents SET ino = ? WHERE parent = ? AND name = ?");

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)parent);
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	return db_done(fs, st);
}

/* 1 when directory ino has no entries, 0 when it has, or -errno. */
int
dir_is_empty(struct fs *fs, uint64_t ino)
{
	sqlite3_stmt *st = db_stmt(fs,
	    "SELECT 1 FROM dirents WHERE parent = ? LIMIT 1");
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? 1 : db_errno(fs, rc, "dir_is_empty");
}

/* The parent of directory ino (the root is its own parent).  0 or -errno. */
int
dir_parent(struct fs *fs, uint64_t ino, uint64_t *parent)
{
	sqlite3_stmt *st;
	int rc;

	*parent = FS_ROOT_INO;
	if (ino == FS_ROOT_INO)
		return 0;
	if (!(st = db_stmt(fs, "SELECT parent FROM dirents WHERE ino = ? LIMIT 1")))
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*parent = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : db_errno(fs, rc, "dir_parent");
}

/* Pass "." and ".." to cb when the cookie is before them.  1 when cb is
 * full, 0 to go on, or -errno. */
static int
dir_list_dots(struct fs *fs, uint64_t ino, int64_t after, int plus,
    fs_readdir_cb cb, void *arg)
{
	struct fs_attr a;
	struct fs_dirent de;
	uint64_t parent;
	int r;

	for (int64_t off = after + 1; off <= DIR_FIRST_COOKIE; off++) {
		uint64_t target = ino;
		if (off == 2) {
			if ((r = dir_parent(fs, ino, &parent)) < 0)
				return r;
			target = parent;
		}
		if ((r = inode_get(fs, target, &a)) < 0)
			return r;
		de.name = off == 1 ? "." : "..";
		de.ino = target;
		de.mode = a.mode;
		de.off = off;
		de.attr = plus ? &a : NULL;
		if (cb(arg, &de))
			return 1;
	}
	return 0;
}

/* The statement listing a directory's entries after an id: with plus,
 * each row carries its inode's attributes too, so that a readdirplus page
 * is one query, not one more per entry. */
static sqlite3_stmt *
dir_list_stmt(struct fs *fs, int plus)
{
	if (plus)
		return db_stmt(fs, "SELECT d.id, d.name, d.ino, "
		    INODE_COLUMNS("i.") " FROM dirents d "
		    "JOIN inodes i ON i.ino = d.ino "
		    "WHERE d.parent = ? AND d.id > ? ORDER BY d.id");
	return db_stmt(fs, "SELECT d.id, d.name, d.ino, i.mode FROM dirents d "
	    "JOIN inodes i ON i.ino = d.ino "
	    "WHERE d.parent = ? AND d.id > ? ORDER BY d.id");
}

/* List directory ino after cookie `after`, passing each entry to cb until
 * it is full.  With plus, entries carry attributes and each taken entry
 * other than "." and ".." is pinned.  0 or -errno. */
int
dir_list(struct fs *fs, uint64_t ino, int64_t after, int plus,
    fs_readdir_cb cb, void *arg)
{
	sqlite3_stmt *st;
	struct fs_attr a;
	struct fs_dirent de;
	int r, rc;

	if (after < DIR_FIRST_COOKIE &&
	    (r = dir_list_dots(fs, ino, after, plus, cb, arg)) != 0)
		return r < 0 ? r : 0;
	if (!(st = dir_list_stmt(fs, plus)))
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
	sqlite3_bind_int64(st, 2, after < DIR_FIRST_COOKIE ? 0 :
	    after - DIR_FIRST_COOKIE);
	r = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		de.off = sqlite3_column_int64(st, 0) + DIR_FIRST_COOKIE;
		de.name = (const char *)sqlite3_column_text(st, 1);
		de.ino = (uint64_t)sqlite3_column_int64(st, 2);
		de.mode = (uint32_t)sqlite3_column_int64(st, 3);
		de.attr = NULL;
		if (plus) {
			inode_from_row(st, 3, de.ino, &a);
			de.attr = &a;
		}
		if (!de.name || cb(arg, &de))
			break;
		if (plus)
			inode_pin(fs, de.ino, 1);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		r = db_errno(fs, rc, "dir_list");
	sqlite3_reset(st);
	return r;
}
