/*
 * snapdiff.c: what changed in the live tree since a snapshot, by path
 * (fs.h: fs_snapshot_diff).  Called by `atrium-fs diff DB NAME` (fs/fs_main.c)
 * and by the control socket's diff verb (fs/daemon/control_socket.c), through
 * which atrium-agent previews an undo.
 *
 * Both trees are walked from the root by a recursive query over their
 * dirents (snap_dirents for the snapshot) and joined by path:
 *   A  a path the live tree has and the snapshot lacks (added since);
 *   D  a path the snapshot has and the live tree lacks (removed since);
 *   M  a path both have whose type or mode differs, or (a directory)
 *      whose inode differs, or (not a directory) whose size, mtime or
 *      chunks differ (a rewrite within one tick of the coarse clock that
 *      stamps times leaves size and mtime as they were; a written block
 *      is a new one, since chunks.c copies a block a snapshot names
 *      before writing it), or (a symlink) whose target differs.  A
 *      file's inode number alone is no change:
 *      a restore under an inode the kernel holds brings the snapshot's
 *      version back under a new number (snapshot.c), with the same
 *      blocks, and nobody reading the tree can tell.  atrium-agent's
 *      redo relies on it: "nothing changed since the undo" must hold
 *      after a restore, however many the kernel's inodes renumbered.
 * A directory whose entries changed is not itself listed: its entries are.
 * A hard link is listed under each of its paths.
 *
 * Cost: one read transaction walking both trees (no writer waits: readers
 * run on the WAL snapshot); the answer is capped at max entries, sorted by
 * path, and says when there were more.
 */
#include "fs.h"
#include "fs_int.h"

#include <errno.h>

static const char snapdiff_sql[] =
	"WITH RECURSIVE"
	" lp(ino, path) AS (SELECT ino, name FROM dirents WHERE parent = 1"
	"  UNION ALL SELECT d.ino, lp.path || '/' || d.name FROM dirents d"
	"  JOIN lp ON d.parent = lp.ino),"
	" sp(ino, path) AS (SELECT ino, name FROM snap_dirents"
	"  WHERE snap = ?1 AND parent = 1"
	"  UNION ALL SELECT d.ino, sp.path || '/' || d.name FROM snap_dirents d"
	"  JOIN sp ON d.snap = ?1 AND d.parent = sp.ino),"
	" l AS (SELECT lp.path, i.ino, i.mode, i.size, i.mtime, i.mtime_ns"
	"  FROM lp JOIN inodes i ON i.ino = lp.ino),"
	" s AS (SELECT sp.path, i.ino, i.mode, i.size, i.mtime, i.mtime_ns"
	"  FROM sp JOIN snap_inodes i ON i.snap = ?1 AND i.ino = sp.ino)"
	" SELECT 'A', path FROM l WHERE path NOT IN (SELECT path FROM s)"
	" UNION ALL SELECT 'D', path FROM s WHERE path NOT IN (SELECT path FROM l)"
	" UNION ALL SELECT 'M', l.path FROM l JOIN s ON l.path = s.path"
	"  WHERE l.mode != s.mode OR ((l.mode & 61440) = 16384 AND l.ino != s.ino)"
	"  OR ((l.mode & 61440) != 16384"
	"  AND (l.size != s.size OR l.mtime != s.mtime"
	"  OR l.mtime_ns != s.mtime_ns"
	"  OR EXISTS (SELECT idx, block, len FROM chunks WHERE ino = l.ino"
	"   EXCEPT SELECT idx, block, len FROM snap_chunks"
	"   WHERE snap = ?1 AND ino = s.ino)"
	"  OR EXISTS (SELECT idx, block, len FROM snap_chunks"
	"   WHERE snap = ?1 AND ino = s.ino"
	"   EXCEPT SELECT idx, block, len FROM chunks WHERE ino = l.ino)"
	"  OR EXISTS (SELECT target FROM symlinks WHERE ino = l.ino"
	"   EXCEPT SELECT target FROM snap_symlinks"
	"   WHERE snap = ?1 AND ino = s.ino)))"
	" ORDER BY 2, 1 LIMIT ?2";

/* Run the query for snapshot id, calling cb per entry up to max; *more is
 * set when there were more.  0 or -errno. */
static int
snapdiff_rows(struct fs *fs, int64_t id, size_t max, fs_diff_cb cb,
    void *arg, int *more)
{
	sqlite3_stmt *st = db_stmt(fs, snapdiff_sql);
	size_t n = 0;
	int rc;

	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, (int64_t)max + 1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *kind = (const char *)sqlite3_column_text(st, 0);
		const char *path = (const char *)sqlite3_column_text(st, 1);

		if (n++ == max) {
			*more = 1;
			continue;
		}
		if (kind && path && cb(arg, kind[0], path) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : db_errno(fs, rc, "diffing a snapshot");
}

int
fs_snapshot_diff(struct fs *fs, const char *name, size_t max, fs_diff_cb cb,
    void *arg, int *more)
{
	int64_t id = 0;
	int began, r;

	*more = 0;
	if ((r = fs_snapshot_name_ok(name)) < 0)
		return r;
	fs_lock(fs);
	if (schema_version(fs->db) < 3) {         /* read-only, not migrated */
		fs_unlock(fs);
		return -ENOENT;
	}
	began = db_read_begin(fs);
	if ((r = snapshot_find(fs, name, &id)) == 0)
		r = snapdiff_rows(fs, id, max, cb, arg, more);
	db_read_end(fs, began);
	fs_unlock(fs);
	return r;
}
