/*
 * quota.c: the workspace's byte and inode quota (-o quota=, quota_inodes=).
 * Called by db_policy.c (each operation's begin and end, as db.c reports
 * them), core.c (write, fallocate, statfs) and mount.c (fs_quota_set), with
 * fs->lock held except in fs_quota_set and fs_quota_usage, which take it;
 * calls down into db.c and checkpoint.c.
 *
 * Why: one room must not fill the disk that every room shares.  The
 * ENOSPC gate (space.c) protects the database from the disk; this protects
 * the disk's other users from the room.
 *
 * What counts, in bytes: what the database keeps for the user's data, not
 * the logical sizes, so a sparse file's holes cost nothing (an extending
 * truncate stores nothing and always fits) while bytes past a short chunk's
 * end that a later write fills with zeros do count:
 *   chunk bytes       sum of length(chunks.data)
 *   symlink targets   sum of length(symlinks.target)
 *   xattrs            sum of name and value lengths
 *   names             sum of dirents name lengths (hard links and long
 *                     names are not free: 65000 links of 255 bytes per
 *                     inode would otherwise escape both limits)
 *   snapshots only    the blocks that snapshots name and no live chunk
 *                     does (each once), plus QUOTA_SNAP_ROW_BYTES for each
 *                     snap_ row and the bytes of the names, targets and
 *                     xattrs those rows copy
 * Inodes: every inode but the root, unlinked-but-open ones included (their
 * bytes are still on disk); they are freed when the last opener lets go.
 * SQLite's own overhead (b-tree pages, indexes, about 100 bytes a row) is
 * not counted for the live tree: the inode limit bounds it.
 *
 * Why snapshots count.  A snapshot shares its blocks with the live tree, so
 * taking one costs rows, but from then on deleting or overwriting a file
 * moves its blocks from "live" to "kept only by snapshots" instead of
 * freeing them.  Not counting those let "write, snapshot, rm" repeated fill
 * the host's disk while df in the room showed it empty.  Counting them
 * the way ZFS counts a snapshot's unique bytes keeps two promises:
 *   - deleting never grows: a chunk whose block a snapshot names moves
 *     its len from live to snapshots only (net 0), so rm passes in a full
 *     room, and dropping a snapshot frees what only it named;
 *   - a block is counted once however many snapshots and the live tree
 *     name it, so a snapshot of an unchanged tree costs only its rows.
 * A snapshot people name (fs_snapshot_take without FS_SNAPSHOT_UNDO) must
 * also fit at the moment it is taken as if everything it names were
 * deleted next: used + its rows + the live bytes no other snapshot
 * names yet ("what it would keep") <= quota, else -EDQUOT with those
 * figures (quota_snapshot_check).  Nothing drops a named snapshot but a
 * person, so its worst case is reserved up front.  An undo point
 * (FS_SNAPSHOT_UNDO) and a restore are exempt from the check when taken
 * (quota_exempt): the agent drops undo points oldest first whenever the
 * room is full (agent/undo.c), so they cannot hold the room, and refusing
 * them would make /undo fail exactly when a full room needs it.  Both are
 * counted like any other rows and blocks from then on.
 *
 * How it is counted.  TEMP triggers on this connection (never in the file,
 * so the on-disk schema and fsck do not change) call quota_add() with each
 * row's change, so every path that adds or drops rows (write, truncate,
 * unlink, rename over a file, purge of orphans, xattrs) is counted without
 * being taught about quotas.  recursive_triggers is on so that INSERT OR
 * REPLACE (xattrs) fires the delete trigger for the row it replaces.  A
 * chunk counts its len: the bytes of the live tree.  quota_snap() counts
 * the snapshots' share (into op_snap as well as op_bytes): a live chunk
 * that goes while a snapshot names its block adds its len, one that comes
 * back onto a snapshot's block (a restore) takes it away, and the last
 * snap_chunk of a block no live chunk names takes it away too.
 * The changes of the running operation add up in op_bytes / op_inodes; at
 * its end (db_op_end) an operation that grew past a limit gets EDQUOT and
 * its savepoint is rolled back, so nothing of it stays and nothing before
 * it is touched.  An operation that only shrinks, or does not grow, always
 * passes: deleting works even over the quota (e.g. after it was lowered).
 * Only an operation that is kept (committed or part of a kept group) adds
 * its changes to used_bytes / used_inodes.
 *
 * Why the totals live in memory, computed at mount: a total computed from
 * the data is right by construction, after any crash or kill -9, whatever
 * was lost of the last group.  A total kept in a row of the database would
 * be right too if written in the same transaction, but it is one more write
 * per group and one more thing that could drift and need checking.  The
 * price is one scan at mount, reading only the b-tree leaves of chunks
 * (length() does not load a blob's overflow pages): about 20 MB for a
 * 10 GiB workspace.  Without a quota nothing is installed or scanned.  If
 * a group is lost (db.c's failed state) the totals may be off, but every
 * change then fails until the remount, which counts again.
 */
