/*
 * test_fs_snapshot.c: snapshots in the atrium-fs core (fs/snapshot.c,
 * fs/restore.c, fs/chunks.c) on a temporary database, without FUSE: copy on write of
 * shared blocks (in place, extending, truncating, punching), restore and
 * drop, what a restore keeps for inodes the kernel holds, names, and
 * fsck's block and snapshot invariants after each step.
 */
#include "../../fs/fs.h"
#include "unit.h"
#define FS_FIXTURE_NAME "test_fs_snapshot"
#include "fs_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>

#define CHUNK 65536
#define FILE_BYTES (3 * CHUNK + 100)

/* Problems fsck finds in db_path (mounted: kept inodes are allowed). */
static int
fsck_count(int mounted)
{
	return fsck_run(db_path, mounted, NULL, NULL);
}

/* Fill buf with a pattern of seed. */
static void
pattern(unsigned char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)(i * 31 + seed);
}

/* 1 when ino's first n bytes are those of buf. */
static int
reads_as(struct fs *fs, uint64_t ino, const unsigned char *buf, size_t n)
{
	static unsigned char got[FILE_BYTES + CHUNK];

	return fs_read(fs, ino, 0, got, n) == (ssize_t)n &&
	    memcmp(got, buf, n) == 0;
}

/* Inode number of /name, or 0. */
static uint64_t
ino_of(struct fs *fs, const char *name)
{
	struct fs_attr a;

	return fs_lookup(fs, FS_ROOT_INO, name, 0, &a) == 0 ? a.ino : 0;
}

static void
test_copy_on_write_and_restore(void)
{
	static unsigned char orig[FILE_BYTES], now[FILE_BYTES + CHUNK];
	unsigned char x[100];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	uint64_t f;

	pattern(orig, sizeof(orig), 1);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0,
	    &a), 0);
	f = a.ino;
	CHECK_INT(fs_write(fs, f, 0, orig, sizeof(orig)), (int)sizeof(orig));
	CHECK_INT(fs_snapshot_take(fs, "s1", NULL), 0);
	CHECK_INT(fs_snapshot_take(fs, "s1", NULL), -EEXIST);
	CHECK_INT(fs_snapshot_take(fs, "bad/name", NULL), -EINVAL);
	/* every kind of write into shared blocks */
	memcpy(now, orig, sizeof(orig));
	memset(x, 'x', sizeof(x));
	CHECK_INT(fs_write(fs, f, CHUNK + 5, x, sizeof(x)), (int)sizeof(x));
	memcpy(now + CHUNK + 5, x, sizeof(x));
	CHECK_INT(fs_write(fs, f, 3 * CHUNK + 90, x, sizeof(x)), (int)sizeof(x));
	memcpy(now + 3 * CHUNK + 90, x, sizeof(x));
	CHECK_INT(fs_fallocate(fs, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	    10, 20), 0);
	memset(now + 10, 0, 20);
	CHECK(reads_as(fs, f, now, 3 * CHUNK + 190));
	CHECK_INT(fs_truncate(fs, f, 2 * CHUNK + 3), 0);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(fsck_count(0), 0);
	/* back to what s1 saw */
	CHECK_INT(fs_snapshot_restore(fs, "s1", NULL), 0);
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT((int)a.size, FILE_BYTES);
	CHECK(reads_as(fs, f, orig, sizeof(orig)));
	CHECK_INT(fs_snapshot_restore(fs, "nope", NULL), -ENOENT);
	CHECK_INT(fs_snapshot_drop(fs, "s1"), 0);
	CHECK_INT(fs_snapshot_drop(fs, "s1"), -ENOENT);
	fs_close(fs);
	CHECK_INT(fsck_count(0), 0);
}

/* Count snapshots, and remember the last one's own bytes. */
static int
count_cb(void *arg, const struct fs_snapshot_info *s)
{
	uint64_t *v = arg;

	v[0]++;
	v[1] = s->own_bytes;
	v[2] = s->shared_bytes;
	return 0;
}

