/*
 * test_fs_core.c: the atrium-fs core (fs/engine/fs.h) on a temporary database,
 * without FUSE: names, link counts, rename rules, content across chunk
 * boundaries and holes, truncate, lookup counts of unlinked inodes, new
 * inodes' times on the kernel's coarse clock,
 * persistence, and fsck on a clean and on deliberately damaged databases.
 */
#include "../../fs/engine/fs.h"
#include "unit.h"
#define FS_FIXTURE_NAME "test_fs_core"
#include "fs_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536


/* A new empty filesystem, opened as a mount would open it. */
static struct fs *
new_fs(void)
{
	return fixture_new_fs();
}

/* Inode number of parent/name, or 0. */
static uint64_t
ino_of(struct fs *fs, uint64_t parent, const char *name)
{
	struct fs_attr a;

	return fs_lookup(fs, parent, name, 0, &a) == 0 ? a.ino : 0;
}

static uint32_t
nlink_of(struct fs *fs, uint64_t ino)
{
	struct fs_attr a;

	return fs_getattr(fs, ino, &a) == 0 ? a.nlink : 0;
}

/* Number of fsck problems in db_path. */
static int
fsck_count(void)
{
	return fsck_run(db_path, 0, NULL, NULL);
}

static void
test_mkfs_refuses_existing(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;

	fs_close(fs);
	CHECK_INT(fs_mkfs(db_path, 0, 0), -EEXIST);
	CHECK_INT(fs_open("/nonexistent/x.db", 0, &fs), -ENOENT);
	CHECK_INT(fs_open(db_path, 0, &fs), 0);
	CHECK_INT(fs_getattr(fs, FS_ROOT_INO, &a), 0);
	CHECK(S_ISDIR(a.mode));
	CHECK_INT(a.mode & 07777, 0755);
	CHECK_INT(a.nlink, 2);
	fs_close(fs);
}

static void
test_owner_and_setgid(void)
{
	struct fs *fs;
	struct fs_attr a, d;
	struct fs_ctx user = { 1000, 1000 };
	struct fs_setattr sa = { .valid = FS_SET_MODE | FS_SET_GID,
	    .mode = 02775, .gid = 50 };

	snprintf(db_path, sizeof(db_path), "%s/owner.db", db_dir);
	CHECK_INT(fs_mkfs(db_path, 64222, 64223), 0);
	CHECK_INT(fs_open(db_path, 0, &fs), 0);
	CHECK_INT(fs_getattr(fs, FS_ROOT_INO, &a), 0);
	CHECK_INT(a.uid, 64222);
	CHECK_INT(a.gid, 64223);
	CHECK_INT(fs_mknod(fs, &user, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0, &a), 0);
	CHECK_INT(a.uid, 1000);
	CHECK_INT(a.gid, 1000);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "sg", S_IFDIR | 0755, 0, 0, &d), 0);
	CHECK_INT(fs_setattr(fs, d.ino, &sa, &d), 0);
	CHECK_INT(fs_mknod(fs, &user, d.ino, "f", S_IFREG | 0644, 0, 0, &a), 0);
	CHECK_INT(a.gid, 50);
	CHECK_INT(fs_mknod(fs, &user, d.ino, "sub", S_IFDIR | 0755, 0, 0, &a), 0);
	CHECK_INT(a.gid, 50);
	CHECK(a.mode & S_ISGID);
	fs_close(fs);
}

/* 1 when a is not later than b. */
static int
time_not_after(struct timespec a, struct timespec b)
{
	return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec <= b.tv_nsec);
}

/* New inodes are stamped by the kernel's clock (the coarse one that
 * current_time() reads), never ahead of it: with the writeback cache the
 * kernel then sees no time to update at a write in the same tick, and a
 * later write's time never reads earlier than the create's.  A finer clock
 * stamps ahead of the coarse one almost every time, so a few tries
 * catch it. */
