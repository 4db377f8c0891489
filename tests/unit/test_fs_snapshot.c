/*
 * test_fs_snapshot.c: snapshots in the atrium-fs core (fs/engine/snapshot.c,
 * fs/engine/restore.c, fs/engine/chunks.c) on a temporary database, without
 * FUSE: copy on write of shared blocks (in place, extending, truncating,
 * punching), restore and drop, what a restore keeps for inodes the kernel
 * holds, that a restore puts back every row (a change within one clock tick
 * too) and tells the kernel of each name and inode it holds that changed and of
 * nothing else, names, and fsck's block and snapshot invariants after
 * each step.
 */
#include "../../fs/engine/fs.h"
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
	CHECK_INT(fs_snapshot_take(fs, "s1", 0, NULL, NULL), 0);
	CHECK_INT(fs_snapshot_take(fs, "s1", 0, NULL, NULL), -EEXIST);
	CHECK_INT(fs_snapshot_take(fs, "bad/name", 0, NULL, NULL), -EINVAL);
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
	CHECK_INT(fs_snapshot_take(fs, "a", 0, NULL, NULL), 0);
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
	CHECK_INT(fs_snapshot_take(fs, "s", 0, NULL, NULL), 0);
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

/* Rows that differ between the live tree and snapshot name, both ways,
 * over every table a restore puts back (each column, atime and the stored
 * bytes too); -1 when they cannot be counted.  Read on a connection of the
 * test's own, of what is committed. */
#define BOTH_WAYS(cols, live, snap) "(SELECT count(*) FROM (SELECT " cols \
	" FROM " live " EXCEPT SELECT " cols " FROM " snap ")) + (SELECT " \
	"count(*) FROM (SELECT " cols " FROM " snap " EXCEPT SELECT " cols \
	" FROM " live "))"
#define OF_SNAP(t) "snap_" t " WHERE snap = (SELECT id FROM snapshots WHERE " \
	"name = ?)"
static int
rows_differing(const char *name)
{
	static const char sql[] = "SELECT " BOTH_WAYS("ino, mode, nlink, uid, "
	    "gid, size, rdev, atime, mtime, ctime, atime_ns, mtime_ns, ctime_ns, "
	    "stored", "inodes", OF_SNAP("inodes")) " + " BOTH_WAYS("id, parent, "
	    "name, ino", "dirents", OF_SNAP("dirents")) " + " BOTH_WAYS("ino, "
	    "idx, block, len", "chunks", OF_SNAP("chunks")) " + " BOTH_WAYS(
	    "ino, target", "symlinks", OF_SNAP("symlinks")) " + " BOTH_WAYS(
	    "ino, name, value", "xattrs", OF_SNAP("xattrs"));
	sqlite3 *db;
	sqlite3_stmt *st;
	int n = -1;

	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
		for (int i = 1; i <= sqlite3_bind_parameter_count(st); i++)
			sqlite3_bind_text(st, i, name, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return n;
}

/* Run sql on db_path (the fs closed); 0 or an SQLite code. */
static int
db_run(const char *sql)
{
	sqlite3 *db;
	int rc;

	if ((rc = sqlite3_open(db_path, &db)) == SQLITE_OK)
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
	sqlite3_close(db);
	return rc;
}

/* Make name in parent with the n bytes of buf; its inode number. */
static uint64_t
make_file(struct fs *fs, uint64_t parent, const char *name,
    const unsigned char *buf, size_t n)
{
	struct fs_attr a;

	CHECK_INT(fs_mknod(fs, &root_ctx, parent, name, S_IFREG | 0644, 0, 0,
	    &a), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, buf, n), (int)n);
	return a.ino;
}

/* Every kind of change, and changes that leave a file's inode row as the
 * snapshot has it (rewound by hand, as two changes within one tick of
 * the clock leave it): the restore must put back every row of every
 * table. */
