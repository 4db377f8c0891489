/*
 * tree_snap.c: the snapshot source of fs/offline/tree.h, so that `atrium-fs
 * export DB SNAPSHOT` writes a tree as it was when the snapshot was taken.
 * Called by fs/offline/export.c through tree_open_snapshot.
 *
 * It reads the snap_ tables and the blocks of one snapshot (schema 3, see
 * fs/engine/schema.c and fs/engine/snapshot.c) on a read-only connection
 * (fs_open with FS_OPEN_READONLY), inside one read transaction held for as long
 * as the view is open: the snapshot cannot be dropped, nor its blocks freed,
 * half-way through the walk, whatever a mounted daemon does meanwhile.
 * The pooled readers are switched off, as for the live source.
 *
 * snap_dirents is keyed by (snap, id) with no index on the parent, so the
 * snapshot's entries are copied once, at open, into a TEMP table indexed
 * by (parent, id): each directory is then one index range, not a scan of
 * every snapshot's entries.  (A TEMP table is the connection's own, so a
 * read-only connection may write it.)  What a read costs: one row of
 * snap_chunks and its block per chunk read.
 */
#include "fs_int.h"
#include "tree.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The security label is never listed (fs/engine/xattr.c does the same). */
#define SNAP_XATTR_LABEL "security.selinux"

struct snap_src {
	struct fs *fs;
	int64_t id;                  /* snapshots.id */
};

/* Prepare sql (cached by db.c) and bind the snapshot's id as ?1 and, when
 * ino is not 0, ino as ?2.  NULL on failure (logged by db_stmt). */
static sqlite3_stmt *
snap_stmt(struct snap_src *s, const char *sql, uint64_t ino)
{
	sqlite3_stmt *st = db_stmt(s->fs, sql);

	if (st) {
		sqlite3_bind_int64(st, 1, s->id);
		if (ino)
			sqlite3_bind_int64(st, 2, (sqlite3_int64)ino);
	}
	return st;
}

/* ino's attributes as the snapshot holds them; -ENOENT when it holds no
 * such inode.  Called with fs->lock held. */
static int
snap_attr(struct snap_src *s, uint64_t ino, struct fs_attr *out)
{
	sqlite3_stmt *st;
	int rc, r = 0;

	if (!(st = snap_stmt(s, "SELECT " INODE_COLUMNS("") " FROM "
	    "snap_inodes WHERE snap = ? AND ino = ?", ino)))
		return -EIO;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		inode_from_row(st, 0, ino, out);
	else
		r = rc == SQLITE_DONE ? -ENOENT : db_errno(s->fs, rc,
		    "reading a snapshot's inode");
	sqlite3_reset(st);
	return r;
}

static int
snap_getattr(void *src, uint64_t ino, struct fs_attr *out)
{
	struct snap_src *s = src;
	int r;

	fs_lock(s->fs);
	r = snap_attr(s, ino, out);
	fs_unlock(s->fs);
	return r;
}

static int
snap_next_entry(void *src, uint64_t dir, int64_t off, struct tree_entry *out)
{
	struct snap_src *s = src;
	sqlite3_stmt *st;
	int rc, r = 0;

	fs_lock(s->fs);
	if (!(st = db_stmt(s->fs, "SELECT id, name, ino FROM "
	    "temp.tree_snap_dirents WHERE parent = ? AND id > ? ORDER BY id "
	    "LIMIT 1"))) {
		fs_unlock(s->fs);
		return -EIO;
	}
	sqlite3_bind_int64(st, 1, (sqlite3_int64)dir);
	sqlite3_bind_int64(st, 2, off);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		size_t n = (size_t)sqlite3_column_bytes(st, 1);
		if (n == 0 || n > FS_NAME_MAX) {
			r = -ENAMETOOLONG;    /* fsck's I3: never stored */
		} else {
			memcpy(out->name, sqlite3_column_text(st, 1), n);
			out->name[n] = '\0';
			out->off = sqlite3_column_int64(st, 0);
			out->ino = (uint64_t)sqlite3_column_int64(st, 2);
			r = 1;
		}
	} else if (rc != SQLITE_DONE) {
		r = db_errno(s->fs, rc, "reading a snapshot's directory");
	}
	sqlite3_reset(st);
	fs_unlock(s->fs);
	return r;
}

/* Fill buf (n bytes from offset within of chunk idx of ino) from the
 * snapshot's chunk: its bytes, zeros past its length or where there is
 * no chunk.  0 or -errno.  Called with fs->lock held. */
