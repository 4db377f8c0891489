/*
 * reclaim.c: freeing the chunks of deleted and truncated files in the
 * background, in bounded batches.  Called by inode.c (a file's last link
 * and lookup gone), core.c (truncate, and every operation that grows a
 * file), db_policy.c (an operation short of room: reclaim_help),
 * fs_open/fs_close, and its own thread; calls db.c, inode.c and chunks.c.
 *
 * Why: SQLite frees a row's overflow pages one by one, reading each to
 * find the next, all under fs->lock (one mutex, one connection): removing
 * a 1 GiB file in one statement held every other request up for half a
 * minute.  So a file bigger than RECLAIM_INLINE_BYTES leaves the namespace
 * (unlink, rename over it) or shrinks (truncate) at once, and its chunks
 * are freed afterwards, RECLAIM_BATCH at a time.
 *
 * What is garbage, on disk, so that a crash needs no journal of its own:
 *   - every row of an inode with nlink 0 that nothing holds (not looked up
 *     by the kernel): an unlinked file, as before (schema.c, I5);
 *   - every chunk of a regular file at or past its size (idx >= ceil(size /
 *     FS_CHUNK)).  A deferred truncate trims the chunk holding the new end
 *     at once and sets the size; the chunks past it are left.
 * Reads are clamped to the size, so garbage is never seen; but a file that
 * grows again must not show its old bytes, so every operation that grows a
 * file (write, truncate up, fallocate) first drops the garbage in the range
 * it uncovers (reclaim_expose): work in proportion to the growth.
 *
 * Which inodes may hold garbage (memory only): a queue of at most
 * RECLAIM_QUEUE_MAX inode numbers, filled by the deferring operations, and
 * a scan of the inodes table in windows of RECLAIM_SCAN_WINDOW.  The scan
 * runs after every open (a crash leaves garbage nobody queued) and when
 * the queue overflows; while it runs, every growth checks for garbage.
 *
 * Threading model.  One thread, the reclaimer (started by mount.c beside
 * the committer), owns the freeing.  It takes fs->lock for one unit of
 * work (one batch of one inode, or one scan window), which runs as an
 * ordinary operation (db_op_begin/db_op_end) in the group transaction of
 * db.c, so its deletes commit with the group and a crash keeps or loses
 * whole batches.  It then releases the lock and sleeps at least
 * RECLAIM_PAUSE_MS, or half the time the batch held it, so requests
 * waiting on the lock go first: a request waits at most one batch.  It
 * waits on reclaim_cond while there is nothing to do; reclaim_defer
 * signals it.  Everything in struct fs it reads or changes is guarded by
 * fs->lock, which is the only lock.  fs_close stops it, then frees for at
 * most RECLAIM_CLOSE_MS itself and leaves the rest to the next mount.
 *
 * Room: a batch is an operation that frees (grow 0), so it is admitted on
 * a full disk and may use the reserve (space.c); deleting always ends up
 * freeing.  Until a batch runs, the chunks it will free still count in the
 * quota (quota.c, by the triggers on the rows) and in df (the database's
 * free pages): a full room recovers as the batches run, in seconds.  A
 * write that finds no room meanwhile (ENOSPC from db_op_begin, or more
 * than the quota leaves, fs_write) runs batches itself, for at most RECLAIM_HELP_MS,
 * before it gives up (reclaim_help): deleting to make room works at once,
 * as it did when deletes freed everything before returning.
 */
#include "fs_int.h"

#include <errno.h>
#include <time.h>

#include "util.h"

/* Chunks freed per batch, under the lock: 16 x 64 KiB, about 256 pages
 * for SQLite to walk: a few milliseconds when cached, 10 to 20 read from a
 * disk (measured), so a batch also stops after RECLAIM_BATCH_MS. */
