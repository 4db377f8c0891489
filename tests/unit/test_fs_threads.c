/*
 * test_fs_threads.c: one struct fs used by several threads at once, as a
 * mount uses it (FUSE's worker threads, the committer, the reclaimer), so
 * that make unit-tsan has concurrency to look at.  The committer runs with
 * a short interval and checkpoints the WAL on its own connection (a big
 * file is written first, so the WAL passes its threshold), the reclaimer
 * thread frees a big deleted file and every big truncate in batches, and
 * meanwhile:
 *   - WORKERS threads each write, read back, truncate (big enough to be
 *     freed in the background), grow again, rename, set xattrs and
 *     create/remove names, checking every read against a copy in memory:
 *     data read back equals data written, a regrown range reads as zeros;
 *     and now and then hold a big file open (pinned) past its unlink, read
 *     it, and forget it, so the reclaimer frees it;
 *   - one thread stats, looks up (pinning and forgetting), lists and reads
 *     everyone's files and checks what it can: no call fails, a read never
 *     returns more than a file can hold, the deleted big file is never
 *     found again.
 * The filesystem must then close and pass fsck.
 *
 * The checks in threads go to each thread's own counters (unit.h's are not
 * for threads); main turns them into CHECKs after joining.
 */
#include "../../fs/engine/fs.h"
#include "unit.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK 65536
#define BIG_CHUNKS 256           /* 16 MiB: the WAL passes 1000 pages */
#define WORKERS 4
#define ROUNDS 60
#define FILE_MAX (40 * CHUNK)    /* > RECLAIM_INLINE_BYTES (16 chunks) */
#define BLOCK_MAX (3 * CHUNK / 2)

static char dir_tmpl[] = "/tmp/test_fs_threads.XXXXXX";
static char db_path[256];
static const struct fs_ctx root_ctx = { 0, 0 };

/* One worker: its file, the bytes it should hold, what went wrong. */
struct worker {
	struct fs *fs;
	int id;
	uint64_t ino;
	char name[16];
	unsigned char *model;    /* FILE_MAX bytes: the file's expected content */
	uint64_t size;           /* its expected size */
	unsigned char *buf;      /* FILE_MAX bytes to read into */
	unsigned seed;
	int errors;
	char first[160];         /* the first error, for the report */
};

/* The observer thread's state: it runs until the workers are done. */
struct observer {
	struct fs *fs;
	atomic_int *stop;
	struct worker *workers;
	int errors;
	char first[160];
	long rounds;
};

/* Note a failure of a thread (its own counters: no shared state). */
static void
fail(int *errors, char *first, size_t len, const char *what, long long got,
    long long want)
{
	if ((*errors)++ == 0)
		snprintf(first, len, "%s: got %lld, expected %lld", what, got, want);
}

#define W_EXPECT(w, what, got, want) do { \
	long long g_ = (long long)(got), e_ = (long long)(want); \
	if (g_ != e_) \
		fail(&(w)->errors, (w)->first, sizeof((w)->first), what, g_, e_); \
} while (0)

/* A new filesystem opened as a mount opens it, with both threads. */
static struct fs *
open_threaded(void)
{
	struct fs *fs = NULL;

	snprintf(db_path, sizeof(db_path), "%s/fs.db", dir_tmpl);
	CHECK_INT(fs_mkfs(db_path, 0, 0), 0);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	if (!fs)
		return NULL;
	/* a quota, so that every write and batch also keeps its count */
	CHECK_INT(fs_quota_set(fs, 1ULL << 30, 0), 0);
	CHECK_INT(fs_committer_start(fs, 5), 0);
	CHECK_INT(fs_reclaimer_start(fs, 1), 0);
	return fs;
}