static int
snap_read_chunk(struct snap_src *s, uint64_t ino, uint64_t idx,
    size_t within, char *buf, size_t n)
{
	sqlite3_stmt *st;
	size_t have = 0;
	int rc;

	if (!(st = snap_stmt(s, "SELECT min(c.len, length(b.data)), b.data "
	    "FROM snap_chunks c JOIN blocks b ON b.id = c.block WHERE c.snap "
	    "= ? AND c.ino = ? AND c.idx = ?", ino)))
		return -EIO;
	sqlite3_bind_int64(st, 3, (sqlite3_int64)idx);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t len = sqlite3_column_int64(st, 0);
		const char *data = sqlite3_column_blob(st, 1);
		if (len > (int64_t)within && data) {
			have = (size_t)len - within;
			if (have > n)
				have = n;
			memcpy(buf, data + within, have);
		}
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_errno(s->fs, rc, "reading a snapshot's data");
	memset(buf + have, 0, n - have);
	return 0;
}

static ssize_t
snap_read(void *src, uint64_t ino, uint64_t off, void *buf, size_t size)
{
	struct snap_src *s = src;
	struct fs_attr a;
	size_t done = 0, n;
	int r;

	fs_lock(s->fs);
	if ((r = snap_attr(s, ino, &a)) == 0 && !S_ISREG(a.mode))
		r = S_ISDIR(a.mode) ? -EISDIR : -EINVAL;
	if (r == 0 && off < a.size && size > a.size - off)
		size = (size_t)(a.size - off);
	while (r == 0 && off < a.size && done < size) {
		n = FS_CHUNK - (size_t)(off % FS_CHUNK);
		if (n > size - done)
			n = size - done;
		r = snap_read_chunk(s, ino, off / FS_CHUNK, (size_t)(off %
		    FS_CHUNK), (char *)buf + done, n);
		done += n;
		off += n;
	}
	fs_unlock(s->fs);
	return r < 0 ? r : (ssize_t)done;
}

/* SEEK_DATA or SEEK_HOLE from off over ino's chunks (size bytes long),
 * as fs_seek: a chunk's bytes [idx*chunk, idx*chunk+len) are data, the
 * rest holes.  Called with fs->lock held. */
static int
snap_seek_chunks(struct snap_src *s, uint64_t ino, uint64_t size,
    uint64_t off, int whence, uint64_t *out)
{
	uint64_t pos = off, start, end;
	sqlite3_stmt *st;
	int rc, found = 0;

	if (!(st = snap_stmt(s, "SELECT idx, len FROM snap_chunks WHERE snap "
	    "= ? AND ino = ? AND idx >= ? ORDER BY idx", ino)))
		return -EIO;
	sqlite3_bind_int64(st, 3, (sqlite3_int64)(off / FS_CHUNK));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t len = sqlite3_column_int64(st, 1);
		start = (uint64_t)sqlite3_column_int64(st, 0) * FS_CHUNK;
		end = start + (uint64_t)(len > 0 ? len : 0);
		if (end <= pos)
			continue;
		if (whence == SEEK_DATA) {
			pos = start > pos ? start : pos;
			found = 1;
			break;
		}
		if (start > pos)
			break;           /* a hole between two chunks */
		pos = end;
		if (len < FS_CHUNK)
			break;           /* a hole after this chunk's bytes */
	}
	sqlite3_reset(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_errno(s->fs, rc, "seeking in a snapshot");
	if (whence == SEEK_DATA && (!found || pos >= size))
		return -ENXIO;
	*out = pos < size ? pos : size;
	return 0;
}

static int
snap_seek(void *src, uint64_t ino, uint64_t off, int whence, uint64_t *out)
{
	struct snap_src *s = src;
	struct fs_attr a;
	int r;

	*out = 0;
	if (whence != SEEK_DATA && whence != SEEK_HOLE)
		return -EINVAL;
	fs_lock(s->fs);
	if ((r = snap_attr(s, ino, &a)) == 0 && !S_ISREG(a.mode))
		r = S_ISDIR(a.mode) ? -EISDIR : -EINVAL;
	if (r == 0)
		r = off >= a.size ? -ENXIO :
		    snap_seek_chunks(s, ino, a.size, off, whence, out);
	fs_unlock(s->fs);
	return r;
}

/* Copy the blob of column 0 of st's row into buf of size bytes: its
 * length, -ERANGE when it does not fit, or (size 0) only its length. */
static ssize_t
snap_copy_value(sqlite3_stmt *st, void *buf, size_t size)
{
	size_t n = (size_t)sqlite3_column_bytes(st, 0);

	if (size == 0)
		return (ssize_t)n;
	if (n > size)
		return -ERANGE;
	if (n)
		memcpy(buf, sqlite3_column_blob(st, 0), n);
	return (ssize_t)n;
}

