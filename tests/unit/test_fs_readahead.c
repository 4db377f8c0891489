/*
 * test_fs_readahead.c: the read-only connections' read-ahead
 * (fs/engine/readahead.c).
 *   - Through the filesystem: a file read through a reader, rewritten in
 *     place (same blocks, same pages), committed, and read again from the
 *     WAL or, checkpointed, from the database file, reads back as
 *     rewritten, round after round.
 *   - On a plain database: pages read ahead from the file are never used
 *     after the file changed under them.  A blob's first overflow page is
 *     read ahead, the blob rewritten in place and checkpointed into the
 *     file with the WAL kept, then a commit rewrites the header page and
 *     the table's root: the next read takes those from the WAL and the
 *     overflow page from the file, and must show the rewrite.
 *   - Reading a 4 MiB file whose blocks lie in order in the database makes
 *     far fewer reads of the database than its 1,024 pages of 4 KiB (the
 *     shim VFS underneath counts them), and a 4 KiB read at a random place
 *     about one.
 *   - A 4 KiB read at a random place of a 32 MiB file, whose blocks' leaves
 *     and pointer maps do not stay in a reader's page cache, costs one read
 *     of the database once those pages are kept, not three.
 *   - A kept leaf is not used after the file changed under it: the same
 *     case as the read-ahead's, with a row rewritten on its leaf.
 */
#include "../../fs/engine/fs.h"
#include "../../fs/engine/fs_int.h"
#include "unit.h"

#define FS_FIXTURE_NAME "test_fs_readahead"
#include "fs_fixture.h"
#include "shim_vfs.h"

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#define CHUNK 65536
/* Bigger than a reader's page cache (2 MiB), so that reads reach the file. */
#define FILE_SIZE (64 * CHUNK)

static unsigned char buf[FILE_SIZE];

/* Copy every committed frame of the WAL into the database file, as the
 * committer's checkpoints do, on a connection of the test's own. */
static void
checkpoint_mode(int mode)
{
	sqlite3 *db;

	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	int nlog = -1, nckpt = -1;

	/* The WAL is opened by the first read. */
	CHECK_INT(sqlite3_exec(db, "SELECT count(*) FROM meta", NULL, NULL, NULL),
	    SQLITE_OK);
	CHECK_INT(sqlite3_wal_checkpoint_v2(db, "main", mode, &nlog, &nckpt),
	    SQLITE_OK);
	CHECK_INT(nckpt, mode == SQLITE_CHECKPOINT_TRUNCATE ? 0 : nlog);
	sqlite3_close(db);
}

/* Every frame into the database file, and the WAL emptied. */
static void
checkpoint(void)
{
	checkpoint_mode(SQLITE_CHECKPOINT_TRUNCATE);
}

/* A new file of size bytes of c, committed; its inode. */
static uint64_t
make_sized(struct fs *fs, const char *name, int c, size_t size)
{
	struct fs_attr a;

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, name, S_IFREG | 0644, 0, 0, &a), 0);
	memset(buf, c, size);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, size), size);
	CHECK_INT(fs_sync(fs, 1), 0);
	return a.ino;
}

/* A new file of FILE_SIZE bytes of c, committed; its inode. */
static uint64_t
make_file(struct fs *fs, const char *name, int c)
{
	return make_sized(fs, name, c, FILE_SIZE);
}

/* Bytes of the file's [off, off+n) that are not c. */
static int
wrong_bytes(struct fs *fs, uint64_t ino, uint64_t off, size_t n, int c)
{
	int bad = 0;

	memset(buf, 0, n);
	if (fs_read(fs, ino, off, buf, n) != (ssize_t)n)
		return -1;
	for (size_t i = 0; i < n; i++)
		bad += buf[i] != c;
	return bad;
}