/* Create /big with BIG_CHUNKS chunks of data. */
static int
make_big(struct fs *fs)
{
	unsigned char *buf = malloc(CHUNK);
	struct fs_attr a;
	int r = 0;

	if (!buf || fs_mknod(fs, &root_ctx, 1, "big", S_IFREG | 0644, 0, 0, &a))
		r = -1;
	for (int i = 0; r == 0 && i < BIG_CHUNKS; i++) {
		memset(buf, i % 250 + 1, CHUNK);
		if (fs_write(fs, a.ino, (uint64_t)i * CHUNK, buf, CHUNK) != CHUNK)
			r = -1;
	}
	free(buf);
	return r;
}

/* Read the whole file back and compare it with the model. */
static void
worker_verify(struct worker *w, const char *when)
{
	struct fs_attr a;
	ssize_t n;

	W_EXPECT(w, "getattr", fs_getattr(w->fs, w->ino, &a), 0);
	W_EXPECT(w, when, a.size, w->size);
	n = fs_read(w->fs, w->ino, 0, w->buf, FILE_MAX);
	W_EXPECT(w, when, n, (long long)w->size);
	if (n == (ssize_t)w->size && memcmp(w->buf, w->model, w->size) != 0)
		fail(&w->errors, w->first, sizeof(w->first), when, 1, 0);
}

/* Write one block of a byte of this round at a random offset, then read
 * that range back. */
static void
worker_write(struct worker *w, int round)
{
	uint64_t len = 1 + rand_r(&w->seed) % BLOCK_MAX;
	uint64_t off = rand_r(&w->seed) % (FILE_MAX - len);
	int byte = (w->id * 61 + round) % 250 + 1;

	memset(w->model + off, byte, len);
	if (off + len > w->size)
		w->size = off + len;
	W_EXPECT(w, "write", fs_write(w->fs, w->ino, off, w->model + off, len),
	    (long long)len);
	W_EXPECT(w, "read back", fs_read(w->fs, w->ino, off, w->buf, len),
	    (long long)len);
	if (memcmp(w->buf, w->model + off, len) != 0)
		fail(&w->errors, w->first, sizeof(w->first), "read back", 1, 0);
}

/* Shrink the file (freed in the background when it was big); the bytes
 * past the new size must read as zeros when it grows again. */
static void
worker_truncate(struct worker *w)
{
	uint64_t to = rand_r(&w->seed) % (2 * CHUNK);

	if (to < w->size)
		memset(w->model + to, 0, w->size - to);
	w->size = to;
	W_EXPECT(w, "truncate", fs_truncate(w->fs, w->ino, to), 0);
}

/* Names and xattrs: rename the file away and back, a scratch file made
 * and removed, an xattr set and read. */
static void
worker_names(struct worker *w, int round)
{
	char away[24], tmp[24], val[32], got[32];
	struct fs_attr a;
	int len;

	snprintf(away, sizeof(away), "%s.away", w->name);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", w->name, round);
	W_EXPECT(w, "rename away", fs_rename(w->fs, 1, w->name, 1, away, 0), 0);
	W_EXPECT(w, "rename back", fs_rename(w->fs, 1, away, 1, w->name, 0), 0);
	W_EXPECT(w, "mknod", fs_mknod(w->fs, &root_ctx, 1, tmp,
	    S_IFREG | 0600, 0, 0, &a), 0);
	W_EXPECT(w, "unlink", fs_unlink(w->fs, 1, tmp), 0);
	len = snprintf(val, sizeof(val), "round %d", round);
	W_EXPECT(w, "setxattr", fs_setxattr(w->fs, w->ino, "user.round", val,
	    (size_t)len, 0), 0);
	W_EXPECT(w, "getxattr", fs_getxattr(w->fs, w->ino, "user.round", got,
	    sizeof(got)), len);
	if (memcmp(got, val, (size_t)len) != 0)
		fail(&w->errors, w->first, sizeof(w->first), "getxattr", 1, 0);
}

/* A big file held open (pinned, as the kernel holds it) after its unlink:
 * it still reads what was written, and its last forget frees it in the
 * background. */
