/*
 * test_fs_checkpoint.c: the committer's background checkpoints
 * (fs/engine/checkpoint.c), without FUSE.  Checked: once a commit takes the WAL
 * past CKPT_BYTES (4000 KiB), the committer copies it into the database
 * on its own connection, without waiting for the WAL to reach
 * CKPT_BYTES_MAX, where the committing thread would do it under the lock;
 * until it has, what it has not copied counts against the free room
 * (ckpt_pending_bytes), and once it has, nothing does.
 * What was copied is read from the -shm index the way SQLite keeps it:
 * the WAL's last committed frame (mxFrame) in the header and the frames
 * already copied (nBackfill) after its two copies.  And what it copied is
 * right: the pages a checkpoint appends to the database go out gathered
 * in big writes (common/walbuf.c), so after that checkpoint alone (a close
 * has nothing left to copy) every byte reads back where it was written,
 * and fsck is clean.
 * A checkpoint that copies the whole WAL ends the snapshots the readers
 * kept from before it: a snapshot of the uncopied WAL kept across the
 * checkpoint still reads through the WAL, so a checkpoint that empties the
 * WAL succeeds only once that snapshot has ended; the file reads back
 * whole after it.
 */
#include "../../fs/engine/fs_int.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define FS_FIXTURE_NAME "test_fs_checkpoint"
#include "fs_fixture.h"

#define MIB (1u << 20)
/* The -shm index (SQLite's wal.c): WalIndexHdr is 48 bytes, kept twice,
 * then WalCkptInfo, which starts with nBackfill; mxFrame is at 16. */
#define SHM_MX_FRAME 16
#define SHM_BACKFILL 96

/* The WAL's committed frames and those copied into the database, from
 * the -shm file of db_path.  0, or -1 when it cannot be read. */
static int
shm_frames(uint32_t *mx_frame, uint32_t *backfill)
{
	char path[300];
	unsigned char hdr[SHM_BACKFILL + 4];
	int fd, ok;

	snprintf(path, sizeof(path), "%s-shm", db_path);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	ok = pread(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr);
	close(fd);
	if (!ok)
		return -1;
	memcpy(mx_frame, hdr + SHM_MX_FRAME, 4);
	memcpy(backfill, hdr + SHM_BACKFILL, 4);
	return 0;
}

/* Byte i of the file: differs from page to page and chunk to chunk, so a
 * page copied to the wrong place shows. */
static unsigned char
pattern(uint64_t i)
{
	return (unsigned char)((i * 2654435761u) >> 11 ^ i >> 12);
}

/* Write size bytes of the pattern to a new file in the root, 1 MiB at a
 * time. */
static void
write_file(struct fs *fs, const char *name, size_t size)
{
	unsigned char *buf = calloc(1, MIB);
	struct fs_attr a;

	if (!buf)
		return;
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0,
	    &a), 0);
	for (size_t off = 0; off < size; off += MIB) {
		for (size_t i = 0; i < MIB; i++)
			buf[i] = pattern(off + i);
		CHECK_INT(fs_write(fs, a.ino, off, buf, MIB), MIB);
	}
	free(buf);
}

/* 1 when name in the root holds size bytes of the pattern. */
static int
file_is_whole(struct fs *fs, const char *name, size_t size)
{
	unsigned char *buf = malloc(MIB);
	struct fs_attr a;
	int ok = buf && fs_lookup(fs, FS_ROOT_INO, name, 0, &a) == 0 &&
	    a.size == size;

	for (size_t off = 0; ok && off < size; off += MIB) {
		ok = fs_read(fs, a.ino, off, buf, MIB) == (ssize_t)MIB;
		for (size_t i = 0; ok && i < MIB; i++)
			ok = buf[i] == pattern(off + i);
	}
	free(buf);
	return ok;
}

/* Seconds a test waits for the committer's thread to act. */
#define CKPT_WAIT_S 120

