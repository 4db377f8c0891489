/*
 * snapshot.c: named snapshots of the whole tree, and dropping and listing
 * them (fs.h: fs_snapshot_*); restoring one is restore.c's.  Called by
 * `atrium-fs snapshot`, `snapshots` and `drop` (fs/fs_main.c) on an unmounted
 * database, through the control socket (fs/daemon/control_socket.c) on a
 * mounted one, and by the unit tests; each call takes fs->lock and is one
 * operation of the grouped commits (db.c), committed durably before it returns.
 *
 * What a snapshot is (schema.c): a copy of the metadata rows of every
 * linked inode (inodes, dirents, chunks, symlinks, xattrs) in the snap_
 * tables under the snapshot's id.  Its chunks name the same blocks as the
 * live tree's, so taking one copies no file data: a 1 GiB file costs its
 * 16,384 chunk rows (a few hundred KiB), and from then on chunks.c copies a
 * block before writing it.  Restoring replaces the live rows by the
 * snapshot's, so it too costs rows, not data; what the live tree alone
 * held goes with its last reference (the schema's triggers), and so do the
 * blocks only a dropped snapshot named.
 *
 * Inode numbers are never reused (AUTOINCREMENT), so a restored inode is
 * the one the snapshot saw, and no inode made since can be confused with
 * it.
 *
 * Names: 1..FS_SNAPSHOT_NAME_MAX bytes of [A-Za-z0-9._:@+-], not starting
 * with '-' (they are shown on terminals and given on command lines).
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>

/* 0 when name is a valid snapshot name, else -EINVAL. */
int
fs_snapshot_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > FS_SNAPSHOT_NAME_MAX || name[0] == '-')
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || strchr("._:@+-", c)))
			return -EINVAL;
	}
	return 0;
}

/* Learn whether the database holds a snapshot (chunks.c skips asking
 * whether a block is shared when none does).  0 or -errno. */
int
snapshot_load(struct fs *fs)
{
	sqlite3_stmt *st;
	int rc;

	fs->snaps_maybe = 0;
	if (schema_version(fs->db) < 3)
		return 0;
	rc = sqlite3_prepare_v2(fs->db, "SELECT 1 FROM snapshots LIMIT 1", -1,
	    &st, NULL);
	if (rc != SQLITE_OK)
		return db_errno(fs, rc, "looking for snapshots");
	rc = sqlite3_step(st);
	fs->snaps_maybe = rc == SQLITE_ROW;
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    db_errno(fs, rc, "looking for snapshots");
}

/* Run one of this file's statements with ?1 bound to id.  0 or -errno. */
static int
snapshot_exec(struct fs *fs, const char *sql, int64_t id)
{
	sqlite3_stmt *st = db_stmt(fs, sql);

	if (!st)
		return -EIO;
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_int64(st, 1, id);
	return db_done(fs, st);
}

/* Run the n statements of sqls with ?1 bound to id.  0 or -errno.  Also
 * for restore.c. */
int
snapshot_exec_all(struct fs *fs, const char *const *sqls, size_t n, int64_t id)
{
	int r;

	for (size_t i = 0; i < n; i++)
		if ((r = snapshot_exec(fs, sqls[i], id)) < 0)
			return r;
	return 0;
}

/* The id of snapshot name into *id: 0, -ENOENT or -errno.  Also for
 * snapdiff.c. */
int
snapshot_find(struct fs *fs, const char *name, int64_t *id)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT id FROM snapshots WHERE name = ?");
	int rc;

	*id = 0;
	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*id = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -ENOENT : db_errno(fs, rc, "snapshot_find");
}

/* The metadata rows of the live tree (id 0) or of snapshot id: what a copy
 * of them writes, for db_op_begin.  0 when they cannot be counted (the
 * operation then finds out).  Also for restore.c. */
uint64_t
snapshot_rows(struct fs *fs, int64_t id)
{
	sqlite3_stmt *st = id ? db_stmt(fs, "SELECT (SELECT count(*) FROM "
	    "snap_inodes WHERE snap = ?1) + (SELECT count(*) FROM snap_dirents "
	    "WHERE snap = ?1) + (SELECT count(*) FROM snap_chunks WHERE "
	    "snap = ?1)") : db_stmt(fs, "SELECT (SELECT count(*) FROM inodes) + "
	    "(SELECT count(*) FROM dirents) + (SELECT count(*) FROM chunks)");
	uint64_t n = 0;

	if (!st)
		return 0;
	if (id)
		sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return n;
}

