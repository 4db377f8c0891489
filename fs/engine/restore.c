/*
 * restore.c: making the live tree what a snapshot saw (fs.h:
 * fs_snapshot_restore), and, on a mounted workspace, telling the kernel
 * what that changed.  Called by `atrium-fs restore` on an unmounted
 * database (fs/fs_main.c, no notify), through the control socket on a mounted
 * one (fs/daemon/control_socket.c: the command, atrium-agent's undo), and by
 * the unit tests.  Taking, dropping and listing snapshots is snapshot.c's.
 *
 * The steps.  1 runs without fs->lock; 2 to 5 are one operation of the
 * grouped commits (db.c) under it, committed durably; 6 runs without it
 * again, since an invalidation may wait for the kernel, whose requests
 * need the lock:
 *   1. flush: the kernel writes back the dirty pages of files open for
 *      writing (snapshot_flush_kernel), so that the rows hold every write
 *      that returned before the restore;
 *   2. every read goes to the writer's connection until the commit
 *      (readers_touch_all), so that no lookup answered from the tree as it
 *      was hands the kernel an inode after step 4 has read which it holds;
 *   3. differ: every inode with a row (inodes, chunks, xattrs, symlinks)
 *      that the live tree or the snapshot lacks into temp.snap_differs, by
 *      one pass over each table and its snap_ twin (but for unlinked ones
 *      the snapshot lacks, when the reclaimer frees them); keep is set
 *      unless only atime or the stored bytes differ;
 *   4. keep: of those with keep set, each the kernel holds that the
 *      snapshot lacks, or that is no directory, stays as it is, unlinked,
 *      for the kernel's open files, and the snapshot's version of it comes
 *      back under a new number (temp.snap_keep), as after a rename over it;
 *   5. put back: of the inodes in temp.snap_differs, and of all entries,
 *      the live rows that differ go and the snapshot's come; each
 *      statement returns what it deleted or inserted;
 *   6. invalidate what the kernel holds of those rows (mounted only).
 *
 * Why a held file that changed is kept rather than rewritten in place:
 * with the writeback cache the kernel trusts its own size and times of a
 * regular file over this daemon's (fuse_change_attributes keeps them), so
 * it would never see the snapshot's size; a new inode number it sees.
 *
 * Order inside put back: the live inodes that differ go first and the
 * snapshot's come back last, so that the stored-bytes triggers (stored.c),
 * which add each chunk's and entry's bytes to an inode that exists, find
 * none of them while the rows move, and the restored inodes keep the
 * stored bytes they had.  Only rows that differ move.  The quota triggers
 * (quota.c) count every row that goes and comes, so a restore that would
 * take the workspace past its quota fails with EDQUOT.
 *
 * What the kernel is told, and why nothing else of its caches can be
 * stale.  Before step 5 they are right: this daemon is the only way to the
 * data, and step 1 wrote the dirty pages back.  Step 5 deletes and inserts
 * exactly the rows its statements return.  The stored-bytes triggers it
 * fires update inodes rows besides, but an inode no statement returned
 * ends with the stored bytes it had: its row is the snapshot's, and the
 * entries and chunks they count end as the snapshot's.  So every row not
 * returned, and everything the kernel built from it, is as it was.  For
 * each returned row:
 *   - an entry (dirents, gone or come): inval_entry of its directory and
 *     name, which drops the dentry, or the cached negative lookup of a
 *     name that comes back;
 *   - an inode row or an extended attribute: the inode's attributes only;
 *   - a chunk or a symlink target: the attributes and the cached pages.
 * Attributes alone are enough for an inode row or an extended attribute:
 * the inode's chunks are as they were, so its cached pages still hold its
 * bytes, and dropping them would only cost reads again (all of a 512 MiB
 * file's page cache for a change of its atime).  In fact no inode the
 * kernel holds has a chunk or a target returned: step 4 keeps each held
 * non-directory whose chunks or target differ, put back leaves a kept
 * inode's chunks alone, and directories have none; the pages are dropped
 * all the same should that ever break.  A kept inode gets its nlink of 0
 * (attributes); its pages stay its own.
 * Each of them is sent only when, after the commit, the kernel holds the
 * inode (for an entry, its directory; the root always): an inode it does
 * not hold has no attributes or pages there, and a directory it does not
 * hold no entries, since a cached entry holds its directory.  Inodes the
 * kernel picks up meanwhile are then held by that time (step 2 makes
 * their lookups wait for the commit), so they are covered.
 *
 * Cost: step 3 looks each live row up in the snapshot and each snapshot
 * row up in the live tree, by primary key (10,000 files and a 512 MiB
 * file: ~28,000 rows each way, 20 to 30 ms here); step 5 does the same
 * for the entries, and for the rest costs what changed; step 4 and the
 * invalidations cost what changed.  How many inodes the kernel holds adds
 * no statement.  A held file that changed costs the copy of its chunk
 * rows under its new number, and, once its name is invalidated, the
 * kernel's dropping of the old inode's pages (8,192 rows and 512 MiB of
 * page cache for the 512 MiB file, about 70 ms together here).
 */