static void
test_times_follow_kernel_clock(void)
{
	struct fs *fs = new_fs();
	struct timespec after;
	struct fs_attr a;
	char name[16];
	int ahead = 0;

	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, name,
		    S_IFREG | 0644, 0, 0, &a), 0);
		clock_gettime(CLOCK_REALTIME_COARSE, &after);
		ahead += !time_not_after(a.mtime, after) ||
		    !time_not_after(a.ctime, after);
	}
	CHECK_INT(ahead, 0);
	fs_close(fs);
}

static void
test_names_and_links(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a, d;
	char longname[300];
	uint64_t f;

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "d", S_IFDIR | 0755, 0, 0, &d), 0);
	CHECK_INT(nlink_of(fs, 1), 3);
	CHECK_INT(fs_mknod(fs, &root_ctx, d.ino, "f", S_IFREG | 0644, 0, 0, &a), 0);
	f = a.ino;
	CHECK_INT(fs_mknod(fs, &root_ctx, d.ino, "f", S_IFREG | 0644, 0, 0, &a), -EEXIST);
	CHECK_INT(fs_mknod(fs, &root_ctx, f, "x", S_IFREG | 0644, 0, 0, &a), -ENOTDIR);
	memset(longname, 'n', 255);
	longname[255] = '\0';
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, longname, S_IFREG | 0644, 0, 0, &a), 0);
	longname[255] = 'n';
	longname[256] = '\0';
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, longname, S_IFREG | 0644, 0, 0, &a), -ENAMETOOLONG);
	CHECK_INT(fs_lookup(fs, 1, longname, 0, &a), -ENAMETOOLONG);
	CHECK_INT(fs_link(fs, f, 1, "hard", 0, &a), 0);
	CHECK_INT(a.nlink, 2);
	CHECK_INT(fs_link(fs, d.ino, 1, "dirlink", 0, &a), -EPERM);
	CHECK_INT(fs_rmdir(fs, 1, "d"), -ENOTEMPTY);
	CHECK_INT(fs_unlink(fs, 1, "d"), -EISDIR);
	CHECK_INT(fs_rmdir(fs, 1, "hard"), -ENOTDIR);
	CHECK_INT(fs_unlink(fs, d.ino, "f"), 0);
	CHECK_INT(nlink_of(fs, f), 1);
	CHECK_INT(fs_rmdir(fs, 1, "d"), 0);
	CHECK_INT(nlink_of(fs, 1), 2);
	CHECK_INT(ino_of(fs, 1, "d"), 0);
	CHECK_INT(fs_symlink(fs, &root_ctx, 1, "sl", "hard", 0, &a), 0);
	CHECK(S_ISLNK(a.mode));
	CHECK_INT(a.size, 4);
	char buf[64];
	CHECK_INT(fs_readlink(fs, a.ino, buf, sizeof(buf)), 4);
	CHECK_STR(buf, "hard");
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "fifo", S_IFIFO | 0600, 0, 0, &a), 0);
	CHECK(S_ISFIFO(a.mode));
	fs_close(fs);
	CHECK_INT(fsck_count(), 0);
}

