/*
 * snapshot.c: named snapshots of the whole tree, and restoring and
 * dropping them (fs.h: fs_snapshot_*).  Called by `atrium-fs snapshot`,
 * `snapshots`, `restore` and `drop` (fs/main.c) on an unmounted database,
 * and by the unit tests; each call takes fs->lock and is one operation of
 * the grouped commits (db.c), committed durably before it returns.
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
 * Order inside a restore: the live inodes that differ go first and the
 * snapshot's come back last, so that the stored-bytes triggers (stored.c),
 * which add each chunk's and entry's bytes to an inode that exists, find
 * none of them while the rows move, and the restored inodes keep the
 * stored bytes they had.  Only rows that differ move.  The quota
 * triggers (quota.c) count every row that goes and comes, so a restore that
 * would take the workspace past its quota fails with EDQUOT.
 *
 * Inode numbers are never reused (AUTOINCREMENT), so a restored inode is
 * the one the snapshot saw, and no inode made since can be confused with
 * it.  A restore refuses (EBUSY) while the kernel holds inodes looked up:
 * that needs the mounted daemon to invalidate them, which it does not yet.
 *
 * Names: 1..FS_SNAPSHOT_NAME_MAX bytes of [A-Za-z0-9._:@+-], not starting
 * with '-' (they are shown on terminals and given on command lines).
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>

/* What a restore tells the kernel to forget: an entry (name set) or an
 * inode (name NULL). */
struct snapshot_inval_item {
	uint64_t ino;            /* the entry's directory, or the inode */
	char *name;
};
struct snapshot_inval {
	struct snapshot_inval_item *items;
	size_t n, cap;
};

/* Bytes an operation of this file writes per row it copies (db.c's grow). */
#define SNAPSHOT_ROW_BYTES 128

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

/* Run the n statements of sqls with ?1 bound to id.  0 or -errno. */
static int
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
 * operation then finds out). */
static uint64_t
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

/* The inodes the kernel holds (only those open for writing when
 * writers), into a malloc'd *out of *n (pin_lock).  0 or -ENOMEM. */
static int
snapshot_pins(struct fs *fs, int writers, uint64_t **out, size_t *n)
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
			if (!writers || p->writers)
				(*out)[k++] = p->ino;
	*n = k;
	pthread_mutex_unlock(&fs->pin_lock);
	return 0;
}

/* Have the kernel write back the dirty pages it holds (an invalidation of
 * an inode waits for them; only files open for writing have any, since
 * the kernel writes a file's back when it is closed), without fs->lock,
 * which those writes need.  Nothing without n (not mounted). */
static void
snapshot_flush_kernel(struct fs *fs, const struct fs_notify *n)
{
	uint64_t *pins;
	size_t k;

	if (!n || snapshot_pins(fs, 1, &pins, &k) < 0)
		return;
	for (size_t i = 0; i < k; i++)
		n->inode(n->arg, pins[i]);
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

/* Take snapshot name of the live tree (with notify, a mounted one: what
 * the kernel's writeback cache holds is written first, so the snapshot has
 * every write that returned before it): 0, -EINVAL (a bad name), -EEXIST,
 * or -errno. */
int
fs_snapshot_take(struct fs *fs, const char *name,
    const struct fs_notify *notify)
{
	sqlite3_stmt *st;
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
	if (!(st = db_stmt(fs, "INSERT INTO snapshots(name, created) "
	    "VALUES(?, ?)"))) {
		r = -EIO;
	} else {
		sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, fs_now_ns());
		if ((r = db_done(fs, st)) == 0)
			r = snapshot_copy_live(fs, sqlite3_last_insert_rowid(fs->db));
	}
	if ((r = db_op_end(fs, r)) == 0)
		r = db_commit(fs, 1);
	fs_unlock(fs);
	return r;
}

/* Whether inode row i is what snapshot row s says, but for atime and the
 * stored bytes (a read does not change a file; stored follows the rows). */
#define SNAP_SAME_ROW(i, s) "(" i ".mode = " s ".mode AND " i ".nlink = " \
	s ".nlink AND " i ".uid = " s ".uid AND " i ".gid = " s ".gid AND " \
	i ".size = " s ".size AND " i ".rdev = " s ".rdev AND " i ".mtime = " \
	s ".mtime AND " i ".mtime_ns = " s ".mtime_ns AND " i ".ctime = " \
	s ".ctime AND " i ".ctime_ns = " s ".ctime_ns AND " \
	SNAP_SAME_ROWS("chunks", "idx, block, len", i, s) " AND " \
	SNAP_SAME_ROWS("xattrs", "name, value", i, s) ")"
