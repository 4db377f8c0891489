/*
 * repair.c: `atrium-fs fsck --repair DB`, mending what fs/engine/fsck.c finds
 * wherever the mend cannot lose what a user could still read.  Called by
 * fs/fs_main.c; fsck without --repair stays read-only (fs/engine/fsck.c).
 *
 * Each repair is a pair of queries on the invariants of fs/engine/schema.c: one
 * whose rows say, already worded, what is about to change (printed on
 * stdout, one line each), and one that changes it.  What is repaired:
 *   I1  entries naming the root are removed.
 *   I2  entries in a missing directory, or naming a missing inode, are
 *       removed (what they named becomes an orphan, below).
 *   I4  a directory's second and later names are removed; link counts
 *       are set to the names (a directory's to 2 + its subdirectories).
 *   I5  orphans: an inode with no name and link count 0 is deleted with
 *       its data; one with a link count goes into /lost+found as "#INO"
 *       (made, mode 0700, when missing), as e2fsck does.
 *   I6  chunks of no regular file, empty ones and ones wholly past the
 *       file's size are deleted; one that reaches past the size is cut at
 *       it (reads never showed those bytes).
 *   I10 chunks naming a missing block are deleted (those bytes read as
 *       zeros from then on; stored is counted again); a chunk whose block
 *       is longer than its len, or which shares its block with another
 *       live chunk, gets a block of its own bytes, and one whose block is
 *       shorter takes the block's length (repair_blocks below); a
 *       snapshot's chunk naming a missing block is deleted, one whose block
 *       is shorter takes its length; blocks named by nothing are deleted.
 *   I11 snap_ rows of a missing snapshot are deleted, and a snapshot's
 *       entries naming an inode the snapshot does not hold.  A snapshot
 *       without its root directory is dropped whole: nothing in it can be
 *       reached (export walks from the root) and restoring it would take
 *       the tree's root away, so dropping loses nothing a user could read.
 *   I10 for snapshots: a snapshot's chunk whose block is longer than the
 *       chunk gets the chunk's bytes of it (what the snapshot showed): the
 *       block is cut in place when every other chunk naming it (live or
 *       of a snapshot) has the same length, else the chunk gets a block of
 *       its own (repair_snap_blocks below); an empty one is deleted.
 *   I7  a symlink's size is set to its target's length; targets of
 *       non-symlinks and xattrs of missing inodes are deleted.
 *   I8  a directory not reachable from the root moves into /lost+found.
 *   I9  nanoseconds out of range become 0; stored bytes are counted again.
 * Not repaired (reported by the check that follows): bad names (I3),
 * symlinks without a target (I7), chunks longer than the chunk size (I6),
 * a root that is missing or no directory (I1), and SQLite's own damage.
 *
 * A block is rewritten in place only when no snapshot and no other chunk
 * names it; otherwise the chunk gets a new block with the bytes it keeps,
 * so a repair never changes what a snapshot holds.
 * The quota's totals are not stored (fs/engine/quota.c counts them at each
 * mount), so there is nothing of them to repair.
 *
 * All of it is one transaction, taken with the mount lock held so that no
 * daemon mounts the database meanwhile: a repair cut short changes
 * nothing.  Passes repeat until one changes nothing (an orphan's removal
 * can orphan what it held), at most REPAIR_PASSES times.
 */
#include "commands.h"
#include "fs_int.h"
#include "mount.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define REPAIR_PASSES 8
/* Unreachable directories moved into /lost+found in one pass at most. */
#define REPAIR_UNREACHABLE_MAX 100000

#define R_DIR "16384"   /* S_IFDIR */
#define R_REG "32768"   /* S_IFREG */
#define R_LNK "40960"   /* S_IFLNK */
#define R_TYPE(col) "((" col ") & 61440)"

/* Rows of what to change (?1: the chunk size), then the change. */
struct repair_step {
	const char *say;
	const char *fix;
};

#define R_BAD_PARENT "SELECT d.id FROM dirents d LEFT JOIN inodes p ON " \
	"p.ino = d.parent WHERE p.ino IS NULL OR " R_TYPE("p.mode") " != " R_DIR
#define R_DANGLING "SELECT d.id FROM dirents d LEFT JOIN inodes i ON " \
	"i.ino = d.ino WHERE i.ino IS NULL"
#define R_DIR_ALIAS "SELECT d.id FROM dirents d JOIN inodes i ON i.ino = " \
	"d.ino WHERE " R_TYPE("i.mode") " = " R_DIR " AND d.id > (SELECT " \
	"min(e.id) FROM dirents e WHERE e.ino = d.ino)"
