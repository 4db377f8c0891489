/*
 * test_fs_cache.c: the metadata caches of the atrium-fs core, without FUSE.
 * The inode set (fs/engine/inoset.c): members, misses, growth, its bound.  The
 * xattr cache (fs/engine/xattr.c): an inode without attributes is answered from
 * memory and without fs->lock (a call made while another thread holds the
 * lock returns), an inode with attributes still reads them, removed and
 * reopened attributes read right, and a cache that outgrows its bound falls
 * back to SQLite without a wrong answer.  The SELinux label and ACLs are
 * refused (EOPNOTSUPP), also a label stored before.  fs_error answers
 * without the lock too.  readdirplus (one query per page) hands out the
 * same attributes as getattr.
 */
#include "../../fs/engine/fs_int.h"
#include "unit.h"
#define FS_FIXTURE_NAME "test_fs_cache"
#include "fs_fixture.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>


/* A new empty filesystem, opened as a mount would open it. */
static struct fs *
new_fs(void)
{
	return fixture_new_fs();
}

/* A new regular file name in the root: its inode number (0 on failure). */
static uint64_t
new_file(struct fs *fs, const char *name)
{
	struct fs_attr a;

	if (fs_mknod(fs, &root_ctx, FS_ROOT_INO, name, S_IFREG | 0644, 0, 0,
	    &a) < 0)
		return 0;
	return a.ino;
}

static void
test_inoset_members(void)
{
	struct inoset s;

	inoset_init(&s, 1000000);
	CHECK_INT(inoset_has(&s, 5), 0);
	CHECK_INT(inoset_add(&s, 0), -EINVAL);
	for (uint64_t i = 1; i <= 100000; i++)
		CHECK_INT(inoset_add(&s, i * 3), 0);
	CHECK_INT(inoset_add(&s, 3), 0);
	CHECK_INT(s.count, 100000);
	for (uint64_t i = 1; i <= 300001; i++)
		if (inoset_has(&s, i) != (i % 3 == 0 && i <= 300000))
			CHECK(!"membership wrong");
	CHECK(s.count * 2 <= s.cap);
	inoset_clear(&s);
	CHECK_INT(inoset_has(&s, 3), 0);
	CHECK_INT(inoset_add(&s, 7), 0);
	CHECK_INT(inoset_has(&s, 7), 1);
	inoset_clear(&s);
}

static void
test_inoset_bound(void)
{
	struct inoset s;

	inoset_init(&s, 3);
	CHECK_INT(inoset_add(&s, 10), 0);
	CHECK_INT(inoset_add(&s, 20), 0);
	CHECK_INT(inoset_add(&s, 30), 0);
	CHECK_INT(inoset_add(&s, 30), 0);       /* a member again: fine */
	CHECK_INT(inoset_add(&s, 40), -ENOSPC);
	CHECK_INT(inoset_has(&s, 40), 0);
	CHECK_INT(inoset_has(&s, 20), 1);
	inoset_clear(&s);
}

/* Value of ino's attribute name as a NUL-terminated string in buf, or the
 * -errno of getxattr. */