#include "fs_int.h"

#include <errno.h>
#include <stdlib.h>

/* What one returned row asks of the kernel (see the head). */
enum restore_inval {
	RESTORE_ENTRY,           /* the name in its directory */
	RESTORE_ATTRS,           /* the inode's attributes */
	RESTORE_PAGES,           /* its attributes and cached pages */
};

struct restore_item {
	enum restore_inval kind;
	uint64_t ino;            /* the entry's directory, or the inode */
	char *name;              /* RESTORE_ENTRY only */
};

/* What a restore tells the kernel, collected under fs->lock and sent
 * after it (items may repeat: restore_invalidate sends each once). */
struct restore_inval_list {
	struct restore_item *items;
	size_t n, cap;
};

/* Whether inode row i is what snapshot row s says, but for atime and the
 * stored bytes (a read does not change a file; stored follows the rows). */
#define RESTORE_SAME_INODE(i, s) "(" i ".mode = " s ".mode AND " i ".nlink = " \
	s ".nlink AND " i ".uid = " s ".uid AND " i ".gid = " s ".gid AND " \
	i ".size = " s ".size AND " i ".rdev = " s ".rdev AND " i ".mtime = " \
	s ".mtime AND " i ".mtime_ns = " s ".mtime_ns AND " i ".ctime = " \
	s ".ctime AND " i ".ctime_ns = " s ".ctime_ns)"
/* The inodes with a row of table t that snapshot ?1 lacks, then those with
 * a row of snap_t that the live tree lacks, into temp.snap_differs with
 * keep set; same compares a live row c with a snapshot row s of one
 * inode.  Each is one pass over a table with a primary-key look-up per
 * row.  Times alone could not tell these: two changes within one tick of
 * the clock that stamps them (the kernel's coarse clock, fs/engine/inode.c)
 * leave the same ctime. */
#define RESTORE_DIFFER(t, same) \
	"INSERT INTO temp.snap_differs(ino, keep) SELECT c.ino, 1 FROM " t " c " \
	"WHERE NOT EXISTS (SELECT 1 FROM snap_" t " s WHERE s.snap = ?1 AND " \
	"s.ino = c.ino AND " same ") ON CONFLICT(ino) DO UPDATE SET keep = 1", \
	"INSERT INTO temp.snap_differs(ino, keep) SELECT s.ino, 1 FROM snap_" t \
	" s WHERE s.snap = ?1 AND NOT EXISTS (SELECT 1 FROM " t " c WHERE " \
	"c.ino = s.ino AND " same ") ON CONFLICT(ino) DO UPDATE SET keep = 1"

/* Fill temp.snap_differs (step 3 of the head) with every inode whose rows
 * differ between the live tree and snapshot id, in either direction: its
 * inodes row in any column, or any of its chunks, xattrs or symlinks rows.
 * keep is 0 where only atime or the stored bytes differ (what does not
 * make a held file another file).  But for unlinked inodes the snapshot
 * lacks, when the reclaimer runs (a mount): in neither tree, they are
 * freed on the kernel's forget or by the reclaimer, so that a restore
 * never deletes a big file's rows inside its own transaction (DELETING
 * BIG FILES in atrium-fs(8)); one the kernel holds stays as it is, as a
 * kept inode would.  (Without the reclaimer nothing else frees them before
 * the next mount, and the restore does.)  Any other inode missing from it
 * has the same rows in both, which put back relies on to leave it alone.
 * 0 or -errno. */