#include "fs_int.h"

#include <errno.h>

/* Below this much quota left, files are opened for writing without the
 * writeback cache (fs_quota_near): four times the dirty data the kernel
 * holds for a FUSE mount (about 48 MiB), so that writes which passed the
 * writeback cache before the quota came near cannot carry it far past. */
#define QUOTA_NEAR_BYTES (192LL << 20)

/* The triggers, and why each is shaped so: see the head.  Names are TEXT,
 * whose length() counts characters: the casts count bytes. */
static const char quota_triggers[] =
	"PRAGMA recursive_triggers = ON;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_chunk_ins AFTER INSERT ON "
	" main.chunks BEGIN SELECT quota_add(NEW.len, 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_chunk_del AFTER DELETE ON "
	" main.chunks BEGIN SELECT quota_add(-OLD.len, 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_chunk_upd AFTER UPDATE OF len "
	" ON main.chunks BEGIN "
	" SELECT quota_add(NEW.len - OLD.len, 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_link_ins AFTER INSERT ON "
	" main.symlinks BEGIN SELECT quota_add(length(NEW.target), 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_link_del AFTER DELETE ON "
	" main.symlinks BEGIN SELECT quota_add(-length(OLD.target), 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_xattr_ins AFTER INSERT ON "
	" main.xattrs BEGIN SELECT quota_add(length(CAST(NEW.name AS BLOB)) + "
	" length(NEW.value), 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_xattr_del AFTER DELETE ON "
	" main.xattrs BEGIN SELECT quota_add(-length(CAST(OLD.name AS BLOB)) - "
	" length(OLD.value), 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_xattr_upd AFTER UPDATE ON "
	" main.xattrs BEGIN SELECT quota_add(length(CAST(NEW.name AS BLOB)) + "
	" length(NEW.value) - length(CAST(OLD.name AS BLOB)) - "
	" length(OLD.value), 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_name_ins AFTER INSERT ON "
	" main.dirents BEGIN SELECT quota_add(length(CAST(NEW.name AS BLOB)), 0);"
	" END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_name_del AFTER DELETE ON "
	" main.dirents BEGIN SELECT quota_add(-length(CAST(OLD.name AS BLOB)), 0);"
	" END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_name_upd AFTER UPDATE OF name ON "
	" main.dirents BEGIN SELECT quota_add(length(CAST(NEW.name AS BLOB)) - "
	" length(CAST(OLD.name AS BLOB)), 0); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_inode_ins AFTER INSERT ON "
	" main.inodes BEGIN SELECT quota_add(0, 1); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_inode_del AFTER DELETE ON "
	" main.inodes BEGIN SELECT quota_add(0, -1); END;";

/* What only snapshots keep (see the head).  A block's every chunk and
 * snap_chunk has the same len (fs/engine/schema.c, I10). */