static ssize_t
get_str(struct fs *fs, uint64_t ino, const char *name, char *buf, size_t size)
{
	ssize_t n = fs_getxattr(fs, ino, name, buf, size - 1);

	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static void
test_xattr_answers(void)
{
	struct fs *fs = new_fs();
	uint64_t a = new_file(fs, "a"), b = new_file(fs, "b");
	char buf[64];

	CHECK_INT(fs->xattr_inos_known, 1);
	CHECK_INT(fs_getxattr(fs, a, "user.x", NULL, 0), -ENODATA);
	CHECK_INT(fs_listxattr(fs, a, NULL, 0), 0);
	CHECK_INT(fs_setxattr(fs, a, "user.x", "one", 3, 0), 0);
	CHECK_INT(get_str(fs, a, "user.x", buf, sizeof(buf)), 3);
	CHECK_STR(buf, "one");
	CHECK_INT(fs_listxattr(fs, a, buf, sizeof(buf)), 7);
	CHECK_STR(buf, "user.x");
	CHECK_INT(fs_getxattr(fs, b, "user.x", NULL, 0), -ENODATA);
	CHECK_INT(fs_listxattr(fs, b, NULL, 0), 0);
	/* A failed REPLACE adds nothing and says so. */
	CHECK_INT(fs_setxattr(fs, b, "user.x", "v", 1, FS_XATTR_REPLACE),
	    -ENODATA);
	CHECK_INT(fs_removexattr(fs, a, "user.x"), 0);
	CHECK_INT(fs_getxattr(fs, a, "user.x", NULL, 0), -ENODATA);
	CHECK_INT(fs_listxattr(fs, a, NULL, 0), 0);
	CHECK_INT(fs_setxattr(fs, b, "user.y", "two", 3, 0), 0);
	fs_close(fs);

	/* Reopened: the cache is filled from the table. */
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	CHECK_INT(fs->xattr_inos_known, 1);
	CHECK_INT(get_str(fs, b, "user.y", buf, sizeof(buf)), 3);
	CHECK_STR(buf, "two");
	CHECK_INT(fs_getxattr(fs, a, "user.x", NULL, 0), -ENODATA);
	CHECK_INT(fs_listxattr(fs, b, buf, sizeof(buf)), 7);
	fs_close(fs);
}

static void
test_xattr_outgrown(void)
{
	struct fs *fs = new_fs();
	uint64_t ino[4];
	char name[8], buf[16];

	fs->xattr_inos.max = 2;
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ino[i] = new_file(fs, name);
	}
	for (int i = 0; i < 3; i++)
		CHECK_INT(fs_setxattr(fs, ino[i], "user.n", "v", 1, 0), 0);
	CHECK_INT(fs->xattr_inos_known, 0);
	for (int i = 0; i < 3; i++)
		CHECK_INT(get_str(fs, ino[i], "user.n", buf, sizeof(buf)), 1);
	CHECK_INT(fs_getxattr(fs, ino[3], "user.n", NULL, 0), -ENODATA);
	fs_close(fs);

	/* Reopened with more than the bound: unknown, still right. */
	CHECK_INT(fs_open(db_path, FS_OPEN_CLEAN_ORPHANS, &fs), 0);
	fs->xattr_inos.max = 2;
	CHECK_INT(xattr_cache_load(fs), 0);
	CHECK_INT(fs->xattr_inos_known, 0);
	CHECK_INT(get_str(fs, ino[2], "user.n", buf, sizeof(buf)), 1);
	CHECK_INT(fs_getxattr(fs, ino[3], "user.n", NULL, 0), -ENODATA);
	fs_close(fs);
}

/* The SELinux label and ACLs are refused as by a filesystem without them
 * (so that ls -l stops asking for them), for an inode with attributes or
 * without, and a label an older version stored is neither read nor
 * listed. */
static void
test_xattr_label_refused(void)
{
	struct fs *fs = new_fs();
	uint64_t a = new_file(fs, "plain"), b = new_file(fs, "noted");
	char buf[64];

	CHECK_INT(fs_getxattr(fs, a, "security.selinux", NULL, 0), -EOPNOTSUPP);
	CHECK_INT(fs_setxattr(fs, a, "security.selinux", "x", 1, 0), -EOPNOTSUPP);
	CHECK_INT(fs_removexattr(fs, a, "security.selinux"), -EOPNOTSUPP);
	CHECK_INT(fs_getxattr(fs, a, "system.posix_acl_access", NULL, 0),
	    -EOPNOTSUPP);
	CHECK_INT(fs_setxattr(fs, a, "system.posix_acl_access", "x", 1, 0),
	    -EOPNOTSUPP);
	CHECK_INT(fs_setxattr(fs, b, "user.n", "v", 1, 0), 0);
	CHECK_INT(fs_setxattr(fs, b, "security.other", "w", 1, 0), 0);
	fs_lock(fs);
	CHECK_INT(db_commit(fs, 0), 0);
	CHECK_INT(sqlite3_exec(fs->db, "INSERT INTO xattrs(ino, name, value) "
	    "SELECT ino, 'security.selinux', x'61' FROM xattrs WHERE name = "
	    "'user.n'", NULL, NULL, NULL), SQLITE_OK);
	CHECK_INT(sqlite3_changes(fs->db), 1);
	fs_unlock(fs);
	CHECK_INT(fs_getxattr(fs, b, "security.selinux", buf, sizeof(buf)),
	    -EOPNOTSUPP);
	CHECK_INT(fs_getxattr(fs, b, "security.other", buf, sizeof(buf)), 1);
	CHECK_INT(fs_listxattr(fs, b, buf, sizeof(buf)), 22);
	CHECK(memcmp(buf, "security.other\0user.n\0", 22) == 0);
	fs_close(fs);
}

struct probe {
	struct fs *fs;
	uint64_t ino;
	ssize_t get, list;
	int err;
};