static int
restore_differ(struct fs *fs, int64_t id)
{
	static const char *const freed_elsewhere[] = {
		"DELETE FROM temp.snap_differs WHERE ino IN (SELECT i.ino FROM "
		"inodes i WHERE i.nlink = 0 AND NOT EXISTS (SELECT 1 FROM "
		"snap_inodes s WHERE s.snap = ?1 AND s.ino = i.ino))",
	};
	static const char *const sqls[] = {
		"DELETE FROM temp.snap_differs",
		"INSERT INTO temp.snap_differs(ino, keep) SELECT i.ino, s.ino IS "
		"NULL OR NOT " RESTORE_SAME_INODE("i", "s") " FROM inodes i LEFT "
		"JOIN snap_inodes s ON s.snap = ?1 AND s.ino = i.ino WHERE s.ino IS "
		"NULL OR (" INODE_COLUMNS("i.") ") != (" INODE_COLUMNS("s.") ")",
		"INSERT INTO temp.snap_differs(ino, keep) SELECT s.ino, 1 FROM "
		"snap_inodes s WHERE s.snap = ?1 AND NOT EXISTS (SELECT 1 FROM "
		"inodes i WHERE i.ino = s.ino)",
		RESTORE_DIFFER("chunks", "s.idx = c.idx AND s.block = c.block AND "
		"s.len = c.len"),
		RESTORE_DIFFER("xattrs", "s.name = c.name AND s.value = c.value"),
		RESTORE_DIFFER("symlinks", "s.target = c.target"),
	};
	int r;

	if ((r = snapshot_exec_all(fs, sqls, sizeof(sqls) / sizeof(sqls[0]),
	    id)) < 0 || !fs->reclaim_defer)
		return r;
	return snapshot_exec_all(fs, freed_elsewhere, 1, id);
}

/* 1 when the kernel holds ino (the root it holds without a lookup). */
static int
restore_held(struct fs *fs, uint64_t ino)
{
	return ino == FS_ROOT_INO || inode_pinned(fs, ino);
}

/* Add to temp.snap_keep each inode of temp.snap_differs with keep set
 * that the kernel holds and that the snapshot lacks or that is no
 * directory (a directory both have is changed in place: the kernel takes
 * a directory's attributes from this daemon, and its entries are
 * invalidated one by one).  The root is never kept.  0 or -errno. */
static int
restore_keep_held(struct fs *fs, int64_t id)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT d.ino, i.mode, s.ino IS NULL "
	    "FROM temp.snap_differs d JOIN inodes i ON i.ino = d.ino LEFT JOIN "
	    "snap_inodes s ON s.snap = ?1 AND s.ino = d.ino WHERE d.keep AND "
	    "d.ino != 1");
	sqlite3_stmt *add;
	uint64_t ino;
	int rc, r = 0;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		ino = (uint64_t)sqlite3_column_int64(st, 0);
		if (!inode_pinned(fs, ino) || (S_ISDIR(sqlite3_column_int(st, 1)) &&
		    !sqlite3_column_int(st, 2)))
			continue;
		if (!(add = db_stmt(fs, "INSERT INTO temp.snap_keep(ino) "
		    "VALUES(?)"))) {
			r = -EIO;
			break;
		}
		sqlite3_bind_int64(add, 1, (sqlite3_int64)ino);
		r = db_done(fs, add);
	}
	sqlite3_reset(st);
	if (r == 0 && rc != SQLITE_DONE)
		r = db_errno(fs, rc, "choosing the inodes a restore keeps");
	return r;
}

/* Fill temp.snap_differs and temp.snap_keep (steps 3 and 4 of the head):
 * what differs, the inodes a restore of id keeps, unlinked, for the
 * kernel, and the new numbers of the snapshot's versions of them.  0 or
 * -errno. */
static int
restore_choose_kept(struct fs *fs, int64_t id)
{
	static const char *const numbers[] = {
		/* new numbers past every one handed out (AUTOINCREMENT) */
		"UPDATE temp.snap_keep SET new = (SELECT max(coalesce((SELECT seq "
		"FROM sqlite_sequence WHERE name = 'inodes'), 0), (SELECT "
		"coalesce(max(ino), 0) FROM inodes))) + r.n FROM (SELECT k.ino, "
		"row_number() OVER (ORDER BY k.ino) AS n FROM temp.snap_keep k "
		"JOIN snap_inodes s ON s.snap = ?1 AND s.ino = k.ino) r "
		"WHERE r.ino = temp.snap_keep.ino",
	};
	int r;

	if ((r = db_exec(fs, "DELETE FROM temp.snap_keep")) < 0 ||
	    (r = restore_differ(fs, id)) < 0 ||
	    (r = restore_keep_held(fs, id)) < 0)
		return r;
	return snapshot_exec_all(fs, numbers, 1, id);
}

