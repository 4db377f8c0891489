/*
 * test_fs_semantics.c: the atrium-fs core's POSIX details against what ext4
 * does: times across ext4's whole range to the nanosecond and clamped
 * outside it, the ctime rule of setattr, st_blocks of sparse files,
 * SEEK_DATA / SEEK_HOLE, punched and zeroed ranges (with a byte model and
 * the quota), directory sizes, and the migration of a schema 1 database.
 */
#include "../../fs/engine/fs.h"
#include "unit.h"
#define FS_FIXTURE_NAME "test_fs_semantics"
#include "fs_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 65536
#define TIME_MIN (-2147483648LL)     /* 1901-12-13 20:45:52 UTC */
#define TIME_MAX 15032385535LL       /* 2446-05-10 22:38:55 UTC */


/* A new empty filesystem, opened as a mount would open it. */
static struct fs *
new_fs(void)
{
	return fixture_new_fs();
}

/* Close and open again, as a remount does. */
static struct fs *
reopen(struct fs *fs)
{
	fs_close(fs);
	fs = NULL;
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	return fs;
}

/* A new regular file named name in the root: its inode. */
static uint64_t
new_file(struct fs *fs, const char *name)
{
	struct fs_attr a;

	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, name, S_IFREG | 0644, 0,
	    0, &a), 0);
	return a.ino;
}

/* Set ino's mtime to sec.nsec; the mtime kept, after a reopen. */
static struct timespec
mtime_roundtrip(struct fs **fs, uint64_t ino, long long sec, long nsec)
{
	struct fs_setattr sa = { .valid = FS_SET_MTIME | FS_SET_ATIME };
	struct fs_attr a;

	sa.mtime.tv_sec = (time_t)sec;
	sa.mtime.tv_nsec = nsec;
	sa.atime = sa.mtime;
	CHECK_INT(fs_setattr(*fs, ino, &sa, &a), 0);
	*fs = reopen(*fs);
	CHECK_INT(fs_getattr(*fs, ino, &a), 0);
	CHECK_INT(a.atime.tv_sec, a.mtime.tv_sec);
	CHECK_INT(a.atime.tv_nsec, a.mtime.tv_nsec);
	return a.mtime;
}

/* Every time ext4 keeps comes back exact; others are clamped as ext4
 * clamps them (no nanoseconds at either limit). */
static void
test_times_range_and_clamp(void)
{
	struct fs *fs = new_fs();
	uint64_t f = new_file(fs, "f");
	static const struct { long long sec; long nsec; } exact[] = {
		{ 10413792000LL, 123456789 },   /* 2300-01-01 */
		{ 9223372036LL, 854775808 },    /* just past int64 nanoseconds */
		{ -2147483647LL, 999999999 },   /* 1901-12-13 20:45:53 */
		{ -1, 1 },                      /* 1969-12-31 23:59:59 */
		{ 0, 0 },
		{ TIME_MAX - 1, 999999999 },
	};
	struct timespec t;

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++) {
		t = mtime_roundtrip(&fs, f, exact[i].sec, exact[i].nsec);
		CHECK_INT(t.tv_sec, exact[i].sec);
		CHECK_INT(t.tv_nsec, exact[i].nsec);
	}
	t = mtime_roundtrip(&fs, f, 16725225600LL, 5);  /* 2500-01-01 */
	CHECK_INT(t.tv_sec, TIME_MAX);
	CHECK_INT(t.tv_nsec, 0);
	t = mtime_roundtrip(&fs, f, TIME_MAX, 7);
	CHECK_INT(t.tv_sec, TIME_MAX);
	CHECK_INT(t.tv_nsec, 0);
	t = mtime_roundtrip(&fs, f, -5364662400LL, 9);  /* 1800-01-01 */
	CHECK_INT(t.tv_sec, TIME_MIN);
	CHECK_INT(t.tv_nsec, 0);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* Set ino's ctime and mtime to an old time, so that a change shows. */
static void
age(struct fs *fs, uint64_t ino)
{
	struct fs_setattr sa = { .valid = FS_SET_MTIME | FS_SET_CTIME };
	struct fs_attr a;

	sa.mtime.tv_sec = 1000;
	sa.ctime.tv_sec = 1000;
	CHECK_INT(fs_setattr(fs, ino, &sa, &a), 0);
	CHECK_INT(a.ctime.tv_sec, 1000);
}

/* ext4's ctime rule: any setattr sets ctime, also one that changes
 * nothing (chown(-1, -1)); a truncate(2) to the same size changes nothing. */
