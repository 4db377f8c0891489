/*
 * space.c: how much room is left for the database on its disk, the ENOSPC
 * gate in front of every growing operation, and statfs.  Called by
 * db_policy.c (what db_op_begin asks of the policy above it) and core.c
 * (fs_open, fs_statfs) with fs->lock held; calls down into db.c and
 * checkpoint.c.  Why there is a gate at all is told at the head of db.c.
 *
 * Room is the disk's available bytes (statvfs of the database's directory)
 * plus the database's free pages, which new data reuses before the file
 * grows, minus what the WAL holds that the database does not yet (it grows
 * the database when it is checkpointed, and the WAL may hold up to 1.25
 * GiB of a big write: checkpoint.c).  It is measured at most SPACE_TTL_MS
 * apart and, in between, lowered by what each admitted operation may add,
 * so a burst of writes cannot overrun it; near the limit it is measured
 * before every operation.
 *
 * Two thresholds:
 *   reserve  space_reserve_min + 1/64 of the database: room only for
 *            operations that free space and for SQLite's checkpoints.  A
 *            deletion writes about 1% of what it frees (b-tree leaves and
 *            freelist pages), so 1/64 lets the user delete most of the
 *            workspace; the fixed part covers a checkpoint of a full WAL
 *            (wal_autocheckpoint: 1000 pages) into a growing file.
 *   low      reserve + space_low_margin: below it db.c commits every
 *            operation alone, before answering it.  The margin is well
 *            above what one group may write (DB_COMMIT_BYTES, twice: into
 *            the WAL and, at the checkpoint, into the database).
 * Invariant: space_avail - space_reserve >= 0 after every admitted growth.
 *
 * The WAL's room is reserved too.  A group's commit writes its pages to the
 * -wal file; if another process took the disk's last bytes since they were
 * measured, that write would fail and lose answered work (db.c).  So each
 * operation, before it is admitted, extends an fallocate(FALLOC_FL_KEEP_SIZE)
 * past the WAL's end to cover everything its group may write (the file's
 * size, which SQLite sees, does not change).  A growing operation that
 * cannot get it gets ENOSPC; one that frees space runs alone (committed
 * before and after it) instead.  What an operation may write is estimated
 * generously: its data plus 1/32, plus 1/64 of what it deletes (b-tree
 * leaves, freelist pages), plus SPACE_OP_BYTES; writes add two chunks, which
 * a write into short chunks may rewrite whole.  When the WAL's filesystem
 * cannot preallocate, this is skipped (logged once) and only the measures
 * above protect the commit, and every operation is committed alone.
 * SQLite's -shm index (32 KiB per 16 MiB of WAL) is not reserved.
 */
#include "fs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util.h"

#define SPACE_RESERVE_MIN (8LL << 20)
#define SPACE_LOW_MARGIN (64LL << 20)
/* Longest time between two measurements. */
#define SPACE_TTL_MS 100
/* What an operation writes besides its data: b-tree and index pages. */
#define SPACE_OP_BYTES (16LL << 10)
/* The WAL reservation grows by at least this much at a time. */
#define SPACE_WAL_STEP (1LL << 20)
/* Shortest time between two "disk full" log lines. */
#define SPACE_LOG_MS 60000

/* Remember the database's directory and the default thresholds.  0 or
 * -ENOMEM. */
int
space_init(struct fs *fs)
{
	char *copy = strdup(fs->path);

	if (!copy)
		return -ENOMEM;
	fs->dir = strdup(dirname(copy));
	free(copy);
	if (!fs->dir)
		return -ENOMEM;
	fs->wal_fd = -1;
	fs->space_reserve_min = SPACE_RESERVE_MIN;
	fs->space_low_margin = SPACE_LOW_MARGIN;
	fs->space_ms = -SPACE_TTL_MS - 1;
	return 0;
}

/* Close the -wal file descriptor, if open (before SQLite deletes the file). */
void
space_close(struct fs *fs)
{
	if (fs->wal_fd >= 0)
		close(fs->wal_fd);
	fs->wal_fd = -1;
}

