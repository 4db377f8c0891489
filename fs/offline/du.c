/*
 * du.c: what a workspace database stores against what it costs on disk,
 * for `atrium-fs du DB` (fs/fs_main.c, man/atrium-fs.8).  Read-only, like
 * fsck: its own read-only connection sees the last committed state, so it
 * is safe while the database is mounted.
 *
 * The data bytes are summed from the blocks themselves (not from
 * inodes.stored), each block once however many snapshots share it, so
 * chunks that a background delete has not freed yet still count: they are
 * still in the file.  Beside it, the bytes that only snapshots hold (blocks
 * no live chunk names): what dropping every snapshot would free.  The
 * database's size is the main file and its WAL as the disk holds them.
 */
#include "fs_int.h"

#include <errno.h>
#include <stdio.h>

static const char du_sql[] =
	"SELECT (SELECT coalesce(sum(length(data)), 0) FROM blocks), "
	"(SELECT coalesce(sum(size), 0) FROM inodes WHERE (mode & 61440) = "
	"32768), (SELECT count(*) FROM inodes), (SELECT coalesce(sum("
	"length(data)), 0) FROM blocks b WHERE NOT EXISTS (SELECT 1 FROM "
	"chunks c WHERE c.block = b.id))";

/* The same before schema 3 (read-only, not migrated yet): no blocks, no
 * snapshots. */
static const char du_sql_v2[] =
	"SELECT (SELECT coalesce(sum(length(data)), 0) FROM chunks), "
	"(SELECT coalesce(sum(size), 0) FROM inodes WHERE (mode & 61440) = "
	"32768), (SELECT count(*) FROM inodes), 0";

/* Bytes of path as the disk holds it; 0 when it does not exist. */
static uint64_t
du_file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The four counts of du_sql into out: 0 or -EIO (logged). */
static int
du_count(sqlite3 *db, struct fs_du *out)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, schema_version(db) >= 3 ? du_sql : du_sql_v2,
	    -1, &st, NULL) != SQLITE_OK) {
		log_error("du query failed: %s", sqlite3_errmsg(db));
		return -EIO;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		out->data_bytes = (uint64_t)sqlite3_column_int64(st, 0);
		out->file_sizes = (uint64_t)sqlite3_column_int64(st, 1);
		out->inodes = (uint64_t)sqlite3_column_int64(st, 2);
		out->snap_only_bytes = (uint64_t)sqlite3_column_int64(st, 3);
	} else {
		log_error("du query failed: %s", sqlite3_errstr(rc));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : -EIO;
}

int
fs_du(const char *path, struct fs_du *out)
{
	char wal[4096];
	struct fs *fs;
	int r;

	memset(out, 0, sizeof(*out));
	if (snprintf(wal, sizeof(wal), "%s-wal", path) >= (int)sizeof(wal))
		return -ENAMETOOLONG;
	if ((r = fs_open(path, FS_OPEN_READONLY, &fs)) < 0)
		return r;
	r = du_count(fs->db, out);
	fs_close(fs);
	/* Sizes after the close, so that they include what it left. */
	out->db_bytes = du_file_size(path);
	out->wal_bytes = du_file_size(wal);
	return r;
}