#define R_CHUNK_NO_FILE "SELECT c.rowid FROM chunks c LEFT JOIN inodes i " \
	"ON i.ino = c.ino WHERE i.ino IS NULL OR " R_TYPE("i.mode") " != " R_REG
#define R_CHUNK_PAST "SELECT c.rowid FROM chunks c JOIN inodes i ON " \
	"i.ino = c.ino WHERE c.len <= 0 OR c.idx < 0 OR c.idx * ?1 >= i.size"
#define R_CHUNK_NO_BLOCK "SELECT c.rowid FROM chunks c LEFT JOIN blocks " \
	"b ON b.id = c.block WHERE b.id IS NULL"
#define R_SNAP_NO_BLOCK "NOT EXISTS (SELECT 1 FROM blocks b WHERE b.id = " \
	"snap_chunks.block)"
#define R_SNAP_SHORT "snap_chunks.len > (SELECT length(b.data) FROM " \
	"blocks b WHERE b.id = snap_chunks.block)"
#define R_NO_SNAP(t) "SELECT printf('deleted %d rows of " t " of snapshot " \
	"%d, which does not exist', count(*), snap) FROM " t " WHERE snap NOT " \
	"IN (SELECT id FROM snapshots) GROUP BY snap", "DELETE FROM " t \
	" WHERE snap NOT IN (SELECT id FROM snapshots)"
#define R_SNAP_DANGLING "NOT EXISTS (SELECT 1 FROM snap_inodes i WHERE " \
	"i.snap = snap_dirents.snap AND i.ino = snap_dirents.ino)"
#define R_BLOCK_UNNAMED "NOT EXISTS (SELECT 1 FROM chunks c WHERE " \
	"c.block = blocks.id) AND NOT EXISTS (SELECT 1 FROM snap_chunks s " \
	"WHERE s.block = blocks.id)"
#define R_SNAP_ROOTLESS "SELECT id FROM snapshots n WHERE NOT EXISTS " \
	"(SELECT 1 FROM snap_inodes i WHERE i.snap = n.id AND i.ino = 1 AND " \
	R_TYPE("i.mode") " = " R_DIR ")"
#define R_DROP_ROOTLESS(t) "DELETE FROM " t " WHERE snap IN (" \
	R_SNAP_ROOTLESS ");"
#define R_UNLINKED "SELECT ino FROM inodes i WHERE ino != 1 AND nlink = 0 " \
	"AND NOT EXISTS (SELECT 1 FROM dirents d WHERE d.ino = i.ino)"