/* Add one item to inv.  0 or -ENOMEM. */
static int
restore_inval_add(struct restore_inval_list *inv, enum restore_inval kind,
    uint64_t ino, const char *name)
{
	struct restore_item *it;

	if (inv->n == inv->cap) {
		size_t cap = inv->cap ? inv->cap * 2 : 64;
		if (!(it = realloc(inv->items, cap * sizeof(*it))))
			return -ENOMEM;
		inv->items = it;
		inv->cap = cap;
	}
	it = &inv->items[inv->n];
	it->kind = kind;
	it->ino = ino;
	it->name = NULL;
	if (name && !(it->name = strdup(name)))
		return -ENOMEM;
	inv->n++;
	return 0;
}

/* Free what inv holds; it is empty again. */
static void
restore_inval_free(struct restore_inval_list *inv)
{
	for (size_t i = 0; i < inv->n; i++)
		free(inv->items[i].name);
	free(inv->items);
	memset(inv, 0, sizeof(*inv));
}

/* One put-back statement and what each row it returns asks of the kernel:
 * an entry (the statement returns parent and name), else an inode. */
struct restore_step {
	const char *sql;
	enum restore_inval kind;
};

/* Run step with ?1 bound to id, adding what it returns to inv when not
 * NULL (consecutive rows of one inode once: a file's chunks come
 * together).  0 or -errno. */
static int
restore_run(struct fs *fs, const struct restore_step *step, int64_t id,
    struct restore_inval_list *inv)
{
	sqlite3_stmt *st = db_stmt(fs, step->sql);
	uint64_t ino, last = 0;
	const char *name;
	int rc, r = 0;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	/* SQLite makes every change at the first step; the rest reads what
	 * it returned. */
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW && inv) {
		ino = (uint64_t)sqlite3_column_int64(st, 0);
		if (step->kind != RESTORE_ENTRY) {
			if (ino != last)
				r = restore_inval_add(inv, step->kind, ino, NULL);
		} else if (!(name = (const char *)sqlite3_column_text(st, 1))) {
			r = -ENOMEM;         /* names are NOT NULL: no memory */
		} else {
			r = restore_inval_add(inv, RESTORE_ENTRY, ino, name);
		}
		last = ino;
	}
	sqlite3_reset(st);
	if (r == 0 && rc != SQLITE_DONE && rc != SQLITE_ROW)
		r = db_errno(fs, rc, "restoring a snapshot");
	return r;
}

/* Replace the live rows that differ from snapshot id's by the snapshot's
 * (see the head for the order), keeping temp.snap_keep's inodes unlinked
 * and giving the snapshot's versions of them their new numbers; what each
 * statement deleted or inserted goes to inv when not NULL.  Rows the
 * snapshot has as they are stay untouched.  The rows of an inode are
 * looked at only when it is in temp.snap_differs (a kept one always is):
 * one that is not has the same inodes, chunks, symlinks and xattrs rows in
 * both, so that every statement would leave them as they are, and a
 * restore costs what changed, not the size of the tree.  Entries are
 * compared one by one, since they belong to no inode of their own.
 * Within an inode each table is compared row by row, since an inode row
 * that is the same may still have other chunks or attributes; the
 * stored-bytes triggers follow the chunks that move under an inode that
 * stays. */