/* The same rows of table for inode i as for snapshot ?1's inode s.  Times
 * alone cannot tell: two changes within one tick of the clock that stamps
 * them (the kernel's coarse clock, fs/inode.c) leave the same ctime. */
#define SNAP_SAME_ROWS(table, cols, i, s) "NOT EXISTS (SELECT " cols \
	" FROM " table " WHERE ino = " i ".ino EXCEPT SELECT " cols " FROM snap_" \
	table " WHERE snap = ?1 AND ino = " s ".ino) AND NOT EXISTS (SELECT " \
	cols " FROM snap_" table " WHERE snap = ?1 AND ino = " s ".ino EXCEPT " \
	"SELECT " cols " FROM " table " WHERE ino = " i ".ino)"

/* Fill temp.snap_pinned with the inodes the kernel holds, and
 * temp.snap_keep with those of them a restore of id must keep as they are
 * (unlinked) for the kernel's open files: the ones the snapshot lacks, and
 * files whose row the snapshot has otherwise (their snapshot version comes
 * back under a new number, new, as after a rename over them).  0 or -errno. */
static int
snapshot_choose_kept(struct fs *fs, int64_t id)
{
	static const char *const sqls[] = {
		"DELETE FROM temp.snap_pinned",
		"DELETE FROM temp.snap_keep",
		/* the kernel holds the root without looking it up */
		"INSERT INTO temp.snap_pinned VALUES(1)",
	};
	static const char *const keep[] = {
		"INSERT INTO temp.snap_keep(ino) SELECT i.ino FROM temp.snap_pinned "
		"p JOIN inodes i ON i.ino = p.ino LEFT JOIN snap_inodes s ON "
		"s.snap = ?1 AND s.ino = i.ino WHERE i.ino != 1 AND (s.ino IS NULL "
		"OR ((i.mode & 61440) != 16384 AND NOT " SNAP_SAME_ROW("i", "s")
		"))",
		/* new numbers past every one handed out (AUTOINCREMENT) */
		"UPDATE temp.snap_keep SET new = (SELECT max(coalesce((SELECT seq "
		"FROM sqlite_sequence WHERE name = 'inodes'), 0), (SELECT "
		"coalesce(max(ino), 0) FROM inodes))) + r.n FROM (SELECT k.ino, "
		"row_number() OVER (ORDER BY k.ino) AS n FROM temp.snap_keep k "
		"JOIN snap_inodes s ON s.snap = ?1 AND s.ino = k.ino) r "
		"WHERE r.ino = temp.snap_keep.ino",
	};
	sqlite3_stmt *st;
	uint64_t *pins;
	size_t n;
	int r;

	if ((r = snapshot_exec_all(fs, sqls, 3, id)) < 0 ||
	    (r = snapshot_pins(fs, 0, &pins, &n)) < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		if (!(st = db_stmt(fs, "INSERT OR IGNORE INTO temp.snap_pinned "
		    "VALUES(?)"))) {
			r = -EIO;
			break;
		}
		sqlite3_bind_int64(st, 1, (sqlite3_int64)pins[i]);
		r = db_done(fs, st);
	}
	free(pins);
	return r < 0 ? r : snapshot_exec_all(fs, keep, 2, id);
}

/* Names and inodes the kernel may hold that a restore of id changes:
 * entries (under held directories) whose inode differs, or whose inode
 * comes back renumbered; held inodes whose row differs. */
static const char snapshot_changed_names[] =
	"SELECT parent, name FROM (SELECT parent, name, ino FROM dirents EXCEPT "
	"SELECT parent, name, ino FROM snap_dirents WHERE snap = ?1) WHERE "
	"parent IN (SELECT ino FROM temp.snap_pinned) UNION SELECT parent, name "
	"FROM (SELECT parent, name, ino FROM snap_dirents WHERE snap = ?1 EXCEPT "
	"SELECT parent, name, ino FROM dirents) WHERE parent IN (SELECT ino FROM "
	"temp.snap_pinned) UNION SELECT d.parent, d.name FROM snap_dirents d "
	"JOIN temp.snap_keep k ON k.ino = d.ino WHERE d.snap = ?1 AND d.parent "
	"IN (SELECT ino FROM temp.snap_pinned)";
static const char snapshot_changed_inodes[] =
	"SELECT p.ino FROM temp.snap_pinned p LEFT JOIN inodes i ON i.ino = "
	"p.ino LEFT JOIN snap_inodes s ON s.snap = ?1 AND s.ino = p.ino WHERE "
	"i.ino IS NULL OR s.ino IS NULL OR i.stored != s.stored OR NOT "
	SNAP_SAME_ROW("i", "s");