#define QUOTA_SNAP_NAMED(b) " EXISTS (SELECT 1 FROM snap_chunks WHERE block = " b ")"
#define QUOTA_LIVE_NAMED(b) " EXISTS (SELECT 1 FROM chunks WHERE block = " b ")"
#define QUOTA_ROW "64"
static const char quota_snap_triggers[] =
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_chunk_del AFTER DELETE ON "
	" main.chunks WHEN" QUOTA_SNAP_NAMED("OLD.block") " BEGIN"
	" SELECT quota_snap(OLD.len); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_chunk_ins AFTER INSERT ON "
	" main.chunks WHEN" QUOTA_SNAP_NAMED("NEW.block") " BEGIN"
	" SELECT quota_snap(-NEW.len); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_chunk_mv AFTER UPDATE OF "
	" block ON main.chunks WHEN OLD.block != NEW.block BEGIN"
	" SELECT quota_snap(OLD.len) WHERE" QUOTA_SNAP_NAMED("OLD.block") ";"
	" SELECT quota_snap(-NEW.len) WHERE" QUOTA_SNAP_NAMED("NEW.block") ";"
	" END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_sc_ins AFTER INSERT ON "
	" main.snap_chunks BEGIN SELECT quota_snap(" QUOTA_ROW ");"
	" SELECT quota_snap(NEW.len) WHERE NOT" QUOTA_LIVE_NAMED("NEW.block")
	" AND (SELECT count(*) FROM snap_chunks WHERE block = NEW.block) = 1;"
	" END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_sc_del AFTER DELETE ON "
	" main.snap_chunks BEGIN SELECT quota_snap(-" QUOTA_ROW ");"
	" SELECT quota_snap(-OLD.len) WHERE NOT" QUOTA_LIVE_NAMED("OLD.block")
	" AND NOT" QUOTA_SNAP_NAMED("OLD.block") "; END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_si_ins AFTER INSERT ON "
	" main.snap_inodes BEGIN SELECT quota_snap(" QUOTA_ROW "); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_si_del AFTER DELETE ON "
	" main.snap_inodes BEGIN SELECT quota_snap(-" QUOTA_ROW "); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_sd_ins AFTER INSERT ON "
	" main.snap_dirents BEGIN SELECT quota_snap(" QUOTA_ROW " + "
	" length(CAST(NEW.name AS BLOB))); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_sd_del AFTER DELETE ON "
	" main.snap_dirents BEGIN SELECT quota_snap(-" QUOTA_ROW " - "
	" length(CAST(OLD.name AS BLOB))); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_ss_ins AFTER INSERT ON "
	" main.snap_symlinks BEGIN SELECT quota_snap(" QUOTA_ROW " + "
	" length(NEW.target)); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_ss_del AFTER DELETE ON "
	" main.snap_symlinks BEGIN SELECT quota_snap(-" QUOTA_ROW " - "
	" length(OLD.target)); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_sx_ins AFTER INSERT ON "
	" main.snap_xattrs BEGIN SELECT quota_snap(" QUOTA_ROW " + "
	" length(CAST(NEW.name AS BLOB)) + length(NEW.value)); END;"
	"CREATE TEMP TRIGGER IF NOT EXISTS quota_snap_sx_del AFTER DELETE ON "
	" main.snap_xattrs BEGIN SELECT quota_snap(-" QUOTA_ROW " - "
	" length(CAST(OLD.name AS BLOB)) - length(OLD.value)); END;";

/* The snapshots' share as the data says, the same sums its triggers keep. */
static const char quota_scan_snap_sql[] =
	"SELECT (SELECT coalesce(sum(len), 0) FROM (SELECT block, max(len) AS"
	" len FROM snap_chunks GROUP BY block) s WHERE NOT"
	QUOTA_LIVE_NAMED("s.block") ")"
	" + " QUOTA_ROW " * ((SELECT count(*) FROM snap_chunks)"
	"  + (SELECT count(*) FROM snap_inodes)"
	"  + (SELECT count(*) FROM snap_dirents)"
	"  + (SELECT count(*) FROM snap_symlinks)"
	"  + (SELECT count(*) FROM snap_xattrs))"
	" + (SELECT coalesce(sum(length(CAST(name AS BLOB))), 0) FROM"
	"  snap_dirents)"
	" + (SELECT coalesce(sum(length(target)), 0) FROM snap_symlinks)"
	" + (SELECT coalesce(sum(length(CAST(name AS BLOB)) + length(value)), 0)"
	"  FROM snap_xattrs)";

/* The totals as the data says, the same sums the triggers keep. */
static const char quota_scan_sql[] =
	"SELECT (SELECT coalesce(sum(len), 0) FROM chunks)"
	" + (SELECT coalesce(sum(length(target)), 0) FROM symlinks)"
	" + (SELECT coalesce(sum(length(CAST(name AS BLOB)) + length(value)), 0)"
	"    FROM xattrs)"
	" + (SELECT coalesce(sum(length(CAST(name AS BLOB))), 0) FROM dirents),"
	" (SELECT count(*) FROM inodes WHERE ino <> 1)";

