/*
 * test_fs_reclaim.c: the background freeing of fs/engine/reclaim.c on a
 * temporary database, without FUSE and without its thread (the test runs each
 * batch with fs_reclaim_batch): big deletes and truncates are answered at once
 * and freed in bounded batches; a file that grows again never shows the
 * old bytes; the quota and the database's free pages follow the batches;
 * what a crash left behind is found and freed by the next open.
 */
#include "../../fs/engine/fs.h"
#include "unit.h"
#define FS_FIXTURE_NAME "test_fs_reclaim"
#include "fs_fixture.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define BATCH 16        /* RECLAIM_BATCH of fs/engine/reclaim.c */


/* A new empty filesystem, opened as a mount opens it, freeing deferred. */
static struct fs *
new_fs(void)
{
	struct fs *fs = fixture_new_fs();

	CHECK_INT(fs_reclaimer_start(fs, 0), 0);
	return fs;
}

/* Reopen db_path after a close, as the next mount would. */
static struct fs *
reopen_fs(void)
{
	struct fs *fs = NULL;

	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	if (fs)
		CHECK_INT(fs_reclaimer_start(fs, 0), 0);
	return fs;
}

/* The integer sql gives on the committed state of db_path, or -1. */
static long long
sql_int(const char *sql, long long arg)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		sqlite3_close(db);
		return -1;
	}
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, arg);
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return v;
}

/* Run sql on db_path (no daemon has it open). */
static void
damage(const char *sql)
{
	sqlite3 *db;

	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static long long
chunks_of(uint64_t ino)
{
	return sql_int("SELECT count(*) FROM chunks WHERE ino = ?", (long long)ino);
}

/* Create /name with n whole chunks, chunk i filled with byte i + 1. */
static uint64_t
make_file(struct fs *fs, const char *name, int n)
{
	unsigned char *buf = malloc(CHUNK);
	struct fs_attr a;

	CHECK(buf != NULL);
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, name, S_IFREG | 0644, 0, 0, &a), 0);
	for (int i = 0; buf && i < n; i++) {
		memset(buf, i + 1, CHUNK);
		CHECK_INT(fs_write(fs, a.ino, (uint64_t)i * CHUNK, buf, CHUNK), CHUNK);
	}
	free(buf);
	return a.ino;
}

/* 1 when len bytes of ino at off all equal byte. */
static int
reads_as(struct fs *fs, uint64_t ino, uint64_t off, size_t len, int byte)
{
	unsigned char *buf = malloc(len);
	int ok;

	if (!buf)
		return 0;
	ok = fs_read(fs, ino, off, buf, len) == (ssize_t)len;
	for (size_t i = 0; ok && i < len; i++)
		ok = buf[i] == byte;
	free(buf);
	return ok;
}

/* Run batches until none is left, checking after each that it freed at
 * most one batch of ino's chunks.  The number of batches. */
static int
drain(struct fs *fs, uint64_t ino)
{
	long long before, now;
	int n = 0, r;

	CHECK_INT(fs_sync(fs, 0), 0);
	before = chunks_of(ino);

	while ((r = fs_reclaim_batch(fs)) > 0 && n < 100000) {
		n++;
		CHECK_INT(fs_sync(fs, 0), 0);
		now = chunks_of(ino);
		CHECK(now <= before && before - now <= BATCH);
		before = now;
	}
	CHECK_INT(r, 0);
	return n;
}

static void
test_unlink_frees_in_batches(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	uint64_t f, bytes, inodes, used;
	long long freelist;
	int batches;

	CHECK_INT(fs_quota_set(fs, 1ULL << 30, 0), 0);
	f = make_file(fs, "big", 100);
	CHECK_INT(fs_quota_usage(fs, &used, &inodes), 0);
	CHECK(used >= 100ULL * CHUNK);
	freelist = sql_int("PRAGMA freelist_count", 0);
	CHECK_INT(fs_unlink(fs, 1, "big"), 0);
	/* gone from the namespace at once, its chunks not freed yet */
	CHECK_INT(fs_lookup(fs, 1, "big", 0, &a), -ENOENT);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(chunks_of(f), 100);
	/* other operations go on between batches */
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "small", S_IFREG | 0644, 0, 0, &a), 0);
	batches = drain(fs, f);
	CHECK(batches >= 100 / BATCH);
	CHECK_INT(chunks_of(f), 0);
	CHECK_INT(sql_int("SELECT count(*) FROM inodes WHERE ino = ?", (long long)f), 0);
	/* the space is free: the quota and the database's free pages say so */
	CHECK_INT(fs_quota_usage(fs, &bytes, &inodes), 0);
	CHECK(bytes < (uint64_t)CHUNK);
	CHECK_INT(inodes, 1);
	CHECK(sql_int("PRAGMA freelist_count", 0) >= freelist +
	    100 * CHUNK / sql_int("PRAGMA page_size", 0) - 64);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

