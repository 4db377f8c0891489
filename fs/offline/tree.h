/*
 * tree.h: a read-only view of a whole workspace tree as it was at one
 * moment, for the programs that walk all of it (fs/offline/export.c).
 *
 * A view is a source behind a table of functions, so that export does not
 * care where the tree comes from: tree_open_live() reads the live tree of
 * a database (mounted or not) through the core's own read functions
 * (fs_getattr, fs_readdir, fs_read, fs_seek, fs_readlink, fs_listxattr,
 * fs_getxattr), all inside one read transaction, so one WAL snapshot; a
 * snapshot's tree plugs in as another source with the same functions.
 * Every function returns 0 (or a count) or -errno, as fs.h's.
 */
#ifndef ATRIUM_FS_TREE_H
#define ATRIUM_FS_TREE_H

#include "fs.h"

/* One directory entry, never "." or "..". */
struct tree_entry {
	char name[FS_NAME_MAX + 1];
	uint64_t ino;
	int64_t off;                 /* the cookie to go on after it */
};

struct tree_ops {
	int (*getattr)(void *src, uint64_t ino, struct fs_attr *out);
	/* The entry of directory dir after cookie off (0: from the start):
	 * 1 with *out filled, 0 when there is none, or -errno. */
	int (*next_entry)(void *src, uint64_t dir, int64_t off,
	    struct tree_entry *out);
	ssize_t (*read)(void *src, uint64_t ino, uint64_t off, void *buf,
	    size_t size);
	/* SEEK_DATA / SEEK_HOLE, as fs_seek. */
	int (*seek)(void *src, uint64_t ino, uint64_t off, int whence,
	    uint64_t *out);
	int (*readlink)(void *src, uint64_t ino, char *buf, size_t size);
	ssize_t (*listxattr)(void *src, uint64_t ino, char *buf, size_t size);
	ssize_t (*getxattr)(void *src, uint64_t ino, const char *name,
	    void *buf, size_t size);
	void (*close)(void *src);
};

struct tree {
	const struct tree_ops *ops;
	void *src;
};

/* The live tree of the database at path, as of now; safe while a daemon
 * has it mounted (a read-only connection, which never blocks the daemon's
 * writer).  0, or -errno as fs_open. */
int tree_open_live(const char *path, struct tree **out);

/* The tree of the snapshot name: -ENOTSUP when the database has no
 * snapshots at all, -ENOENT when it has none of that name, 0 or -errno. */
int tree_open_snapshot(const char *path, const char *name, struct tree **out);

/* Close a view.  Accepts NULL. */
void tree_close(struct tree *t);

#endif