static void
test_rename(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a, d1, d2;
	uint64_t f, g;

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "d1", S_IFDIR | 0755, 0, 0, &d1), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, d1.ino, "d2", S_IFDIR | 0755, 0, 0, &d2), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "f", S_IFREG | 0644, 0, 0, &a), 0);
	f = a.ino;
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "g", S_IFREG | 0644, 0, 0, &a), 0);
	g = a.ino;
	/* over an existing file: g is gone */
	CHECK_INT(fs_rename(fs, 1, "f", 1, "g", 0), 0);
	CHECK_INT(ino_of(fs, 1, "g"), f);
	CHECK_INT(ino_of(fs, 1, "f"), 0);
	CHECK_INT(fs_getattr(fs, g, &a), -ENOENT);
	/* a directory into its own subtree */
	CHECK_INT(fs_rename(fs, 1, "d1", d2.ino, "x", 0), -EINVAL);
	/* file over dir, dir over file */
	CHECK_INT(fs_rename(fs, 1, "g", 1, "d1", 0), -EISDIR);
	CHECK_INT(fs_rename(fs, d1.ino, "d2", 1, "g", 0), -ENOTDIR);
	/* dir over non-empty dir, over empty dir */
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "e", S_IFDIR | 0755, 0, 0, &a), 0);
	CHECK_INT(fs_rename(fs, 1, "e", 1, "d1", 0), -ENOTEMPTY);
	CHECK_INT(nlink_of(fs, 1), 4);
	CHECK_INT(fs_rename(fs, d1.ino, "d2", 1, "e", 0), 0);
	CHECK_INT(ino_of(fs, 1, "e"), d2.ino);
	CHECK_INT(nlink_of(fs, 1), 4);
	CHECK_INT(nlink_of(fs, d1.ino), 2);
	/* NOREPLACE and EXCHANGE */
	CHECK_INT(fs_rename(fs, 1, "g", 1, "e", FS_RENAME_NOREPLACE), -EEXIST);
	CHECK_INT(fs_rename(fs, 1, "g", d1.ino, "moved", FS_RENAME_NOREPLACE), 0);
	CHECK_INT(fs_rename(fs, d1.ino, "moved", 1, "e", FS_RENAME_EXCHANGE), 0);
	CHECK_INT(ino_of(fs, 1, "e"), f);
	CHECK_INT(ino_of(fs, d1.ino, "moved"), d2.ino);
	CHECK_INT(nlink_of(fs, d1.ino), 3);
	CHECK_INT(nlink_of(fs, 1), 3);
	CHECK_INT(fs_rename(fs, 1, "nope", 1, "x", FS_RENAME_EXCHANGE), -ENOENT);
	/* hard links of one inode: rename is a no-op */
	CHECK_INT(fs_link(fs, f, 1, "f2", 0, &a), 0);
	CHECK_INT(fs_rename(fs, 1, "e", 1, "f2", 0), 0);
	CHECK_INT(ino_of(fs, 1, "e"), f);
	CHECK_INT(nlink_of(fs, f), 2);
	fs_close(fs);
	CHECK_INT(fsck_count(), 0);
}

/* Fill buf with a pattern depending on the offset. */
static void
pattern(unsigned char *buf, size_t n, uint64_t off)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)((off + i) * 31 + ((off + i) >> 16));
}

static void
test_content(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	size_t big = 3 * CHUNK + 1234;
	unsigned char *w = malloc(big), *r = malloc(big + 100);
	uint64_t f;

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "f", S_IFREG | 0644, 0, 0, &a), 0);
	f = a.ino;
	/* a write across three chunk boundaries, starting mid-chunk */
	pattern(w, big, 1000);
	CHECK_INT(fs_write(fs, f, 1000, w, big), (long long)big);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT(a.size, 1000 + big);
	CHECK_INT(fs_read(fs, f, 0, r, big + 100), (long long)(big + 100));
	for (int i = 0; i < 1000; i++)
		CHECK(r[i] == 0);
	CHECK(memcmp(r + 1000, w, big - 900) == 0);
	/* small overwrites inside and extending chunks */
	CHECK_INT(fs_write(fs, f, CHUNK - 2, "abcd", 4), 4);
	CHECK_INT(fs_read(fs, f, CHUNK - 3, r, 6), 6);
	CHECK(memcmp(r + 1, "abcd", 4) == 0);
	/* a hole far past the end, then read it back */
	CHECK_INT(fs_write(fs, f, 10 * CHUNK + 5, "z", 1), 1);
	CHECK_INT(fs_read(fs, f, 5 * CHUNK, r, 100), 100);
	for (int i = 0; i < 100; i++)
		CHECK(r[i] == 0);
	CHECK_INT(fs_read(fs, f, 10 * CHUNK + 5, r, 100), 1);
	CHECK(r[0] == 'z');
	/* truncate down into a chunk, then up: the cut bytes read as zeros */
	CHECK_INT(fs_truncate(fs, f, CHUNK + 10), 0);
	CHECK_INT(fs_truncate(fs, f, 2 * CHUNK), 0);
	CHECK_INT(fs_read(fs, f, CHUNK, r, CHUNK), CHUNK);
	/* "cd" of the earlier overwrite, then the first pattern */
	pattern(w, 8, CHUNK + 2);
	CHECK(memcmp(r, "cd", 2) == 0);
	CHECK(memcmp(r + 2, w, 8) == 0);
	for (int i = 10; i < CHUNK; i++)
		if (r[i] != 0) {
			CHECK(r[i] == 0);
			break;
		}
	CHECK_INT(fs_read(fs, f, 2 * CHUNK, r, 10), 0);
	CHECK_INT(fs_truncate(fs, f, 0), 0);
	CHECK_INT(fs_read(fs, f, 0, r, 10), 0);
	CHECK_INT(fs_write(fs, 1, 0, "x", 1), -EISDIR);
	fs_close(fs);
	CHECK_INT(fsck_count(), 0);
	free(w);
	free(r);
}