#define RECLAIM_BATCH 16
/* Chunks per DELETE statement, and the longest a batch goes on with more. */
#define RECLAIM_STEP 4
#define RECLAIM_BATCH_MS 8
/* Deletes and truncates that free at most this much are done at once. */
#define RECLAIM_INLINE_BYTES ((uint64_t)RECLAIM_BATCH * FS_CHUNK)
/* Shortest pause between two batches, lock released. */
#define RECLAIM_PAUSE_MS 2
/* Inodes per scan window. */
#define RECLAIM_SCAN_WINDOW 1024
/* After a failed batch, try again this much later. */
#define RECLAIM_RETRY_MS 1000
/* How long a writer short of room frees pending deletes itself. */
#define RECLAIM_HELP_MS 2000
/* How long one wait for a deleted file's FORGET lasts before it looks
 * again (reclaim_help). */
#define RECLAIM_FORGET_SLICE_MS 50
/* How long fs_close goes on freeing before leaving it to the next mount. */
#define RECLAIM_CLOSE_MS 3000

/* Index of ino in the queue, or -1. */
static int
reclaim_find(const struct fs *fs, uint64_t ino)
{
	for (unsigned i = 0; i < fs->reclaim_n; i++)
		if (fs->reclaim_q[i] == ino)
			return (int)i;
	return -1;
}

/* Put ino in the queue: 0, or -ENOSPC when it is full. */
static int
reclaim_enqueue(struct fs *fs, uint64_t ino)
{
	if (reclaim_find(fs, ino) >= 0)
		return 0;
	if (fs->reclaim_n >= RECLAIM_QUEUE_MAX)
		return -ENOSPC;
	fs->reclaim_q[fs->reclaim_n++] = ino;
	return 0;
}

/* Take ino off the queue, if there. */
static void
reclaim_dequeue(struct fs *fs, uint64_t ino)
{
	int i = reclaim_find(fs, ino);

	if (i < 0)
		return;
	fs->reclaim_n--;
	memmove(&fs->reclaim_q[i], &fs->reclaim_q[i + 1],
	    (fs->reclaim_n - (unsigned)i) * sizeof(fs->reclaim_q[0]));
}

/* Start (or start again) the scan for garbage nobody queued. */
static void
reclaim_scan_restart(struct fs *fs)
{
	fs->reclaim_scan_from = 1;
	fs->reclaim_scan_to = 0;
}

/* Called by fs_open for a writable filesystem: a crash may have left
 * garbage, so look for it before trusting the queue. */
void
reclaim_init(struct fs *fs)
{
	fs->reclaim_n = 0;
	if (!fs->readonly)
		reclaim_scan_restart(fs);
}

/* 1 when freeing bytes is more than one batch. */
int
reclaim_big(uint64_t bytes)
{
	return bytes > RECLAIM_INLINE_BYTES;
}

/* 1 when freeing a regular file of size bytes (past keep) is left to the
 * background, 0 when it is done at once. */
int
reclaim_defers(struct fs *fs, uint64_t size, uint64_t keep)
{
	return fs->reclaim_defer && size > keep && reclaim_big(size - keep);
}

/* Note that ino has garbage to free and wake the reclaimer.  A full queue
 * starts the scan over instead, which finds it.  0. */
int
reclaim_defer(struct fs *fs, uint64_t ino)
{
	if (reclaim_enqueue(fs, ino) < 0)
		reclaim_scan_restart(fs);
	if (fs->reclaimer_running)
		pthread_cond_signal(&fs->reclaim_cond);
	return 0;
}

/* 1 when ino may have chunks at or past its size. */
static int
reclaim_pending(const struct fs *fs, uint64_t ino)
{
	return fs->reclaim_scan_from != 0 || reclaim_find(fs, ino) >= 0;
}

/* Chunks needed for size bytes: the first index past the end. */
static uint64_t
reclaim_end_idx(uint64_t size)
{
	return size / FS_CHUNK + (size % FS_CHUNK != 0);
}

/* Regular file ino grows from oldsize to newsize: drop the garbage in the
 * chunks it uncovers first, so the new range reads as written or as zeros.
 * Call inside the growing operation, before it writes.  0 or -errno. */
