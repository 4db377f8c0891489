/*
 * rename.c: fs_rename, the one operation that touches two directories and up
 * to two inodes at once.  Called by fs/daemon/fuse_ops.c and the unit tests.
 *
 * Rules kept here, as a Linux filesystem keeps them: renaming a file over an
 * existing file replaces it (ENOTDIR/EISDIR on a type mismatch), a directory
 * over an empty directory replaces it (ENOTEMPTY otherwise), renaming a name
 * onto another name of the same inode does nothing, a directory cannot move
 * into its own subtree (EINVAL), RENAME_NOREPLACE gives EEXIST and
 * RENAME_EXCHANGE swaps two existing names.  A moved directory's ".." is its
 * dirent's parent, so only the parents' link counts change.
 */
#include "fs_int.h"

#include <errno.h>

/* Upper bound on directory depth while walking up, against a corrupt loop. */
#define RENAME_DEPTH_MAX 100000

/* 1 when dir lies inside (or is) the directory anc, 0 if not, or -errno. */
static int
rename_is_within(struct fs *fs, uint64_t dir, uint64_t anc)
{
	int r;

	for (int depth = 0; depth < RENAME_DEPTH_MAX; depth++) {
		if (dir == anc)
			return 1;
		if (dir == FS_ROOT_INO)
			return 0;
		if ((r = dir_parent(fs, dir, &dir)) < 0)
			return r;
	}
	log_error("directory tree deeper than %d: a loop?", RENAME_DEPTH_MAX);
	return -EIO;
}

/* -EINVAL when moving a (a directory) under newparent would make a loop. */
static int
rename_check_loop(struct fs *fs, const struct fs_attr *a, uint64_t parent,
    uint64_t newparent)
{
	int r;

	if (!S_ISDIR(a->mode) || parent == newparent)
		return 0;
	r = rename_is_within(fs, newparent, a->ino);
	return r < 0 ? r : r ? -EINVAL : 0;
}

/* Link-count and time bookkeeping after a (a directory or not) moved from
 * parent to newparent.  0 or -errno. */
static int
rename_moved(struct fs *fs, const struct fs_attr *a, uint64_t parent,
    uint64_t newparent)
{
	int r;

	if (S_ISDIR(a->mode) && parent != newparent &&
	    ((r = inode_add_nlink(fs, parent, -1)) < 0 ||
	    (r = inode_add_nlink(fs, newparent, 1)) < 0))
		return r;
	return inode_touch(fs, a->ino, INODE_CTIME);
}

/* Swap two existing names (RENAME_EXCHANGE).  0 or -errno. */
static int
rename_exchange(struct fs *fs, uint64_t parent, const char *name,
    const struct fs_attr *sa, uint64_t newparent, const char *newname,
    const struct fs_attr *da)
{
	int r;

	if ((r = rename_check_loop(fs, sa, parent, newparent)) < 0 ||
	    (r = rename_check_loop(fs, da, newparent, parent)) < 0 ||
	    (r = dir_set_ino(fs, parent, name, da->ino)) < 0 ||
	    (r = dir_set_ino(fs, newparent, newname, sa->ino)) < 0 ||
	    (r = rename_moved(fs, sa, parent, newparent)) < 0 ||
	    (r = rename_moved(fs, da, newparent, parent)) < 0)
		return r;
	return 0;
}

/* Check that da may be replaced by sa: 0, -EISDIR, -ENOTDIR, -ENOTEMPTY. */
static int
rename_check_replace(struct fs *fs, const struct fs_attr *sa,
    const struct fs_attr *da)
{
	int r;

	if (S_ISDIR(da->mode)) {
		if (!S_ISDIR(sa->mode))
			return -EISDIR;
		if ((r = dir_is_empty(fs, da->ino)) <= 0)
			return r < 0 ? r : -ENOTEMPTY;
		return 0;
	}
	return S_ISDIR(sa->mode) ? -ENOTDIR : 0;
}

/* The body of fs_rename once both names are resolved (da NULL when the
 * target name is free).  0 or -errno. */
static int
rename_move(struct fs *fs, uint64_t parent, const char *name,
    const struct fs_attr *sa, uint64_t newparent, const char *newname,
    const struct fs_attr *da)
{
	int r;

	if ((r = rename_check_loop(fs, sa, parent, newparent)) < 0)
		return r;
	if (da) {
		if ((r = rename_check_replace(fs, sa, da)) < 0)
			return r;
		/* Drop the old target first so its name is free. */
		if ((r = dir_remove(fs, newparent, newname)) < 0 ||
		    (r = inode_add_nlink(fs, da->ino,
		    S_ISDIR(da->mode) ? -(int)da->nlink : -1)) < 0 ||
		    (S_ISDIR(da->mode) &&
		    (r = inode_add_nlink(fs, newparent, -1)) < 0))
			return r;
	}
	if ((r = dir_move(fs, parent, name, newparent, newname)) < 0 ||
	    (r = rename_moved(fs, sa, parent, newparent)) < 0)
		return r;
	return da ? inode_release(fs, da->ino) : 0;
}

/* Resolve and check both names, then move or exchange.  0 or -errno. */
static int
rename_do(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
    const char *newname, unsigned flags)
{
	struct fs_attr sa, da, npa;
	uint64_t sino, dino;
	int r, exists;

	if ((r = dir_check_name(newname)) < 0 ||
	    (r = dir_lookup(fs, parent, name, &sino)) < 0 ||
	    (r = inode_get(fs, sino, &sa)) < 0 ||
	    (r = inode_get(fs, newparent, &npa)) < 0)
		return r;
	if (!S_ISDIR(npa.mode))
		return -ENOTDIR;
	r = dir_lookup(fs, newparent, newname, &dino);
	if (r < 0 && r != -ENOENT)
		return r;
	exists = r == 0;
	if (exists && (r = inode_get(fs, dino, &da)) < 0)
		return r;
	if (flags & FS_RENAME_EXCHANGE) {
		if (!exists)
			return -ENOENT;
		if (sino == dino)
			return 0;
		r = rename_exchange(fs, parent, name, &sa, newparent, newname, &da);
	} else {
		if (exists && (flags & FS_RENAME_NOREPLACE))
			return -EEXIST;
		if (exists && sino == dino)
			return 0;
		r = rename_move(fs, parent, name, &sa, newparent, newname,
		    exists ? &da : NULL);
	}
	if (r == 0 && (r = inode_touch(fs, parent, INODE_MTIME | INODE_CTIME)) == 0 &&
	    newparent != parent)
		r = inode_touch(fs, newparent, INODE_MTIME | INODE_CTIME);
	return r;
}

/* Rename, replace or exchange names: 0 or -errno. */
int
fs_rename(struct fs *fs, uint64_t parent, const char *name, uint64_t newparent,
    const char *newname, unsigned flags)
{
	int r;

	if ((flags & ~(FS_RENAME_NOREPLACE | FS_RENAME_EXCHANGE)) ||
	    (flags & FS_RENAME_NOREPLACE && flags & FS_RENAME_EXCHANGE))
		return -EINVAL;
	if (strlen(name) > FS_NAME_MAX)
		return -ENAMETOOLONG;
	fs_lock(fs);
	if ((r = db_op_begin(fs, DB_GROW_META,
	    core_entry_size(fs, newparent, newname))) == 0)
		r = db_op_end(fs, rename_do(fs, parent, name, newparent, newname,
		    flags));
	fs_unlock(fs);
	return r;
}