/* quota_add(bytes, inodes): the triggers' way in.  Runs inside a statement
 * of the thread holding fs->lock. */
static void
quota_add_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct fs *fs = sqlite3_user_data(ctx);

	(void)argc;
	fs->op_bytes += sqlite3_value_int64(argv[0]);
	fs->op_inodes += sqlite3_value_int64(argv[1]);
	sqlite3_result_null(ctx);
}

/* quota_snap(bytes): the snapshot triggers' way in (see the head). */
static void
quota_snap_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
	struct fs *fs = sqlite3_user_data(ctx);
	int64_t n = sqlite3_value_int64(argv[0]);

	(void)argc;
	fs->op_bytes += n;
	fs->op_snap += n;
	sqlite3_result_null(ctx);
}

/* Run the one-row query sql into out[0..n).  0 or -errno. */
static int
quota_query(struct fs *fs, const char *sql, int64_t *out, int n)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(fs->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return db_errno(fs, rc, "quota scan");
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		for (int i = 0; i < n; i++)
			out[i] = sqlite3_column_int64(st, i);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : db_errno(fs, rc, "quota scan");
}

/* Count what the database holds into used_bytes / used_inodes /
 * used_snap.  0 or -errno. */
static int
quota_scan(struct fs *fs)
{
	int64_t v[2] = { 0, 0 }, snap = 0;
	int r;

	if ((r = quota_query(fs, quota_scan_sql, v, 2)) < 0 ||
	    (r = quota_query(fs, quota_scan_snap_sql, &snap, 1)) < 0)
		return r;
	fs->used_bytes = v[0] + snap;
	fs->used_inodes = v[1];
	fs->used_snap = snap;
	return 0;
}

/* Install the counting (function and triggers) and count once.  Called
 * with no operation open.  0 or -errno. */