static void
test_small_delete_is_at_once(void)
{
	struct fs *fs = new_fs();
	uint64_t f = make_file(fs, "small", BATCH);

	CHECK_INT(fs_unlink(fs, 1, "small"), 0);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(chunks_of(f), 0);
	CHECK_INT(sql_int("SELECT count(*) FROM inodes WHERE ino = ?", (long long)f), 0);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

static void
test_truncate_then_grow_shows_no_old_bytes(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	uint64_t f = make_file(fs, "t", 64);

	CHECK_INT(fs_truncate(fs, f, 100000), 0);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT(a.size, 100000);
	CHECK(reads_as(fs, f, 0, CHUNK, 1));
	CHECK(reads_as(fs, f, CHUNK, 100000 - CHUNK, 2));
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK(chunks_of(f) > 60);               /* left to the batches */
	/* a mounted daemon's garbage is no problem for fsck */
	CHECK_INT(fsck_run(db_path, 1, NULL, NULL), 0);
	/* writing far past the end uncovers zeros, not the old chunks */
	CHECK_INT(fs_write(fs, f, 40ULL * CHUNK + 10, "new!", 4), 4);
	CHECK(reads_as(fs, f, 100000, 40 * CHUNK + 10 - 100000, 0));
	CHECK(reads_as(fs, f, 40ULL * CHUNK + 4, 6, 0));
	/* so does truncating up, and fallocate */
	CHECK_INT(fs_truncate(fs, f, 50ULL * CHUNK), 0);
	CHECK(reads_as(fs, f, 40ULL * CHUNK + 14, 10 * CHUNK - 14, 0));
	CHECK_INT(fs_fallocate(fs, f, 0, 50ULL * CHUNK, 8ULL * CHUNK), 0);
	CHECK(reads_as(fs, f, 50ULL * CHUNK, 8 * CHUNK, 0));
	drain(fs, f);
	CHECK_INT(chunks_of(f), 3);             /* 0, 1 (trimmed) and 40 */
	CHECK(reads_as(fs, f, 40ULL * CHUNK, 10, 0));
	CHECK_INT(fs_truncate(fs, f, 0), 0);
	CHECK(reads_as(fs, f, 0, 0, 0));
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

static void
test_crash_leftovers_are_found_and_freed(void)
{
	struct fs *fs = new_fs();
	uint64_t gone = make_file(fs, "gone", 40);
	uint64_t cut = make_file(fs, "cut", 40);
	char sql[512];

	fs_close(fs);
	/* what a kill -9 in the middle of both freeings leaves (the unlink
	 * took its entry's 12 bytes, ext4's record for "gone", off the
	 * directory's stored count) */
	snprintf(sql, sizeof(sql), "UPDATE inodes SET nlink = 0 WHERE ino = %llu;"
	    "UPDATE inodes SET stored = stored - 12 WHERE ino = (SELECT parent FROM dirents WHERE ino = %llu);"
	    "DELETE FROM dirents WHERE ino = %llu; UPDATE inodes SET size = %d "
	    "WHERE ino = %llu", (unsigned long long)gone,
	    (unsigned long long)gone, (unsigned long long)gone, CHUNK,
	    (unsigned long long)cut);
	damage(sql);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 2);
	CHECK_INT(fsck_run(db_path, 1, NULL, NULL), 0);
	/* the next open does not free them in one go */
	fs = reopen_fs();
	CHECK_INT(chunks_of(gone), 40);
	CHECK_INT(chunks_of(cut), 40);
	/* before the scan found it, growing "cut" still uncovers zeros */
	CHECK_INT(fs_write(fs, cut, 3ULL * CHUNK, "x", 1), 1);
	CHECK(reads_as(fs, cut, CHUNK, 2 * CHUNK, 0));
	CHECK(reads_as(fs, cut, 0, CHUNK, 1));
	while (fs_reclaim_batch(fs) > 0)
		;
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(chunks_of(gone), 0);
	CHECK_INT(sql_int("SELECT count(*) FROM inodes WHERE ino = ?",
	    (long long)gone), 0);
	CHECK_INT(chunks_of(cut), 2);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

static void
test_full_quota_recovers_by_deleting(void)
{
	struct fs *fs = new_fs();
	unsigned char *buf = calloc(1, 1 << 20);
	struct fs_attr a;

	CHECK(buf != NULL);
	CHECK_INT(fs_quota_set(fs, 4u << 20, 0), 0);
	make_file(fs, "big", 60);
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "new", S_IFREG | 0644, 0, 0, &a), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, 1 << 20), -EDQUOT);
	/* deleting makes room for the very next write, not only later */
	CHECK_INT(fs_unlink(fs, 1, "big"), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, 1 << 20), 1 << 20);
	free(buf);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* The kernel's FORGET of a file just deleted, sent from another thread a
 * moment after the write that needs its room has begun. */