static int
restore_put_back(struct fs *fs, int64_t id, struct restore_inval_list *inv)
{
#define KEPT "(SELECT ino FROM temp.snap_keep)"
#define DIFFERS "(SELECT ino FROM temp.snap_differs)"
#define DIFFERS_NOT_KEPT "(SELECT ino FROM temp.snap_differs WHERE ino NOT " \
	"IN " KEPT ")"
#define NEW_INO "coalesce(k.new, s.ino)"
#define JOIN_KEEP " s LEFT JOIN temp.snap_keep k ON k.ino = s.ino WHERE " \
	"s.snap = ?1"
#define UNLESS_IN_SNAP(t, same) " WHERE NOT EXISTS (SELECT 1 FROM " t \
	JOIN_KEEP " AND " same ")"
#define UNLESS_KEPT_OR_IN_SNAP(t, same) " WHERE ino IN " DIFFERS_NOT_KEPT \
	" AND NOT EXISTS (SELECT 1 FROM " t JOIN_KEEP " AND " same ")"
#define JOIN_KEEP_DIFFERS JOIN_KEEP " AND s.ino IN " DIFFERS
	static const struct restore_step steps[] = {
		{ "DELETE FROM inodes WHERE ino IN " DIFFERS_NOT_KEPT " AND NOT "
		"EXISTS "
		"(SELECT 1 FROM snap_inodes s WHERE s.snap = ?1 AND s.ino = "
		"inodes.ino AND (" INODE_COLUMNS("s.") ") = (" INODE_COLUMNS(
		"inodes.") ")) RETURNING ino", RESTORE_ATTRS },
		{ "UPDATE inodes SET nlink = 0 WHERE ino IN " KEPT " RETURNING ino",
		RESTORE_ATTRS },
		{ "DELETE FROM dirents" UNLESS_IN_SNAP("snap_dirents", "s.id = "
		"dirents.id AND s.parent = dirents.parent AND s.name = "
		"dirents.name AND " NEW_INO " = dirents.ino") " RETURNING parent, "
		"name", RESTORE_ENTRY },
		{ "DELETE FROM chunks" UNLESS_KEPT_OR_IN_SNAP("snap_chunks", NEW_INO
		" = chunks.ino AND s.idx = chunks.idx AND s.block = chunks.block "
		"AND s.len = chunks.len") " RETURNING ino", RESTORE_PAGES },
		{ "DELETE FROM symlinks" UNLESS_KEPT_OR_IN_SNAP("snap_symlinks",
		NEW_INO " = symlinks.ino AND s.target = symlinks.target")
		" RETURNING ino", RESTORE_PAGES },
		{ "DELETE FROM xattrs" UNLESS_KEPT_OR_IN_SNAP("snap_xattrs", NEW_INO
		" = xattrs.ino AND s.name = xattrs.name AND s.value = "
		"xattrs.value") " RETURNING ino", RESTORE_ATTRS },
		{ "INSERT INTO chunks(ino, idx, block, len) SELECT " NEW_INO
		", s.idx, s.block, s.len FROM snap_chunks" JOIN_KEEP_DIFFERS " AND NOT "
		"EXISTS (SELECT 1 FROM chunks c WHERE c.ino = " NEW_INO " AND "
		"c.idx = s.idx) RETURNING ino", RESTORE_PAGES },
		{ "INSERT INTO dirents(id, parent, name, ino) SELECT s.id, s.parent, "
		"s.name, " NEW_INO " FROM snap_dirents" JOIN_KEEP " AND NOT EXISTS "
		"(SELECT 1 FROM dirents d WHERE d.id = s.id) RETURNING parent, "
		"name", RESTORE_ENTRY },
		{ "INSERT INTO symlinks(ino, target) SELECT " NEW_INO ", s.target "
		"FROM snap_symlinks" JOIN_KEEP_DIFFERS " AND NOT EXISTS (SELECT 1 FROM "
		"symlinks l WHERE l.ino = " NEW_INO ") RETURNING ino",
		RESTORE_PAGES },
		{ "INSERT INTO xattrs(ino, name, value) SELECT " NEW_INO ", s.name, "
		"s.value FROM snap_xattrs" JOIN_KEEP_DIFFERS " AND NOT EXISTS (SELECT 1 "
		"FROM xattrs x WHERE x.ino = " NEW_INO " AND x.name = s.name) "
		"RETURNING ino", RESTORE_ATTRS },
		{ "INSERT INTO inodes(ino, " INODE_COLUMNS("") ") SELECT " NEW_INO
		", " INODE_COLUMNS("s.") " FROM snap_inodes" JOIN_KEEP_DIFFERS " AND NOT "
		"EXISTS (SELECT 1 FROM inodes i WHERE i.ino = " NEW_INO ") "
		"RETURNING ino", RESTORE_ATTRS },
	};
#undef KEPT
#undef DIFFERS
#undef DIFFERS_NOT_KEPT
#undef JOIN_KEEP_DIFFERS
#undef NEW_INO
#undef JOIN_KEEP
#undef UNLESS_IN_SNAP
#undef UNLESS_KEPT_OR_IN_SNAP
	int r;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if ((r = restore_run(fs, &steps[i], id, inv)) < 0)
			return r;
	return 0;
}