/* Add one invalidation to inv.  0 or -ENOMEM. */
static int
snapshot_inval_add(struct snapshot_inval *inv, uint64_t ino, const char *name)
{
	struct snapshot_inval_item *it;

	if (inv->n == inv->cap) {
		size_t cap = inv->cap ? inv->cap * 2 : 64;
		if (!(it = realloc(inv->items, cap * sizeof(*it))))
			return -ENOMEM;
		inv->items = it;
		inv->cap = cap;
	}
	it = &inv->items[inv->n];
	it->ino = ino;
	it->name = NULL;
	if (name && !(it->name = strdup(name)))
		return -ENOMEM;
	inv->n++;
	return 0;
}

/* Run one of the queries above for id into inv.  0 or -errno. */
static int
snapshot_collect(struct fs *fs, const char *sql, int64_t id, int names,
    struct snapshot_inval *inv)
{
	sqlite3_stmt *st = db_stmt(fs, sql);
	int rc, r = 0;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = snapshot_inval_add(inv, (uint64_t)sqlite3_column_int64(st, 0),
		    names ? (const char *)sqlite3_column_text(st, 1) : NULL);
	sqlite3_reset(st);
	if (r == 0 && rc != SQLITE_DONE)
		r = db_errno(fs, rc, "snapshot_collect");
	return r;
}

/* Replace the live rows that differ from snapshot id's by the snapshot's
 * (see the head for the order), keeping temp.snap_keep's inodes unlinked
 * and giving the snapshot's versions of them their new numbers.  Rows the
 * snapshot has as they are stay untouched, so a restore costs what
 * changed since, not the size of the tree.  Each table is compared row by
 * row, since an inode row that is the same may still have other chunks or
 * attributes (two changes in one clock tick); the stored-bytes triggers
 * follow the chunks that move under an inode that stays. */
static int
snapshot_put_back(struct fs *fs, int64_t id)
{
#define KEPT "(SELECT ino FROM temp.snap_keep)"
#define NEW_INO "coalesce(k.new, s.ino)"
#define JOIN_KEEP " s LEFT JOIN temp.snap_keep k ON k.ino = s.ino WHERE " \
	"s.snap = ?1"
#define UNLESS_IN_SNAP(t, same) " WHERE NOT EXISTS (SELECT 1 FROM " t \
	JOIN_KEEP " AND " same ")"
#define UNLESS_KEPT_OR_IN_SNAP(t, same) " WHERE ino NOT IN " KEPT " AND NOT " \
	"EXISTS (SELECT 1 FROM " t JOIN_KEEP " AND " same ")"
	static const char *const sqls[] = {
		"DELETE FROM inodes WHERE ino NOT IN " KEPT " AND NOT EXISTS "
		"(SELECT 1 FROM snap_inodes s WHERE s.snap = ?1 AND s.ino = "
		"inodes.ino AND (" INODE_COLUMNS("s.") ") = (" INODE_COLUMNS(
		"inodes.") "))",
		"UPDATE inodes SET nlink = 0 WHERE ino IN " KEPT,
		"DELETE FROM dirents" UNLESS_IN_SNAP("snap_dirents", "s.id = "
		"dirents.id AND s.parent = dirents.parent AND s.name = "
		"dirents.name AND " NEW_INO " = dirents.ino"),
		"DELETE FROM chunks" UNLESS_KEPT_OR_IN_SNAP("snap_chunks", NEW_INO " = "
		"chunks.ino AND s.idx = chunks.idx AND s.block = chunks.block AND "
		"s.len = chunks.len"),
		"DELETE FROM symlinks" UNLESS_KEPT_OR_IN_SNAP("snap_symlinks", NEW_INO
		" = symlinks.ino AND s.target = symlinks.target"),
		"DELETE FROM xattrs" UNLESS_KEPT_OR_IN_SNAP("snap_xattrs", NEW_INO " = "
		"xattrs.ino AND s.name = xattrs.name AND s.value = xattrs.value"),
		"INSERT INTO chunks(ino, idx, block, len) SELECT " NEW_INO
		", s.idx, s.block, s.len FROM snap_chunks" JOIN_KEEP " AND NOT "
		"EXISTS (SELECT 1 FROM chunks c WHERE c.ino = " NEW_INO " AND "
		"c.idx = s.idx)",
		"INSERT INTO dirents(id, parent, name, ino) SELECT s.id, s.parent, "
		"s.name, " NEW_INO " FROM snap_dirents" JOIN_KEEP " AND NOT EXISTS "
		"(SELECT 1 FROM dirents d WHERE d.id = s.id)",
		"INSERT INTO symlinks(ino, target) SELECT " NEW_INO ", s.target "
		"FROM snap_symlinks" JOIN_KEEP " AND NOT EXISTS (SELECT 1 FROM "
		"symlinks l WHERE l.ino = " NEW_INO ")",
		"INSERT INTO xattrs(ino, name, value) SELECT " NEW_INO ", s.name, "
		"s.value FROM snap_xattrs" JOIN_KEEP " AND NOT EXISTS (SELECT 1 "
		"FROM xattrs x WHERE x.ino = " NEW_INO " AND x.name = s.name)",
		"INSERT INTO inodes(ino, " INODE_COLUMNS("") ") SELECT " NEW_INO
		", " INODE_COLUMNS("s.") " FROM snap_inodes" JOIN_KEEP " AND NOT "
		"EXISTS (SELECT 1 FROM inodes i WHERE i.ino = " NEW_INO ")",
	};
#undef KEPT
#undef NEW_INO
#undef JOIN_KEEP
#undef UNLESS_IN_SNAP
#undef UNLESS_KEPT_OR_IN_SNAP

	return snapshot_exec_all(fs, sqls, sizeof(sqls) / sizeof(sqls[0]), id);
}