/* Open the -wal file for preallocation.  0, or -1 when it cannot be used
 * (not there yet: SQLite makes it at the first transaction). */
static int
space_wal_open(struct fs *fs)
{
	char path[4096];
	int n;

	if (fs->wal_fd >= 0)
		return 0;
	n = snprintf(path, sizeof(path), "%s-wal", fs->path);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	fs->wal_fd = open(path, O_RDWR | O_CLOEXEC);
	fs->wal_reserved_end = 0;
	fs->wal_seen_size = 0;
	return fs->wal_fd >= 0 ? 0 : -1;
}

/* Have bytes of allocated room past the WAL's end (see the head).  0, 1
 * when the room cannot be reserved on this filesystem (or the WAL is not
 * there yet), or -ENOSPC when the disk cannot give it. */
static int
space_wal_reserve(struct fs *fs, int64_t bytes)
{
	struct stat st;
	int64_t end;

	if (fs->wal_no_reserve || space_wal_open(fs) < 0 ||
	    fstat(fs->wal_fd, &st) < 0)
		return 1;
	/* Truncated (journal_size_limit): its room went with the bytes. */
	if (st.st_size < fs->wal_seen_size)
		fs->wal_reserved_end = 0;
	fs->wal_seen_size = st.st_size;
	end = st.st_size + bytes;
	if (end <= fs->wal_reserved_end)
		return 0;
	if (fallocate(fs->wal_fd, FALLOC_FL_KEEP_SIZE, st.st_size,
	    end + SPACE_WAL_STEP - st.st_size) == 0) {
		fs->wal_reserved_end = end + SPACE_WAL_STEP;
		return 0;
	}
	if (errno == ENOSPC || errno == EDQUOT) {
		if (fallocate(fs->wal_fd, FALLOC_FL_KEEP_SIZE, st.st_size,
		    end - st.st_size) < 0)
			return -ENOSPC;
		fs->wal_reserved_end = end;
		return 0;
	}
	log_warn("%s-wal: cannot preallocate (%s); every change is committed "
	    "alone, which is slower", fs->path, strerror(errno));
	fs->wal_no_reserve = 1;
	return 1;
}