static void
test_setattr_ctime_rule(void)
{
	struct fs *fs = new_fs();
	uint64_t f = new_file(fs, "f");
	struct fs_setattr none = { .valid = 0 };
	struct fs_setattr same = { .valid = FS_SET_SIZE, .size = 0 };
	struct fs_setattr grow = { .valid = FS_SET_SIZE, .size = 10 };
	struct fs_attr a;

	age(fs, f);
	CHECK_INT(fs_setattr(fs, f, &none, &a), 0);
	CHECK(a.ctime.tv_sec > 1000);
	CHECK_INT(a.mtime.tv_sec, 1000);
	age(fs, f);
	CHECK_INT(fs_setattr(fs, f, &same, &a), 0);
	CHECK_INT(a.ctime.tv_sec, 1000);
	CHECK_INT(a.mtime.tv_sec, 1000);
	CHECK_INT(fs_setattr(fs, f, &grow, &a), 0);
	CHECK(a.ctime.tv_sec > 1000);
	CHECK(a.mtime.tv_sec > 1000);
	/* open(O_TRUNC) sets both even on an empty file, as on ext4 */
	CHECK_INT(fs_truncate(fs, f, 0), 0);
	age(fs, f);
	CHECK_INT(fs_truncate(fs, f, 0), 0);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK(a.ctime.tv_sec > 1000);
	CHECK(a.mtime.tv_sec > 1000);
	fs_close(fs);
}

/* st_blocks counts what is stored: a 1 GiB file with one byte at its end
 * holds one chunk at most, and a truncate up stores nothing. */
static void
test_sparse_blocks(void)
{
	struct fs *fs = new_fs();
	uint64_t f = new_file(fs, "f");
	struct fs_attr a;

	CHECK_INT(fs_truncate(fs, f, 1ULL << 30), 0);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT(a.size, 1ULL << 30);
	CHECK_INT(a.blocks, 0);
	CHECK_INT(fs_write(fs, f, (1ULL << 30) - 1, "x", 1), 1);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK(a.blocks > 0 && a.blocks <= CHUNK / 512);
	CHECK_INT(fs_write(fs, f, 0, "y", 1), 1);
	fs = reopen(fs);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK(a.blocks >= 2 && a.blocks <= 1 + CHUNK / 512);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* lseek(whence, off) as the core answers it, or -errno. */
static long long
seek(struct fs *fs, uint64_t ino, uint64_t off, int whence)
{
	uint64_t out;
	int r = fs_seek(fs, ino, off, whence, &out);

	return r < 0 ? r : (long long)out;
}

static void
test_seek_data_hole(void)
{
	struct fs *fs = new_fs();
	uint64_t f = new_file(fs, "f");
	static unsigned char data[2 * CHUNK];

	memset(data, 7, sizeof(data));
	/* data [CHUNK+100, 3*CHUNK+100), then a hole to 10*CHUNK, then
	 * data [10*CHUNK, 10*CHUNK+5) and a hole to the size 12*CHUNK */
	CHECK_INT(fs_write(fs, f, CHUNK + 100, data, sizeof(data)), sizeof(data));
	CHECK_INT(fs_write(fs, f, 10 * CHUNK, data, 5), 5);
	CHECK_INT(fs_truncate(fs, f, 12 * CHUNK), 0);
	/* the chunk holding the first byte stores from its start */
	CHECK_INT(seek(fs, f, 0, SEEK_DATA), CHUNK);
	CHECK_INT(seek(fs, f, 0, SEEK_HOLE), 0);
	CHECK_INT(seek(fs, f, CHUNK + 100, SEEK_HOLE), 3 * CHUNK + 100);
	CHECK_INT(seek(fs, f, 2 * CHUNK, SEEK_DATA), 2 * CHUNK);
	CHECK_INT(seek(fs, f, 3 * CHUNK + 100, SEEK_DATA), 10 * CHUNK);
	CHECK_INT(seek(fs, f, 10 * CHUNK + 2, SEEK_HOLE), 10 * CHUNK + 5);
	CHECK_INT(seek(fs, f, 10 * CHUNK + 5, SEEK_DATA), -ENXIO);
	CHECK_INT(seek(fs, f, 11 * CHUNK, SEEK_HOLE), 11 * CHUNK);
	CHECK_INT(seek(fs, f, 12 * CHUNK, SEEK_HOLE), -ENXIO);
	CHECK_INT(seek(fs, f, 12 * CHUNK, SEEK_DATA), -ENXIO);
	CHECK_INT(seek(fs, f, 0, SEEK_SET), -EINVAL);
	/* a file that is data to its end: the hole is its end */
	CHECK_INT(fs_truncate(fs, f, 3 * CHUNK), 0);
	CHECK_INT(seek(fs, f, CHUNK + 100, SEEK_HOLE), 3 * CHUNK);
	CHECK_INT(seek(fs, FS_ROOT_INO, 0, SEEK_DATA), -EISDIR);
	fs_close(fs);
}

/* Read all of f and compare with model. */
static void
check_model(struct fs *fs, uint64_t f, const unsigned char *model, size_t n)
{
	unsigned char *buf = malloc(n + 1);
	struct fs_attr a;

	CHECK(buf != NULL);
	if (!buf)
		return;
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT(a.size, n);
	CHECK_INT(fs_read(fs, f, 0, buf, n + 1), n);
	CHECK(memcmp(buf, model, n) == 0);
	free(buf);
}

/* PUNCH_HOLE and ZERO_RANGE read back as zeros, give back what they free
 * (st_blocks and the quota), and ZERO_RANGE extends the file unless
 * KEEP_SIZE. */
static void
test_punch_and_zero_range(void)
{
	struct fs *fs = new_fs();
	uint64_t f = new_file(fs, "f"), bytes, bytes2, inodes;
	static unsigned char model[5 * CHUNK + 400];
	size_t n = 4 * CHUNK;
	struct fs_attr a;

	CHECK_INT(fs_quota_set(fs, 1ULL << 30, 0), 0);
	for (size_t i = 0; i < n; i++)
		model[i] = (unsigned char)(i * 7 + 1);
	CHECK_INT(fs_write(fs, f, 0, model, n), (long long)n);
	CHECK_INT(fs_quota_usage(fs, &bytes, &inodes), 0);
	/* mode checks: PUNCH_HOLE needs KEEP_SIZE, unknown modes refused */
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE, 0, 10), -EOPNOTSUPP);
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_COLLAPSE_RANGE, 0, CHUNK),
	    -EOPNOTSUPP);
	/* a punch across chunk boundaries: the middle chunk goes */
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    CHUNK - 10, CHUNK + 20), 0);
	memset(model + CHUNK - 10, 0, CHUNK + 20);
	check_model(fs, f, model, n);
	CHECK_INT(seek(fs, f, 0, SEEK_HOLE), CHUNK - 10);
	/* zeros a punch wrote inside a kept chunk are data still */
	CHECK_INT(seek(fs, f, CHUNK - 10, SEEK_DATA), 2 * CHUNK);
	CHECK_INT(fs_quota_usage(fs, &bytes2, &inodes), 0);
	CHECK_INT(bytes - bytes2, CHUNK + 10);
	/* inside one chunk, then the whole of the last one */
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    100, 50), 0);
	memset(model + 100, 0, 50);
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    3 * CHUNK, 5 * CHUNK), 0);
	memset(model + 3 * CHUNK, 0, CHUNK);
	check_model(fs, f, model, n);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT(a.blocks, (2 * CHUNK - 10 + 511) / 512);
	/* ZERO_RANGE with KEEP_SIZE keeps the size; without, extends it */
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE,
	    2 * CHUNK, 4 * CHUNK), 0);
	memset(model + 2 * CHUNK, 0, CHUNK);
	check_model(fs, f, model, n);
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_ZERO_RANGE, 5, 5 * CHUNK + 300), 0);
	memset(model + 5, 0, 5 * CHUNK + 300);
	check_model(fs, f, model, 5 * CHUNK + 305);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK(a.blocks <= 1);
	CHECK_INT(fs_quota_usage(fs, &bytes2, &inodes), 0);
	CHECK(bytes - bytes2 >= n - 5);
	fs = reopen(fs);
	check_model(fs, f, model, 5 * CHUNK + 305);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* st_size of directory ino. */
