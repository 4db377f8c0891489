/*
 * test_fs_full.c: the atrium-fs core on a full disk, without FUSE.  A shim
 * SQLite VFS, installed as the default, forwards to the real one but fails
 * every write with SQLITE_FULL while shim_full is set, which is what a full
 * disk does to SQLite.  Checked: the error mapping; the ENOSPC gate (growing
 * calls refused, deletions allowed, statfs shows nothing available); near
 * full, a failed commit fails only the call being answered; far from full, a
 * commit or a cache spill that loses answered work puts the filesystem in
 * the failed state (EIO for every change and fsync) and never half-commits;
 * after reopening, everything synced before is whole and fsck is clean.
 */
#include "../../fs/engine/fs_int.h"
#include "unit.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

static char dir_tmpl[] = "/tmp/test_fs_full.XXXXXX";
static char db_path[256];
static int db_seq;
static const struct fs_ctx root_ctx = { 0, 0 };

#include "shim_vfs.h"

/* --- helpers ------------------------------------------------------------ */

/* Set the room thresholds (bytes) and have them measured anew. */
static void
set_space(struct fs *fs, int64_t reserve_min, int64_t low_margin)
{
	fs->space_reserve_min = reserve_min;
	fs->space_low_margin = low_margin;
	fs->space_ms = -1000000;
}

/* A new empty filesystem, opened as a mount would open it, far from full
 * whatever the disk of /tmp holds. */
static struct fs *
new_fs(void)
{
	struct fs *fs = NULL;

	snprintf(db_path, sizeof(db_path), "%s/fs%d.db", dir_tmpl, ++db_seq);
	CHECK_INT(fs_mkfs(db_path, 0, 0), 0);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	if (fs)
		set_space(fs, 0, 0);
	return fs;
}

static struct fs *
reopen(struct fs *fs)
{
	fs_close(fs);
	fs = NULL;
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	return fs;
}

/* Create name in the root with n bytes of byte c: its inode, or 0 (the
 * error into *err when err is not NULL). */
static uint64_t
make_file(struct fs *fs, const char *name, size_t n, int c, int *err)
{
	struct fs_attr a;
	char *buf = malloc(n);
	int r;
	ssize_t w = -1;

	memset(buf, c, n);
	r = fs_mknod(fs, &root_ctx, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0, &a);
	if (r == 0 && (w = fs_write(fs, a.ino, 0, buf, n)) != (ssize_t)n)
		r = w < 0 ? (int)w : -EIO;
	free(buf);
	if (err)
		*err = r;
	return r == 0 ? a.ino : 0;
}

/* 1 when name holds exactly n bytes of byte c. */
static int
file_is(struct fs *fs, const char *name, size_t n, int c)
{
	struct fs_attr a;
	unsigned char *buf;
	int ok;

	if (fs_lookup(fs, FS_ROOT_INO, name, 0, &a) < 0 || a.size != n)
		return 0;
	buf = malloc(n + 1);
	ok = fs_read(fs, a.ino, 0, buf, n + 1) == (ssize_t)n;
	for (size_t i = 0; ok && i < n; i++)
		ok = buf[i] == (unsigned char)c;
	free(buf);
	return ok;
}

static int
exists(struct fs *fs, const char *name)
{
	struct fs_attr a;

	return fs_lookup(fs, FS_ROOT_INO, name, 0, &a) == 0;
}

/* --- tests --------------------------------------------------------------- */

static void
test_errno_map(void)
{
	CHECK_INT(db_errno_map(SQLITE_FULL, 0), -ENOSPC);
	CHECK_INT(db_errno_map(SQLITE_IOERR_WRITE, ENOSPC), -ENOSPC);
	CHECK_INT(db_errno_map(SQLITE_IOERR_SHMSIZE, EDQUOT), -ENOSPC);
	CHECK_INT(db_errno_map(SQLITE_IOERR_WRITE, EIO), -EIO);
	CHECK_INT(db_errno_map(SQLITE_IOERR_FSYNC, 0), -EIO);
	CHECK_INT(db_errno_map(SQLITE_CORRUPT, ENOSPC), -EIO);
	CHECK_INT(db_errno_map(SQLITE_CONSTRAINT_UNIQUE, 0), -EEXIST);
	CHECK_INT(db_errno_map(SQLITE_NOMEM, 0), -ENOMEM);
}

/* The gate: no room beyond the reserve refuses growth, not deletion. */
static void
test_gate_refuses_growth_not_deletion(void)
{
	struct fs *fs = new_fs();
	struct fs_statfs sf;
	struct fs_setattr sa = { .valid = FS_SET_MODE, .mode = 0600 };
	struct fs_attr a;
	uint64_t ino = make_file(fs, "old", 200000, 'o', NULL);
	char x = 'x';
	int err;

	CHECK(ino != 0);
	CHECK_INT(fs_sync(fs, 1), 0);
	set_space(fs, INT64_MAX / 8, 0);           /* the disk is "full" */
	CHECK_INT(fs_write(fs, ino, 0, &x, 1), -ENOSPC);
	CHECK_INT(make_file(fs, "new", 10, 'n', &err), 0);
	CHECK_INT(err, -ENOSPC);
	CHECK_INT(fs_symlink(fs, &root_ctx, FS_ROOT_INO, "ln", "old", 0, &a),
	    -ENOSPC);
	CHECK_INT(fs_setxattr(fs, ino, "user.a", "v", 1, 0), -ENOSPC);
	CHECK_INT(fs_statfs(fs, &sf), 0);
	CHECK_INT(sf.bavail, 0);
	CHECK_INT(fs_setattr(fs, ino, &sa, &a), 0);
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "old"), 0);
	CHECK_INT(fs_sync(fs, 1), 0);
	CHECK_INT(fs_error(fs), 0);
	set_space(fs, 0, 0);                       /* room again */
	CHECK(make_file(fs, "new", 10, 'n', NULL) != 0);
	CHECK_INT(fs_statfs(fs, &sf), 0);
	CHECK(sf.bavail > 0);
	fs = reopen(fs);
	CHECK(!exists(fs, "old"));
	CHECK(file_is(fs, "new", 10, 'n'));
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* Near full every call commits alone: a failed commit is that call's
 * ENOSPC, and what was answered before stays. */