int
reclaim_expose(struct fs *fs, uint64_t ino, uint64_t oldsize, uint64_t newsize)
{
	if (newsize <= oldsize || !reclaim_pending(fs, ino))
		return 0;
	return chunks_drop_range(fs, ino, reclaim_end_idx(oldsize),
	    reclaim_end_idx(newsize));
}

/* Cut regular file a to size (its caller then stores the size): at once
 * when little goes, else trim the last kept chunk and leave the chunks past
 * it to the background.  0 or -errno. */
int
reclaim_truncate(struct fs *fs, const struct fs_attr *a, uint64_t size)
{
	int r;

	if (!reclaim_defers(fs, a->size, size))
		return chunks_truncate(fs, a->ino, size);
	if ((r = chunks_trim(fs, a->ino, size)) < 0)
		return r;
	return reclaim_defer(fs, a->ino);
}

/* Free up to RECLAIM_BATCH chunks of ino at idx >= from, a few at a time,
 * stopping early after RECLAIM_BATCH_MS (a cold cache makes each chunk a
 * few disk reads).  The number freed, or -errno; *more is set when some
 * may be left. */
static int
reclaim_chunks(struct fs *fs, uint64_t ino, uint64_t from, int *more)
{
	long long start = time_mono_ms();
	int n = 0, got;

	*more = 0;
	do {
		if ((got = chunks_free_batch(fs, ino, from, RECLAIM_STEP)) < 0)
			return got;
		n += got;
		*more = got == RECLAIM_STEP;
	} while (*more && n < RECLAIM_BATCH &&
	    time_mono_ms() - start < RECLAIM_BATCH_MS);
	return n;
}

/* One batch of ino, as an operation: free up to RECLAIM_BATCH chunks of its
 * garbage, and its other rows once none is left.  Takes it off the queue
 * when done.  1 (work done) or -errno. */
static int
reclaim_step(struct fs *fs, uint64_t ino)
{
	struct fs_attr a;
	uint64_t from;
	int gone, more = 0, r;

	if ((r = inode_get(fs, ino, &a)) == -ENOENT) {
		reclaim_dequeue(fs, ino);
		return 1;
	}
	if (r < 0)
		return r;
	gone = a.nlink == 0 && ino != FS_ROOT_INO && !inode_pinned(fs, ino);
	from = gone ? 0 : reclaim_end_idx(a.size);
	if (!gone && !S_ISREG(a.mode)) {
		reclaim_dequeue(fs, ino);
		return 1;
	}
	if ((r = db_op_begin(fs, 0, (uint64_t)RECLAIM_BATCH * FS_CHUNK)) < 0)
		return r;
	if (S_ISREG(a.mode))
		r = reclaim_chunks(fs, ino, from, &more);
	if (r >= 0 && !more && gone)
		r = inode_delete(fs, ino);
	if ((r = db_op_end(fs, r)) < 0)
		return r;
	if (!more)
		reclaim_dequeue(fs, ino);
	return 1;
}

/* The last inode number there is (0 when none besides nothing), or -errno. */
static int64_t
reclaim_max_ino(struct fs *fs)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT coalesce(max(ino), 0) FROM inodes");
	int64_t v;
	int rc;

	if (!st)
		return -EIO;
	if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_reset(st);
		return db_errno(fs, rc, "reclaim scan");
	}
	v = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	return v;
}

/* Queue the inodes of [from, to] that hold garbage; where it stopped (the
 * next inode to look at) into *next.  0 or -errno. */