static const struct repair_step repair_steps[] = {
	{ "SELECT printf('removed entry %Q in directory %d: it named the root', "
	  "name, parent) FROM dirents WHERE ino = 1",
	  "DELETE FROM dirents WHERE ino = 1" },
	{ "SELECT printf('removed entry %Q of directory %d, which is missing or "
	  "no directory', name, parent) FROM dirents WHERE id IN (" R_BAD_PARENT
	  ")", "DELETE FROM dirents WHERE id IN (" R_BAD_PARENT ")" },
	{ "SELECT printf('removed dangling entry %Q in directory %d (inode %d "
	  "does not exist)', name, parent, ino) FROM dirents WHERE id IN ("
	  R_DANGLING ")", "DELETE FROM dirents WHERE id IN (" R_DANGLING ")" },
	{ "SELECT printf('removed entry %Q in directory %d: directory %d has "
	  "another name', name, parent, ino) FROM dirents WHERE id IN ("
	  R_DIR_ALIAS ")", "DELETE FROM dirents WHERE id IN (" R_DIR_ALIAS ")" },
	{ "SELECT printf('deleted chunk %d of inode %d, which is no regular "
	  "file', idx, ino) FROM chunks WHERE rowid IN (" R_CHUNK_NO_FILE ")",
	  "DELETE FROM chunks WHERE rowid IN (" R_CHUNK_NO_FILE ")" },
	{ "SELECT printf('deleted %d empty chunks or chunks past the size of "
	  "file %d', count(*), ino) FROM chunks WHERE rowid IN (" R_CHUNK_PAST
	  ") GROUP BY ino",
	  "DELETE FROM chunks WHERE rowid IN (" R_CHUNK_PAST ")" },
	{ "SELECT printf('deleted chunk %d of file %d: its block %d is "
	  "missing (those bytes now read as zeros)', idx, ino, block) FROM "
	  "chunks WHERE rowid IN (" R_CHUNK_NO_BLOCK ")",
	  "DELETE FROM chunks WHERE rowid IN (" R_CHUNK_NO_BLOCK ")" },
	{ "SELECT printf('deleted the symlink target of inode %d, which is no "
	  "symlink', s.ino) FROM symlinks s LEFT JOIN inodes i ON i.ino = "
	  "s.ino WHERE i.ino IS NULL OR " R_TYPE("i.mode") " != " R_LNK,
	  "DELETE FROM symlinks WHERE ino NOT IN (SELECT ino FROM inodes WHERE "
	  R_TYPE("mode") " = " R_LNK ")" },
	{ "SELECT printf('set the size of symlink %d to its target''s length', "
	  "i.ino) FROM inodes i JOIN symlinks s ON s.ino = i.ino WHERE "
	  "i.size != length(s.target)",
	  "UPDATE inodes SET size = (SELECT length(target) FROM symlinks s "
	  "WHERE s.ino = inodes.ino) WHERE ino IN (SELECT i.ino FROM inodes i "
	  "JOIN symlinks s ON s.ino = i.ino WHERE i.size != length(s.target))" },
	{ "SELECT printf('deleted xattr %Q of missing inode %d', name, ino) "
	  "FROM xattrs WHERE ino NOT IN (SELECT ino FROM inodes)",
	  "DELETE FROM xattrs WHERE ino NOT IN (SELECT ino FROM inodes)" },
	{ "SELECT printf('deleted unlinked inode %d and its data', ino) FROM "
	  "inodes WHERE ino IN (" R_UNLINKED ")",
	  "DELETE FROM chunks WHERE ino IN (" R_UNLINKED ");"
	  "DELETE FROM symlinks WHERE ino IN (" R_UNLINKED ");"
	  "DELETE FROM xattrs WHERE ino IN (" R_UNLINKED ");"
	  "DELETE FROM inodes WHERE ino IN (" R_UNLINKED ")" },
	{ "SELECT printf('dropped snapshot %Q: it has no root directory, so "
	  "none of its %d inodes could be reached', name, (SELECT count(*) "
	  "FROM snap_inodes i WHERE i.snap = n.id)) FROM snapshots n WHERE id "
	  "IN (" R_SNAP_ROOTLESS ")",
	  R_DROP_ROOTLESS("snap_chunks") R_DROP_ROOTLESS("snap_dirents")
	  R_DROP_ROOTLESS("snap_symlinks") R_DROP_ROOTLESS("snap_xattrs")
	  R_DROP_ROOTLESS("snap_inodes")
	  "DELETE FROM snapshots WHERE id IN (" R_SNAP_ROOTLESS ")" },
	{ R_NO_SNAP("snap_inodes") },
	{ R_NO_SNAP("snap_dirents") },
	{ R_NO_SNAP("snap_chunks") },
	{ R_NO_SNAP("snap_symlinks") },
	{ R_NO_SNAP("snap_xattrs") },
	{ "SELECT printf('snapshot %d: removed entry %Q in directory %d: the "
	  "snapshot holds no inode %d', snap, name, parent, ino) FROM "
	  "snap_dirents WHERE " R_SNAP_DANGLING,
	  "DELETE FROM snap_dirents WHERE " R_SNAP_DANGLING },
	{ "SELECT printf('snapshot %d: deleted chunk %d of inode %d: its block "
	  "%d is missing', snap, idx, ino, block) FROM snap_chunks WHERE "
	  R_SNAP_NO_BLOCK, "DELETE FROM snap_chunks WHERE " R_SNAP_NO_BLOCK },
	{ "SELECT printf('snapshot %d: set the length of chunk %d of inode %d "
	  "from %d to its block''s', snap, idx, ino, len) FROM snap_chunks "
	  "WHERE " R_SNAP_SHORT, "UPDATE snap_chunks SET len = (SELECT length("
	  "b.data) FROM blocks b WHERE b.id = snap_chunks.block) WHERE "
	  R_SNAP_SHORT },
};

/* Last in a pass, after every step that lets go of blocks. */
static const struct repair_step repair_unnamed_blocks[] = {
	{ "SELECT printf('deleted block %d (%d bytes), which no chunk or "
	  "snapshot names', id, length(data)) FROM blocks WHERE "
	  R_BLOCK_UNNAMED, "DELETE FROM blocks WHERE " R_BLOCK_UNNAMED },
};

/* Link counts, stored bytes and times: after every step that moves
 * names or data (and after lost+found), so last in a pass. */