static void
test_near_full_fails_only_the_call(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	uint64_t ino;
	char buf[5000];
	int err;

	set_space(fs, 0, INT64_MAX / 4);           /* always "near full" */
	ino = make_file(fs, "kept", 100000, 'k', NULL);
	CHECK(ino != 0);
	CHECK(make_file(fs, "answered", 3000, 'a', NULL) != 0);
	shim_full = 1;
	memset(buf, 'z', sizeof(buf));
	CHECK_INT(fs_write(fs, ino, 0, buf, sizeof(buf)), -ENOSPC);
	CHECK_INT(make_file(fs, "refused", 10, 'r', &err), 0);
	CHECK_INT(err, -ENOSPC);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "d", S_IFDIR | 0755, 0, 0,
	    &a), -ENOSPC);
	CHECK_INT(fs_error(fs), 0);
	CHECK_INT(fs_sync(fs, 1), 0);
	CHECK(file_is(fs, "kept", 100000, 'k'));
	shim_full = 0;
	CHECK(make_file(fs, "later", 10, 'l', NULL) != 0);
	fs = reopen(fs);
	CHECK(file_is(fs, "kept", 100000, 'k'));
	CHECK(file_is(fs, "answered", 3000, 'a'));
	CHECK(file_is(fs, "later", 10, 'l'));
	CHECK(!exists(fs, "refused"));
	CHECK(!exists(fs, "d"));
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* Far from full, a group commit that fails loses answered calls: the
 * filesystem fails (EIO, sticky), synced data survives, fsck is clean. */
static void
test_failed_group_commit_fails_the_mount(void)
{
	struct fs *fs = new_fs();
	struct fs_attr a;
	uint64_t ino;
	char x = 'x';

	ino = make_file(fs, "synced", 150000, 's', NULL);
	CHECK_INT(fs_sync(fs, 1), 0);
	CHECK(make_file(fs, "unsynced", 150000, 'u', NULL) != 0);
	shim_full = 1;
	CHECK_INT(fs_sync(fs, 1), -EIO);
	shim_full = 0;
	CHECK_INT(fs_error(fs), -EIO);
	CHECK_INT(fs_sync(fs, 1), -EIO);           /* sticky, as errseq */
	CHECK_INT(fs_write(fs, ino, 0, &x, 1), -EIO);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "n", S_IFREG | 0644, 0, 0,
	    &a), -EIO);
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "synced"), -EIO);
	CHECK(file_is(fs, "synced", 150000, 's'));   /* reads still work */
	fs = reopen(fs);
	CHECK_INT(fs_error(fs), 0);
	CHECK(file_is(fs, "synced", 150000, 's'));
	CHECK(!exists(fs, "unsynced"));
	CHECK(make_file(fs, "again", 10, 'g', NULL) != 0);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* A cache spill that fails inside a call rolls back SQLite's whole
 * transaction: with answered calls in it the filesystem fails; alone (near
 * full) the call gets ENOSPC.  Never is half a call committed. */
static void
test_failed_spill(void)
{
	static char big[300000];
	struct fs *fs = new_fs();
	uint64_t ino;
	int err;

	CHECK(make_file(fs, "synced", 100000, 's', NULL) != 0);
	CHECK_INT(fs_sync(fs, 1), 0);
	CHECK_INT(db_exec(fs, "PRAGMA cache_size = 10"), 0);
	CHECK(make_file(fs, "answered", 300000, 'a', NULL) != 0);
	shim_full = 1;
	CHECK_INT(make_file(fs, "spilling", 300000, 'p', &err), 0);
	CHECK_INT(err, -EIO);
	CHECK_INT(fs_error(fs), -EIO);
	shim_full = 0;
	fs = reopen(fs);
	CHECK(file_is(fs, "synced", 100000, 's'));
	CHECK(!exists(fs, "answered"));
	CHECK(!exists(fs, "spilling"));
	/* The same near full: only the call fails. */
	set_space(fs, 0, INT64_MAX / 4);
	CHECK_INT(db_exec(fs, "PRAGMA cache_size = 10"), 0);
	CHECK(make_file(fs, "answered", 300000, 'a', NULL) != 0);
	ino = make_file(fs, "spilling", 0, 'p', NULL);
	CHECK(ino != 0);
	shim_full = 1;
	CHECK_INT(fs_write(fs, ino, 0, big, sizeof(big)), -ENOSPC);
	CHECK_INT(fs_error(fs), 0);
	shim_full = 0;
	fs = reopen(fs);
	CHECK(file_is(fs, "synced", 100000, 's'));
	CHECK(file_is(fs, "answered", 300000, 'a'));
	CHECK(file_is(fs, "spilling", 0, 'p'));
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

int
main(void)
{
	if (!mkdtemp(dir_tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	shim_install();
	TEST(test_errno_map);
	TEST(test_gate_refuses_growth_not_deletion);
	TEST(test_near_full_fails_only_the_call);
	TEST(test_failed_group_commit_fails_the_mount);
	TEST(test_failed_spill);
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir_tmpl);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir_tmpl);
	}
	return unit_done("test_fs_full");
}
