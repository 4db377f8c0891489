/*
 * tree.c: the sources of fs/offline/tree.h.  Called by fs/offline/export.c.
 *
 * The live source opens the database read-only (fs_open with
 * FS_OPEN_READONLY: no migration, no cleanup, no write) and holds one read
 * transaction on its connection for as long as the view is open, so that
 * every read of the walk sees the same commit, however long the walk takes
 * and whatever a mounted daemon writes meanwhile.  For that the pooled
 * readers are switched off (readers_off: each of them would take a
 * snapshot of its own) and the xattr cache, which fs_open filled before
 * the transaction began, is filled again inside it.  Its reads are the
 * core's public ones, which on this connection read inside the open
 * transaction (db_read_begin opens none of its own then).
 *
 * Cost to a mounted daemon: none of its locks are held; its checkpoints
 * stop at this view's snapshot, so its WAL may grow for the length of the
 * walk and is reset by its next checkpoint after the view closes.
 *
 * The snapshot source, with the same table of functions, is
 * fs/offline/tree_snap.c's tree_open_snapshot.
 */
#include "fs_int.h"
#include "tree.h"

#include <errno.h>
#include <stdlib.h>

/* The live tree's functions: fs.h's, with the fs as src. */
static int
live_getattr(void *src, uint64_t ino, struct fs_attr *out)
{
	return fs_getattr(src, ino, out);
}

/* What live_next_entry's readdir callback collects. */
struct live_pick {
	struct tree_entry *out;
	int found;
};

/* Take the first entry other than "." and "..", then say full. */
static int
live_pick_one(void *arg, const struct fs_dirent *de)
{
	struct live_pick *p = arg;

	if (strcmp(de->name, ".") == 0 || strcmp(de->name, "..") == 0)
		return 0;
	if (p->found)
		return 1;
	if (strlen(de->name) > FS_NAME_MAX)
		return 1;            /* fsck's I3: never stored, never given */
	strcpy(p->out->name, de->name);
	p->out->ino = de->ino;
	p->out->off = de->off;
	p->found = 1;
	return 0;
}

static int
live_next_entry(void *src, uint64_t dir, int64_t off, struct tree_entry *out)
{
	struct live_pick p = { .out = out };
	int r;

	if ((r = fs_readdir(src, dir, off, 0, live_pick_one, &p)) < 0)
		return r;
	return p.found;
}

static ssize_t
live_read(void *src, uint64_t ino, uint64_t off, void *buf, size_t size)
{
	return fs_read(src, ino, off, buf, size);
}

static int
live_seek(void *src, uint64_t ino, uint64_t off, int whence, uint64_t *out)
{
	return fs_seek(src, ino, off, whence, out);
}

static int
live_readlink(void *src, uint64_t ino, char *buf, size_t size)
{
	return fs_readlink(src, ino, buf, size);
}

static ssize_t
live_listxattr(void *src, uint64_t ino, char *buf, size_t size)
{
	return fs_listxattr(src, ino, buf, size);
}

static ssize_t
live_getxattr(void *src, uint64_t ino, const char *name, void *buf,
    size_t size)
{
	return fs_getxattr(src, ino, name, buf, size);
}

/* End the view's transaction and close its fs. */
static void
live_close(void *src)
{
	struct fs *fs = src;

	fs_lock(fs);
	db_exec(fs, "COMMIT");
	fs_unlock(fs);
	fs_close(fs);
}

static const struct tree_ops live_ops = {
	.getattr = live_getattr,
	.next_entry = live_next_entry,
	.read = live_read,
	.seek = live_seek,
	.readlink = live_readlink,
	.listxattr = live_listxattr,
	.getxattr = live_getxattr,
	.close = live_close,
};

/* Begin the view's one read transaction and take its snapshot now (a
 * BEGIN alone takes it at the first read).  0 or -errno. */
static int
live_begin(struct fs *fs)
{
	int r;

	readers_off(fs);
	fs_lock(fs);
	if ((r = db_exec(fs, "BEGIN")) == 0 &&
	    (r = db_exec(fs, "SELECT count(*) FROM inodes WHERE ino = 1")) == 0)
		r = xattr_cache_load(fs);
	fs_unlock(fs);
	return r;
}

int
tree_open_live(const char *path, struct tree **out)
{
	struct tree *t;
	struct fs *fs;
	int r;

	*out = NULL;
	if ((r = fs_open(path, FS_OPEN_READONLY, &fs)) < 0)
		return r;
	if ((r = live_begin(fs)) < 0 || !(t = calloc(1, sizeof(*t)))) {
		live_close(fs);
		return r < 0 ? r : -ENOMEM;
	}
	t->ops = &live_ops;
	t->src = fs;
	*out = t;
	return 0;
}

void
tree_close(struct tree *t)
{
	if (!t)
		return;
	t->ops->close(t->src);
	free(t);
}