/* Run op(fs, id) as one operation growing the database by about grow
 * bytes, and commit it durably.  op's result, or -errno. */
static int
snapshot_op(struct fs *fs, uint64_t grow, int (*op)(struct fs *, int64_t),
    int64_t id)
{
	int r;

	if ((r = db_op_begin(fs, grow, 0)) < 0)
		return r;
	if ((r = db_op_end(fs, op(fs, id))) < 0)
		return r;
	return db_commit(fs, 1);
}

/* The inodes open for writing (pin_lock), into a malloc'd *out of *n.
 * 0 or -ENOMEM. */
static int
snapshot_writers(struct fs *fs, uint64_t **out, size_t *n)
{
	size_t i, k = 0;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&fs->pin_lock);
	if (fs->npins && !(*out = malloc(fs->npins * sizeof(**out)))) {
		pthread_mutex_unlock(&fs->pin_lock);
		return -ENOMEM;
	}
	for (i = 0; i < fs->pin_buckets; i++)
		for (struct pin *p = fs->pins[i]; p; p = p->next)
			if (p->writers)
				(*out)[k++] = p->ino;
	*n = k;
	pthread_mutex_unlock(&fs->pin_lock);
	return 0;
}

/* Have the kernel write back the dirty pages it holds (an invalidation of
 * an inode's pages waits for them; only files open for writing have any,
 * since the kernel writes a file's back when it is closed), without
 * fs->lock, which those writes need.  Nothing without n (not mounted).
 * Also for restore.c. */
void
snapshot_flush_kernel(struct fs *fs, const struct fs_notify *n)
{
	uint64_t *pins;
	size_t k;

	if (!n || snapshot_writers(fs, &pins, &k) < 0)
		return;
	for (size_t i = 0; i < k; i++)
		n->inode(n->arg, pins[i], 1);
	free(pins);
}

/* Copy the live rows under snapshot id (made by the caller). */
static int
snapshot_copy_live(struct fs *fs, int64_t id)
{
	static const char *const sqls[] = {
		"INSERT INTO snap_inodes(snap, ino, " INODE_COLUMNS("") ") "
		"SELECT ?1, ino, " INODE_COLUMNS("") " FROM inodes "
		"WHERE nlink > 0",
		"INSERT INTO snap_dirents SELECT ?1, id, parent, name, ino "
		"FROM dirents",
		"INSERT INTO snap_chunks SELECT ?1, c.ino, c.idx, c.block, c.len "
		"FROM chunks c JOIN inodes i ON i.ino = c.ino WHERE i.nlink > 0",
		"INSERT INTO snap_symlinks SELECT ?1, s.ino, s.target FROM "
		"symlinks s JOIN inodes i ON i.ino = s.ino WHERE i.nlink > 0",
		"INSERT INTO snap_xattrs SELECT ?1, x.ino, x.name, x.value FROM "
		"xattrs x JOIN inodes i ON i.ino = x.ino WHERE i.nlink > 0",
	};

	return snapshot_exec_all(fs, sqls, sizeof(sqls) / sizeof(sqls[0]), id);
}

/* Insert snapshot name and copy the live rows under it; a named one must
 * then fit in the quota (quota.c).  0 or -errno. */
static int
snapshot_insert(struct fs *fs, const char *name, int flags,
    struct fs_quota_figures *why)
{
	sqlite3_stmt *st = db_stmt(fs, "INSERT INTO snapshots(name, created) "
	    "VALUES(?, ?)");
	int64_t id;
	int r;

	if (!st)
		return -EIO;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, fs_now_ns());
	if ((r = db_done(fs, st)) < 0)
		return r;
	id = sqlite3_last_insert_rowid(fs->db);
	if ((r = snapshot_copy_live(fs, id)) < 0)
		return r;
	if (flags & FS_SNAPSHOT_UNDO) {
		fs->quota_exempt = 1;
		return 0;
	}
	return quota_snapshot_check(fs, id, why);
}

/* Take snapshot name of the live tree (with notify, a mounted one: what
 * the kernel's writeback cache holds is written first, so the snapshot has
 * every write that returned before it): 0, -EINVAL (a bad name), -EEXIST,
 * -EDQUOT (figures into *why), or -errno. */