static void
test_restore_puts_back_every_row(void)
{
	static unsigned char one[2 * CHUNK], two[2 * CHUNK];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	uint64_t f, g, h, x, d;

	pattern(one, sizeof(one), 6);
	pattern(two, sizeof(two), 7);
	f = make_file(fs, FS_ROOT_INO, "f", one, sizeof(one));
	g = make_file(fs, FS_ROOT_INO, "g", one, CHUNK);
	h = make_file(fs, FS_ROOT_INO, "tick", one, sizeof(one));
	x = make_file(fs, FS_ROOT_INO, "tock", one, 10);
	CHECK_INT(fs_setxattr(fs, g, "user.k", "v1", 2, 0), 0);
	CHECK_INT(fs_setxattr(fs, x, "user.k", "v1", 2, 0), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "d", S_IFDIR | 0755, 0, 0,
	    &a), 0);
	d = a.ino;
	CHECK_INT(fs_symlink(fs, &root_ctx, d, "l", "../f", 0, &a), 0);
	CHECK_INT(fs_link(fs, g, d, "g2", 0, &a), 0);
	CHECK_INT(fs_snapshot_take(fs, "s", 0, NULL, NULL), 0);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(rows_differing("s"), 0);
	/* content, size, xattrs, links, names, new and removed files */
	CHECK_INT(fs_write(fs, f, CHUNK - 3, two, 10), 10);
	CHECK_INT(fs_truncate(fs, g, 10), 0);
	CHECK_INT(fs_setxattr(fs, g, "user.k", "v2", 2, 0), 0);
	CHECK_INT(fs_setxattr(fs, g, "user.new", "x", 1, 0), 0);
	CHECK_INT(fs_unlink(fs, d, "g2"), 0);
	CHECK_INT(fs_unlink(fs, d, "l"), 0);
	CHECK_INT(fs_rename(fs, FS_ROOT_INO, "f", d, "f-moved", 0), 0);
	make_file(fs, d, "later", two, 100);
	CHECK_INT(fs_mknod(fs, &root_ctx, d, "sub", S_IFDIR | 0755, 0, 0, &a), 0);
	/* a rewrite of one chunk, and an xattr's new value, each in a file
	 * whose inode row is then made the snapshot's again */
	CHECK_INT(fs_write(fs, h, CHUNK, two, CHUNK), CHUNK);
	CHECK_INT(fs_setxattr(fs, x, "user.k", "v2", 2, 0), 0);
	fs_close(fs);
	CHECK_INT(db_run("UPDATE inodes SET (mode, nlink, uid, gid, size, "
	    "rdev, atime, mtime, ctime, atime_ns, mtime_ns, ctime_ns, stored) = "
	    "(SELECT mode, nlink, uid, gid, size, rdev, atime, mtime, ctime, "
	    "atime_ns, mtime_ns, ctime_ns, stored FROM snap_inodes s WHERE "
	    "s.ino = inodes.ino) WHERE ino IN (SELECT ino FROM dirents WHERE "
	    "parent = 1 AND name IN ('tick', 'tock'))"), SQLITE_OK);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	CHECK(rows_differing("s") > 0);
	CHECK_INT(fs_snapshot_restore(fs, "s", NULL), 0);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(rows_differing("s"), 0);
	CHECK(reads_as(fs, h, one, sizeof(one)));
	CHECK(reads_as(fs, f, one, sizeof(one)));
	CHECK_INT(fs_getxattr(fs, x, "user.k", two, 2), 2);
	CHECK(memcmp(two, "v1", 2) == 0);
	fs_close(fs);
	CHECK_INT(fsck_count(0), 0);
}

/* What a restore told the kernel (a recording struct fs_notify). */
#define SEEN_MAX 64
struct seen {
	size_t nentries, ninodes;
	uint64_t parent[SEEN_MAX];
	char name[SEEN_MAX][32];
	uint64_t ino[SEEN_MAX];
	int pages[SEEN_MAX];
};

static void
seen_inode(void *arg, uint64_t ino, int pages)
{
	struct seen *s = arg;

	if (s->ninodes < SEEN_MAX) {
		s->ino[s->ninodes] = ino;
		s->pages[s->ninodes++] = pages;
	}
}

