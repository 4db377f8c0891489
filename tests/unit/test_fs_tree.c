/*
 * test_fs_tree.c: the live tree view of fs/offline/tree.h reads one moment.  A
 * writer (opened as a mount opens it) changes, adds and removes files and
 * commits while a view is open; the view goes on seeing the tree as it was
 * when it opened: entries, attributes, data, holes, targets and xattrs.
 * A snapshot's view, opened after the same changes, sees the snapshot.
 */
#include "../../fs/engine/fs.h"
#include "../../fs/offline/tree.h"
#include "unit.h"

#define FS_FIXTURE_NAME "test_fs_tree"
#include "fs_fixture.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

/* Make /f (data at 0 and at 1 MiB, a hole between), /l -> f, xattr on /f. */
static uint64_t
make_tree(struct fs *fs)
{
	struct fs_attr a, l;

	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "f", S_IFREG | 0644, 0, 0,
	    &a), 0);
	CHECK_INT(fs_write(fs, a.ino, 0, "old", 3), 3);
	CHECK_INT(fs_write(fs, a.ino, 1 << 20, "end", 3), 3);
	CHECK_INT(fs_setxattr(fs, a.ino, "user.k", "v1", 2, 0), 0);
	CHECK_INT(fs_symlink(fs, &root_ctx, FS_ROOT_INO, "l", "f", 0, &l), 0);
	CHECK_INT(fs_sync(fs, 1), 0);
	return a.ino;
}

/* Change everything make_tree made, and commit. */
static void
change_tree(struct fs *fs, uint64_t ino)
{
	struct fs_attr a;

	CHECK_INT(fs_write(fs, ino, 0, "NEW", 3), 3);
	CHECK_INT(fs_write(fs, ino, 4096, "fill", 4), 4);
	CHECK_INT(fs_setxattr(fs, ino, "user.k", "v2", 2, 0), 0);
	CHECK_INT(fs_unlink(fs, FS_ROOT_INO, "l"), 0);
	CHECK_INT(fs_mknod(fs, &root_ctx, FS_ROOT_INO, "g", S_IFREG | 0644, 0, 0,
	    &a), 0);
	CHECK_INT(fs_sync(fs, 1), 0);
}

/* The root's entries through the view, as "name,name,". */
static void
list_root(struct tree *t, char *out, size_t size)
{
	struct tree_entry e;
	int64_t off = 0;

	out[0] = '\0';
	while (t->ops->next_entry(t->src, FS_ROOT_INO, off, &e) == 1) {
		strncat(out, e.name, size - strlen(out) - 2);
		strcat(out, ",");
		off = e.off;
	}
}

static void
test_view_keeps_its_moment(void)
{
	struct fs *fs = fixture_new_fs();
	struct tree *t = NULL;
	struct fs_attr a;
	char buf[64], names[64];
	uint64_t ino, off;

	ino = make_tree(fs);
	CHECK_INT(tree_open_live(db_path, &t), 0);
	if (!t)
		return;
	change_tree(fs, ino);
	list_root(t, names, sizeof(names));
	CHECK_STR(names, "f,l,");
	CHECK_INT(t->ops->read(t->src, ino, 0, buf, 3), 3);
	CHECK(memcmp(buf, "old", 3) == 0);
	CHECK_INT(t->ops->seek(t->src, ino, 3, SEEK_DATA, &off), 0);
	CHECK_INT(off, 1 << 20);          /* the hole the writer filled */
	CHECK_INT(t->ops->getxattr(t->src, ino, "user.k", buf, sizeof(buf)), 2);
	CHECK(memcmp(buf, "v1", 2) == 0);
	CHECK_INT(t->ops->readlink(t->src, ino + 1, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "f");
	CHECK_INT(t->ops->getattr(t->src, ino, &a), 0);
	CHECK_INT(a.size, (1 << 20) + 3);
	tree_close(t);
	/* A new view sees the change. */
	CHECK_INT(tree_open_live(db_path, &t), 0);
	if (t) {
		list_root(t, names, sizeof(names));
		CHECK_STR(names, "f,g,");
		tree_close(t);
	}
	fs_close(fs);
}

/* The snapshot's view, opened after the changes, sees the tree of before
 * them: entries, attributes, data, holes, targets and xattrs. */
static void
test_snapshot_view_is_its_moment(void)
{
	struct fs *fs = fixture_new_fs();
	struct tree *t = NULL;
	struct fs_attr a;
	char buf[64], names[64];
	uint64_t ino, off;

	ino = make_tree(fs);
	CHECK_INT(fs_snapshot_take(fs, "before", 0, NULL, NULL), 0);
	change_tree(fs, ino);
	CHECK_INT(tree_open_snapshot(db_path, "before", &t), 0);
	if (!t) {
		fs_close(fs);
		return;
	}
	list_root(t, names, sizeof(names));
	CHECK_STR(names, "f,l,");
	CHECK_INT(t->ops->read(t->src, ino, 0, buf, 8), 8);
	CHECK(memcmp(buf, "old\0\0\0\0\0", 8) == 0);
	CHECK_INT(t->ops->read(t->src, ino, (1 << 20) + 1, buf, 64), 2);
	CHECK(memcmp(buf, "nd", 2) == 0);
	CHECK_INT(t->ops->seek(t->src, ino, 0, SEEK_HOLE, &off), 0);
	CHECK_INT(off, 3);
	CHECK_INT(t->ops->seek(t->src, ino, 3, SEEK_DATA, &off), 0);
	CHECK_INT(off, 1 << 20);          /* the hole the writer filled */
	CHECK_INT(t->ops->seek(t->src, ino, (1 << 20) + 3, SEEK_DATA, &off),
	    -ENXIO);
	CHECK_INT(t->ops->getxattr(t->src, ino, "user.k", buf, 1), -ERANGE);
	CHECK_INT(t->ops->getxattr(t->src, ino, "user.k", buf, sizeof(buf)), 2);
	CHECK(memcmp(buf, "v1", 2) == 0);
	CHECK_INT(t->ops->listxattr(t->src, ino, buf, sizeof(buf)), 7);
	CHECK_STR(buf, "user.k");
	CHECK_INT(t->ops->readlink(t->src, ino + 1, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "f");
	CHECK_INT(t->ops->getattr(t->src, ino, &a), 0);
	CHECK_INT(a.size, (1 << 20) + 3);
	CHECK_INT(t->ops->getattr(t->src, ino + 2, &a), -ENOENT);  /* g */
	tree_close(t);
	fs_close(fs);
}

static void
test_snapshot_source_says_why_it_cannot_open(void)
{
	struct fs *fs = fixture_new_fs();
	struct tree *t = NULL;

	fs_close(fs);
	CHECK_INT(tree_open_snapshot(db_path, "nightly", &t), -ENOENT);
	CHECK(t == NULL);
	CHECK_INT(tree_open_snapshot("/nonexistent/ws.db", "a", &t), -ENOENT);
	CHECK_INT(tree_open_live("/nonexistent/ws.db", &t), -ENOENT);
}

int
main(void)
{
	if (fixture_begin())
		return 1;
	TEST(test_view_keeps_its_moment);
	TEST(test_snapshot_view_is_its_moment);
	TEST(test_snapshot_source_says_why_it_cannot_open);
	fixture_end();
	return unit_done("test_fs_tree");
}