/* Rewritten in place, checkpointed: reads show the new bytes. */
static void
test_reads_see_rewrites(void)
{
	struct fs *fs = fixture_new_fs();
	uint64_t ino;

	if (!fs)
		return;
	ino = make_file(fs, "f", 'a');
	checkpoint();
	for (int round = 0; round < 4; round++) {
		int c = 'b' + round;

		/* Read whole (and read ahead), then rewrite chunk by chunk
		 * in place, inside each chunk's block. */
		checkpoint();
		CHECK_INT(wrong_bytes(fs, ino, 0, FILE_SIZE, c - 1), 0);
		CHECK_INT(wrong_bytes(fs, ino, 5 * CHUNK + 4000, 4096, c - 1), 0);
		memset(buf, c, FILE_SIZE);
		for (int i = 0; i < FILE_SIZE / CHUNK; i++)
			CHECK_INT(fs_write(fs, ino, (uint64_t)i * CHUNK + 1, buf,
			    CHUNK - 2), CHUNK - 2);
		CHECK_INT(fs_write(fs, ino, 0, buf, 1), 1);
		for (int i = 1; i < FILE_SIZE / CHUNK; i++)
			CHECK_INT(fs_write(fs, ino, (uint64_t)i * CHUNK - 1, buf, 2),
			    2);
		CHECK_INT(fs_write(fs, ino, FILE_SIZE - 1, buf, 1), 1);
		CHECK_INT(fs_sync(fs, 1), 0);
		/* Read from the WAL on even rounds, from the database file
		 * (the pages read ahead before the rewrite) on odd ones. */
		if (round % 2)
			checkpoint();
		/* The same 4 KiB first: what was read ahead just before. */
		CHECK_INT(wrong_bytes(fs, ino, 5 * CHUNK + 4000, 4096, c), 0);
		CHECK_INT(wrong_bytes(fs, ino, 0, FILE_SIZE, c), 0);
	}
	fs_close(fs);
}

/* Run sql on db; CHECK that it worked. */
static void
exec_ok(sqlite3 *db, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", sql, err ? err : "?");
		CHECK(0);
	}
	sqlite3_free(err);
}

/* A byte of row 1's blob just past its first 4 KiB (so on its first
 * overflow page, not in the row's cell) as read by db in a read
 * transaction of its own, or -1. */
static int
overflow_byte(sqlite3 *db)
{
	sqlite3_blob *blob;
	unsigned char b[4096];
	int r = -1;

	exec_ok(db, "BEGIN");
	if (sqlite3_blob_open(db, "main", "t", "data", 1, 0, &blob) == SQLITE_OK) {
		if (sqlite3_blob_read(blob, b, 16, 4096) == SQLITE_OK)
			r = b[8];
		sqlite3_blob_close(blob);
	}
	exec_ok(db, "COMMIT");
	return r;
}

/* The case the read-ahead must not get wrong: a blob's first overflow
 * pages read ahead from the database file; the blob rewritten in place and
 * copied into the file by a checkpoint that keeps the WAL; then a commit
 * that rewrites only the header page and the table's root.  The next read
 * takes those two from the WAL and the overflow pages from the file: what
 * was read ahead before the checkpoint is stale there. */
static void
test_no_stale_read_ahead(void)
{
	char path[300];
	sqlite3 *w, *r;
	sqlite3_blob *blob;
	static unsigned char data[CHUNK];

	snprintf(path, sizeof(path), "%s/plain.db", db_dir);
	CHECK_INT(sqlite3_open(path, &w), SQLITE_OK);
	exec_ok(w, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
	    "CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB);"
	    "INSERT INTO t VALUES(1, zeroblob(65536));");
	memset(data, 'a', sizeof(data));
	CHECK_INT(sqlite3_blob_open(w, "main", "t", "data", 1, 1, &blob),
	    SQLITE_OK);
	CHECK_INT(sqlite3_blob_write(blob, data, (int)sizeof(data), 0), SQLITE_OK);
	sqlite3_blob_close(blob);
	CHECK_INT(sqlite3_wal_checkpoint_v2(w, "main",
	    SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY,
	    readahead_vfs_name()), SQLITE_OK);
	CHECK_INT(overflow_byte(r), 'a');
	/* In place, into the file; the WAL kept. */
	memset(data, 'b', sizeof(data));
	CHECK_INT(sqlite3_blob_open(w, "main", "t", "data", 1, 1, &blob),
	    SQLITE_OK);
	CHECK_INT(sqlite3_blob_write(blob, data, (int)sizeof(data), 0), SQLITE_OK);
	sqlite3_blob_close(blob);
	CHECK_INT(sqlite3_wal_checkpoint_v2(w, "main",
	    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL), SQLITE_OK);
	/* The header (user_version) and the root (a small row). */
	exec_ok(w, "PRAGMA user_version=7; INSERT INTO t VALUES(0, x'00');");
	CHECK_INT(overflow_byte(r), 'b');
	sqlite3_close(r);
	sqlite3_close(w);
}

/* The value of row 250 of table s as db reads it in a read transaction
 * of its own, into out (16 bytes). */
