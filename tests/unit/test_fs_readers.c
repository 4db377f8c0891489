/*
 * test_fs_readers.c: reads on the read-only connections (fs/engine/readers.c).
 *   - While an fsync is stuck on the disk (the shim VFS holds every sync),
 *     holding the writer's lock, another thread's getattr, lookup, read,
 *     readlink, readdirplus and getxattr all return, with the right
 *     answers.
 *   - Changes answered but not yet committed are what every read shows:
 *     a write in place (same size), the same from the writeback cache
 *     (which writes no inode row), a write to a file whose directory the
 *     group did not touch (lookup and readdirplus of that directory must
 *     show its new size), a rename between two directories, an unlink,
 *     a chmod, a new symlink, a changed extended attribute.
 *   - A reader keeps its snapshot between requests only until a group of
 *     changes ends: after reads, a write and its commit, a checkpoint that
 *     must copy every frame and empty the WAL (it fails while any
 *     connection still reads an older snapshot) succeeds, and the reads
 *     after it see the write.
 *   - What a reader remembers of the last file it read (its size and
 *     where its chunks are) lasts only as long as its snapshot: a chunk
 *     rewritten whole moves to a new block while a workspace snapshot keeps
 *     the old one readable, and a reader that had read the chunk reads the
 *     new bytes after the commit, and the new size after an append.
 */
#include "../../fs/engine/fs.h"
#include "unit.h"

#define FS_FIXTURE_NAME "test_fs_readers"
#include "fs_fixture.h"
#include "shim_vfs.h"

#include <errno.h>
#include <sqlite3.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>

#define CHUNK 65536
#define FILE_SIZE (3 * CHUNK)

/* The inodes a test made: a file with data, a directory holding x and y,
 * an empty directory e and a symlink l. */
struct tree {
	uint64_t f, d, x, y, e, l;
};

/* Make the tree under the root, f full of 'a', x and y 100 bytes of 'x',
 * and commit it. */
static void
make_tree(struct fs *fs, struct tree *t)
{
	static unsigned char buf[FILE_SIZE];
	struct fs_attr a;

	memset(buf, 'a', sizeof(buf));
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "f", S_IFREG | 0644, 0, 0, &a), 0);
	t->f = a.ino;
	CHECK_INT(fs_write(fs, t->f, 0, buf, FILE_SIZE), FILE_SIZE);
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "d", S_IFDIR | 0755, 0, 0, &a), 0);
	t->d = a.ino;
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "e", S_IFDIR | 0755, 0, 0, &a), 0);
	t->e = a.ino;
	CHECK_INT(fs_mknod(fs, &root_ctx, t->d, "x", S_IFREG | 0644, 0, 0, &a), 0);
	t->x = a.ino;
	CHECK_INT(fs_mknod(fs, &root_ctx, t->d, "y", S_IFREG | 0644, 0, 0, &a), 0);
	t->y = a.ino;
	memset(buf, 'x', 100);
	CHECK_INT(fs_write(fs, t->x, 0, buf, 100), 100);
	CHECK_INT(fs_write(fs, t->y, 0, buf, 100), 100);
	CHECK_INT(fs_symlink(fs, &root_ctx, 1, "l", "target", 0, &a), 0);
	t->l = a.ino;
	CHECK_INT(fs_setxattr(fs, t->f, "user.k", "v1", 2, 0), 0);
	CHECK_INT(fs_sync(fs, 0), 0);
}

/* readdir callback: remember each entry's name, size and inode. */
struct listing {
	int n;
	char names[8][16];
	uint64_t sizes[8];
};

static int
list_entry(void *arg, const struct fs_dirent *de)
{
	struct listing *l = arg;

	if (l->n < 8) {
		snprintf(l->names[l->n], sizeof(l->names[0]), "%s", de->name);
		l->sizes[l->n] = de->attr ? de->attr->size : 0;
	}
	l->n++;
	return 0;
}