static void
seen_entry(void *arg, uint64_t parent, const char *name)
{
	struct seen *s = arg;

	if (s->nentries < SEEN_MAX) {
		s->parent[s->nentries] = parent;
		snprintf(s->name[s->nentries++], sizeof(s->name[0]), "%s", name);
	}
}

/* How often the kernel was told of parent/name. */
static int
seen_entries(const struct seen *s, uint64_t parent, const char *name)
{
	int n = 0;

	for (size_t i = 0; i < s->nentries; i++)
		n += s->parent[i] == parent && strcmp(s->name[i], name) == 0;
	return n;
}

/* How often the kernel was told of ino (pages: of its pages too). */
static int
seen_inodes(const struct seen *s, uint64_t ino, int pages)
{
	int n = 0;

	for (size_t i = 0; i < s->ninodes; i++)
		n += s->ino[i] == ino && (!pages || s->pages[i]);
	return n;
}

/* Look name up in parent as the kernel does (pinned); its number. */
static uint64_t
hold(struct fs *fs, uint64_t parent, const char *name)
{
	struct fs_attr a;

	CHECK_INT(fs_lookup(fs, parent, name, 1, &a), 0);
	return a.ino;
}

/* With the kernel holding every inode: a file changed after the snapshot
 * (content and size), one made after it, one removed after it and one
 * renamed come back as the snapshot saw them, the kernel is told of each
 * of their names once, and nothing of a file and a directory that did not
 * change, nor of any inode's pages (a changed file the kernel holds comes
 * back under a new number; the one it holds keeps its pages). */
static void
test_restore_tells_the_kernel_what_changed(void)
{
	static unsigned char one[CHUNK + 10], two[2 * CHUNK];
	struct seen seen = { 0 };
	struct fs_notify notify = { &seen, seen_inode, seen_entry };
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	uint64_t changed, created, removed, same, d, inner;

	pattern(one, sizeof(one), 8);
	pattern(two, sizeof(two), 9);
	make_file(fs, FS_ROOT_INO, "changed", one, sizeof(one));
	make_file(fs, FS_ROOT_INO, "removed", one, 100);
	make_file(fs, FS_ROOT_INO, "renamed", one, 200);
	make_file(fs, FS_ROOT_INO, "same", one, sizeof(one));
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "d", S_IFDIR | 0755, 0, 0,
	    &a), 0);
	make_file(fs, a.ino, "inner", one, 300);
	CHECK_INT(fs_snapshot_take(fs, "s", 0, NULL, NULL), 0);
	changed = hold(fs, FS_ROOT_INO, "changed");
	removed = hold(fs, FS_ROOT_INO, "removed");
	hold(fs, FS_ROOT_INO, "renamed");
	same = hold(fs, FS_ROOT_INO, "same");
	d = hold(fs, FS_ROOT_INO, "d");
	inner = hold(fs, d, "inner");
	CHECK_INT(fs_write(fs, changed, 0, two, sizeof(two)), (int)sizeof(two));
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "created", S_IFREG | 0644,
	    0, 1, &a), 0);
	created = a.ino;
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "removed"), 0);
	CHECK_INT(fs_lookup(fs, FS_ROOT_INO, "removed", 0, &a), -ENOENT);
	CHECK_INT(fs_rename(fs, FS_ROOT_INO, "renamed", FS_ROOT_INO, "renamed2",
	    0), 0);
	CHECK_INT(fs_snapshot_restore(fs, "s", &notify), 0);
	/* the tree is the snapshot's */
	CHECK(ino_of(fs, "changed") != changed);
	CHECK(reads_as(fs, ino_of(fs, "changed"), one, sizeof(one)));
	CHECK_INT(fs_getattr(fs, ino_of(fs, "changed"), &a), 0);
	CHECK_INT((int)a.size, (int)sizeof(one));
	CHECK_INT((int)ino_of(fs, "created"), 0);
	CHECK(ino_of(fs, "removed") != 0 &&
	    reads_as(fs, ino_of(fs, "removed"), one, 100));
	CHECK(ino_of(fs, "renamed") != 0 &&
	    reads_as(fs, ino_of(fs, "renamed"), one, 200));
	CHECK_INT((int)ino_of(fs, "renamed2"), 0);
	CHECK_INT((int)ino_of(fs, "same"), (int)same);
	/* each changed name once, the kernel's negative entry included */
	CHECK_INT(seen_entries(&seen, FS_ROOT_INO, "changed"), 1);
	CHECK_INT(seen_entries(&seen, FS_ROOT_INO, "created"), 1);
	CHECK_INT(seen_entries(&seen, FS_ROOT_INO, "removed"), 1);
	CHECK_INT(seen_entries(&seen, FS_ROOT_INO, "renamed"), 1);
	CHECK_INT(seen_entries(&seen, FS_ROOT_INO, "renamed2"), 1);
	CHECK_INT((int)seen.nentries, 5);
	/* the kept inodes' link counts, never pages (the root's row may be
	 * the snapshot's again: its times are of one clock tick here) */
	CHECK_INT(seen_inodes(&seen, changed, 0), 1);
	CHECK_INT(seen_inodes(&seen, created, 0), 1);
	CHECK_INT(seen_inodes(&seen, removed, 0), 1);
	CHECK(seen_inodes(&seen, FS_ROOT_INO, 0) <= 1);
	CHECK_INT(seen_inodes(&seen, same, 0) + seen_inodes(&seen, d, 0) +
	    seen_inodes(&seen, inner, 0), 0);
	for (size_t i = 0; i < seen.ninodes; i++)
		CHECK_INT(seen.pages[i], 0);
	CHECK_INT(fs_sync(fs, 0), 0);
	CHECK_INT(fsck_count(1), 0);
	fs_close(fs);
	CHECK_INT(fsck_count(0), 0);
}