/* What the WAL holds that the database does not yet (fs->lock). */
static int64_t
pending(struct fs *fs)
{
	int64_t n;

	fs_lock(fs);
	n = ckpt_pending_bytes(fs);
	fs_unlock(fs);
	return n;
}

/* 8 MiB committed: with no request after it, the committer copies every
 * frame of it, while the WAL is far below CKPT_BYTES_MAX (1.25 GiB), and
 * nothing is counted as pending any more; just after the commit, what it
 * had not copied yet was (copying 8 MiB takes far longer than taking the
 * lock).  Waited for up to CKPT_WAIT_S: a loaded machine running the
 * ThreadSanitizer build took more than the two seconds this once had. */
static void
test_committer_checkpoints_in_the_background(void)
{
	struct fs *fs = fixture_new_fs();
	struct timespec pause = { 0, 20 * 1000 * 1000 };
	uint32_t mx = 0, backfill = 0;
	int tries;

	if (!fs)
		return;
	/* Committed as one group by the sync below, not in pieces by the
	 * committer's timer nor by the age that commits a group at an
	 * operation's end (DB_COMMIT_MS, which 8 MiB written under TSan on a
	 * loaded machine outlives): in pieces, the checkpoint the first
	 * piece starts copies that alone, and the rest stays below
	 * CKPT_BYTES, where no background checkpoint is due. */
	fs->txn_max_ms = 600000;        /* before the committer's thread */
	CHECK_INT(fs_committer_start(fs, 600000), 0);
	write_file(fs, "eight", 8 * MIB);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK(pending(fs) > 0);
	for (tries = 0; tries < CKPT_WAIT_S * 50; tries++) {
		if (shm_frames(&mx, &backfill) == 0 && mx > 0 && backfill == mx &&
		    pending(fs) == 0)
			break;
		nanosleep(&pause, NULL);
	}
	CHECK(mx > 2048);           /* 8 MiB is more than 2048 pages */
	CHECK_INT(backfill, mx);
	CHECK(pending(fs) == 0);
	fs_committer_stop(fs);
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	if (!fs)
		return;
	CHECK(file_is_whole(fs, "eight", 8 * MIB));
	fs_close(fs);
}

/* The reader that served a read keeps its snapshot while no group ends;
 * the committer's checkpoint (run here, without the committer's thread,
 * so that it comes after the read) copies every frame and must end that
 * snapshot, or the WAL cannot be emptied. */
static void
test_whole_wal_checkpoint_ends_kept_snapshots(void)
{
	struct fs *fs = fixture_new_fs();
	unsigned char buf[4096];
	uint32_t mx = 0, backfill = 0;
	struct fs_attr a;

	if (!fs)
		return;
	fs_lock(fs);
	CHECK_INT(ckpt_start(fs), 0);
	fs_unlock(fs);
	write_file(fs, "eight", 8 * MIB);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(fs_lookup(fs, FS_ROOT_INO, "eight", 0, &a), 0);
	CHECK_INT(fs_read(fs, a.ino, 5 * MIB, buf, sizeof(buf)), sizeof(buf));
	CHECK_INT(buf[7], pattern(5 * MIB + 7));
	fs_lock(fs);
	ckpt_run(fs);
	fs_unlock(fs);
	CHECK_INT(shm_frames(&mx, &backfill), 0);
	CHECK(mx > 2048);
	CHECK_INT(backfill, mx);
	CHECK_INT(fixture_checkpoint_truncate(), SQLITE_OK);
	CHECK(file_is_whole(fs, "eight", 8 * MIB));
	fs_lock(fs);
	ckpt_stop(fs);
	fs_unlock(fs);
	fs_close(fs);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_committer_checkpoints_in_the_background);
	TEST(test_whole_wal_checkpoint_ends_kept_snapshots);
	fixture_end();
	return unit_done("test_fs_checkpoint");
}