static void
worker_held_unlinked(struct worker *w, int round)
{
	char name[24];
	struct fs_attr a;
	const uint64_t len = 20 * CHUNK;     /* past RECLAIM_INLINE_BYTES */
	int byte = (w->id * 61 + round) % 250 + 1;

	snprintf(name, sizeof(name), "%s.held%d", w->name, round);
	W_EXPECT(w, "held mknod", fs_mknod(w->fs, &root_ctx, 1, name,
	    S_IFREG | 0600, 0, 1, &a), 0);
	memset(w->buf, byte, len);
	W_EXPECT(w, "held write", fs_write(w->fs, a.ino, 0, w->buf, len),
	    (long long)len);
	W_EXPECT(w, "held unlink", fs_unlink(w->fs, 1, name), 0);
	memset(w->buf, 0, len);
	W_EXPECT(w, "held read", fs_read(w->fs, a.ino, 0, w->buf, len),
	    (long long)len);
	if (w->buf[0] != byte || w->buf[len - 1] != byte ||
	    memcmp(w->buf, w->buf + 1, len - 1) != 0)
		fail(&w->errors, w->first, sizeof(w->first), "held read", 1, 0);
	fs_forget(w->fs, a.ino, 1);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (int round = 0; round < ROUNDS; round++) {
		worker_write(w, round);
		if (round % 10 == 9) {
			worker_verify(w, "before truncate");
			worker_truncate(w);
		}
		if (round % 4 == 0)
			worker_names(w, round);
		if (round % 15 == 7)
			W_EXPECT(w, "sync", fs_sync(w->fs, 0), 0);
		if (round % 20 == 11)
			worker_held_unlinked(w, round);
	}
	worker_verify(w, "at the end");
	return NULL;
}

static int
count_entry(void *arg, const struct fs_dirent *de)
{
	(*(int *)arg)++;
	return 0;
}

/* One look at everything: attributes, names, a directory listing, reads
 * that stay within each file's size, the space numbers. */
static void
observe_once(struct observer *o, unsigned char *buf)
{
	struct fs_attr a;
	struct fs_statfs st;
	uint64_t bytes, inodes;
	int entries = 0, r;

	if (fs_getattr(o->fs, FS_ROOT_INO, &a) != 0 || !S_ISDIR(a.mode))
		fail(&o->errors, o->first, sizeof(o->first), "root", 0, 1);
	r = fs_lookup(o->fs, 1, "big", 0, &a);
	if (r != -ENOENT)
		fail(&o->errors, o->first, sizeof(o->first), "big is gone", r, -ENOENT);
	for (int i = 0; i < WORKERS; i++) {
		struct worker *w = &o->workers[i];
		ssize_t n;

		r = fs_getattr(o->fs, w->ino, &a);
		if (r != 0)
			fail(&o->errors, o->first, sizeof(o->first), "getattr", r, 0);
		/* pinned and forgotten, as the kernel looks up and forgets */
		r = fs_lookup(o->fs, 1, w->name, 1, &a);
		if (r == 0)
			fs_forget(o->fs, a.ino, 1);
		else if (r != -ENOENT)        /* ENOENT: renamed away just now */
			fail(&o->errors, o->first, sizeof(o->first), "lookup", r, 0);
		n = fs_read(o->fs, w->ino, 0, buf, FILE_MAX);
		if (n < 0 || n > FILE_MAX)
			fail(&o->errors, o->first, sizeof(o->first), "read", n, 0);
	}
	if (fs_readdir(o->fs, FS_ROOT_INO, 0, o->rounds % 2, count_entry,
	    &entries) != 0 || entries < WORKERS)
		fail(&o->errors, o->first, sizeof(o->first), "readdir", entries,
		    WORKERS);
	if (fs_statfs(o->fs, &st) != 0 || fs_quota_usage(o->fs, &bytes, &inodes))
		fail(&o->errors, o->first, sizeof(o->first), "statfs", 1, 0);
}

