/*
 * fsck.c: check a workspace database against the invariants I1..I11 listed
 * at the head of fs/engine/schema.c.  Called by `atrium-fs fsck` (fs/fs_main.c)
 * and the unit tests.  Read-only: it opens its own read-only connection and
 * never repairs.
 *
 * Each check is one query whose rows are the problems, already worded by
 * SQLite's printf(), so adding a check is adding a row to fsck_checks[].
 * Parameters: ?1 is 1 when a daemon has the database mounted (unlinked
 * inodes may then still be open, and chunks past a file's size not freed
 * yet by its reclaimer, so they are no problem), ?2 the chunk size.
 * Checks of chunk lengths exist for each layout: length(data) before
 * schema 3, the len column (and the blocks) since.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdio.h>

#define FSCK_DIR "16384"   /* S_IFDIR */
#define FSCK_REG "32768"   /* S_IFREG */
#define FSCK_LNK "40960"   /* S_IFLNK */
#define FSCK_TYPE(col) "((" col ") & 61440)"

static const char *const fsck_checks[] = {
	/* integrity of the SQLite file itself */
	"SELECT 'sqlite: ' || quick_check FROM pragma_quick_check "
	"WHERE quick_check != 'ok'",
	/* I1 */
	"SELECT 'the root directory (inode 1) is missing or not a directory' "
	"WHERE NOT EXISTS (SELECT 1 FROM inodes WHERE ino = 1 AND "
	FSCK_TYPE("mode") " = " FSCK_DIR ")",
	"SELECT printf('the root directory has an entry %Q in directory %d', "
	"name, parent) FROM dirents WHERE ino = 1",
	/* I2 */
	"SELECT printf('entry %Q in directory %d: the directory is missing or "
	"not a directory', d.name, d.parent) FROM dirents d LEFT JOIN inodes p "
	"ON p.ino = d.parent WHERE p.ino IS NULL OR " FSCK_TYPE("p.mode")
	" != " FSCK_DIR,
	"SELECT printf('dangling entry %Q in directory %d: inode %d does not "
	"exist', d.name, d.parent, d.ino) FROM dirents d LEFT JOIN inodes i "
	"ON i.ino = d.ino WHERE i.ino IS NULL",
	/* I3 */
	"SELECT printf('bad name %Q in directory %d', name, parent) FROM dirents "
	"WHERE length(CAST(name AS BLOB)) NOT BETWEEN 1 AND 255 "
	"OR instr(name, '/') > 0 OR name IN ('.', '..')",
	/* I4 */
	"SELECT printf('inode %d has link count %d but %d entries', i.ino, "
	"i.nlink, c) FROM (SELECT ino, nlink, mode, (SELECT count(*) FROM "
	"dirents d WHERE d.ino = inodes.ino) AS c FROM inodes) i WHERE "
	FSCK_TYPE("i.mode") " != " FSCK_DIR " AND i.nlink != c AND c > 0",
	"SELECT printf('directory %d has %d entries naming it (want %d)', ino, c, "
	"ino != 1) FROM (SELECT ino, (SELECT count(*) FROM dirents d WHERE "
	"d.ino = inodes.ino) AS c FROM inodes WHERE " FSCK_TYPE("mode") " = "
	FSCK_DIR ") WHERE c != (ino != 1) AND c > 0",
	"SELECT printf('directory %d has link count %d, want %d', ino, nlink, "
	"want) FROM (SELECT ino, nlink, 2 + (SELECT count(*) FROM dirents d "
	"JOIN inodes j ON j.ino = d.ino WHERE d.parent = inodes.ino AND "
	FSCK_TYPE("j.mode") " = " FSCK_DIR ") AS want FROM inodes WHERE "
	FSCK_TYPE("mode") " = " FSCK_DIR " AND nlink > 0) WHERE nlink != want",
	/* I5 */
	"SELECT CASE WHEN nlink = 0 THEN printf('unlinked inode %d was not "
	"removed (it is removed at the next mount)', ino) ELSE printf('orphan "
	"inode %d (link count %d) has no directory entry', ino, nlink) END "
	"FROM inodes i WHERE ino != 1 AND NOT EXISTS (SELECT 1 FROM dirents d "
	"WHERE d.ino = i.ino) AND NOT (?1 AND nlink = 0)",
	/* I7 */
	"SELECT printf('symlink %d has no target or a size that is not its "
	"length', i.ino) FROM inodes i LEFT JOIN symlinks s ON s.ino = i.ino "
	"WHERE " FSCK_TYPE("i.mode") " = " FSCK_LNK " AND (s.ino IS NULL OR "
	"length(s.target) != i.size)",
	"SELECT printf('symlink target for inode %d, which is no symlink', "
	"s.ino) FROM symlinks s LEFT JOIN inodes i ON i.ino = s.ino WHERE "
	"i.ino IS NULL OR " FSCK_TYPE("i.mode") " != " FSCK_LNK,
	"SELECT printf('xattr %Q of missing inode %d', x.name, x.ino) FROM "
	"xattrs x LEFT JOIN inodes i ON i.ino = x.ino WHERE i.ino IS NULL",
	/* I8 */
	"WITH RECURSIVE r(ino) AS (SELECT 1 UNION SELECT d.ino FROM dirents d "
	"JOIN r ON d.parent = r.ino) SELECT printf('directory %d is not "
	"reachable from the root', i.ino) FROM inodes i WHERE "
	FSCK_TYPE("i.mode") " = " FSCK_DIR " AND i.ino NOT IN r AND EXISTS "
	"(SELECT 1 FROM dirents d WHERE d.ino = i.ino)",
};

