/*
 * test_fs_exerciser.c: the random-operation exerciser (tests/exer/exer.h)
 * on fs/'s core without FUSE, where ThreadSanitizer can watch it (make
 * check runs this test's TSan build too).
 *   - Two threads, each on three files of its own, with the committer
 *     ending groups every 2 ms and the reclaimer's thread running: every
 *     read, through the pooled readers or the writer, matches the model,
 *     whatever the other thread and the commits do meanwhile.  Writes go
 *     both ways the daemon makes them: stamped (fs_write) and from the
 *     writeback cache (fs_write_back).
 *   - One thread with the filesystem closed and opened again at random
 *     points: nothing answered is lost.
 * EXER_FIRST, EXER_SEEDS and EXER_OPS in the environment choose the first
 * seed, how many and how long (make stress).
 */
#include "../../fs/engine/fs.h"
#include "unit.h"

#define FS_FIXTURE_NAME "test_fs_exerciser"
#include "fs_fixture.h"
#include "../exer/exer.c"

#include <pthread.h>

#define THREADS 2

struct core {
	struct fs *fs;
	uint64_t ino[EXER_FILES];
};

static int
be_write(void *arg, const struct exer_op *op, const void *buf)
{
	struct core *c = arg;
	ssize_t n = op->variant ?
	    fs_write_back(c->fs, c->ino[op->file], op->off, buf, op->len) :
	    fs_write(c->fs, c->ino[op->file], op->off, buf, op->len);

	return n < 0 ? (int)n : (uint64_t)n == op->len ? 0 : -EIO;
}

static int
be_read(void *arg, const struct exer_op *op, void *buf, uint64_t size)
{
	struct core *c = arg;

	(void)size;
	return (int)fs_read(c->fs, c->ino[op->file], op->off, buf, op->len);
}

static int
be_truncate(void *arg, const struct exer_op *op)
{
	struct core *c = arg;
	struct fs_setattr sa = { .valid = FS_SET_SIZE, .size = op->off };
	struct fs_attr a;

	if (op->kind == EXER_OPEN_TRUNC)
		return fs_truncate(c->fs, c->ino[op->file], 0);
	if (op->variant)
		return fs_truncate(c->fs, c->ino[op->file], op->off);
	return fs_setattr(c->fs, c->ino[op->file], &sa, &a);
}

static int
be_fallocate(void *arg, const struct exer_op *op)
{
	struct core *c = arg;

	return fs_fallocate(c->fs, c->ino[op->file],
	    exer_falloc_mode(op->variant), op->off, op->len);
}

/* What the kernel makes of copy_file_range on a filesystem without it:
 * a read, then a write. */
static int
be_copy(void *arg, const struct exer_op *op)
{
	struct core *c = arg;
	unsigned char *tmp = malloc(op->len);
	ssize_t n;

	if (!tmp)
		return -ENOMEM;
	n = fs_read(c->fs, c->ino[op->file2], op->off2, tmp, op->len);
	if (n == (ssize_t)op->len)
		n = fs_write(c->fs, c->ino[op->file], op->off, tmp, op->len);
	free(tmp);
	return n < 0 ? (int)n : n == (ssize_t)op->len ? 0 : -EIO;
}

static int
be_seek(void *arg, const struct exer_op *op, uint64_t *out)
{
	struct core *c = arg;

	return fs_seek(c->fs, c->ino[op->file], op->off,
	    op->variant == 0 ? SEEK_DATA : SEEK_HOLE, out);
}

static int
be_fsync(void *arg, const struct exer_op *op)
{
	return fs_sync(((struct core *)arg)->fs, op->variant);
}

/* A remount: closed and opened again, with its threads. */
static int
be_disturb(void *arg, const struct exer_op *op)
{
	struct core *c = arg;
	int r;

	if (op->kind != EXER_REMOUNT)
		return -EINVAL;
	fs_close(c->fs);
	c->fs = NULL;
	if ((r = fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &c->fs)) < 0 ||
	    (r = fs_committer_start(c->fs, 2)) < 0 ||
	    (r = fs_reclaimer_start(c->fs, 1)) < 0)
		return r;
	return 0;
}

static int
be_size(void *arg, int fi, uint64_t *out)
{
	struct core *c = arg;
	struct fs_attr a;
	int r = fs_getattr(c->fs, c->ino[fi], &a);

	*out = a.size;
	return r;
}