static void
test_unlinked_open_file(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	char buf[16];
	uint64_t f;

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "f", S_IFREG | 0644, 0, 1, &a), 0);
	f = a.ino;
	CHECK_INT(fs_write(fs, f, 0, "data", 4), 4);
	CHECK_INT(fs_unlink(fs, 1, "f"), 0);
	/* still looked up: still readable */
	CHECK_INT(fs_read(fs, f, 0, buf, sizeof(buf)), 4);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT(a.nlink, 0);
	fs_forget(fs, f, 1);
	CHECK_INT(fs_getattr(fs, f, &a), -ENOENT);
	/* an unlinked inode left by a crash goes at the next open */
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "g", S_IFREG | 0644, 0, 1, &a), 0);
	f = a.ino;
	CHECK_INT(fs_unlink(fs, 1, "g"), 0);
	CHECK_INT(fs_sync(fs, 1), 0);
	CHECK_INT(fsck_run(db_path, 1, NULL, NULL), 0);
	CHECK_INT(fsck_count(), 1);
	fs_close(fs);
	CHECK_INT(fsck_count(), 0);
}

/* readdir collector: stops after max entries. */
struct collect {
	int n, max;
	int64_t last;
	char names[128][16];
};

static int
collect_cb(void *arg, const struct fs_dirent *de)
{
	struct collect *c = arg;

	if (c->n >= c->max)
		return 1;
	snprintf(c->names[c->n++], 16, "%s", de->name);
	c->last = de->off;
	return 0;
}

static void
test_readdir_stable(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	struct collect c = { 0, 12, 0, {{0}} };
	char name[16];
	int seen[50] = { 0 }, total = 0;

	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "f%02d", i);
		CHECK_INT(fs_mknod(fs, &root_ctx, 1, name, S_IFREG | 0644, 0, 0, &a), 0);
	}
	CHECK_INT(fs_readdir(fs, 1, 0, 0, collect_cb, &c), 0);
	CHECK_INT(c.n, 12);
	CHECK_STR(c.names[0], ".");
	CHECK_STR(c.names[1], "..");
	/* remove an entry already listed and one not yet listed */
	CHECK_INT(fs_unlink(fs, 1, "f00"), 0);
	CHECK_INT(fs_unlink(fs, 1, "f40"), 0);
	for (int i = 2; i < c.n; i++)
		seen[atoi(c.names[i] + 1)]++;
	total = c.n - 2;
	for (;;) {
		int64_t off = c.last;
		c.n = 0;
		c.max = 7;
		CHECK_INT(fs_readdir(fs, 1, off, 0, collect_cb, &c), 0);
		if (c.n == 0)
			break;
		for (int i = 0; i < c.n; i++)
			seen[atoi(c.names[i] + 1)]++;
		total += c.n;
	}
	CHECK_INT(total, 49);
	for (int i = 0; i < 50; i++)
		CHECK(seen[i] == (i == 40 ? 0 : 1));
	fs_close(fs);
}