struct late_forget {
	struct fs *fs;
	uint64_t ino;
};

static void *
forget_later(void *arg)
{
	struct late_forget *lf = arg;
	struct timespec pause = { 0, 100 * 1000 * 1000 };

	nanosleep(&pause, NULL);
	fs_forget(lf->fs, lf->ino, 1);
	return NULL;
}

/* `rm big; write` when the kernel still held big (its FORGET on its way):
 * the write waits for the FORGET and fits; with the file still open for
 * good, it gets EDQUOT once the wait is over. */
static void
test_a_write_waits_for_the_forget_of_a_deleted_file(void)
{
	struct fs *fs = new_fs();
	unsigned char *buf = calloc(1, 3 << 20);     /* the biggest write */
	struct late_forget lf = { fs, 0 };
	struct fs_attr a;
	pthread_t th;

	CHECK(buf != NULL);
	CHECK_INT(fs_quota_set(fs, 4u << 20, 0), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "big", S_IFREG | 0644, 0, 1, &a), 0);
	lf.ino = a.ino;
	CHECK_INT(fs_write(fs, a.ino, 0, buf, 3 << 20), 3 << 20);
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "new", S_IFREG | 0644, 0, 0, &a), 0);
	CHECK_INT(fs_unlink(fs, 1, "big"), 0);
	CHECK_INT(pthread_create(&th, NULL, forget_later, &lf), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, 2 << 20), 2 << 20);
	pthread_join(th, NULL);
	/* held for good: refused, after the wait */
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "held", S_IFREG | 0644, 0, 1,
	    &a), 0);
	lf.ino = a.ino;
	CHECK_INT(fs_write(fs, a.ino, 0, buf, 1 << 20), 1 << 20);
	CHECK_INT(fs_unlink(fs, 1, "held"), 0);
	CHECK_INT(fs_write(fs, a.ino, 1 << 20, buf, 2 << 20), -EDQUOT);
	fs_forget(fs, lf.ino, 1);
	free(buf);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

static void
test_close_finishes_what_is_left(void)
{
	struct fs *fs = new_fs();
	uint64_t f = make_file(fs, "big", 48);

	CHECK_INT(fs_unlink(fs, 1, "big"), 0);
	CHECK_INT(fs_reclaim_batch(fs), 1);
	fs_close(fs);
	CHECK_INT(chunks_of(f), 0);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_unlink_frees_in_batches);
	TEST(test_small_delete_is_at_once);
	TEST(test_truncate_then_grow_shows_no_old_bytes);
	TEST(test_crash_leftovers_are_found_and_freed);
	TEST(test_full_quota_recovers_by_deleting);
	TEST(test_a_write_waits_for_the_forget_of_a_deleted_file);
	TEST(test_close_finishes_what_is_left);
	fixture_end();
	return unit_done("test_fs_reclaim");
}