/* A big file deleted after the snapshot and not yet freed: a restore
 * leaves it to the reclaimer, which frees it in batches, rather than
 * delete all its rows in its own transaction; without the reclaimer (as
 * `atrium-fs restore` opens an unmounted database) it deletes it. */
static void
test_restore_leaves_freeing_to_the_reclaimer(void)
{
	static unsigned char buf[20 * CHUNK];
	struct fs *fs = fixture_new_fs();
	struct fs_attr a;
	uint64_t big;

	CHECK_INT(fs_reclaimer_start(fs, 0), 0);
	pattern(buf, sizeof(buf), 10);
	make_file(fs, FS_ROOT_INO, "small", buf, 100);
	CHECK_INT(fs_snapshot_take(fs, "s", 0, NULL, NULL), 0);
	big = make_file(fs, FS_ROOT_INO, "big", buf, sizeof(buf));
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "big"), 0);
	CHECK_INT(fs_getattr(fs, big, &a), 0);          /* not freed yet */
	CHECK_INT(fs_snapshot_restore(fs, "s", NULL), 0);
	CHECK_INT(fs_getattr(fs, big, &a), 0);
	CHECK_INT((int)a.nlink, 0);
	while (fs_reclaim_batch(fs) > 0)
		;
	CHECK_INT(fs_getattr(fs, big, &a), -ENOENT);
	/* what a crash left: a big unlinked file, which the open defers */
	big = make_file(fs, FS_ROOT_INO, "big", buf, sizeof(buf));
	CHECK_INT(fs_sync(fs, 0), 0);
	fs_close(fs);
	CHECK_INT(db_run("UPDATE inodes SET nlink = 0 WHERE ino = (SELECT ino "
	    "FROM dirents WHERE parent = 1 AND name = 'big'); DELETE FROM "
	    "dirents WHERE parent = 1 AND name = 'big'"), SQLITE_OK);
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	CHECK_INT(fs_getattr(fs, big, &a), 0);
	CHECK_INT(fs_snapshot_restore(fs, "s", NULL), 0);
	CHECK_INT(fs_getattr(fs, big, &a), -ENOENT);
	CHECK(reads_as(fs, ino_of(fs, "small"), buf, 100));
	fs_close(fs);
	CHECK_INT(fsck_count(0), 0);
}