static void
test_persistence_and_xattr(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	char buf[64];
	uint64_t f;

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "keep", S_IFREG | 0600, 0, 0, &a), 0);
	f = a.ino;
	CHECK_INT(fs_write(fs, f, 0, "persist", 7), 7);
	CHECK_INT(fs_setxattr(fs, f, "user.k", "v1", 2, 0), 0);
	CHECK_INT(fs_setxattr(fs, f, "user.k", "v2", 2, FS_XATTR_CREATE), -EEXIST);
	CHECK_INT(fs_setxattr(fs, f, "user.n", "v", 1, FS_XATTR_REPLACE), -ENODATA);
	fs_close(fs);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	CHECK_INT(fs_lookup(fs, 1, "keep", 0, &a), 0);
	CHECK_INT(a.ino, f);
	CHECK_INT(a.mode & 07777, 0600);
	CHECK_INT(fs_read(fs, f, 0, buf, sizeof(buf)), 7);
	CHECK(memcmp(buf, "persist", 7) == 0);
	CHECK_INT(fs_getxattr(fs, f, "user.k", buf, sizeof(buf)), 2);
	CHECK(memcmp(buf, "v1", 2) == 0);
	CHECK_INT(fs_getxattr(fs, f, "user.k", buf, 1), -ERANGE);
	CHECK_INT(fs_listxattr(fs, f, buf, sizeof(buf)), 7);
	CHECK_STR(buf, "user.k");
	CHECK_INT(fs_removexattr(fs, f, "user.k"), 0);
	CHECK_INT(fs_getxattr(fs, f, "user.k", buf, sizeof(buf)), -ENODATA);
	fs_close(fs);
}

/* Run sql on db_path directly, as a damaging outsider would. */
static void
damage(const char *sql)
{
	sqlite3 *db;

	CHECK_INT(sqlite3_open(db_path, &db), SQLITE_OK);
	CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

/* fsck report counter */
static void
count_cb(void *arg, const char *problem)
{
	(void)problem;
	(*(int *)arg)++;
}

static void
test_fsck_damage(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a, d;
	unsigned char buf[100] = { 1 };
	int n = 0;

	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "d", S_IFDIR | 0755, 0, 0, &d), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, d.ino, "f", S_IFREG | 0644, 0, 0, &a), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, sizeof(buf)), 100);
	fs_close(fs);
	CHECK_INT(fsck_count(), 0);
	/* wrong link count */
	damage("UPDATE inodes SET nlink = 5 WHERE ino = 3");
	CHECK_INT(fsck_run(db_path, 0, count_cb, &n), 1);
	CHECK_INT(n, 1);
	damage("UPDATE inodes SET nlink = 1 WHERE ino = 3");
	/* size shorter than the chunks */
	damage("UPDATE inodes SET size = 10 WHERE ino = 3");
	CHECK_INT(fsck_count(), 1);
	damage("UPDATE inodes SET size = 100 WHERE ino = 3");
	/* dangling entry (an outsider's row: the root's entry bytes disagree) */
	damage("INSERT INTO dirents(parent, name, ino) VALUES(1, 'ghost', 999)");
	CHECK_INT(fsck_count(), 2);
	damage("DELETE FROM dirents WHERE name = 'ghost'");
	/* orphan inode and chunk of a missing inode */
	damage("INSERT INTO inodes(mode, nlink, uid, gid, size, rdev, atime, mtime, "
	    "ctime) VALUES(33188, 1, 0, 0, 0, 0, 0, 0, 0)");
	damage("INSERT INTO blocks(id, data) VALUES(777, x'00');"
	    "INSERT INTO chunks(ino, idx, block, len) VALUES(12345, 0, 777, 1)");
	CHECK(fsck_count() >= 2);
	damage("DELETE FROM inodes WHERE ino > 3; DELETE FROM chunks WHERE ino = 12345");
	CHECK_INT(fsck_count(), 0);
	/* a chunk whose length is not its block's, and a block nobody names */
	damage("UPDATE chunks SET len = 99 WHERE ino = 3");
	CHECK_INT(fsck_count(), 2);       /* the length, and stored bytes */
	damage("UPDATE chunks SET len = 100 WHERE ino = 3");
	damage("INSERT INTO blocks(id, data) VALUES(778, x'01')");
	CHECK_INT(fsck_count(), 1);
	damage("DELETE FROM blocks WHERE id = 778");
	CHECK_INT(fsck_count(), 0);
	/* a directory cycle cut off from the root */
	damage("UPDATE dirents SET parent = 2 WHERE name = 'd'");
	CHECK(fsck_count() >= 1);
}