static int
snap_readlink(void *src, uint64_t ino, char *buf, size_t size)
{
	struct snap_src *s = src;
	sqlite3_stmt *st;
	ssize_t n = -EINVAL;
	int rc;

	if (size == 0)
		return -ERANGE;
	fs_lock(s->fs);
	if (!(st = snap_stmt(s, "SELECT target FROM snap_symlinks WHERE snap "
	    "= ? AND ino = ?", ino))) {
		fs_unlock(s->fs);
		return -EIO;
	}
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		/* Cut to size - 1 like readlink, and end it. */
		n = sqlite3_column_bytes(st, 0);
		if ((size_t)n > size - 1)
			n = (ssize_t)size - 1;
		memcpy(buf, sqlite3_column_blob(st, 0), (size_t)n);
		buf[n] = '\0';
	} else if (rc != SQLITE_DONE) {
		n = db_errno(s->fs, rc, "reading a snapshot's symlink");
	}
	sqlite3_reset(st);
	fs_unlock(s->fs);
	return (int)n;
}

static ssize_t
snap_listxattr(void *src, uint64_t ino, char *buf, size_t size)
{
	struct snap_src *s = src;
	sqlite3_stmt *st;
	ssize_t r;

	fs_lock(s->fs);
	if (!(st = snap_stmt(s, "SELECT name FROM snap_xattrs WHERE snap = ? "
	    "AND ino = ? AND name <> '" SNAP_XATTR_LABEL "' ORDER BY name",
	    ino))) {
		fs_unlock(s->fs);
		return -EIO;
	}
	r = xattr_names_on(st, buf, size);
	fs_unlock(s->fs);
	return r;
}

static ssize_t
snap_getxattr(void *src, uint64_t ino, const char *name, void *buf,
    size_t size)
{
	struct snap_src *s = src;
	sqlite3_stmt *st;
	ssize_t r = -ENODATA;
	int rc;

	fs_lock(s->fs);
	if (!(st = snap_stmt(s, "SELECT value FROM snap_xattrs WHERE snap = ? "
	    "AND ino = ? AND name = ?", ino))) {
		fs_unlock(s->fs);
		return -EIO;
	}
	sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		r = snap_copy_value(st, buf, size);
	else if (rc != SQLITE_DONE)
		r = db_errno(s->fs, rc, "reading a snapshot's xattr");
	sqlite3_reset(st);
	fs_unlock(s->fs);
	return r;
}

/* End the view's transaction and close its fs (the TEMP table goes with
 * the connection). */
static void
snap_close(void *src)
{
	struct snap_src *s = src;

	fs_lock(s->fs);
	db_exec(s->fs, "COMMIT");
	fs_unlock(s->fs);
	fs_close(s->fs);
	free(s);
}

static const struct tree_ops snap_ops = {
	.getattr = snap_getattr,
	.next_entry = snap_next_entry,
	.read = snap_read,
	.seek = snap_seek,
	.readlink = snap_readlink,
	.listxattr = snap_listxattr,
	.getxattr = snap_getxattr,
	.close = snap_close,
};

/* The id of snapshot name into s->id: 0, -ENOTSUP when the database has
 * no snapshot tables (schema before 3), -ENOENT when none has that name,
 * or -errno.  Called inside the view's transaction. */
static int
snap_find(struct snap_src *s, const char *name)
{
	sqlite3_stmt *st;
	int rc;

	if (schema_version(s->fs->db) < 3)
		return -ENOTSUP;
	if (!(st = db_stmt(s->fs, "SELECT id FROM snapshots WHERE name = ?")))
		return -EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		s->id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE)
		return -ENOENT;
	return rc == SQLITE_ROW ? 0 : db_errno(s->fs, rc, "finding a snapshot");
}

/* Begin the view's transaction, find the snapshot and copy its entries
 * into the TEMP table (see the head).  0 or -errno. */
static int
snap_begin(struct snap_src *s, const char *name)
{
	char sql[192];
	int r;

	readers_off(s->fs);
	fs_lock(s->fs);
	if ((r = db_exec(s->fs, "BEGIN")) == 0 &&
	    (r = snap_find(s, name)) == 0) {
		snprintf(sql, sizeof(sql), "CREATE TEMP TABLE tree_snap_dirents "
		    "AS SELECT id, parent, name, ino FROM snap_dirents WHERE "
		    "snap = %lld", (long long)s->id);
		if ((r = db_exec(s->fs, sql)) == 0)
			r = db_exec(s->fs, "CREATE INDEX temp.tree_snap_dirents_"
			    "parent ON tree_snap_dirents(parent, id)");
	}
	fs_unlock(s->fs);
	return r;
}

int
tree_open_snapshot(const char *path, const char *name, struct tree **out)
{
	struct snap_src *s;
	struct tree *t;
	int r;

	*out = NULL;
	if (!(s = calloc(1, sizeof(*s))))
		return -ENOMEM;
	if ((r = fs_open(path, FS_OPEN_READONLY, &s->fs)) < 0) {
		free(s);
		return r;
	}
	if ((r = snap_begin(s, name)) < 0 || !(t = calloc(1, sizeof(*t)))) {
		snap_close(s);
		return r < 0 ? r : -ENOMEM;
	}
	t->ops = &snap_ops;
	t->src = s;
	*out = t;
	return 0;
}