/* getxattr and listxattr of an inode without attributes, and the failed
 * state that close(2) of a written file asks for. */
static void *
probe_run(void *arg)
{
	struct probe *p = arg;

	p->get = fs_getxattr(p->fs, p->ino, "security.capability", NULL, 0);
	p->list = fs_listxattr(p->fs, p->ino, NULL, 0);
	p->err = fs_error(p->fs);
	return NULL;
}

/* While another thread holds fs->lock (as a commit or an fsync does), the
 * answers for an inode without attributes and fs_error still come. */
static void
test_xattr_without_lock(void)
{
	struct fs *fs = new_fs();
	struct probe p = { fs, new_file(fs, "quiet"), 1, 1, 1 };
	struct timespec deadline;
	pthread_t t;
	int joined;

	fs_lock(fs);
	CHECK_INT(pthread_create(&t, NULL, probe_run, &p), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	joined = pthread_timedjoin_np(t, NULL, &deadline) == 0;
	fs_unlock(fs);
	CHECK(joined);
	if (!joined)
		pthread_join(t, NULL);
	CHECK_INT(p.get, -ENODATA);
	CHECK_INT(p.list, 0);
	CHECK_INT(p.err, 0);
	fs_close(fs);
}

struct listed {
	int n;
	struct fs_attr attr[8];
	uint32_t mode[8];
};

/* fs_readdir callback: keep each entry's attributes (compared later, as
 * the callback runs under fs->lock). */
static int
listed_keep(void *arg, const struct fs_dirent *de)
{
	struct listed *l = arg;

	if (l->n == 8)
		return 1;
	if (de->attr)
		l->attr[l->n] = *de->attr;
	l->attr[l->n].ino = de->ino;
	l->mode[l->n++] = de->mode;
	return 0;
}

/* 1 when x and y are the same attributes. */
static int
same_attr(const struct fs_attr *x, const struct fs_attr *y)
{
	return x->ino == y->ino && x->mode == y->mode && x->nlink == y->nlink &&
	    x->uid == y->uid && x->gid == y->gid && x->size == y->size &&
	    x->blocks == y->blocks && x->rdev == y->rdev &&
	    x->atime.tv_sec == y->atime.tv_sec &&
	    x->atime.tv_nsec == y->atime.tv_nsec &&
	    x->mtime.tv_sec == y->mtime.tv_sec &&
	    x->mtime.tv_nsec == y->mtime.tv_nsec &&
	    x->ctime.tv_sec == y->ctime.tv_sec &&
	    x->ctime.tv_nsec == y->ctime.tv_nsec;
}

static void
test_readdirplus_attrs(void)
{
	struct fs *fs = new_fs();
	struct listed l = { 0 };
	struct fs_attr a;
	uint64_t f = new_file(fs, "data");
	char block[5000];

	memset(block, 'x', sizeof(block));
	CHECK_INT(fs_write(fs, f, 70000, block, sizeof(block)), sizeof(block));
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "dir", S_IFDIR | 0755, 0,
	    0, &a), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, a.ino, "inner", S_IFREG | 0600, 0, 0,
	    &a), 0);
	CHECK_INT(fs_symlink(fs, &root_ctx, FS_ROOT_INO, "link", "data", 0, &a),
	    0);
	CHECK_INT(fs_readdir(fs, FS_ROOT_INO, 0, 1, listed_keep, &l), 0);
	CHECK_INT(l.n, 5);                      /* ".", "..", data, dir, link */
	for (int i = 0; i < l.n; i++) {
		CHECK_INT(fs_getattr(fs, l.attr[i].ino, &a), 0);
		CHECK(same_attr(&a, &l.attr[i]));
		CHECK_INT(l.mode[i], a.mode);
	}
	CHECK(l.n == 5 && l.attr[2].ino == f && l.attr[2].blocks > 0 &&
	    S_ISDIR(l.attr[3].mode) && l.attr[3].size == 4096 &&
	    S_ISLNK(l.attr[4].mode) && l.attr[4].size == 4);
	/* The entries are pinned once each (and "." and ".." are not). */
	CHECK(inode_pinned(fs, f));
	CHECK(!inode_pinned(fs, FS_ROOT_INO));
	fs_close(fs);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_inoset_members);
	TEST(test_inoset_bound);
	TEST(test_xattr_answers);
	TEST(test_xattr_outgrown);
	TEST(test_xattr_label_refused);
	TEST(test_xattr_without_lock);
	TEST(test_readdirplus_attrs);
	fixture_end();
	return unit_done("test_fs_cache");
}