static uint64_t
dir_size(struct fs *fs, uint64_t ino)
{
	struct fs_attr a;

	CHECK_INT(fs_getattr(fs, ino, &a), 0);
	CHECK_INT(a.blocks, a.size / 512);
	return a.size;
}

/* 4096 for a small directory, growing by 4096 as entries fill blocks
 * (records of 8 + the name rounded to 4), shrinking as they go; renames
 * move the bytes between directories. */
static void
test_directory_sizes(void)
{
	struct fs *fs = new_fs();
	struct fs_attr d, e, a;
	char name[64];

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "d", S_IFDIR | 0755, 0, 0, &d), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "e", S_IFDIR | 0755, 0, 0, &e), 0);
	CHECK_INT(d.size, 4096);
	CHECK_INT(dir_size(fs, FS_ROOT_INO), 4096);
	/* 200 names of 20 bytes: 200 * 28 + 24 = 5624 bytes, two blocks */
	for (int i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "name-%015d", i);
		CHECK_INT(fs_mknod(fs, &root_ctx, d.ino, name, S_IFREG | 0644, 0,
		    0, &a), 0);
	}
	CHECK_INT(dir_size(fs, d.ino), 8192);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "name-%015d", i);
		CHECK_INT(fs_rename(fs, d.ino, name, e.ino, name, 0), 0);
	}
	CHECK_INT(dir_size(fs, d.ino), 4096);
	CHECK_INT(dir_size(fs, e.ino), 4096);
	fs = reopen(fs);
	for (int i = 100; i < 200; i++) {
		snprintf(name, sizeof(name), "name-%015d", i);
		CHECK_INT(fs_unlink(fs, d.ino, name), 0);
	}
	CHECK_INT(dir_size(fs, d.ino), 4096);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* fsck finds a stored-bytes count that disagrees with the chunks. */