static const struct repair_step repair_counts[] = {
	{ "SELECT printf('set the link count of inode %d from %d to %d', ino, "
	  "nlink, c) FROM (SELECT ino, nlink, mode, (SELECT count(*) FROM "
	  "dirents d WHERE d.ino = inodes.ino) AS c FROM inodes) WHERE "
	  R_TYPE("mode") " != " R_DIR " AND nlink != c AND c > 0",
	  "UPDATE inodes SET nlink = (SELECT count(*) FROM dirents d WHERE "
	  "d.ino = inodes.ino) WHERE " R_TYPE("mode") " != " R_DIR " AND "
	  "nlink != (SELECT count(*) FROM dirents d WHERE d.ino = inodes.ino) "
	  "AND EXISTS (SELECT 1 FROM dirents d WHERE d.ino = inodes.ino)" },
	{ "SELECT printf('set the link count of directory %d from %d to %d', "
	  "ino, nlink, want) FROM (SELECT ino, nlink, 2 + (SELECT count(*) FROM "
	  "dirents d JOIN inodes j ON j.ino = d.ino WHERE d.parent = inodes.ino "
	  "AND " R_TYPE("j.mode") " = " R_DIR ") AS want FROM inodes WHERE "
	  R_TYPE("mode") " = " R_DIR " AND nlink > 0) WHERE nlink != want",
	  "UPDATE inodes SET nlink = 2 + (SELECT count(*) FROM dirents d JOIN "
	  "inodes j ON j.ino = d.ino WHERE d.parent = inodes.ino AND "
	  R_TYPE("j.mode") " = " R_DIR ") WHERE " R_TYPE("mode") " = " R_DIR
	  " AND nlink > 0" },
	{ "SELECT printf('counted the stored bytes of file %d again (%d, not "
	  "%d)', ino, want, stored) FROM (SELECT ino, stored, (SELECT coalesce("
	  "sum(c.len), 0) FROM chunks c WHERE c.ino = inodes.ino) AS "
	  "want FROM inodes WHERE " R_TYPE("mode") " = " R_REG ") WHERE "
	  "stored != want",
	  "UPDATE inodes SET stored = (SELECT coalesce(sum(c.len), 0) "
	  "FROM chunks c WHERE c.ino = inodes.ino) WHERE " R_TYPE("mode") " = "
	  R_REG },
	{ "SELECT printf('counted the entry bytes of directory %d again (%d, "
	  "not %d)', ino, want, stored) FROM (SELECT ino, stored, (SELECT "
	  "coalesce(sum(" STORED_DIRENT_SQL("name") "), 0) FROM dirents d WHERE "
	  "d.parent = inodes.ino) AS want FROM inodes WHERE " R_TYPE("mode")
	  " = " R_DIR ") WHERE stored != want",
	  "UPDATE inodes SET stored = (SELECT coalesce(sum("
	  STORED_DIRENT_SQL("name") "), 0) FROM dirents d WHERE d.parent = "
	  "inodes.ino) WHERE " R_TYPE("mode") " = " R_DIR },
	{ "SELECT printf('set out-of-range nanoseconds of inode %d to 0', ino) "
	  "FROM inodes WHERE atime_ns NOT BETWEEN 0 AND 999999999 OR mtime_ns "
	  "NOT BETWEEN 0 AND 999999999 OR ctime_ns NOT BETWEEN 0 AND 999999999",
	  "UPDATE inodes SET atime_ns = CASE WHEN atime_ns BETWEEN 0 AND "
	  "999999999 THEN atime_ns ELSE 0 END, mtime_ns = CASE WHEN mtime_ns "
	  "BETWEEN 0 AND 999999999 THEN mtime_ns ELSE 0 END, ctime_ns = CASE "
	  "WHEN ctime_ns BETWEEN 0 AND 999999999 THEN ctime_ns ELSE 0 END" },
};

/* Print each row of say (?1 bound to the chunk size): how many, or -EIO. */
static int
repair_say(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int n = 0, rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		log_error("repair query failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_int(st, 1, FS_CHUNK);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		printf("%s\n", (const char *)sqlite3_column_text(st, 0));
		n++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		log_error("repair query failed: %s", sqlite3_errstr(rc));
		return -EIO;
	}
	return n;
}