static void
test_list_and_shared_bytes(void)
{
	static unsigned char buf[2 * CHUNK];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	uint64_t v[3] = { 0 };

	pattern(buf, sizeof(buf), 2);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0,
	    &a), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, sizeof(buf)), (int)sizeof(buf));
	CHECK_INT(fs_snapshot_take(fs, "a", NULL), 0);
	CHECK_INT(fs_snapshot_list(fs, count_cb, v), 0);
	CHECK_INT((int)v[0], 1);
	CHECK_INT((int)v[1], 0);
	CHECK_INT((int)v[2], 2 * CHUNK);
	/* rewriting one chunk leaves the old one to the snapshot alone */
	pattern(buf, CHUNK, 3);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, CHUNK), CHUNK);
	memset(v, 0, sizeof(v));
	CHECK_INT(fs_snapshot_list(fs, count_cb, v), 0);
	CHECK_INT((int)v[1], CHUNK);
	CHECK_INT((int)v[2], CHUNK);
	fs_close(fs);
	CHECK_INT(fsck_count(0), 0);
}

static void
test_restore_keeps_held_inodes(void)
{
	static unsigned char one[CHUNK], two[CHUNK];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	uint64_t f, g;

	pattern(one, sizeof(one), 4);
	pattern(two, sizeof(two), 5);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0,
	    &a), 0);
	f = a.ino;
	CHECK_INT(fs_write(fs, f, 0, one, sizeof(one)), CHUNK);
	CHECK_INT(fs_snapshot_take(fs, "s", NULL), 0);
	CHECK_INT(fs_write(fs, f, 0, two, sizeof(two)), CHUNK);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "g", S_IFREG | 0644, 0, 0,
	    &a), 0);
	g = a.ino;
	/* the kernel holds both, as open files */
	CHECK_INT(fs_lookup(fs, FS_ROOT_INO, "f", 1, &a), 0);
	CHECK_INT(fs_lookup(fs, FS_ROOT_INO, "g", 1, &a), 0);
	CHECK_INT(fs_snapshot_restore(fs, "s", NULL), 0);
	/* by name: the snapshot's f, under a new number; g is gone */
	CHECK(ino_of(fs, "f") != 0 && ino_of(fs, "f") != f);
	CHECK(reads_as(fs, ino_of(fs, "f"), one, sizeof(one)));
	CHECK_INT((int)ino_of(fs, "g"), 0);
	/* the held inodes still read what they held, unlinked */
	CHECK(reads_as(fs, f, two, sizeof(two)));
	CHECK_INT(fs_getattr(fs, f, &a), 0);
	CHECK_INT((int)a.nlink, 0);
	CHECK_INT(fs_getattr(fs, g, &a), 0);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(fsck_count(1), 0);
	/* forgotten, they go */
	fs_forget(fs, f, 1);
	fs_forget(fs, g, 1);
	CHECK_INT(fs_getattr(fs, f, &a), -ENOENT);
	fs_close(fs);
	CHECK_INT(fsck_count(0), 0);
}

static void
test_names(void)
{
	char longname[FS_SNAPSHOT_NAME_MAX + 2];

	CHECK_INT(fs_snapshot_name_ok("turn-12_a.b:c@d+e"), 0);
	CHECK_INT(fs_snapshot_name_ok(""), -EINVAL);
	CHECK_INT(fs_snapshot_name_ok("-x"), -EINVAL);
	CHECK_INT(fs_snapshot_name_ok("a b"), -EINVAL);
	CHECK_INT(fs_snapshot_name_ok("\x1b[2J"), -EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	CHECK_INT(fs_snapshot_name_ok(longname), -EINVAL);
	longname[FS_SNAPSHOT_NAME_MAX] = '\0';
	CHECK_INT(fs_snapshot_name_ok(longname), 0);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_copy_on_write_and_restore);
	TEST(test_list_and_shared_bytes);
	TEST(test_restore_keeps_held_inodes);
	TEST(test_names);
	fixture_end();
	return unit_done("test_fs_snapshot");
}