static const struct exer_backend core_backend = {
	.write = be_write, .read = be_read, .truncate = be_truncate,
	.fallocate = be_fallocate, .copy = be_copy, .seek = be_seek,
	.fsync = be_fsync, .disturb = be_disturb, .size = be_size,
	.nvariants = {
		[EXER_WRITE] = 2, [EXER_READ] = 1, [EXER_TRUNCATE] = 2,
		[EXER_OPEN_TRUNC] = 1, [EXER_FALLOCATE] = EXER_FALLOC_N,
		[EXER_COPY] = 1, [EXER_SEEK] = 2, [EXER_FSYNC] = 2,
	},
};

/* Three new files named PREFIX0..2 in the root. */
static int
make_files(struct core *c, const char *prefix)
{
	struct fs_attr a;
	char name[16];
	int r;

	for (int i = 0; i < EXER_FILES; i++) {
		snprintf(name, sizeof(name), "%s%d", prefix, i);
		if ((r = fs_mknod(c->fs, &root_ctx, 1, name, S_IFREG | 0644, 0,
		    0, &a)) < 0)
			return r;
		c->ino[i] = a.ino;
	}
	return 0;
}

static unsigned long
env_ulong(const char *name, unsigned long dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoul(v, NULL, 0) : dflt;
}

struct worker {
	struct core core;
	struct exer_backend be;
	uint64_t seed;
	unsigned long ops;
	char name[32];
	int result;
};

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct exer x;

	w->be = core_backend;
	w->be.arg = &w->core;
	w->result = exer_init(&x, w->seed, w->ops, &w->be, w->name) < 0 ? -1 :
	    exer_run(&x);
	exer_free(&x);
	return NULL;
}

/* Two threads on one filesystem, each with its own files. */
static void
test_threads_read_what_they_wrote(void)
{
	unsigned long first = env_ulong("EXER_FIRST", 1);
	unsigned long seeds = env_ulong("EXER_SEEDS", 2);
	unsigned long ops = env_ulong("EXER_OPS", 3000);

	for (unsigned long s = first; s < first + seeds; s++) {
		struct fs *fs = fixture_new_fs();
		struct worker w[THREADS];
		pthread_t th[THREADS];

		if (!fs)
			return;
		CHECK_INT(fs_committer_start(fs, 2), 0);
		CHECK_INT(fs_reclaimer_start(fs, 1), 0);
		for (int i = 0; i < THREADS; i++) {
			memset(&w[i], 0, sizeof(w[i]));
			w[i].core.fs = fs;
			w[i].seed = s * 1000 + (uint64_t)i;
			w[i].ops = ops;
			snprintf(w[i].name, sizeof(w[i].name), "thread %d", i);
			CHECK_INT(make_files(&w[i].core, i ? "g" : "f"), 0);
		}
		for (int i = 0; i < THREADS; i++)
			CHECK_INT(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
		for (int i = 0; i < THREADS; i++) {
			pthread_join(th[i], NULL);
			CHECK_INT(w[i].result, 0);
		}
		fs_close(fs);
	}
}

/* One thread, the filesystem closed and opened again at random. */
static void
test_remounts_keep_what_was_answered(void)
{
	unsigned long first = env_ulong("EXER_FIRST", 1);
	unsigned long seeds = env_ulong("EXER_SEEDS", 2);
	unsigned long ops = env_ulong("EXER_OPS", 3000);

	for (unsigned long s = first; s < first + seeds; s++) {
		struct worker w;
		struct exer x;

		memset(&w, 0, sizeof(w));
		if (!(w.core.fs = fixture_new_fs()))
			return;
		CHECK_INT(fs_committer_start(w.core.fs, 2), 0);
		CHECK_INT(fs_reclaimer_start(w.core.fs, 1), 0);
		CHECK_INT(make_files(&w.core, "f"), 0);
		w.be = core_backend;
		w.be.arg = &w.core;
		w.be.nvariants[EXER_REMOUNT] = 1;
		CHECK_INT(exer_init(&x, s, ops, &w.be, "remounts"), 0);
		x.weights[EXER_REMOUNT] = 1;
		CHECK_INT(exer_run(&x), 0);
		exer_free(&x);
		fs_close(w.core.fs);
	}
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_threads_read_what_they_wrote);
	TEST(test_remounts_keep_what_was_answered);
	fixture_end();
	return unit_done("test_fs_exerciser");
}