static void *
observer_main(void *arg)
{
	struct observer *o = arg;
	unsigned char *buf = malloc(FILE_MAX);

	if (!buf) {
		fail(&o->errors, o->first, sizeof(o->first), "malloc", 0, 1);
		return NULL;
	}
	while (!atomic_load(o->stop)) {
		observe_once(o, buf);
		o->rounds++;
	}
	free(buf);
	return NULL;
}

/* Each worker's file, made before the threads start. */
static int
workers_init(struct fs *fs, struct worker *ws)
{
	struct fs_attr a;

	for (int i = 0; i < WORKERS; i++) {
		struct worker *w = &ws[i];

		memset(w, 0, sizeof(*w));
		w->fs = fs;
		w->id = i;
		w->seed = 1234u + (unsigned)i;
		snprintf(w->name, sizeof(w->name), "w%d", i);
		w->model = calloc(1, FILE_MAX);
		w->buf = malloc(FILE_MAX);
		if (!w->model || !w->buf ||
		    fs_mknod(fs, &root_ctx, 1, w->name, S_IFREG | 0644, 0, 0, &a))
			return -1;
		w->ino = a.ino;
	}
	return 0;
}

static void
workers_free(struct worker *ws)
{
	for (int i = 0; i < WORKERS; i++) {
		free(ws[i].model);
		free(ws[i].buf);
	}
}

/* Run the workers and the observer while /big is freed in the background;
 * each thread's findings become CHECKs here. */
static void
run_threads(struct fs *fs, struct worker *ws)
{
	pthread_t wt[WORKERS], ot;
	atomic_int stop = 0;
	struct observer o = { .fs = fs, .stop = &stop, .workers = ws };

	CHECK_INT(fs_unlink(fs, 1, "big"), 0);
	CHECK_INT(pthread_create(&ot, NULL, observer_main, &o), 0);
	for (int i = 0; i < WORKERS; i++)
		CHECK_INT(pthread_create(&wt[i], NULL, worker_main, &ws[i]), 0);
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(wt[i], NULL);
		if (ws[i].errors)
			fprintf(stderr, "worker %d: %d errors, first: %s\n", i,
			    ws[i].errors, ws[i].first);
		CHECK_INT(ws[i].errors, 0);
	}
	atomic_store(&stop, 1);
	pthread_join(ot, NULL);
	if (o.errors)
		fprintf(stderr, "observer: %d errors, first: %s\n", o.errors, o.first);
	CHECK_INT(o.errors, 0);
	CHECK(o.rounds > 0);
}

static void
test_threads_share_one_fs(void)
{
	struct fs *fs = open_threaded();
	struct worker ws[WORKERS];
	struct fs_attr a;

	if (!fs)
		return;
	CHECK_INT(make_big(fs), 0);
	CHECK_INT(workers_init(fs, ws), 0);
	run_threads(fs, ws);
	/* what the threads left is what a later open sees */
	fs_close(fs);
	CHECK_INT(fsck_run(db_path, 0, NULL, NULL), 0);
	fs = NULL;
	CHECK_INT(fs_open(db_path, 0, &fs), 0);
	for (int i = 0; fs && i < WORKERS; i++) {
		struct worker *w = &ws[i];

		w->fs = fs;
		w->errors = 0;
		CHECK_INT(fs_lookup(fs, 1, w->name, 0, &a), 0);
		worker_verify(w, "after reopen");
		if (w->errors)
			fprintf(stderr, "%s: %s\n", w->name, w->first);
		CHECK_INT(w->errors, 0);
	}
	if (fs)
		CHECK_INT(fs_lookup(fs, 1, "big", 0, &a), -ENOENT);
	fs_close(fs);
	workers_free(ws);
}

int
main(void)
{
	if (!mkdtemp(dir_tmpl)) {
		perror("mkdtemp");
		return 1;
	}
	TEST(test_threads_share_one_fs);
	if (unit_failed == 0) {
		unlink(db_path);
		char side[300];
		snprintf(side, sizeof(side), "%s-wal", db_path);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", db_path);
		unlink(side);
		rmdir(dir_tmpl);
	}
	return unit_done("test_fs_threads");
}