/* Run the statements of sql (?1 bound to the chunk size).  0 or -EIO. */
static int
repair_do(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	const char *rest = sql;
	int rc = SQLITE_OK;

	while (rc == SQLITE_OK && rest && *rest) {
		if ((rc = sqlite3_prepare_v2(db, rest, -1, &st, &rest)) !=
		    SQLITE_OK || !st)
			break;
		if (sqlite3_bind_parameter_count(st) >= 1)
			sqlite3_bind_int(st, 1, FS_CHUNK);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_OK) {
		log_error("repair failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	return 0;
}

/* Say, then fix, each step that finds something.  Changes made, or -EIO. */
static int
repair_steps_run(sqlite3 *db, const struct repair_step *steps, size_t n)
{
	int total = 0, r;

	for (size_t i = 0; i < n; i++) {
		if ((r = repair_say(db, steps[i].say)) < 0)
			return r;
		if (r > 0 && repair_do(db, steps[i].fix) < 0)
			return -EIO;
		total += r;
	}
	return total;
}

/* One integer from sql, or def when it has no row; -EIO on failure. */
static int64_t
repair_int(sqlite3 *db, const char *sql, int64_t def)
{
	sqlite3_stmt *st;
	int64_t v = def;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else if (rc != SQLITE_DONE)
		v = -EIO;
	sqlite3_finalize(st);
	return v;
}

/* Live chunks whose len or block must change (I6's cut, I10's lengths
 * and shared blocks), with the bytes each keeps: the least of its len,
 * its block's length and what the file's size leaves it. */
#define R_BLOCK_FIX "SELECT rowid, ino, idx, block, len, blen, want, " \
	"shared, second FROM (SELECT c.rowid AS rowid, c.ino AS ino, c.idx " \
	"AS idx, c.block AS block, c.len AS len, length(b.data) AS blen, " \
	"min(c.len, length(b.data), i.size - c.idx * ?1) AS want, EXISTS (" \
	"SELECT 1 FROM snap_chunks s WHERE s.block = c.block) OR EXISTS (" \
	"SELECT 1 FROM chunks d WHERE d.block = c.block AND d.rowid != " \
	"c.rowid) AS shared, EXISTS (SELECT 1 FROM chunks d WHERE d.block = " \
	"c.block AND d.rowid < c.rowid) AS second FROM chunks c JOIN blocks " \
	"b ON b.id = c.block JOIN inodes i ON i.ino = c.ino WHERE " \
	R_TYPE("i.mode") " = " R_REG " AND c.len > 0 AND c.len <= ?1 AND " \
	"c.idx >= 0 AND c.idx * ?1 < i.size) WHERE want != len OR want != " \
	"blen OR second"

/* One chunk R_BLOCK_FIX found. */
struct repair_chunk {
	int64_t rowid, ino, idx, block, len, blen, want;
	int shared, second;
};

/* Say what repair_chunk_fix does to c, in one line. */
static void
repair_chunk_say(const struct repair_chunk *c)
{
	const char *copy = c->shared ? " (in a new block: a snapshot or "
	    "another chunk names the old one)" : "";

	if (c->want == 0)
		printf("deleted chunk %lld of file %lld: its block %lld is "
		    "empty\n", (long long)c->idx, (long long)c->ino,
		    (long long)c->block);
	else if (c->want < c->len && c->want < c->blen)
		printf("cut chunk %lld of file %lld at the file's size%s\n",
		    (long long)c->idx, (long long)c->ino, copy);
	else if (c->blen < c->len)
		printf("set the length of chunk %lld of file %lld from %lld to "
		    "its block's %lld bytes\n", (long long)c->idx,
		    (long long)c->ino, (long long)c->len, (long long)c->blen);
	else if (c->want < c->blen)
		printf("cut block %lld of chunk %lld of file %lld to the "
		    "chunk's %lld bytes%s\n", (long long)c->block,
		    (long long)c->idx, (long long)c->ino, (long long)c->want,
		    copy);
	else
		printf("gave chunk %lld of file %lld a copy of block %lld, "
		    "which another chunk names\n", (long long)c->idx,
		    (long long)c->ino, (long long)c->block);
}

/* Make c name a block of exactly c->want bytes: a copy when another
 * chunk or a snapshot names its block (a snapshot never changes), else
 * the block cut in place.  0 or -EIO. */
static int
repair_chunk_fix(sqlite3 *db, const struct repair_chunk *c)
{
	char sql[512];

	if (c->want == 0)
		snprintf(sql, sizeof(sql), "DELETE FROM chunks WHERE rowid = "
		    "%lld", (long long)c->rowid);
	else if ((c->blen != c->want && c->shared) || c->second)
		snprintf(sql, sizeof(sql), "INSERT INTO blocks(data) SELECT "
		    "substr(data, 1, %lld) FROM blocks WHERE id = %lld; UPDATE "
		    "chunks SET block = last_insert_rowid(), len = %lld WHERE "
		    "rowid = %lld", (long long)c->want, (long long)c->block,
		    (long long)c->want, (long long)c->rowid);
	else
		snprintf(sql, sizeof(sql), "UPDATE blocks SET data = substr("
		    "data, 1, %lld) WHERE id = %lld AND length(data) > %lld; "
		    "UPDATE chunks SET len = %lld WHERE rowid = %lld",
		    (long long)c->want, (long long)c->block, (long long)c->want,
		    (long long)c->want, (long long)c->rowid);
	return repair_do(db, sql);
}

/* The rows of R_BLOCK_FIX, all read before any changes (a query must
 * not see its own table change under it): *n of them, 0 or -errno. */
static int
repair_chunks_find(sqlite3 *db, struct repair_chunk **out, size_t *n)
{
	struct repair_chunk *a = NULL, *p;
	size_t cap = 0;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, R_BLOCK_FIX, -1, &st, NULL) != SQLITE_OK) {
		log_error("repair query failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	sqlite3_bind_int(st, 1, FS_CHUNK);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if (!(p = realloc(a, cap * sizeof(*a)))) {
				rc = SQLITE_NOMEM;
				break;
			}
			a = p;
		}
		a[*n] = (struct repair_chunk){
			sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
			sqlite3_column_int64(st, 4), sqlite3_column_int64(st, 5),
			sqlite3_column_int64(st, 6), sqlite3_column_int(st, 7),
			sqlite3_column_int(st, 8) };
		(*n)++;
	}
	sqlite3_finalize(st);
	*out = a;
	if (rc != SQLITE_DONE) {
		log_error("repair query failed: %s", sqlite3_errstr(rc));
		return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
	}
	return 0;
}