static void
test_schema_version(void)
{
	struct fs *fs = new_fs();

	fs_close(fs);
	damage("PRAGMA user_version = 99");
	CHECK_INT(fs_open(db_path, 0, &fs), -EPROTO);
	CHECK_INT(fsck_count(), -EPROTO);
}

/* The quota counts stored bytes (not holes) and inodes, refuses growth past
 * either with -EDQUOT and changes nothing then, frees at once on unlink,
 * and counts the same again after a reopen. */
static void
test_quota_accounting(void)
{
	struct fs *fs = new_fs();
	static char data[150000];
	struct fs_attr a;
	uint64_t bytes, inodes, bytes2, inodes2, ino;
	char name[16];

	CHECK_INT(fs_quota_set(fs, 200000, 10), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "a", S_IFREG | 0644, 0,
	    0, &a), 0);
	ino = a.ino;
	CHECK_INT(fs_write(fs, ino, 0, data, 100000), 100000);
	CHECK_INT(fs_quota_usage(fs, &bytes, &inodes), 0);
	CHECK(bytes >= 100000 && bytes < 100100);
	CHECK_INT(inodes, 1);
	CHECK_INT(fs_write(fs, ino, 100000, data, 150000), -EDQUOT);
	CHECK_INT(fs_getattr(fs, ino, &a), 0);
	CHECK_INT(a.size, 100000);
	CHECK_INT(fs_quota_usage(fs, &bytes2, &inodes2), 0);
	CHECK_INT(bytes2, bytes);
	CHECK_INT(fs_truncate(fs, ino, 10u << 20), 0);	/* a hole: free */
	CHECK_INT(fs_quota_usage(fs, &bytes2, &inodes2), 0);
	CHECK_INT(bytes2, bytes);
	for (int i = 1; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, name,
		    S_IFREG | 0644, 0, 0, &a), 0);
	}
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "one-more",
	    S_IFREG | 0644, 0, 0, &a), -EDQUOT);
	CHECK_INT(ino_of(fs, FS_ROOT_INO, "one-more"), 0);
	CHECK_INT(fs_quota_usage(fs, &bytes, &inodes), 0);
	fs_close(fs);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	CHECK_INT(fs_quota_set(fs, 200000, 10), 0);
	CHECK_INT(fs_quota_usage(fs, &bytes2, &inodes2), 0);
	CHECK_INT(bytes2, bytes);
	CHECK_INT(inodes2, inodes);
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "a"), 0);
	CHECK_INT(fs_quota_usage(fs, &bytes2, &inodes2), 0);
	CHECK(bytes2 < bytes - 99000);
	CHECK_INT(inodes2, inodes - 1);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "one-more",
	    S_IFREG | 0644, 0, 0, &a), 0);
	fs_close(fs);
	CHECK_INT(fsck_count(), 0);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_mkfs_refuses_existing);
	TEST(test_owner_and_setgid);
	TEST(test_times_follow_kernel_clock);
	TEST(test_names_and_links);
	TEST(test_rename);
	TEST(test_content);
	TEST(test_unlinked_open_file);
	TEST(test_readdir_stable);
	TEST(test_persistence_and_xattr);
	TEST(test_fsck_damage);
	TEST(test_schema_version);
	TEST(test_quota_accounting);
	fixture_end();
	return unit_done("test_fs_core");
}