/* The integer a one-row PRAGMA returns, or -1 (logged by db.c). */
static int64_t
space_pragma(struct fs *fs, const char *sql)
{
	sqlite3_stmt *st = db_stmt(fs, sql);
	int64_t v = -1;

	if (!st)
		return -1;
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

/* Measure room and reserve now; the disk's figures into *sv when sv is not
 * NULL.  0 or -errno (the estimate is then left as it was). */
static int
space_measure(struct fs *fs, struct statvfs *sv)
{
	struct statvfs buf;
	int64_t psize, pages, freepages;

	if (!sv)
		sv = &buf;
	if (statvfs(fs->dir, sv) < 0)
		return -errno;
	psize = space_pragma(fs, "PRAGMA page_size");
	pages = space_pragma(fs, "PRAGMA page_count");
	freepages = space_pragma(fs, "PRAGMA freelist_count");
	if (psize <= 0 || pages < 0 || freepages < 0)
		return -EIO;
	/* What the WAL holds and the database not yet will grow the database
	 * when it is checkpointed: not free (checkpoint.c). */
	fs->space_avail = (int64_t)sv->f_bavail * (int64_t)sv->f_frsize +
	    freepages * psize - ckpt_pending_bytes(fs);
	fs->space_reserve = fs->space_reserve_min + pages * psize / 64;
	fs->space_ms = time_mono_ms();
	return 0;
}

/* Growth is refused: log it once per episode, and at most once a minute
 * (a quota can make writes fail while statvfs shows room, episode after
 * episode).  Measure again next time. */
void
space_note_full(struct fs *fs)
{
	long long now = time_mono_ms();

	fs->space_ms = -SPACE_TTL_MS - 1;
	if (fs->space_full)
		return;
	fs->space_full = 1;
	if (fs->space_said_full ||
	    (fs->space_said_ms && now - fs->space_said_ms < SPACE_LOG_MS))
		return;
	fs->space_said_full = 1;
	fs->space_said_ms = now;
	log_warn("%s: the disk holding it is full (%lld MiB left, %lld MiB kept "
	    "for deletions): writes get ENOSPC until files in the workspace are "
	    "deleted or that disk has more room", fs->path,
	    (long long)(fs->space_avail >> 20),
	    (long long)(fs->space_reserve >> 20));
}

/* Admit an operation that may add grow bytes (0: it frees or rewrites,
 * and may use the reserve) and delete up to frees bytes; reserve the WAL
 * room its group then needs.  What it may write to the WAL into *need.
 * Sets fs->space_low.  0 or -ENOSPC. */
int
space_admit(struct fs *fs, uint64_t grow, uint64_t frees, int64_t *need)
{
	int64_t n = (int64_t)(grow + grow / 32 + frees / 64) + SPACE_OP_BYTES;
	int64_t room = grow ? n : 0;
	int r;

	*need = n;
	if (time_mono_ms() - fs->space_ms >= SPACE_TTL_MS ||
	    fs->space_avail - room < fs->space_reserve + fs->space_low_margin) {
		if ((r = space_measure(fs, NULL)) < 0) {
			/* Unknown room: stay safe, commit each operation. */
			log_warn("%s: cannot measure free space: %s", fs->dir,
			    strerror(-r));
			fs->space_low = 1;
			return 0;
		}
	}
	if (grow && fs->space_avail - room < fs->space_reserve) {
		space_note_full(fs);
		return -ENOSPC;
	}
	fs->space_avail -= room;
	fs->space_low = fs->space_avail <
	    fs->space_reserve + fs->space_low_margin;
	if ((r = space_wal_reserve(fs, fs->txn_need + n)) < 0 && grow) {
		space_note_full(fs);
		return -ENOSPC;
	}
	if (r != 0)
		fs->space_low = 1;      /* the group's room is not reserved */
	if (grow && fs->space_full)
		fs->space_full = 0;
	if (grow && fs->space_said_full) {
		fs->space_said_full = 0;
		log_info("%s: room again on its disk (%lld MiB); writes resume",
		    fs->path, (long long)(fs->space_avail >> 20));
	}
	return 0;
}

/* Space figures for statfs: the disk's, plus the database's free pages,
 * with the reserve not counted as available (as ext4 keeps its reserved
 * blocks), so df shows 0 when writes get ENOSPC.  0 or -errno. */
int
space_statfs(struct fs *fs, struct fs_statfs *out)
{
	struct statvfs sv;
	int64_t avail, extra;
	int r;

	memset(out, 0, sizeof(*out));
	if (fs->readonly) {
		if (statvfs(fs->dir, &sv) < 0)
			return -errno;
		fs->space_avail = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
		fs->space_reserve = 0;
	} else if ((r = space_measure(fs, &sv)) < 0) {
		return r;
	}
	out->bsize = sv.f_frsize ? sv.f_frsize : 4096;
	extra = fs->space_avail - (int64_t)(sv.f_bavail * sv.f_frsize);
	avail = fs->space_avail - fs->space_reserve;
	out->blocks = sv.f_blocks;
	out->bfree = sv.f_bfree + (uint64_t)(extra > 0 ? extra : 0) / out->bsize;
	out->bavail = avail > 0 ? (uint64_t)avail / out->bsize : 0;
	if (out->bfree > out->blocks)
		out->bfree = out->blocks;
	if (out->bavail > out->bfree)
		out->bavail = out->bfree;
	out->files = sv.f_files ? sv.f_files : 1000000;
	out->ffree = sv.f_ffree ? sv.f_ffree : out->files;
	out->namemax = FS_NAME_MAX;
	return 0;
}