/* I6's cut and I10's lengths and shared blocks.  Changes made, or
 * -errno. */
static int
repair_blocks(sqlite3 *db)
{
	struct repair_chunk *a;
	size_t n;
	int r;

	if ((r = repair_chunks_find(db, &a, &n)) == 0) {
		for (size_t i = 0; i < n && r == 0; i++) {
			repair_chunk_say(&a[i]);
			r = repair_chunk_fix(db, &a[i]);
		}
	}
	free(a);
	return r < 0 ? r : (int)n;
}

/* Snapshot chunks whose block is longer than they are, and whether
 * another chunk names that block with another length (then it cannot be
 * cut in place). */
#define R_SNAP_LONG "SELECT s.snap, s.ino, s.idx, s.block, s.len, EXISTS (" \
	"SELECT 1 FROM chunks c WHERE c.block = s.block AND c.len != s.len) " \
	"OR EXISTS (SELECT 1 FROM snap_chunks o WHERE o.block = s.block AND " \
	"o.len != s.len) FROM snap_chunks s JOIN blocks b ON b.id = s.block " \
	"WHERE length(b.data) > s.len"

/* One snapshot chunk R_SNAP_LONG found. */
struct repair_snap_chunk {
	int64_t snap, ino, idx, block, len;
	int shared;
};

/* The rows of R_SNAP_LONG, all read before anything changes: *n of them
 * into a malloc'd *out.  0 or -errno. */
static int
repair_snap_long_find(sqlite3 *db, struct repair_snap_chunk **out,
    size_t *n)
{
	struct repair_snap_chunk *a = NULL, *p;
	size_t cap = 0;
	sqlite3_stmt *st;
	int rc;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, R_SNAP_LONG, -1, &st, NULL) != SQLITE_OK) {
		log_error("repair query failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			if (!(p = realloc(a, cap * sizeof(*a)))) {
				rc = SQLITE_NOMEM;
				break;
			}
			a = p;
		}
		a[(*n)++] = (struct repair_snap_chunk){
			sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
			sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
			sqlite3_column_int64(st, 4), sqlite3_column_int(st, 5) };
	}
	sqlite3_finalize(st);
	*out = a;
	if (rc != SQLITE_DONE) {
		log_error("repair query failed: %s", sqlite3_errstr(rc));
		return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
	}
	return 0;
}

/* Say and make c name exactly its len bytes of its block: an empty chunk
 * goes, a block others name with another length is copied, one they name
 * alike is cut in place.  0 or -EIO. */