/* I6, and I9's stored bytes, with LEN a chunk c's length in the layout
 * checked. */
#define FSCK_CHUNK_CHECKS(LEN) \
	"SELECT printf('chunk %d of inode %d: no such regular file', c.idx, " \
	"c.ino) FROM chunks c LEFT JOIN inodes i ON i.ino = c.ino WHERE " \
	"i.ino IS NULL OR " FSCK_TYPE("i.mode") " != " FSCK_REG, \
	"SELECT printf('chunk %d of inode %d: %d bytes at offset %d lie past " \
	"the size %d or the chunk size', c.idx, c.ino, " LEN ", " \
	"c.idx * ?2, i.size) FROM chunks c JOIN inodes i ON i.ino = c.ino " \
	"WHERE " LEN " = 0 OR " LEN " > ?2 OR c.idx < 0 OR " \
	"(c.idx * ?2 < i.size AND c.idx * ?2 + " LEN " > i.size)", \
	/* chunks wholly past the size await the reclaimer (reclaim.c) */ \
	"SELECT printf('inode %d has %d chunks past its size %d, left by a " \
	"truncate whose freeing was cut short (they are freed at the next " \
	"mount)', i.ino, count(*), i.size) FROM chunks c JOIN inodes i ON " \
	"i.ino = c.ino WHERE NOT ?1 AND " LEN " > 0 AND " \
	LEN " <= ?2 AND c.idx >= 0 AND c.idx * ?2 >= i.size " \
	"GROUP BY i.ino"
#define FSCK_STORED_CHECK(LEN) \
	"SELECT printf('file %d says it stores %d bytes, its chunks hold %d', " \
	"ino, stored, want) FROM (SELECT ino, stored, (SELECT coalesce(" \
	"sum(" LEN "), 0) FROM chunks c WHERE c.ino = inodes.ino) AS want " \
	"FROM inodes WHERE " FSCK_TYPE("mode") " = " FSCK_REG ") " \
	"WHERE stored != want"

/* Before schema 3: chunk rows hold their bytes. */
static const char *const fsck_chunks_v1[] = {
	FSCK_CHUNK_CHECKS("length(c.data)"),
};

/* I9, on databases of schema 2 (an older one is checked by the rest, and
 * migrated at its next writable open). */
static const char *const fsck_checks_v2[] = {
	"SELECT printf('inode %d has a time with nanoseconds out of range', ino) "
	"FROM inodes WHERE atime_ns NOT BETWEEN 0 AND 999999999 OR mtime_ns "
	"NOT BETWEEN 0 AND 999999999 OR ctime_ns NOT BETWEEN 0 AND 999999999",
	"SELECT printf('directory %d says its entries take %d bytes, they take "
	"%d', ino, stored, want) FROM (SELECT ino, stored, (SELECT coalesce("
	"sum(" STORED_DIRENT_SQL("name") "), 0) FROM dirents d WHERE d.parent = "
	"inodes.ino) AS want FROM inodes WHERE " FSCK_TYPE("mode") " = "
	FSCK_DIR ") WHERE stored != want",
};

/* I9's stored bytes on schema 2 exactly. */
static const char *const fsck_stored_v2[] = {
	FSCK_STORED_CHECK("length(c.data)"),
};

