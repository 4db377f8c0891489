/*
 * test_fs_walbuf.c: the writing connection's WAL appends, gathered by
 * common/walbuf.c, without FUSE.  Checked: what a group commit wrote is in the
 * file when the commit returns (another connection, on SQLite's own VFS,
 * reads it at once); a process killed after a commit keeps everything
 * committed, and fsck is clean; a write that fails under the buffer fails
 * the commit it belongs to (the mount turns failed), never silently, and
 * what was synced before stays whole.  A shim VFS under it (shim_vfs.h,
 * installed as the default first) plays the full disk.
 */
#include "../../fs/engine/fs_int.h"
#include "unit.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define FS_FIXTURE_NAME "test_fs_walbuf"
#include "fs_fixture.h"
#include "shim_vfs.h"

#define MIB (1u << 20)

/* Byte i of the pattern of file number seed. */
static unsigned char
pattern(unsigned seed, uint64_t i)
{
	return (unsigned char)((i * 2654435761u + seed * 40503u) >> 7);
}

/* Create name in the root and write size bytes of seed's pattern, 1 MiB
 * at a time as the kernel sends them.  Its inode, or 0. */
static uint64_t
write_file(struct fs *fs, const char *name, unsigned seed, size_t size)
{
	unsigned char *buf = malloc(MIB);
	struct fs_attr a;
	size_t off, n;

	if (!buf)
		return 0;
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0,
	    &a), 0);
	for (off = 0; off < size; off += n) {
		n = size - off < MIB ? size - off : MIB;
		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(seed, off + i);
		CHECK_INT(fs_write(fs, a.ino, off, buf, n), (long long)n);
	}
	free(buf);
	return a.ino;
}

/* 1 when name in the root holds size bytes of seed's pattern. */
static int
file_is_whole(struct fs *fs, const char *name, unsigned seed, size_t size)
{
	unsigned char *buf = malloc(MIB);
	struct fs_attr a;
	size_t off;
	int ok = buf && fs_lookup(fs, FS_ROOT_INO, name, 0, &a) == 0 &&
	    a.size == size;

	for (off = 0; ok && off < size; off += MIB) {
		size_t n = size - off < MIB ? size - off : MIB;
		ok = fs_read(fs, a.ino, off, buf, n) == (ssize_t)n;
		for (size_t i = 0; ok && i < n; i++)
			ok = buf[i] == pattern(seed, off + i);
	}
	free(buf);
	return ok;
}

/* A first small commit: SQLite's first commit into a new WAL also asks
 * the file's size (to trim it to journal_size_limit), which writes the
 * buffer out whatever walbuf.c does at commit frames; the tests look at
 * later commits. */
static void
first_commit(struct fs *fs)
{
	write_file(fs, "first", 9, 10);
	CHECK_INT(fs_sync(fs, 0), 0);
}

/* Bytes of chunk data stored for ino, as a connection on SQLite's default
 * VFS sees them; -1 on error. */
static long long
stored_elsewhere(uint64_t ino)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	long long n = -1;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT coalesce(sum(length(b.data)), 0) "
	    "FROM chunks c JOIN blocks b ON b.id = c.block WHERE c.ino = ?", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)ino);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* A commit without a sync (a group's) leaves its frames in the WAL file:
 * another connection sees all of it at once, before any close.  Less
 * than SQLite's own checkpoint size (1000 pages), whose reads of the WAL
 * would write the buffer out anyway, more than the buffer holds. */
static void
test_commit_is_in_the_file(void)
{
	struct fs *fs = fixture_new_fs();
	uint64_t ino;

	if (!fs)
		return;
	fs->txn_max_ms = 600000;	/* one group, however slow the writes */
	first_commit(fs);
	ino = write_file(fs, "some", 1, 3 * MIB / 2 + 123);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(stored_elsewhere(ino), 3 * MIB / 2 + 123);
	CHECK(file_is_whole(fs, "some", 1, 3 * MIB / 2 + 123));
	fs_close(fs);
}

/* Killed after a commit: what was committed is whole at the next open,
 * what was not is gone, and fsck is clean. */
static void
test_kill_keeps_what_was_committed(void)
{
	struct fs *fs = fixture_new_fs();
	pid_t pid;
	int status = 0;

	if (!fs)
		return;
	fs_close(fs);
	if ((pid = fork()) == 0) {
		if (fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs) != 0)
			_exit(2);
		/* "lost" must still be in the open group at the kill, however
		 * slowly a loaded machine (or a sanitizer) writes it: a group
		 * older than DB_COMMIT_MS commits at its next operation. */
		fs->txn_max_ms = 600000;
		first_commit(fs);
		write_file(fs, "kept", 2, 3 * MIB / 2 + 7);
		if (fs_sync(fs, 0) != 0)
			_exit(3);
		write_file(fs, "lost", 3, MIB);
		_exit(unit_failed_checks ? 4 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	if (!fs)
		return;
	CHECK(file_is_whole(fs, "kept", 2, 3 * MIB / 2 + 7));
	{
		struct fs_attr a;
		CHECK_INT(fs_lookup(fs, FS_ROOT_INO, "lost", 0, &a), -ENOENT);
	}
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

/* Writes that fail when the buffer hands them on fail their commit: the
 * mount turns failed (EIO), and after a reopen what was synced is whole. */
static void
test_failed_write_fails_the_commit(void)
{
	struct fs *fs = fixture_new_fs();

	if (!fs)
		return;
	/* The doomed group must still be open at the sync below, however
	 * slowly a loaded machine (or a sanitizer) writes it. */
	fs->txn_max_ms = 600000;
	write_file(fs, "synced", 4, 2 * MIB);
	CHECK_INT(fs_sync(fs, 1), 0);
	write_file(fs, "doomed", 5, 3 * MIB);
	shim_full = 1;
	CHECK(fs_sync(fs, 0) < 0);
	shim_full = 0;
	CHECK_INT(fs_error(fs), -EIO);
	fs_close(fs);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	if (!fs)
		return;
	CHECK(file_is_whole(fs, "synced", 4, 2 * MIB));
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	/* Under everything the filesystem opens, walbuf.c's VFS included. */
	shim_install();
	TEST(test_commit_is_in_the_file);
	TEST(test_kill_keeps_what_was_committed);
	TEST(test_failed_write_fails_the_commit);
	fixture_end();
	return unit_done("test_fs_walbuf");
}