/* The restore of id as one operation (fs->lock held): what the kernel
 * must forget into inv when not NULL.  0 or -errno. */
static int
restore_op(struct fs *fs, int64_t id, struct restore_inval_list *inv)
{
	int r;

	readers_touch_all(fs);
	if ((r = restore_choose_kept(fs, id)) < 0)
		return r;
	return restore_put_back(fs, id, inv);
}

/* Restore id under fs->lock, committed durably; inv as for restore_op.
 * 0 or -errno. */
static int
restore_locked(struct fs *fs, int64_t id, struct restore_inval_list *inv)
{
	uint64_t grow = SNAPSHOT_ROW_BYTES * (snapshot_rows(fs, id) + 1);
	int r;

	/* The TEMP tables live on the writer's connection only. */
	if ((r = db_exec(fs, "CREATE TEMP TABLE IF NOT EXISTS snap_differs("
	    "ino INTEGER PRIMARY KEY, keep INTEGER NOT NULL)")) < 0 ||
	    (r = db_exec(fs, "CREATE TEMP TABLE IF NOT EXISTS snap_keep("
	    "ino INTEGER PRIMARY KEY, new INTEGER)")) < 0 ||
	    (r = db_op_begin(fs, grow, 0)) < 0)
		return r;
	/* It brings back what the snapshot kept, which was counted: a full
	 * room must still be able to go back (fs/engine/quota.c). */
	fs->quota_exempt = 1;
	if ((r = db_op_end(fs, restore_op(fs, id, inv))) < 0 ||
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

/* qsort order of items: entries first (a name the kernel forgets may hold
 * an inode that is invalidated next), then by inode and name, an inode's
 * pages before its attributes alone. */
static int
restore_item_cmp(const void *pa, const void *pb)
{
	const struct restore_item *a = pa, *b = pb;
	int ea = a->kind == RESTORE_ENTRY, eb = b->kind == RESTORE_ENTRY;

	if (ea != eb)
		return eb - ea;
	if (a->ino != b->ino)
		return a->ino < b->ino ? -1 : 1;
	if (ea)
		return strcmp(a->name, b->name);
	return (int)b->kind - (int)a->kind;
}

/* 1 when item i of the sorted inv repeats what an earlier one asked (an
 * entry gone and come back; an inode's second row, or its attributes
 * after its pages). */
static int
restore_item_repeats(const struct restore_inval_list *inv, size_t i)
{
	const struct restore_item *a, *b;

	if (i == 0)
		return 0;
	a = &inv->items[i - 1];
	b = &inv->items[i];
	if (a->ino != b->ino ||
	    (a->kind == RESTORE_ENTRY) != (b->kind == RESTORE_ENTRY))
		return 0;
	return b->kind != RESTORE_ENTRY || strcmp(a->name, b->name) == 0;
}

/* Tell the kernel inv's items that concern what it holds now (see the
 * head), each once.  Without fs->lock. */
static void
restore_invalidate(struct fs *fs, struct restore_inval_list *inv,
    const struct fs_notify *n)
{
	struct restore_item *it;

	if (inv->n > 1)
		qsort(inv->items, inv->n, sizeof(*inv->items), restore_item_cmp);
	for (size_t i = 0; i < inv->n; i++) {
		it = &inv->items[i];
		if (restore_item_repeats(inv, i) || !restore_held(fs, it->ino))
			continue;
		if (it->kind == RESTORE_ENTRY)
			n->entry(n->arg, it->ino, it->name);
		else
			n->inode(n->arg, it->ino, it->kind == RESTORE_PAGES);
	}
}

/* Make the live tree what snapshot name saw (the head's steps).  0,
 * -ENOENT, -EUCLEAN (a snapshot without its root directory: damaged),
 * -EDQUOT or -errno. */
int
fs_snapshot_restore(struct fs *fs, const char *name,
    const struct fs_notify *notify)
{
	struct restore_inval_list inv = { 0 };
	int64_t id;
	int r;

	snapshot_flush_kernel(fs, notify);
	fs_lock(fs);
	if ((r = snapshot_find(fs, name, &id)) == 0 &&
	    (r = restore_has_root(fs, id)) == 0)
		r = restore_locked(fs, id, notify ? &inv : NULL);
	fs_unlock(fs);
	if (r == 0 && notify)
		restore_invalidate(fs, &inv, notify);
	restore_inval_free(&inv);
	return r;
}