int
fs_snapshot_take(struct fs *fs, const char *name, int flags,
    const struct fs_notify *notify, struct fs_quota_figures *why)
{
	int64_t id;
	int r;

	if ((r = fs_snapshot_name_ok(name)) < 0)
		return r;
	snapshot_flush_kernel(fs, notify);
	fs_lock(fs);
	if ((r = snapshot_find(fs, name, &id)) != -ENOENT) {
		fs_unlock(fs);
		return r == 0 ? -EEXIST : r;
	}
	/* The id comes from AUTOINCREMENT: a dropped snapshot's is never
	 * reused, so a half-seen id cannot mix two snapshots' rows. */
	if ((r = db_op_begin(fs, SNAPSHOT_ROW_BYTES *
	    (snapshot_rows(fs, 0) + 1), 0)) < 0) {
		fs_unlock(fs);
		return r;
	}
	fs->snaps_maybe = 1;      /* before any write can meet a shared block */
	r = snapshot_insert(fs, name, flags, why);
	if ((r = db_op_end(fs, r)) == 0)
		r = db_commit(fs, 1);
	else if (snapshot_load(fs) < 0)   /* none may be left after all */
		fs->snaps_maybe = 1;
	fs_unlock(fs);
	return r;
}

/* Delete snapshot id's rows (the blocks no one else names go with them). */
static int
snapshot_delete(struct fs *fs, int64_t id)
{
	static const char *const sqls[] = {
		"DELETE FROM snap_chunks WHERE snap = ?1",
		"DELETE FROM snap_inodes WHERE snap = ?1",
		"DELETE FROM snap_dirents WHERE snap = ?1",
		"DELETE FROM snap_symlinks WHERE snap = ?1",
		"DELETE FROM snap_xattrs WHERE snap = ?1",
		"DELETE FROM snapshots WHERE id = ?1",
	};

	return snapshot_exec_all(fs, sqls, sizeof(sqls) / sizeof(sqls[0]), id);
}

/* Drop snapshot name: 0, -ENOENT or -errno. */
int
fs_snapshot_drop(struct fs *fs, const char *name)
{
	int64_t id;
	int r;

	fs_lock(fs);
	if ((r = snapshot_find(fs, name, &id)) == 0 &&
	    (r = snapshot_op(fs, DB_GROW_META, snapshot_delete, id)) == 0)
		r = snapshot_load(fs);
	fs_unlock(fs);
	return r;
}

/* Each snapshot, oldest first: name, time, inodes, bytes it names, and
 * of those the bytes nobody else names (neither the live tree nor another
 * snapshot): what dropping it frees. */
static const char snapshot_list_sql[] =
	"SELECT n.name, n.created, (SELECT count(*) FROM snap_inodes i WHERE "
	"i.snap = n.id), (SELECT coalesce(sum(len), 0) FROM snap_chunks s "
	"WHERE s.snap = n.id), (SELECT coalesce(sum(s.len), 0) FROM "
	"snap_chunks s WHERE s.snap = n.id AND NOT EXISTS (SELECT 1 FROM "
	"chunks c WHERE c.block = s.block) AND NOT EXISTS (SELECT 1 FROM "
	"snap_chunks o WHERE o.block = s.block AND o.snap != s.snap)) "
	"FROM snapshots n ORDER BY n.id";

/* Call cb for each snapshot, oldest first, until it returns non-zero.
 * 0 or -errno. */
int
fs_snapshot_list(struct fs *fs, fs_snapshot_cb cb, void *arg)
{
	struct fs_snapshot_info s;
	sqlite3_stmt *st;
	int rc, began, stop = 0;

	fs_lock(fs);
	if (schema_version(fs->db) < 3) {         /* read-only, not migrated */
		fs_unlock(fs);
		return 0;
	}
	began = db_read_begin(fs);
	if (!(st = db_stmt(fs, snapshot_list_sql))) {
		db_read_end(fs, began);
		fs_unlock(fs);
		return -EIO;
	}
	while (!stop && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t total = (uint64_t)sqlite3_column_int64(st, 3);

		s.name = (const char *)sqlite3_column_text(st, 0);
		s.created_ns = sqlite3_column_int64(st, 1);
		s.inodes = (uint64_t)sqlite3_column_int64(st, 2);
		s.own_bytes = (uint64_t)sqlite3_column_int64(st, 4);
		s.shared_bytes = total - s.own_bytes;
		stop = cb(arg, &s);
	}
	sqlite3_reset(st);
	db_read_end(fs, began);
	fs_unlock(fs);
	if (!stop && rc != SQLITE_DONE)
		return db_errno(fs, rc, "listing snapshots");
	return 0;
}