/* The size readdirplus of dir shows for name, or -1 when not listed. */
static long long
listed_size(struct fs *fs, uint64_t dir, const char *name)
{
	struct listing l = { 0 };

	if (fs_readdir(fs, dir, 0, 1, list_entry, &l) != 0)
		return -2;
	for (int i = 0; i < l.n && i < 8; i++)
		if (strcmp(l.names[i], name) == 0)
			return (long long)l.sizes[i];
	return -1;
}

/* What the reading thread saw while the fsync was held. */
struct reading {
	struct fs *fs;
	const struct tree *t;
	int errors;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int done;
};

/* Count a wrong answer of the reading thread. */
static void
reading_expect(struct reading *r, long long got, long long want)
{
	if (got != want) {
		fprintf(stderr, "reader: got %lld, expected %lld\n", got, want);
		r->errors++;
	}
}

/* Every kind of read once, then say done. */
static void *
reading_main(void *arg)
{
	static unsigned char buf[FILE_SIZE];
	struct reading *r = arg;
	struct fs_attr a;
	char target[32];

	reading_expect(r, fs_getattr(r->fs, r->t->f, &a), 0);
	reading_expect(r, (long long)a.size, FILE_SIZE);
	reading_expect(r, fs_read(r->fs, r->t->f, 0, buf, FILE_SIZE), FILE_SIZE);
	reading_expect(r, buf[FILE_SIZE - 1], 'b');
	reading_expect(r, buf[0], 'a');
	reading_expect(r, fs_lookup(r->fs, r->t->d, "x", 1, &a), 0);
	reading_expect(r, (long long)a.ino, (long long)r->t->x);
	reading_expect(r, fs_lookup(r->fs, r->t->d, "none", 0, &a), -ENOENT);
	reading_expect(r, fs_readlink(r->fs, r->t->l, target, sizeof(target)), 6);
	reading_expect(r, listed_size(r->fs, r->t->d, "y"), 100);
	reading_expect(r, fs_getxattr(r->fs, r->t->f, "user.k", target,
	    sizeof(target)), 2);
	pthread_mutex_lock(&r->mu);
	r->done = 1;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* 1 once the reading thread is done, 0 if it is not within secs. */
static int
reading_done(struct reading *r, int secs)
{
	struct timespec ts;
	int done;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += secs;
	pthread_mutex_lock(&r->mu);
	while (!r->done &&
	    pthread_cond_timedwait(&r->cond, &r->mu, &ts) == 0)
		;
	done = r->done;
	pthread_mutex_unlock(&r->mu);
	return done;
}

/* fs_sync(fs, 1) on a thread of its own. */
static void *
fsync_main(void *arg)
{
	return (void *)(intptr_t)fs_sync(arg, 1);
}

/* Reads go on while an fsync holds the writer, stuck on the disk. */
static void
test_reads_while_fsync_waits(void)
{
	struct reading r = { .mu = PTHREAD_MUTEX_INITIALIZER,
	    .cond = PTHREAD_COND_INITIALIZER };
	struct fs *fs = fixture_new_fs();
	pthread_t syncer, reader;
	struct tree t;
	void *ret;

	if (!fs)
		return;
	make_tree(fs, &t);
	/* Answered, not committed: the fsync commits it, then syncs. */
	CHECK_INT(fs_write(fs, t.f, FILE_SIZE - 1, "b", 1), 1);
	shim_hold_syncs();
	CHECK_INT(pthread_create(&syncer, NULL, fsync_main, fs), 0);
	CHECK(shim_sync_waiting(10));
	r.fs = fs;
	r.t = &t;
	CHECK_INT(pthread_create(&reader, NULL, reading_main, &r), 0);
	/* Not a speed test: the fsync stays stuck until the reads are done,
	 * or until this gives up on them. */
	CHECK(reading_done(&r, 20));
	shim_release_syncs();
	pthread_join(syncer, &ret);
	pthread_join(reader, NULL);
	CHECK_INT((int)(intptr_t)ret, 0);
	CHECK_INT(r.errors, 0);
	fs_forget(fs, t.x, 1);       /* the reader's lookup, a write */
	fs_close(fs);
}

/* Every read shows what was answered, committed or not. */
static void
test_reads_see_answered_changes(void)
{
	static unsigned char buf[FILE_SIZE];
	struct fs *fs = fixture_new_fs();
	struct fs_setattr sa = { .valid = FS_SET_MODE, .mode = 0600 };
	struct fs_attr a;
	struct tree t;
	char target[32];

	if (!fs)
		return;
	make_tree(fs, &t);
	/* A write in place, the size unchanged. */
	memset(buf, 'c', 4096);
	CHECK_INT(fs_write(fs, t.f, CHUNK + 100, buf, 4096), 4096);
	CHECK_INT(fs_read(fs, t.f, CHUNK, buf, 8192), 8192);
	CHECK_INT(buf[99], 'a');
	CHECK_INT(buf[100], 'c');
	CHECK_INT(buf[4195], 'c');
	CHECK_INT(buf[4196], 'a');
	/* The same from the writeback cache, which keeps the times: neither
	 * the in-place write nor the size writes the inode's row. */
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(fs_read(fs, t.f, 2 * CHUNK, buf, 1), 1);
	memset(buf, 'w', 4096);
	CHECK_INT(fs_write_back(fs, t.f, 2 * CHUNK + 10, buf, 4096), 4096);
	CHECK_INT(fs_read(fs, t.f, 2 * CHUNK, buf, 8192), 8192);
	CHECK_INT(buf[9], 'a');
	CHECK_INT(buf[10], 'w');
	CHECK_INT(buf[4105], 'w');
	CHECK_INT(buf[4106], 'a');
	/* x grows; its directory d is not touched. */
	CHECK_INT(fs_write(fs, t.x, 100, buf, 50), 50);
	CHECK_INT(fs_lookup(fs, t.d, "x", 0, &a), 0);
	CHECK_INT(a.size, 150);
	CHECK_INT(listed_size(fs, t.d, "x"), 150);
	CHECK_INT(fs_getattr(fs, t.x, &a), 0);
	CHECK_INT(a.size, 150);
	/* y moves from d to e; x goes. */
	CHECK_INT(fs_rename(fs, t.d, "y", t.e, "y2", 0), 0);
	CHECK_INT(fs_lookup(fs, t.d, "y", 0, &a), -ENOENT);
	CHECK_INT(fs_lookup(fs, t.e, "y2", 0, &a), 0);
	CHECK_INT(a.ino, t.y);
	CHECK_INT(listed_size(fs, t.e, "y2"), 100);
	CHECK_INT(fs_unlink(fs, t.d, "x"), 0);
	CHECK_INT(listed_size(fs, t.d, "x"), -1);
	/* A chmod, and a new symlink. */
	CHECK_INT(fs_setattr(fs, t.f, &sa, &a), 0);
	CHECK_INT(fs_getattr(fs, t.f, &a), 0);
	CHECK_INT(a.mode & 07777, 0600);
	CHECK_INT(fs_symlink(fs, &root_ctx, t.e, "l2", "elsewhere", 0, &a), 0);
	CHECK_INT(fs_readlink(fs, a.ino, target, sizeof(target)), 9);
	CHECK_STR(target, "elsewhere");
	/* A changed extended attribute. */
	CHECK_INT(fs_setxattr(fs, t.f, "user.k", "v22", 3, 0), 0);
	memset(target, 0, sizeof(target));
	CHECK_INT(fs_getxattr(fs, t.f, "user.k", target, sizeof(target)), 3);
	CHECK_STR(target, "v22");
	/* And all of it still so once committed. */
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(fs_lookup(fs, t.e, "y2", 0, &a), 0);
	CHECK_INT(listed_size(fs, t.d, "x"), -1);
	CHECK_INT(fs_read(fs, t.f, CHUNK + 100, buf, 1), 1);
	CHECK_INT(buf[0], 'c');
	fs_close(fs);
}

/* Reads keep a snapshot until the next group of changes ends. */
static void
test_snapshots_end_with_groups(void)
{
	static unsigned char buf[FILE_SIZE];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	struct tree t;

	if (!fs)
		return;
	make_tree(fs, &t);
	for (int round = 0; round < 3; round++) {
		/* Reads on the pooled connections. */
		CHECK_INT(fs_read(fs, t.f, 0, buf, FILE_SIZE), FILE_SIZE);
		CHECK_INT(fs_getattr(fs, t.x, &a), 0);
		CHECK_INT(fs_lookup(fs, t.d, "y", 0, &a), 0);
		memset(buf, 'd' + round, 100);
		CHECK_INT(fs_write(fs, t.x, 0, buf, 100), 100);
		CHECK_INT(fs_sync(fs, 0), 0);
		CHECK_INT(fixture_checkpoint_truncate(), SQLITE_OK);
		memset(buf, 0, 100);
		CHECK_INT(fs_read(fs, t.x, 0, buf, 100), 100);
		CHECK_INT(buf[99], 'd' + round);
	}
	fs_close(fs);
}

/* The 4 KiB at off of ino: 1 when every byte is c. */
static int
reads_as(struct fs *fs, uint64_t ino, uint64_t off, int c)
{
	unsigned char b[4096];

	memset(b, 0, sizeof(b));
	if (fs_read(fs, ino, off, b, sizeof(b)) != (ssize_t)sizeof(b))
		return 0;
	for (size_t i = 0; i < sizeof(b); i++)
		if (b[i] != c)
			return 0;
	return 1;
}

/* A reader's remembered chunks and size go with its snapshot. */
static void
test_remembered_chunks_end_with_snapshots(void)
{
	static unsigned char buf[FILE_SIZE];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;

	if (!fs)
		return;
	memset(buf, 'a', sizeof(buf));
	CHECK_INT(fs_mknod(fs, &root_ctx, 1, "m", S_IFREG | 0644, 0, 0, &a), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, FILE_SIZE), FILE_SIZE);
	CHECK_INT(fs_sync(fs, 1), 0);
	/* The old blocks stay readable in the database. */
	CHECK_INT(fs_snapshot_take(fs, "keep", 0, NULL, NULL), 0);
	CHECK(reads_as(fs, a.ino, CHUNK + 4096, 'a'));
	CHECK(reads_as(fs, a.ino, 2 * CHUNK, 'a'));
	/* Chunk 1 whole: a new block (the snapshot has the old one). */
	memset(buf, 'b', CHUNK);
	CHECK_INT(fs_write(fs, a.ino, CHUNK, buf, CHUNK), CHUNK);
	CHECK_INT(fs_sync(fs, 1), 0);
	CHECK(reads_as(fs, a.ino, CHUNK + 4096, 'b'));
	CHECK(reads_as(fs, a.ino, 2 * CHUNK, 'a'));
	/* The size too: past the old end. */
	memset(buf, 'c', 4096);
	CHECK_INT(fs_write(fs, a.ino, FILE_SIZE, buf, 4096), 4096);
	CHECK_INT(fs_sync(fs, 1), 0);
	CHECK(reads_as(fs, a.ino, FILE_SIZE, 'c'));
	fs_close(fs);
}

int
main(void)
{
	shim_install();
	if (fixture_begin())
		return 1;
	TEST(test_reads_while_fsync_waits);
	TEST(test_reads_see_answered_changes);
	TEST(test_snapshots_end_with_groups);
	TEST(test_remembered_chunks_end_with_snapshots);
	fixture_end();
	return unit_done("test_fs_readers");
}