static void
test_fsck_checks_stored(void)
{
	struct fs *fs = new_fs();
	uint64_t f = new_file(fs, "f");
	sqlite3 *db;

	CHECK_INT(fs_write(fs, f, 0, "abc", 3), 3);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, "UPDATE inodes SET stored = 99 WHERE ino = 2;"
	    "UPDATE inodes SET mtime_ns = -1 WHERE ino = 1", NULL, NULL, NULL),
	    SQLITE_OK);
	sqlite3_close(db);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 2);
}

/* A workspace of schema 1 (times as int64 nanoseconds, no stored bytes)
 * is migrated at open: times, st_blocks and directory sizes as if it had
 * been made by this version. */
static void
test_migration_from_v1(void)
{
	static const char v1[] =
		"CREATE TABLE meta(key TEXT PRIMARY KEY, value NOT NULL);"
		"CREATE TABLE inodes(ino INTEGER PRIMARY KEY AUTOINCREMENT,"
		" mode INTEGER NOT NULL, nlink INTEGER NOT NULL,"
		" uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
		" size INTEGER NOT NULL DEFAULT 0, rdev INTEGER NOT NULL DEFAULT 0,"
		" atime INTEGER NOT NULL, mtime INTEGER NOT NULL,"
		" ctime INTEGER NOT NULL);"
		"CREATE INDEX inodes_unlinked ON inodes(ino) WHERE nlink = 0;"
		"CREATE TABLE dirents(id INTEGER PRIMARY KEY, parent INTEGER NOT NULL,"
		" name TEXT NOT NULL, ino INTEGER NOT NULL);"
		"CREATE UNIQUE INDEX dirents_name ON dirents(parent, name);"
		"CREATE INDEX dirents_parent ON dirents(parent);"
		"CREATE INDEX dirents_ino ON dirents(ino);"
		"CREATE TABLE chunks(ino INTEGER NOT NULL, idx INTEGER NOT NULL,"
		" data BLOB NOT NULL, PRIMARY KEY(ino, idx));"
		"CREATE TABLE symlinks(ino INTEGER PRIMARY KEY, target BLOB NOT NULL);"
		"CREATE TABLE xattrs(ino INTEGER NOT NULL, name TEXT NOT NULL,"
		" value BLOB NOT NULL, PRIMARY KEY(ino, name)) WITHOUT ROWID;"
		"INSERT INTO meta VALUES('format','atrium-fs'),('chunk_size',65536),"
		" ('created',0);"
		"INSERT INTO inodes VALUES(1, 16877, 2, 0, 0, 0, 0, 0, 0, 0);"
		"INSERT INTO inodes VALUES(2, 33188, 1, 0, 0, 1000000, 0,"
		" -1500000001, 1700000000123456789, 5);"
		"INSERT INTO dirents(parent, name, ino) VALUES(1, 'f', 2);"
		"INSERT INTO chunks VALUES(2, 3, zeroblob(1000));"
		"PRAGMA user_version = 1;";
	struct fs *fs = NULL;
	struct fs_attr a;
	sqlite3 *db;

	snprintf(db_path, sizeof(db_path), "%s/v1.db", db_dir);
	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	/* fsck of the old schema works before the migration */
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	CHECK_INT(fs_getattr(fs, 2, &a), 0);
	CHECK_INT(a.atime.tv_sec, -2);
	CHECK_INT(a.atime.tv_nsec, 499999999);
	CHECK_INT(a.mtime.tv_sec, 1700000000);
	CHECK_INT(a.mtime.tv_nsec, 123456789);
	CHECK_INT(a.ctime.tv_sec, 0);
	CHECK_INT(a.ctime.tv_nsec, 5);
	CHECK_INT(a.blocks, 2);
	CHECK_INT(fs_getattr(fs, FS_ROOT_INO, &a), 0);
	CHECK_INT(a.size, 4096);
	CHECK_INT(fs_write(fs, 2, 0, "x", 1), 1);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_times_range_and_clamp);
	TEST(test_setattr_ctime_rule);
	TEST(test_sparse_blocks);
	TEST(test_seek_data_hole);
	TEST(test_punch_and_zero_range);
	TEST(test_directory_sizes);
	TEST(test_fsck_checks_stored);
	TEST(test_migration_from_v1);
	fixture_end();
	return unit_done("test_fs_semantics");
}