static int
reclaim_scan_window(struct fs *fs, uint64_t from, uint64_t to, uint64_t *next)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT ino FROM inodes i "
	    "WHERE ino BETWEEN ?1 AND ?2 AND ino != 1 AND (nlink = 0 OR "
	    "((mode & 61440) = 32768 AND EXISTS (SELECT 1 FROM chunks c "
	    "WHERE c.ino = i.ino AND c.idx >= (i.size + ?3 - 1) / ?3))) "
	    "ORDER BY ino");
	int rc;

	*next = to + 1;
	if (!st)
		return -EIO;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)from);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)to);
	sqlite3_bind_int64(st, 3, FS_CHUNK);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t ino = (uint64_t)sqlite3_column_int64(st, 0);
		if (reclaim_enqueue(fs, ino) < 0) {
			*next = ino;        /* the queue is full: go on later */
			break;
		}
	}
	sqlite3_reset(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 :
	    db_errno(fs, rc, "reclaim scan");
}

/* One window of the scan.  1 (work done) or -errno. */
static int
reclaim_scan(struct fs *fs)
{
	uint64_t from = fs->reclaim_scan_from, to, next;
	int64_t max;
	int r;

	if (fs->reclaim_scan_to == 0) {
		if ((max = reclaim_max_ino(fs)) < 0)
			return (int)max;
		fs->reclaim_scan_to = max > 1 ? (uint64_t)max : 1;
	}
	to = from + RECLAIM_SCAN_WINDOW - 1;
	if (to > fs->reclaim_scan_to)
		to = fs->reclaim_scan_to;
	if ((r = reclaim_scan_window(fs, from, to, &next)) < 0)
		return r;
	/* A restart while the window ran (reclaim_defer) wins. */
	if (fs->reclaim_scan_from == from)
		fs->reclaim_scan_from = next > fs->reclaim_scan_to ? 0 : next;
	return 1;
}

/* One unit of work, fs->lock held: a batch of the first queued inode, else
 * a window of the scan.  1 when it did some, 0 when there is none, or
 * -errno. */
static int
reclaim_work(struct fs *fs)
{
	if (fs->readonly)
		return 0;
	if (fs->failed)
		return fs->failed;
	if (fs->reclaim_n > 0)
		return reclaim_step(fs, fs->reclaim_q[0]);
	if (fs->reclaim_scan_from != 0)
		return reclaim_scan(fs);
	return 0;
}

/* 1 when an unlinked inode is left (the kernel still holds it), 0 when
 * none is, or -errno. */
static int
reclaim_orphan_held(struct fs *fs)
{
	sqlite3_stmt *st = db_stmt(fs, "SELECT 1 FROM inodes WHERE nlink = 0 "
	    "AND ino != 1 LIMIT 1");
	int rc;

	if (!st)
		return -EIO;
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -EIO;
}

/* Wait up to ms (fs->lock held) for fs_forget to release an inode. */
static void
reclaim_wait_forget(struct fs *fs, long long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&fs->forgot_cond, &fs->lock, &ts);
}

/* A growing operation found no room (ENOSPC, EDQUOT) while freeing is
 * pending: do one unit of it now, in the caller's thread, so the room a
 * delete promised is there for the writer that needs it.  Gives up at
 * *deadline (0: set it now, RECLAIM_HELP_MS ahead).  1 when it did some
 * (try again), else 0. */
int
reclaim_help(struct fs *fs, long long *deadline)
{
	if (*deadline == 0)
		*deadline = time_mono_ms() + RECLAIM_HELP_MS;
	if (fs->in_op || time_mono_ms() >= *deadline)
		return 0;
	return reclaim_work(fs) > 0;
}

/* reclaim_help for a write over the quota, which also waits for a
 * deleted file that the kernel still holds.  Just after an `rm` its
 * FORGET is queued and may be on another thread, so "delete, then write"
 * found no room on a busy machine: with nothing else to free, this waits
 * for fs_forget, a slice at a time, until *deadline (a file still open
 * keeps its bytes, and the write then gets EDQUOT).  It releases fs->lock
 * while it waits: call it only where nothing read under the lock is kept
 * across it (core.c's write, before its operation begins). */
int
reclaim_help_or_wait(struct fs *fs, long long *deadline)
{
	long long left;

	if (reclaim_help(fs, deadline))
		return 1;
	left = *deadline - time_mono_ms();
	if (fs->in_op || left <= 0 || reclaim_orphan_held(fs) != 1)
		return 0;
	reclaim_wait_forget(fs, left < RECLAIM_FORGET_SLICE_MS ? left :
	    RECLAIM_FORGET_SLICE_MS);
	return 1;
}