static int
quota_install(struct fs *fs)
{
	char *err = NULL;
	int rc;

	if (fs->quota_counting)
		return 0;
	rc = sqlite3_create_function(fs->db, "quota_add", 2, SQLITE_UTF8, fs,
	    quota_add_fn, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(fs->db, "quota_snap", 1, SQLITE_UTF8,
		    fs, quota_snap_fn, NULL, NULL);
	if (rc != SQLITE_OK)
		return db_errno(fs, rc, "quota_add");
	if (sqlite3_exec(fs->db, quota_triggers, NULL, NULL, &err) != SQLITE_OK ||
	    sqlite3_exec(fs->db, quota_snap_triggers, NULL, NULL, &err) !=
	    SQLITE_OK) {
		log_error("%s: installing the quota triggers: %s", fs->path,
		    err ? err : "?");
		sqlite3_free(err);
		return -EIO;
	}
	fs->quota_counting = 1;
	return quota_scan(fs);
}

/* Note the limits in meta (quota_bytes, quota_inodes), so that a command
 * on the unmounted database (atrium-fs snapshot) holds the room to the
 * quota its daemon had.  Called with no group open (after db_commit), so
 * the statement commits by itself.  0 or -errno. */
static int
quota_record(struct fs *fs, uint64_t bytes, uint64_t inodes)
{
	char *sql = sqlite3_mprintf("INSERT OR REPLACE INTO meta (key, value)"
	    " VALUES ('quota_bytes', %llu), ('quota_inodes', %llu)",
	    (unsigned long long)bytes, (unsigned long long)inodes);
	int rc;

	if (!sql)
		return -ENOMEM;
	rc = sqlite3_exec(fs->db, sql, NULL, NULL, NULL);
	sqlite3_free(sql);
	return rc == SQLITE_OK ? 0 : db_errno(fs, rc, "quota record");
}

/* Set the limits (0: none) of a writable filesystem; the first limit set
 * installs the counting.  The limits are noted in the database (see
 * quota_record).  0, -EROFS or -errno. */
int
fs_quota_set(struct fs *fs, uint64_t bytes, uint64_t inodes)
{
	int r = 0;

	fs_lock(fs);
	if (fs->readonly)
		r = (bytes || inodes) ? -EROFS : 0;
	else if ((r = db_commit(fs, 0)) == 0) {
		/* Best effort: a room on a full disk must still mount (to
		 * delete); only the offline commands then miss the figure. */
		if ((r = quota_record(fs, bytes, inodes)) < 0)
			log_warn("%s: cannot note the quota in the database: %s",
			    fs->path, strerror(-r));
		r = (bytes || inodes) ? quota_install(fs) : 0;
	}
	if (r == 0) {
		fs->quota_bytes = (int64_t)bytes;
		fs->quota_inodes = (int64_t)inodes;
		ckpt_quota_changed(fs);
	}
	fs_unlock(fs);
	return r;
}

int
fs_quota_recorded(struct fs *fs, uint64_t *bytes, uint64_t *inodes)
{
	int64_t v[2] = { 0, 0 };
	int r;

	fs_lock(fs);
	r = quota_query(fs, "SELECT coalesce((SELECT CAST(value AS INTEGER)"
	    " FROM meta WHERE key = 'quota_bytes'), 0), coalesce((SELECT"
	    " CAST(value AS INTEGER) FROM meta WHERE key = 'quota_inodes'), 0)",
	    v, 2);
	fs_unlock(fs);
	*bytes = v[0] > 0 ? (uint64_t)v[0] : 0;
	*inodes = v[1] > 0 ? (uint64_t)v[1] : 0;
	return r;
}

/* What is counted now (0 and 0 when no quota was ever set).  0. */
int
fs_quota_usage(struct fs *fs, uint64_t *bytes, uint64_t *inodes)
{
	fs_lock(fs);
	*bytes = fs->used_bytes > 0 ? (uint64_t)fs->used_bytes : 0;
	*inodes = fs->used_inodes > 0 ? (uint64_t)fs->used_inodes : 0;
	fs_unlock(fs);
	return 0;
}

int
fs_quota_figures(struct fs *fs, struct fs_quota_figures *out)
{
	memset(out, 0, sizeof(*out));
	fs_lock(fs);
	out->quota = fs->quota_bytes > 0 ? (uint64_t)fs->quota_bytes : 0;
	out->used = fs->used_bytes > 0 ? (uint64_t)fs->used_bytes : 0;
	out->snap_only = fs->used_snap > 0 ? (uint64_t)fs->used_snap : 0;
	out->inodes = fs->used_inodes > 0 ? (uint64_t)fs->used_inodes : 0;
	out->quota_inodes = fs->quota_inodes > 0 ?
	    (uint64_t)fs->quota_inodes : 0;
	fs_unlock(fs);
	return 0;
}

/* 1 when a byte quota is set and less than QUOTA_NEAR_BYTES of it is
 * left.  Why it matters: with the writeback cache, write(2) returns once
 * the kernel has the page; an EDQUOT from its later writeback reaches
 * the writer only as close's EIO (the kernel keeps just ENOSPC and EIO
 * for close, see fs/daemon/fuse_ops.c).  Near the quota, files are opened in
 * direct I/O so each write(2) gets EDQUOT itself. */
int
fs_quota_near(struct fs *fs)
{
	int near;

	fs_lock(fs);
	near = fs->quota_bytes &&
	    fs->quota_bytes - fs->used_bytes < QUOTA_NEAR_BYTES;
	fs_unlock(fs);
	return near;
}

/* An operation starts: nothing of it counted yet. */
void
quota_op_begin(struct fs *fs)
{
	fs->op_bytes = 0;
	fs->op_inodes = 0;
	fs->op_snap = 0;
}

/* 0, or -EDQUOT when the running operation grew past a limit (see the
 * head: shrinking and standing still always pass, and so does an exempt
 * operation's bytes). */
int
quota_op_check(struct fs *fs)
{
	if (fs->quota_bytes && fs->op_bytes > 0 && !fs->quota_exempt &&
	    fs->used_bytes + fs->op_bytes > fs->quota_bytes)
		return -EDQUOT;
	if (fs->quota_inodes && fs->op_inodes > 0 &&
	    fs->used_inodes + fs->op_inodes > fs->quota_inodes)
		return -EDQUOT;
	return 0;
}

/* The running operation ended: add its changes when it was kept. */
void
quota_op_end(struct fs *fs, int kept)
{
	if (kept) {
		fs->used_bytes += fs->op_bytes;
		fs->used_inodes += fs->op_inodes;
		fs->used_snap += fs->op_snap;
	}
	fs->op_bytes = 0;
	fs->op_inodes = 0;
	fs->op_snap = 0;
	fs->quota_exempt = 0;
}

/* The live bytes snapshot id names that no other snapshot does: what it
 * alone would keep if the live tree let them go.  -1 when unknown. */
static int64_t
quota_snapshot_keep(struct fs *fs, int64_t id)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT coalesce(sum(s.len), 0) FROM "
	    "snap_chunks s WHERE s.snap = ?1 AND NOT EXISTS (SELECT 1 FROM "
	    "snap_chunks o WHERE o.block = s.block AND o.snap != ?1)");
	int64_t n = -1;

	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return n;
}