static void
leaf_value(sqlite3 *db, char *out)
{
	sqlite3_stmt *st;

	out[0] = 0;
	CHECK_INT(sqlite3_prepare_v2(db, "SELECT v FROM s WHERE id = 250", -1,
	    &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		snprintf(out, 16, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

/* The kept pages' case of test_no_stale_read_ahead: a leaf read and kept,
 * its row rewritten in place and checkpointed into the file with the WAL
 * kept, then a commit elsewhere (so the WAL starts again without the
 * leaf): the next read takes the leaf from the file and must see the
 * rewrite. */
static void
test_no_stale_kept_page(void)
{
	char path[300], v[16];
	sqlite3 *w, *r;

	snprintf(path, sizeof(path), "%s/leaf.db", db_dir);
	CHECK_INT(sqlite3_open(path, &w), SQLITE_OK);
	exec_ok(w, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
	    "CREATE TABLE t(id INTEGER PRIMARY KEY, data BLOB);"
	    "CREATE TABLE s(id INTEGER PRIMARY KEY, v TEXT, pad BLOB);"
	    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
	    "WHERE i < 300) INSERT INTO s SELECT i, 'aaaa', zeroblob(100) "
	    "FROM n;");
	CHECK_INT(sqlite3_wal_checkpoint_v2(w, "main",
	    SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_open_v2(path, &r, SQLITE_OPEN_READONLY,
	    readahead_vfs_name()), SQLITE_OK);
	/* Told how much to keep: this VFS's connections only. */
	CHECK_INT(readahead_keep(r, 1 << 20), 0);
	CHECK_INT(readahead_keep(w, 1 << 20), -1);
	leaf_value(r, v);
	CHECK_STR(v, "aaaa");
	exec_ok(w, "UPDATE s SET v = 'bbbb' WHERE id = 250");
	CHECK_INT(sqlite3_wal_checkpoint_v2(w, "main",
	    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL), SQLITE_OK);
	exec_ok(w, "PRAGMA user_version=7; INSERT INTO t VALUES(0, x'00');");
	leaf_value(r, v);
	CHECK_STR(v, "bbbb");
	sqlite3_close(r);
	sqlite3_close(w);
}

/* Random 4 KiB reads of a file whose blocks' leaves and pointer maps are
 * more than a reader's page cache keeps beside the overflow pages that
 * random reads bring in: once those pages are kept, a read costs about
 * one read of the database (its two overflow pages, read ahead together),
 * where it cost three. */
static void
test_kept_pages_save_reads(void)
{
	static unsigned char big[512 * CHUNK];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	long before;
	int n = 2000;

	if (!fs)
		return;
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "big", S_IFREG | 0644, 0, 0, &a), 0);
	memset(big, 'k', sizeof(big));
	CHECK_INT(fs_write(fs, a.ino, 0, big, sizeof(big)), sizeof(big));
	CHECK_INT(fs_sync(fs, 1), 0);
	checkpoint();
	srandom(11);
	/* Once over every block: the leaves and pointer maps are kept. */
	for (uint64_t off = 0; off < sizeof(big); off += CHUNK)
		CHECK_INT(fs_read(fs, a.ino, off + 8192, big, 4096), 4096);
	before = __atomic_load_n(&shim_reads, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++) {
		uint64_t off = (uint64_t)(random() % (sizeof(big) / 4096)) * 4096;

		CHECK_INT(fs_read(fs, a.ino, off, big, 4096), 4096);
	}
	CHECK(__atomic_load_n(&shim_reads, __ATOMIC_RELAXED) - before <=
	    n * 13 / 10);
	CHECK_INT(big[0], 'k');
	fs_close(fs);
}

/* Sequential and random reads cost few reads of the database. */
static void
test_reads_read_ahead(void)
{
	struct fs *fs = fixture_new_fs();
	uint64_t ino;
	long before;
	int n = 64;

	if (!fs)
		return;
	ino = make_file(fs, "g", 'z');
	checkpoint();
	CHECK_INT(wrong_bytes(fs, ino, 0, 4096, 'z'), 0);  /* the btrees' pages */
	before = __atomic_load_n(&shim_reads, __ATOMIC_RELAXED);
	CHECK_INT(wrong_bytes(fs, ino, 0, FILE_SIZE, 'z'), 0);
	/* 1024 pages of 4 KiB: one read each without read-ahead. */
	CHECK(__atomic_load_n(&shim_reads, __ATOMIC_RELAXED) - before < 256);
	srandom(7);
	before = __atomic_load_n(&shim_reads, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		CHECK_INT(wrong_bytes(fs, ino,
		    (uint64_t)(random() % (FILE_SIZE / 4096)) * 4096, 4096, 'z'), 0);
	/* Two overflow pages each without read-ahead. */
	CHECK(__atomic_load_n(&shim_reads, __ATOMIC_RELAXED) - before <= n * 3 / 2);
	fs_close(fs);
}

int
main(void)
{
	shim_install();
	if (fixture_begin())
		return 1;
	TEST(test_reads_see_rewrites);
	TEST(test_no_stale_read_ahead);
	TEST(test_reads_read_ahead);
	TEST(test_no_stale_kept_page);
	TEST(test_kept_pages_save_reads);
	fixture_end();
	return unit_done("test_fs_readahead");
}