/* Schema 3: I6 and I9 on the len column, I10 and I11. */
static const char *const fsck_checks_v3[] = {
	FSCK_CHUNK_CHECKS("c.len"),
	FSCK_STORED_CHECK("c.len"),
	/* I10 */
	"SELECT printf('chunk %d of inode %d names block %d, which does not "
	"exist', c.idx, c.ino, c.block) FROM chunks c LEFT JOIN blocks b ON "
	"b.id = c.block WHERE b.id IS NULL",
	"SELECT printf('chunk %d of inode %d says %d bytes, its block %d holds "
	"%d', c.idx, c.ino, c.len, c.block, length(b.data)) FROM chunks c JOIN "
	"blocks b ON b.id = c.block WHERE length(b.data) != c.len",
	/* a restore on a mounted tree may keep an unlinked file, still open,
	 * sharing blocks with its restored copy until it is closed */
	"SELECT printf('block %d is named by %d chunks of the live tree', "
	"c.block, count(*)) FROM chunks c JOIN inodes i ON i.ino = c.ino WHERE "
	"NOT (?1 AND i.nlink = 0) GROUP BY c.block HAVING count(*) > 1",
	"SELECT printf('block %d (%d bytes) is named by no chunk and no "
	"snapshot', id, length(data)) FROM blocks b WHERE NOT EXISTS (SELECT 1 "
	"FROM chunks c WHERE c.block = b.id) AND NOT EXISTS (SELECT 1 FROM "
	"snap_chunks s WHERE s.block = b.id)",
	"SELECT printf('snapshot %d: chunk %d of inode %d names block %d, which "
	"is missing or holds %d bytes, not %d', s.snap, s.idx, s.ino, s.block, "
	"coalesce(length(b.data), 0), s.len) FROM snap_chunks s LEFT JOIN "
	"blocks b ON b.id = s.block WHERE b.id IS NULL OR length(b.data) != "
	"s.len",
	/* I11 */
	"SELECT printf('%s holds rows of snapshot %d, which does not exist', t, "
	"snap) FROM (SELECT 'snap_inodes' AS t, snap FROM snap_inodes UNION "
	"SELECT 'snap_dirents', snap FROM snap_dirents UNION SELECT "
	"'snap_chunks', snap FROM snap_chunks UNION SELECT 'snap_symlinks', "
	"snap FROM snap_symlinks UNION SELECT 'snap_xattrs', snap FROM "
	"snap_xattrs) WHERE snap NOT IN (SELECT id FROM snapshots)",
	"SELECT printf('snapshot %Q has no root directory', name) FROM "
	"snapshots n WHERE NOT EXISTS (SELECT 1 FROM snap_inodes i WHERE "
	"i.snap = n.id AND i.ino = 1 AND " FSCK_TYPE("i.mode") " = " FSCK_DIR
	")",
	"SELECT printf('snapshot %Q: entry %Q in directory %d names inode %d, "
	"which the snapshot does not hold', n.name, d.name, d.parent, d.ino) "
	"FROM snap_dirents d JOIN snapshots n ON n.id = d.snap WHERE NOT EXISTS "
	"(SELECT 1 FROM snap_inodes i WHERE i.snap = d.snap AND i.ino = d.ino)",
};

#define FSCK_N(a) (sizeof(a) / sizeof((a)[0]))

/* Run one check; the number of problems it reported, or -errno. */
static int
fsck_one(sqlite3 *db, const char *sql, int mounted, fsck_report_cb report,
    void *arg)
{
	sqlite3_stmt *st;
	int n = 0, rc;

	if ((rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL)) != SQLITE_OK) {
		log_error("fsck query failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	if (sqlite3_bind_parameter_count(st) >= 1)
		sqlite3_bind_int(st, 1, mounted);
	if (sqlite3_bind_parameter_count(st) >= 2)
		sqlite3_bind_int(st, 2, FS_CHUNK);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *msg = (const char *)sqlite3_column_text(st, 0);
		if (report)
			report(arg, msg ? msg : "(null)");
		n++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		log_error("fsck query failed: %s", sqlite3_errstr(rc));
		return -EIO;
	}
	return n;
}

/* Run the n checks of sqls: the problems they found, or -errno. */
static int
fsck_all(sqlite3 *db, const char *const *sqls, size_t n, int mounted,
    fsck_report_cb report, void *arg)
{
	int total = 0, r;

	for (size_t i = 0; i < n; i++) {
		if ((r = fsck_one(db, sqls[i], mounted, report, arg)) < 0)
			return r;
		total += r;
	}
	return total;
}

/* The checks that apply to schema v in order: the problems, or -errno. */
static int
fsck_version(sqlite3 *db, int v, int mounted, fsck_report_cb report,
    void *arg)
{
	int total, r;

	if ((total = fsck_all(db, fsck_checks, FSCK_N(fsck_checks), mounted,
	    report, arg)) < 0)
		return total;
	if (v >= 2 && (r = fsck_all(db, fsck_checks_v2, FSCK_N(fsck_checks_v2),
	    mounted, report, arg)) < 0)
		return r;
	total += v >= 2 ? r : 0;
	if (v >= 3)
		r = fsck_all(db, fsck_checks_v3, FSCK_N(fsck_checks_v3), mounted,
		    report, arg);
	else if ((r = fsck_all(db, fsck_chunks_v1, FSCK_N(fsck_chunks_v1),
	    mounted, report, arg)) >= 0 && v == 2) {
		int s = fsck_all(db, fsck_stored_v2, FSCK_N(fsck_stored_v2),
		    mounted, report, arg);
		r = s < 0 ? s : r + s;
	}
	return r < 0 ? r : total + r;
}

/* Check every invariant: the number of problems, or -errno. */
int
fsck_run(const char *path, int mounted, fsck_report_cb report, void *arg)
{
	struct fs *fs;
	int r;

	if ((r = fs_open(path, FS_OPEN_READONLY, &fs)) < 0)
		return r;
	/* One read transaction: every check sees the same state. */
	sqlite3_exec(fs->db, "BEGIN", NULL, NULL, NULL);
	r = fsck_version(fs->db, schema_version(fs->db), mounted, report, arg);
	sqlite3_exec(fs->db, "COMMIT", NULL, NULL, NULL);
	fs_close(fs);
	return r;
}