static int
repair_snap_chunk_fix(sqlite3 *db, const struct repair_snap_chunk *c)
{
	char where[160], sql[640];
	long long snap = c->snap, ino = c->ino, idx = c->idx;
	long long block = c->block, len = c->len;

	snprintf(where, sizeof(where), "snap = %lld AND ino = %lld AND idx = "
	    "%lld", snap, ino, idx);
	if (len <= 0) {
		printf("snapshot %lld: deleted empty chunk %lld of inode %lld\n",
		    snap, idx, ino);
		snprintf(sql, sizeof(sql), "DELETE FROM snap_chunks WHERE %s",
		    where);
	} else if (c->shared) {
		printf("snapshot %lld: gave chunk %lld of inode %lld a block of "
		    "its own with the chunk's %lld bytes of block %lld, which is "
		    "longer and named by other chunks\n", snap, idx, ino, len,
		    block);
		snprintf(sql, sizeof(sql), "INSERT INTO blocks(data) SELECT "
		    "substr(data, 1, %lld) FROM blocks WHERE id = %lld; UPDATE "
		    "snap_chunks SET block = last_insert_rowid() WHERE %s", len,
		    block, where);
	} else {
		/* Chunks naming the block alike are cut by the first of them. */
		snprintf(sql, sizeof(sql), "UPDATE blocks SET data = substr(data, "
		    "1, %lld) WHERE id = %lld AND length(data) > %lld", len, block,
		    len);
		if (repair_do(db, sql) < 0)
			return -EIO;
		if (sqlite3_changes(db) > 0)
			printf("snapshot %lld: cut block %lld of chunk %lld of inode "
			    "%lld to the chunk's %lld bytes\n", snap, block, idx, ino,
			    len);
		return 0;
	}
	return repair_do(db, sql);
}

/* I10 for snapshots: chunks whose block is longer than they are.
 * Changes made, or -errno. */
static int
repair_snap_blocks(sqlite3 *db)
{
	struct repair_snap_chunk *a;
	size_t n;
	int r;

	if ((r = repair_snap_long_find(db, &a, &n)) == 0)
		for (size_t i = 0; i < n && r == 0; i++)
			r = repair_snap_chunk_fix(db, &a[i]);
	free(a);
	return r < 0 ? r : (int)n;
}

#define R_LOST_FOUND "SELECT d.ino FROM dirents d JOIN inodes i ON i.ino = " \
	"d.ino WHERE d.parent = 1 AND d.name = 'lost+found' AND " \
	R_TYPE("i.mode") " = " R_DIR
#define R_ORPHANS "SELECT ino FROM inodes i WHERE ino != 1 AND nlink > 0 " \
	"AND NOT EXISTS (SELECT 1 FROM dirents d WHERE d.ino = i.ino)"
#define R_UNREACHABLE "WITH RECURSIVE r(ino) AS (SELECT 1 UNION SELECT " \
	"d.ino FROM dirents d JOIN r ON d.parent = r.ino) SELECT min(i.ino) " \
	"FROM inodes i WHERE " R_TYPE("i.mode") " = " R_DIR " AND i.ino NOT " \
	"IN r AND EXISTS (SELECT 1 FROM dirents d WHERE d.ino = i.ino)"

/* /lost+found's inode, made (root's, 0700) when missing: > 0, or -errno. */
static int64_t
repair_lost_found(sqlite3 *db)
{
	struct timespec now = inode_now();
	char sql[512];
	int64_t ino;

	if ((ino = repair_int(db, R_LOST_FOUND, 0)) != 0)
		return ino;
	if (repair_int(db, "SELECT 1 FROM dirents WHERE parent = 1 AND name = "
	    "'lost+found'", 0) != 0) {
		fprintf(stderr, "atrium-fs: /lost+found is not a directory; rename "
		    "it to let fsck --repair put orphans there\n");
		return -EEXIST;
	}
	snprintf(sql, sizeof(sql), "INSERT INTO inodes(mode, nlink, uid, gid, "
	    "atime, mtime, ctime, atime_ns, mtime_ns, ctime_ns) VALUES(%d, 2, "
	    "0, 0, %lld, %lld, %lld, %ld, %ld, %ld); INSERT INTO dirents(parent, "
	    "name, ino) VALUES(1, 'lost+found', last_insert_rowid())",
	    S_IFDIR | 0700, (long long)now.tv_sec, (long long)now.tv_sec,
	    (long long)now.tv_sec, now.tv_nsec, now.tv_nsec, now.tv_nsec);
	if (repair_do(db, sql) < 0)
		return -EIO;
	printf("made /lost+found\n");
	return repair_int(db, R_LOST_FOUND, -EIO);
}

/* Put orphans with a link count, and directories cut off from the root,
 * into /lost+found as "#INO".  Changes made, or -errno. */