/* The restore of id as one operation (fs->lock held): what the kernel
 * must forget into inv when not NULL.  0 or -errno. */
static int
snapshot_restore_op(struct fs *fs, int64_t id, struct snapshot_inval *inv)
{
	int r;

	if ((r = snapshot_choose_kept(fs, id)) < 0)
		return r;
	if (inv && ((r = snapshot_collect(fs, snapshot_changed_names, id, 1,
	    inv)) < 0 || (r = snapshot_collect(fs, snapshot_changed_inodes, id,
	    0, inv)) < 0))
		return r;
	return snapshot_put_back(fs, id);
}

/* Free what snapshot_restore_op collected. */
static void
snapshot_inval_free(struct snapshot_inval *inv)
{
	for (size_t i = 0; i < inv->n; i++)
		free(inv->items[i].name);
	free(inv->items);
	memset(inv, 0, sizeof(*inv));
}

/* Restore id under fs->lock, committed durably; inv as for
 * snapshot_restore_op.  0 or -errno. */
static int
snapshot_restore_locked(struct fs *fs, int64_t id, struct snapshot_inval *inv)
{
	uint64_t grow = SNAPSHOT_ROW_BYTES * (snapshot_rows(fs, id) + 1);
	int r;

	/* The TEMP tables live on the writer's connection only. */
	if ((r = db_exec(fs, "CREATE TEMP TABLE IF NOT EXISTS snap_pinned("
	    "ino INTEGER PRIMARY KEY)")) < 0 ||
	    (r = db_exec(fs, "CREATE TEMP TABLE IF NOT EXISTS snap_keep("
	    "ino INTEGER PRIMARY KEY, new INTEGER)")) < 0 ||
	    (r = db_op_begin(fs, grow, 0)) < 0 ||
	    (r = db_op_end(fs, snapshot_restore_op(fs, id, inv))) < 0 ||
	    (r = db_commit(fs, 1)) < 0)
		return r;
	/* A kept file and its restored copy may name one block (chunks.c). */
	fs->blocks_shared_live = 1;
	return xattr_cache_load(fs);
}

/* 0 when snapshot id holds its root directory; -EUCLEAN when it does not
 * (a damaged database: restoring it would take the tree's root away;
 * fsck --repair drops such a snapshot), or -errno. */
static int
snapshot_has_root(struct fs *fs, int64_t id)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT 1 FROM snap_inodes WHERE snap = "
	    "? AND ino = 1 AND (mode & 61440) = 16384");
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? -EUCLEAN : db_errno(fs, rc,
	    "snapshot_has_root");
}

/* Make the live tree what snapshot name saw (the snapshot stays).  With
 * notify (a mounted workspace): first every inode the kernel holds is
 * invalidated, so that it writes its dirty pages back before the rows
 * change; then, once committed and with fs->lock released (an invalidation
 * may wait for the kernel's writes, which need the lock), each name and
 * inode that changed.  0, -ENOENT, -EUCLEAN (a snapshot without its root:
 * damaged), -EDQUOT or -errno. */
int
fs_snapshot_restore(struct fs *fs, const char *name,
    const struct fs_notify *notify)
{
	struct snapshot_inval inv = { 0 };
	int64_t id;
	int r;

	snapshot_flush_kernel(fs, notify);
	fs_lock(fs);
	if ((r = snapshot_find(fs, name, &id)) == 0 &&
	    (r = snapshot_has_root(fs, id)) == 0)
		r = snapshot_restore_locked(fs, id, notify ? &inv : NULL);
	fs_unlock(fs);
	for (size_t i = 0; r == 0 && i < inv.n; i++) {
		if (inv.items[i].name)
			notify->entry(notify->arg, inv.items[i].ino, inv.items[i].name);
		else
			notify->inode(notify->arg, inv.items[i].ino);
	}
	snapshot_inval_free(&inv);
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