/* A new file name of n chunks of pattern seed; its inode. */
static uint64_t
quota_file(struct fs *fs, const char *name, int n, unsigned seed)
{
	static unsigned char buf[CHUNK];
	struct fs_attr a;

	pattern(buf, sizeof(buf), seed);
	if (fs_mknod(fs, &root_ctx, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0,
	    &a) < 0)
		return 0;
	for (int i = 0; i < n; i++)
		if (fs_write(fs, a.ino, (uint64_t)i * CHUNK, buf, CHUNK) != CHUNK)
			return 0;
	return a.ino;
}

/* The figures now. */
static struct fs_quota_figures
quota_now(struct fs *fs)
{
	struct fs_quota_figures q;

	fs_quota_figures(fs, &q);
	return q;
}

/* "write, snapshot, rm" cannot pass the quota: blocks only snapshots keep
 * count, a named snapshot that would not fit is refused with its figures,
 * rm still works in a full room, an undo point and a restore are exempt,
 * and the counts kept op by op are what a fresh count finds. */
static void
test_quota_counts_snapshots(void)
{
	struct fs *fs = fixture_new_fs();
	struct fs_quota_figures q, why, again;

	CHECK_INT(fs_quota_set(fs, 16 * CHUNK, 0), 0);
	CHECK(quota_file(fs, "a", 5, 1) != 0);
	CHECK_INT(fs_snapshot_take(fs, "s1", 0, NULL, NULL), 0);
	q = quota_now(fs);
	CHECK(q.snap_only > 0 && q.snap_only < 4096);     /* its rows only */
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "a"), 0);
	q = quota_now(fs);
	CHECK(q.snap_only >= 5 * CHUNK && q.used >= 5 * CHUNK);
	CHECK(quota_file(fs, "b", 5, 2) != 0);
	CHECK(quota_now(fs).used >= 10 * CHUNK);
	/* s2 would keep b's 5 chunks: 10 + 5 + rows <= 16 */
	CHECK_INT(fs_snapshot_take(fs, "s2", 0, NULL, NULL), 0);
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "b"), 0);
	/* 10 chunks kept by snapshots alone: 7 more cannot be written */
	CHECK(quota_file(fs, "c", 7, 3) == 0);
	memset(&why, 0, sizeof(why));
	CHECK_INT(fs_snapshot_take(fs, "s3", 0, NULL, &why), -EDQUOT);
	CHECK_INT(why.quota, 16 * CHUNK);
	CHECK(why.keep >= 4 * CHUNK && why.used >= 14 * CHUNK);
	CHECK_INT(fs_snapshot_take(fs, "s3", 0, NULL, NULL), -EDQUOT);
	/* an undo point is taken, and rm works in the full room */
	CHECK_INT(fs_snapshot_take(fs, "turn-1", FS_SNAPSHOT_UNDO, NULL, NULL),
	    0);
	q = quota_now(fs);
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "c"), 0);
	CHECK(quota_now(fs).used <= q.used);
	/* a restore is exempt too, and dropping frees what only it held */
	CHECK_INT(fs_snapshot_restore(fs, "s2", NULL), 0);
	CHECK(ino_of(fs, "b") != 0);
	q = quota_now(fs);
	CHECK_INT(fs_snapshot_drop(fs, "s1"), 0);
	CHECK(quota_now(fs).used + 5 * CHUNK <= q.used);
	q = quota_now(fs);
	fs_close(fs);
	CHECK_INT(fsck_count(0), 0);
	CHECK_INT(fs_open(db_path, 0, &fs), 0);
	CHECK_INT(fs_quota_set(fs, 16 * CHUNK, 0), 0);
	again = quota_now(fs);
	CHECK_INT(again.used, q.used);
	CHECK_INT(again.snap_only, q.snap_only);
	CHECK_INT(again.inodes, q.inodes);
	fs_close(fs);
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
	TEST(test_restore_puts_back_every_row);
	TEST(test_restore_tells_the_kernel_what_changed);
	TEST(test_restore_leaves_freeing_to_the_reclaimer);
	TEST(test_names);
	TEST(test_quota_counts_snapshots);
	fixture_end();
	return unit_done("test_fs_snapshot");
}