/* Called inside the operation that just copied snapshot id's rows: 0
 * when it fits as a named snapshot must (see the head), -EDQUOT with the
 * figures into *why (when not NULL), or -EIO. */
int
quota_snapshot_check(struct fs *fs, int64_t id, struct fs_quota_figures *why)
{
	int64_t keep;

	if (!fs->quota_bytes)
		return 0;
	if ((keep = quota_snapshot_keep(fs, id)) < 0)
		return -EIO;
	keep += fs->op_bytes;                     /* its rows */
	if (fs->used_bytes + keep <= fs->quota_bytes)
		return 0;
	if (why) {
		memset(why, 0, sizeof(*why));
		why->quota = (uint64_t)fs->quota_bytes;
		why->used = fs->used_bytes > 0 ? (uint64_t)fs->used_bytes : 0;
		why->snap_only = fs->used_snap > 0 ? (uint64_t)fs->used_snap : 0;
		why->keep = (uint64_t)keep;
		why->inodes = (uint64_t)fs->used_inodes;
		why->quota_inodes = (uint64_t)fs->quota_inodes;
	}
	log_info("%s: snapshot refused: %lld bytes used, it would keep %lld "
	    "more, the quota is %lld", fs->path, (long long)fs->used_bytes,
	    (long long)keep, (long long)fs->quota_bytes);
	return -EDQUOT;
}

/* 0 when an operation about to store up to bytes more may try (it is
 * checked exactly at its end), -EDQUOT when the byte quota is already used
 * up, or would surely be (fallocate), so no work is done in vain. */
int
quota_admit(struct fs *fs, uint64_t bytes)
{
	if (!fs->quota_bytes || bytes == 0)
		return 0;
	if (fs->used_bytes >= fs->quota_bytes)
		return -EDQUOT;
	return 0;
}

/* 1 when bytes more stored bytes stay within the byte quota (or there is
 * none); what a writer checks before it frees pending deletes itself. */
int
quota_fits(struct fs *fs, uint64_t bytes)
{
	return !fs->quota_bytes || (bytes <= (uint64_t)INT64_MAX &&
	    fs->used_bytes + (int64_t)bytes <= fs->quota_bytes);
}

/* 0, or -EDQUOT when len more stored bytes would pass the byte quota:
 * what fallocate promises (later writes find room) cannot be promised. */
int
quota_reserve_check(struct fs *fs, uint64_t len)
{
	if (!fs->quota_bytes)
		return 0;
	if (len > (uint64_t)INT64_MAX ||
	    fs->used_bytes + (int64_t)len > fs->quota_bytes)
		return -EDQUOT;
	return 0;
}

/* Lower out's totals and free figures to the quota's, where smaller, so
 * df inside the workspace shows the room's share, not the host's disk. */
void
quota_statfs(struct fs *fs, struct fs_statfs *out)
{
	uint64_t total, left;

	if (fs->quota_bytes && out->bsize) {
		total = (uint64_t)fs->quota_bytes / out->bsize;
		left = fs->used_bytes >= fs->quota_bytes ? 0 :
		    (uint64_t)(fs->quota_bytes - fs->used_bytes) / out->bsize;
		if (total < out->blocks)
			out->blocks = total;
		if (left < out->bfree)
			out->bfree = left;
		if (left < out->bavail)
			out->bavail = left;
	}
	if (fs->quota_inodes) {
		total = (uint64_t)fs->quota_inodes;
		left = fs->used_inodes >= fs->quota_inodes ? 0 :
		    (uint64_t)(fs->quota_inodes - fs->used_inodes);
		if (total < out->files)
			out->files = total;
		if (left < out->ffree)
			out->ffree = left;
	}
}
