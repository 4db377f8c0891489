/*
 * restore.c: making the live tree what a snapshot saw (fs.h:
 * fs_snapshot_restore), and, on a mounted workspace, telling the kernel
 * what that changed.  Called by `atrium-fs restore` on an unmounted
 * database (fs/main.c, no notify), through the control socket on a mounted
 * one (fs/control.c: the command, atrium-agent's undo), and by the unit
 * tests.  Taking, dropping and listing snapshots is snapshot.c's.
 *
 * Order inside a restore: the live inodes that differ go first and the
 * snapshot's come back last, so that the stored-bytes triggers (stored.c),
 * which add each chunk's and entry's bytes to an inode that exists, find
 * none of them while the rows move, and the restored inodes keep the
 * stored bytes they had.  Only rows that differ move.  The quota
 * triggers (quota.c) count every row that goes and comes, so a restore that
 * would take the workspace past its quota fails with EDQUOT.
 *
 * Inodes the kernel holds that the snapshot lacks, and files it holds
 * whose rows the snapshot has otherwise, stay as they are, unlinked, for
 * the kernel's open files; the snapshot's version of such a file comes
 * back under a new number, as after a rename over it.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>

/* What a restore tells the kernel to forget: an entry (name set) or an
 * inode (name NULL). */
struct restore_inval_item {
	uint64_t ino;            /* the entry's directory, or the inode */
	char *name;
};
struct restore_inval {
	struct restore_inval_item *items;
	size_t n, cap;
};

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
restore_choose_kept(struct fs *fs, int64_t id)
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
static const char restore_changed_names[] =
	"SELECT parent, name FROM (SELECT parent, name, ino FROM dirents EXCEPT "
	"SELECT parent, name, ino FROM snap_dirents WHERE snap = ?1) WHERE "
	"parent IN (SELECT ino FROM temp.snap_pinned) UNION SELECT parent, name "
	"FROM (SELECT parent, name, ino FROM snap_dirents WHERE snap = ?1 EXCEPT "
	"SELECT parent, name, ino FROM dirents) WHERE parent IN (SELECT ino FROM "
	"temp.snap_pinned) UNION SELECT d.parent, d.name FROM snap_dirents d "
	"JOIN temp.snap_keep k ON k.ino = d.ino WHERE d.snap = ?1 AND d.parent "
	"IN (SELECT ino FROM temp.snap_pinned)";
static const char restore_changed_inodes[] =
	"SELECT p.ino FROM temp.snap_pinned p LEFT JOIN inodes i ON i.ino = "
	"p.ino LEFT JOIN snap_inodes s ON s.snap = ?1 AND s.ino = p.ino WHERE "
	"i.ino IS NULL OR s.ino IS NULL OR i.stored != s.stored OR NOT "
	SNAP_SAME_ROW("i", "s");

/* Add one invalidation to inv.  0 or -ENOMEM. */
static int
restore_inval_add(struct restore_inval *inv, uint64_t ino, const char *name)
{
	struct restore_inval_item *it;

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
restore_collect(struct fs *fs, const char *sql, int64_t id, int names,
    struct restore_inval *inv)
{
	sqlite3_stmt *st = db_stmt(fs, sql);
	int rc, r = 0;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = restore_inval_add(inv, (uint64_t)sqlite3_column_int64(st, 0),
		    names ? (const char *)sqlite3_column_text(st, 1) : NULL);
	sqlite3_reset(st);
	if (r == 0 && rc != SQLITE_DONE)
		r = db_errno(fs, rc, "restore_collect");
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
restore_put_back(struct fs *fs, int64_t id)
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
restore_op(struct fs *fs, int64_t id, struct restore_inval *inv)
{
	int r;

	if ((r = restore_choose_kept(fs, id)) < 0)
		return r;
	if (inv && ((r = restore_collect(fs, restore_changed_names, id, 1,
	    inv)) < 0 || (r = restore_collect(fs, restore_changed_inodes, id,
	    0, inv)) < 0))
		return r;
	return restore_put_back(fs, id);
}

/* Free what restore_op collected. */
static void
restore_inval_free(struct restore_inval *inv)
{
	for (size_t i = 0; i < inv->n; i++)
		free(inv->items[i].name);
	free(inv->items);
	memset(inv, 0, sizeof(*inv));
}

/* Restore id under fs->lock, committed durably; inv as for
 * restore_op.  0 or -errno. */
static int
restore_locked(struct fs *fs, int64_t id, struct restore_inval *inv)
{
	uint64_t grow = SNAPSHOT_ROW_BYTES * (snapshot_rows(fs, id) + 1);
	int r;

	/* The TEMP tables live on the writer's connection only. */
	if ((r = db_exec(fs, "CREATE TEMP TABLE IF NOT EXISTS snap_pinned("
	    "ino INTEGER PRIMARY KEY)")) < 0 ||
	    (r = db_exec(fs, "CREATE TEMP TABLE IF NOT EXISTS snap_keep("
	    "ino INTEGER PRIMARY KEY, new INTEGER)")) < 0 ||
	    (r = db_op_begin(fs, grow, 0)) < 0 ||
	    (r = db_op_end(fs, restore_op(fs, id, inv))) < 0 ||
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
restore_has_root(struct fs *fs, int64_t id)
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
	    "restore_has_root");
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
	struct restore_inval inv = { 0 };
	int64_t id;
	int r;

	snapshot_flush_kernel(fs, notify);
	fs_lock(fs);
	if ((r = snapshot_find(fs, name, &id)) == 0 &&
	    (r = restore_has_root(fs, id)) == 0)
		r = restore_locked(fs, id, notify ? &inv : NULL);
	fs_unlock(fs);
	for (size_t i = 0; r == 0 && i < inv.n; i++) {
		if (inv.items[i].name)
			notify->entry(notify->arg, inv.items[i].ino, inv.items[i].name);
		else
			notify->inode(notify->arg, inv.items[i].ino);
	}
	restore_inval_free(&inv);
	return r;
}