static int
repair_adopt(sqlite3 *db)
{
	char sql[512];
	int64_t lf = 0, ino;
	int n, moved = 0;

	if ((n = repair_say(db, "SELECT printf('put orphan inode %d into "
	    "/lost+found as #%d', ino, ino) FROM (" R_ORPHANS ")")) <= 0 &&
	    repair_int(db, R_UNREACHABLE, 0) <= 0)
		return n;
	if ((lf = repair_lost_found(db)) < 0)
		return (int)lf;
	snprintf(sql, sizeof(sql), "INSERT OR IGNORE INTO dirents(parent, name, "
	    "ino) SELECT %lld, '#' || ino, ino FROM (" R_ORPHANS ")",
	    (long long)lf);
	if (n > 0 && repair_do(db, sql) < 0)
		return -EIO;
	/* One directory of a cycle at a time: moving it may make the rest
	 * reachable again. */
	while (moved < REPAIR_UNREACHABLE_MAX &&
	    (ino = repair_int(db, R_UNREACHABLE, 0)) > 0) {
		snprintf(sql, sizeof(sql), "UPDATE OR IGNORE dirents SET parent = "
		    "%lld, name = '#' || ino WHERE ino = %lld", (long long)lf,
		    (long long)ino);
		if (repair_do(db, sql) < 0)
			return -EIO;
		printf("moved directory %lld, which the root did not reach, into "
		    "/lost+found as #%lld\n", (long long)ino, (long long)ino);
		moved++;
	}
	return ino < 0 ? -EIO : n + moved;
}

/* Every pass, until one changes nothing.  Changes made, or -errno. */
static int
repair_passes(sqlite3 *db)
{
	int total = 0, n, r;

	for (int pass = 0; pass < REPAIR_PASSES; pass++) {
		if ((n = repair_steps_run(db, repair_steps,
		    sizeof(repair_steps) / sizeof(repair_steps[0]))) < 0 ||
		    (r = repair_adopt(db)) < 0)
			return n < 0 ? n : r;
		n += r;
		if ((r = repair_blocks(db)) < 0)
			return r;
		n += r;
		if ((r = repair_snap_blocks(db)) < 0)
			return r;
		n += r;
		if ((r = repair_steps_run(db, repair_unnamed_blocks,
		    sizeof(repair_unnamed_blocks) /
		    sizeof(repair_unnamed_blocks[0]))) < 0)
			return r;
		n += r;
		if ((r = repair_steps_run(db, repair_counts,
		    sizeof(repair_counts) / sizeof(repair_counts[0]))) < 0)
			return r;
		total += n + r;
		if (n + r == 0)
			break;
	}
	return total;
}

/* Repair db's file in one transaction.  Changes made, or -errno. */
static int
repair_db(struct fs *fs)
{
	int r;

	fs_lock(fs);
	if ((r = db_exec(fs, "BEGIN IMMEDIATE")) == 0) {
		r = repair_passes(fs->db);
		if (r < 0 || db_exec(fs, "COMMIT") < 0) {
			db_exec(fs, "ROLLBACK");
			r = r < 0 ? r : -EIO;
		}
	}
	fs_unlock(fs);
	return r;
}

/* fsck's report, once more after the repair. */
static void
repair_print_left(void *arg, const char *problem)
{
	(void)arg;
	printf("not repaired: %s\n", problem);
}

int
repair_run(const char *db)
{
	struct lockfile_holder h;
	struct fs *fs;
	int lock_fd, r;

	if (access(db, F_OK) < 0) {
		fs_explain_open(db, -errno, "repair");
		return 2;
	}
	if ((r = lockfile_acquire(db, &lock_fd, &h)) < 0) {
		if (r == -EBUSY) {
			mount_holder_refuse(db, &h, "repair");
			fprintf(stderr, "atrium-fs: (fsck without --repair checks "
			    "it while mounted)\n");
		} else
			fs_explain_open(db, r, "repair");
		return 2;
	}
	if ((r = fs_open(db, 0, &fs)) < 0) {
		lockfile_release(lock_fd);
		fs_explain_open(db, r, "repair");
		return 2;
	}
	r = repair_db(fs);
	fs_close(fs);
	if (r < 0) {
		lockfile_release(lock_fd);
		fprintf(stderr, "atrium-fs: repairing %s failed: %s; nothing was "
		    "changed\n", db, strerror(-r));
		return 2;
	}
	if (r == 0)
		printf("nothing to repair\n");
	r = fsck_run(db, 0, repair_print_left, NULL);
	lockfile_release(lock_fd);
	if (r < 0) {
		fs_explain_open(db, r, "check");
		return 2;
	}
	if (r > 0) {
		fprintf(stderr, "atrium-fs: %s: %d problem%s left that fsck cannot "
		    "repair safely\n", db, r, r == 1 ? "" : "s");
		return 1;
	}
	return 0;
}