/* One unit of background freeing: 1 when some was done (there may be
 * more), 0 when nothing is left, or -errno. */
int
fs_reclaim_batch(struct fs *fs)
{
	int r;

	fs_lock(fs);
	r = reclaim_work(fs);
	fs_unlock(fs);
	return r;
}

/* Sleep ms milliseconds (fs->lock not held). */
static void
reclaim_sleep(long long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Wait on reclaim_cond (fs->lock held) for a signal, or ms when ms > 0. */
static void
reclaim_wait(struct fs *fs, long long ms)
{
	struct timespec ts;

	if (ms <= 0) {
		pthread_cond_wait(&fs->reclaim_cond, &fs->lock);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	ts.tv_sec += ts.tv_nsec / 1000000000L;
	ts.tv_nsec %= 1000000000L;
	pthread_cond_timedwait(&fs->reclaim_cond, &fs->lock, &ts);
}

/* The reclaimer thread (see the head): one unit of work at a time, with
 * the lock released and a pause between two. */
static void *
reclaim_main(void *arg)
{
	struct fs *fs = arg;
	long long start, took;
	int r, said = 0;

	fs_lock(fs);
	while (!fs->reclaimer_stop) {
		start = time_mono_ms();
		if ((r = reclaim_work(fs)) > 0) {
			took = time_mono_ms() - start;
			fs_unlock(fs);
			reclaim_sleep(took / 2 > RECLAIM_PAUSE_MS ? took / 2 :
			    RECLAIM_PAUSE_MS);
			fs_lock(fs);
			said = 0;
			continue;
		}
		if (r < 0 && !said && r != fs->failed)
			log_warn("%s: freeing deleted files' space: %s; trying "
			    "again", fs->path, strerror(-r));
		said = r < 0;
		if (!fs->reclaimer_stop)
			reclaim_wait(fs, r < 0 ? RECLAIM_RETRY_MS : 0);
	}
	fs_unlock(fs);
	return NULL;
}

/* Defer big deletes and truncates from now on; with thread, start the
 * reclaimer that frees them (else the caller runs fs_reclaim_batch).  0 or
 * -errno. */
int
fs_reclaimer_start(struct fs *fs, int thread)
{
	int r;

	fs_lock(fs);
	fs->reclaim_defer = !fs->readonly;
	fs->reclaimer_stop = 0;
	fs_unlock(fs);
	if (!thread || fs->readonly || fs->reclaimer_running)
		return 0;
	if ((r = pthread_create(&fs->reclaimer, NULL, reclaim_main, fs)) != 0) {
		fs_lock(fs);
		fs->reclaim_defer = 0;      /* nobody would free them */
		fs_unlock(fs);
		return -r;
	}
	fs->reclaimer_running = 1;
	return 0;
}

/* Stop the reclaimer thread, if running (what is left stays queued). */
void
fs_reclaimer_stop(struct fs *fs)
{
	if (!fs->reclaimer_running)
		return;
	fs_lock(fs);
	fs->reclaimer_stop = 1;
	pthread_cond_signal(&fs->reclaim_cond);
	fs_unlock(fs);
	pthread_join(fs->reclaimer, NULL);
	fs->reclaimer_running = 0;
}

/* At close (fs->lock held, nothing looked up any more): free for at most
 * RECLAIM_CLOSE_MS; what is left is the next mount's. */
void
reclaim_at_close(struct fs *fs)
{
	long long end = time_mono_ms() + RECLAIM_CLOSE_MS;
	int r = 0;

	if (fs->readonly)
		return;
	while (time_mono_ms() < end && (r = reclaim_work(fs)) > 0)
		;
	if (r > 0)
		log_info("%s: unmounted before the space of deleted files was "
		    "all freed; the next mount frees the rest", fs->path);
}
