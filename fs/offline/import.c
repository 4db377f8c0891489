/*
 * import.c: `atrium-fs import DB`, a tar archive from a file descriptor
 * into a new workspace.  Called by fs/fs_main.c; reads through libarchive
 * (any tar it knows: pax, GNU, ustar; compressed or not) and writes
 * through the core's own calls (fs_mknod, fs_symlink, fs_link, fs_write,
 * fs_setxattr, fs_setattr), so every rule of the core holds for what it
 * makes, and triggers, stored bytes and quotas stay right.
 *
 * The archive is untrusted input.  A member is refused, and the import
 * ends with a message naming it, when:
 *   - its name is absolute, has a ".." component, has a component longer
 *     than FS_NAME_MAX bytes, or is longer than IMPORT_PATH_MAX;
 *   - a component on its way is not a directory (a member never goes
 *     through a symlink or a file that an earlier member made);
 *   - it is a hard link to a name that is not in the workspace yet, to a
 *     directory, or to a name of the same kinds as above;
 *   - it would replace a directory with something else;
 *   - an extended attribute's name or value is over the core's limits, or
 *     one the core refuses (system.*), or it has a POSIX or NFSv4 ACL
 *     (a workspace keeps none, and dropping one could grant access), or
 *     its uid, gid, size or a data range is out of range;
 *   - it is of a type a workspace cannot hold (a socket) or one the core
 *     refuses (device nodes, where that is so).
 * Symlink targets are kept as they are (as tar keeps them): the import
 * never follows one, and inside the workspace they resolve in the sandbox.
 *
 * The database must be new (it is made) or hold nothing but its root.
 * The mount lock is taken first, before the database is made or opened,
 * and held to the end: no daemon can mount it half-filled, and an import
 * into a database that a daemon serves (or is starting to serve) is
 * refused before anything is made or removed.  A database this command
 * made is removed again when the import fails, while the lock is still
 * held, with its lock file when this command made that too.
 *
 * import_into reads the rest of an archive the caller opened (a room's
 * archive, fs/offline/room_archive.c), where every member must be under a
 * prefix that is cut off, every inode may be given one owner, and the
 * workspace's quota holds while it fills (-EDQUOT ends it).
 *
 * Workload: any size in bounded memory.  Data moves a block at a time from
 * libarchive to fs_write; sparse members only write their data ranges and
 * then set the size, so holes stay holes.  Directories' times are set last
 * (their entries change them): each one is appended to an unlinked
 * temporary file, 40 bytes a directory, and read back at the end.
 */
#include "commands.h"
#include "fs_int.h"
#include "mount.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Longest member name accepted: 16 Linux paths. */
#define IMPORT_PATH_MAX (16 * 4096)
/* libarchive's read buffer, so the largest block handed to fs_write. */
#define IMPORT_BLOCK (1u << 20)

struct import {
	const struct import_opts *o;	/* never NULL */
	struct fs *fs;
	struct archive *a;
	FILE *dirtimes;          /* struct import_dirtime records */
	const char *member;      /* the member at hand, for messages */
	uint64_t members;
};

/* A directory's times, set at the end. */
struct import_dirtime {
	uint64_t ino;
	int64_t atime, mtime, ctime;
	int32_t atime_ns, mtime_ns, ctime_ns, has_ctime;
};

/* Refuse the member at hand: why on stderr, -1. */
static int
import_refuse(struct import *im, const char *why, const char *what)
{
	fprintf(stderr, "atrium-fs: import: member \"%s\": %s%s%s\n",
	    im->member ? im->member : "?", why, what ? ": " : "",
	    what ? what : "");
	return -1;
}

/* The same for an error of the core. */
static int
import_failed(struct import *im, const char *doing, int r)
{
	return import_refuse(im, doing, strerror(-r));
}

/* The next component of *p (advanced past it), skipping empty and "."
 * ones; NULL at the end.  Cuts the path in place. */
static char *
import_next_name(char **p)
{
	char *s = *p, *end;

	while (s) {
		end = strchr(s, '/');
		if (end)
			*end++ = '\0';
		*p = end;
		if (*s && strcmp(s, ".") != 0)
			return s;
		s = end;
	}
	return NULL;
}

/* Check one component: 0, or -1 (refused). */
static int
import_check_name(struct import *im, const char *name)
{
	if (strcmp(name, "..") == 0)
		return import_refuse(im, "a name with \"..\" in it is refused",
		    NULL);
	if (strlen(name) > FS_NAME_MAX)
		return import_refuse(im, "a component is longer than 255 bytes",
		    NULL);
	return 0;
}

/* Enter directory name under *dir, making it (0755, root's) when missing
 * and make is set.  0 or -1 (refused). */
static int
import_enter(struct import *im, uint64_t *dir, const char *name, int make)
{
	static const struct fs_ctx root = { 0, 0 };
	struct fs_attr a;
	int r;

	r = fs_lookup(im->fs, *dir, name, 0, &a);
	if (r == -ENOENT && make)
		r = fs_mknod(im->fs, &root, *dir, name, S_IFDIR | 0755, 0, 0, &a);
	if (r == -ENOENT)
		return import_refuse(im, "it names something the archive has not "
		    "made before it", name);
	if (r < 0)
		return import_failed(im, "looking up a directory", r);
	if (!S_ISDIR(a.mode))
		return import_refuse(im, "its path goes through something that is "
		    "not a directory (a symlink or a file)", name);
	*dir = a.ino;
	return 0;
}

/* The member name path without the archive's prefix (import_opts): the
 * rest, "" for the root; NULL (refused) when path is not under it. */
static char *
import_unprefix(struct import *im, char *path)
{
	size_t n;

	if (!im->o->prefix)
		return path;
	n = strlen(im->o->prefix);
	if (strncmp(path, im->o->prefix, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/'))
		return path + n + (path[n] == '/');
	import_refuse(im, "it is not under", im->o->prefix);
	return NULL;
}

/* Walk path (cut in place) from the root: its parent directory into
 * *parent, its last name into *name (NULL for the root itself).  make
 * makes missing directories on the way.  0 or -1 (refused). */
static int
import_walk(struct import *im, char *path, int make, uint64_t *parent,
    char **name)
{
	char *p = path, *cur, *next;

	*parent = FS_ROOT_INO;
	*name = NULL;
	if (strlen(path) > IMPORT_PATH_MAX)
		return import_refuse(im, "its name is too long", NULL);
	if (path[0] == '/')
		return import_refuse(im, "an absolute name is refused", NULL);
	if (!(cur = import_next_name(&p)))
		return 0;
	if (import_check_name(im, cur) < 0)
		return -1;
	while ((next = import_next_name(&p))) {
		if (import_check_name(im, next) < 0 ||
		    import_enter(im, parent, cur, make) < 0)
			return -1;
		cur = next;
	}
	*name = cur;
	return 0;
}

/* Make room for a member of type (S_IFMT bits) at parent/name: remove a
 * file that is there (tar's way), keep a directory for a directory (its
 * inode into *ino, else 0).  0 or -1 (refused). */
static int
import_make_room(struct import *im, uint64_t parent, const char *name,
    uint32_t type, uint64_t *ino)
{
	struct fs_attr a;
	int r;

	*ino = 0;
	if ((r = fs_lookup(im->fs, parent, name, 0, &a)) == -ENOENT)
		return 0;
	if (r < 0)
		return import_failed(im, "looking it up", r);
	if (S_ISDIR(a.mode)) {
		if (type != S_IFDIR)
			return import_refuse(im, "it would replace a directory",
			    NULL);
		*ino = a.ino;
		return 0;
	}
	if ((r = fs_unlink(im->fs, parent, name)) < 0)
		return import_failed(im, "replacing the earlier member", r);
	return 0;
}

/* The member's owner, checked.  0 or -1 (refused). */
static int
import_owner(struct import *im, struct archive_entry *e, struct fs_ctx *ctx)
{
	la_int64_t uid = archive_entry_uid(e), gid = archive_entry_gid(e);

	if (uid < 0 || gid < 0 || uid >= UINT32_MAX || gid >= UINT32_MAX)
		return import_refuse(im, "its uid or gid is out of range", NULL);
	ctx->uid = im->o->owner ? im->o->uid : (uint32_t)uid;
	ctx->gid = im->o->owner ? im->o->gid : (uint32_t)gid;
	return 0;
}

/* Make the member's inode at parent/name: its number into *ino.  0 or -1. */
static int
import_create(struct import *im, struct archive_entry *e, uint64_t parent,
    const char *name, uint64_t *ino)
{
	uint32_t type = archive_entry_filetype(e);
	uint32_t perm = archive_entry_perm(e) & 07777;
	const char *target;
	struct fs_attr a;
	struct fs_ctx ctx;
	int r;

	if (import_owner(im, e, &ctx) < 0 ||
	    import_make_room(im, parent, name, type, ino) < 0)
		return -1;
	if (*ino)
		return 0;             /* a directory that is there already */
	switch (type) {
	case AE_IFLNK:
		target = archive_entry_symlink(e);
		if (!target || !*target || strlen(target) > FS_SYMLINK_MAX)
			return import_refuse(im, "its symlink target is empty or "
			    "longer than 4095 bytes", NULL);
		r = fs_symlink(im->fs, &ctx, parent, name, target, 0, &a);
		break;
	case AE_IFREG: case AE_IFDIR: case AE_IFIFO:
	case AE_IFCHR: case AE_IFBLK:
		r = fs_mknod(im->fs, &ctx, parent, name, type | perm,
		    type == AE_IFCHR || type == AE_IFBLK ?
		    (uint64_t)archive_entry_rdev(e) : 0, 0, &a);
		break;
	default:
		return import_refuse(im, "a workspace cannot hold its type "
		    "(a socket, or unknown)", NULL);
	}
	if (r < 0)
		return import_failed(im, type == AE_IFCHR || type == AE_IFBLK ?
		    "the workspace refuses this device node" : "creating it", r);
	*ino = a.ino;
	return 0;
}

/* A hard link member: link parent/name to the inode its target names.
 * Its number into *ino.  0 or -1. */
static int
import_link(struct import *im, struct archive_entry *e, uint64_t parent,
    const char *name, uint64_t *ino)
{
	char *target = strdup(archive_entry_hardlink(e)), *tname, *rel;
	uint64_t tparent, there;
	struct fs_attr a;
	int r = -1;

	if (!target)
		return import_failed(im, "reading it", -ENOMEM);
	if (!name)
		import_refuse(im, "the root cannot be a hard link", NULL);
	else if ((rel = import_unprefix(im, target)) &&
	    import_walk(im, rel, 0, &tparent, &tname) == 0) {
		if (!tname)
			import_refuse(im, "a hard link to the root is refused", NULL);
		else if ((r = fs_lookup(im->fs, tparent, tname, 0, &a)) < 0)
			r = import_refuse(im, "its hard link target is not in the "
			    "archive before it", archive_entry_hardlink(e));
		else if (S_ISDIR(a.mode))
			r = import_refuse(im, "a hard link to a directory is "
			    "refused", NULL);
		else if ((r = import_make_room(im, parent, name, a.mode & S_IFMT,
		    &there)) == 0 && (r = fs_link(im->fs, a.ino, parent, name, 0,
		    &a)) < 0)
			r = import_failed(im, "linking it", r);
		if (r == 0)
			*ino = a.ino;
	}
	free(target);
	return r < 0 ? -1 : 0;
}

/* Write the member's data (only its data ranges: a sparse member's holes
 * stay holes), then give the file the member's size.  0 or -1. */
static int
import_data(struct import *im, struct archive_entry *e, uint64_t ino)
{
	struct fs_setattr sa = { .valid = FS_SET_SIZE };
	la_int64_t size = archive_entry_size(e), off;
	struct fs_attr a;
	const void *buf;
	size_t len;
	ssize_t n;
	int r;

	if (size < 0 || size > FS_FILE_MAX)
		return import_refuse(im, "its size is out of range", NULL);
	while ((r = archive_read_data_block(im->a, &buf, &len, &off)) ==
	    ARCHIVE_OK || r == ARCHIVE_WARN) {
		if (off < 0 || (uint64_t)off > (uint64_t)size ||
		    len > (uint64_t)size - (uint64_t)off)
			return import_refuse(im, "a data range lies past its size",
			    NULL);
		for (size_t done = 0; done < len; done += (size_t)n)
			if ((n = fs_write(im->fs, ino, (uint64_t)off + done,
			    (const char *)buf + done, len - done)) <= 0)
				return import_failed(im, "writing its data",
				    n < 0 ? (int)n : -EIO);
	}
	if (r != ARCHIVE_EOF)
		return import_refuse(im, "reading its data",
		    archive_error_string(im->a));
	sa.size = (uint64_t)size;
	if ((r = fs_setattr(im->fs, ino, &sa, &a)) < 0)
		return import_failed(im, "setting its size", r);
	return 0;
}

/* Refuse a member with an ACL beyond its mode bits: a workspace keeps no
 * POSIX ACLs (fs/engine/xattr.c refuses system.* attributes), and dropping one
 * could grant what it denied (a named user's "---").  0 or -1. */
static int
import_acls(struct import *im, struct archive_entry *e)
{
	if (archive_entry_acl_count(e, ARCHIVE_ENTRY_ACL_TYPE_ACCESS |
	    ARCHIVE_ENTRY_ACL_TYPE_DEFAULT | ARCHIVE_ENTRY_ACL_TYPE_NFS4) > 0)
		return import_refuse(im, "it has an ACL, and a workspace keeps "
		    "none (extract the archive without ACLs and archive it "
		    "again)", NULL);
	return 0;
}

/* Set the member's extended attributes.  0 or -1. */
static int
import_xattrs(struct import *im, struct archive_entry *e, uint64_t ino)
{
	const char *name;
	const void *value;
	size_t size;
	int r;

	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
		if (!name || !*name || strlen(name) > FS_XATTR_NAME_MAX)
			return import_refuse(im, "an extended attribute's name is "
			    "empty or longer than 255 bytes", NULL);
		if (size > FS_XATTR_VALUE_MAX)
			return import_refuse(im, "an extended attribute's value is "
			    "over 65536 bytes", name);
		if ((r = fs_setxattr(im->fs, ino, name, value, size, 0)) < 0)
			return import_refuse(im, "the workspace refuses the "
			    "extended attribute", name);
	}
	return 0;
}

/* Remember directory ino's times for the end.  0 or -1. */
static int
import_defer_times(struct import *im, struct archive_entry *e, uint64_t ino)
{
	struct import_dirtime t = {
		.ino = ino,
		.atime = archive_entry_atime(e),
		.atime_ns = (int32_t)archive_entry_atime_nsec(e),
		.mtime = archive_entry_mtime(e),
		.mtime_ns = (int32_t)archive_entry_mtime_nsec(e),
		.ctime = archive_entry_ctime(e),
		.ctime_ns = (int32_t)archive_entry_ctime_nsec(e),
		.has_ctime = archive_entry_ctime_is_set(e),
	};

	if (!archive_entry_atime_is_set(e))
		t.atime = t.mtime, t.atime_ns = t.mtime_ns;
	if (fwrite(&t, sizeof(t), 1, im->dirtimes) != 1)
		return import_failed(im, "remembering its times", -errno);
	return 0;
}

/* A time from the archive, its nanoseconds kept in range. */
static struct timespec
import_time(int64_t sec, long nsec)
{
	return (struct timespec){ .tv_sec = sec,
	    .tv_nsec = nsec >= 0 && nsec < 1000000000 ? nsec : 0 };
}

/* Give ino the member's mode, owner and (but for a directory) times.
 * 0 or -1. */
static int
import_attrs(struct import *im, struct archive_entry *e, uint64_t ino)
{
	uint32_t type = archive_entry_filetype(e);
	struct fs_setattr sa = { .valid = FS_SET_UID | FS_SET_GID };
	struct fs_attr a;
	struct fs_ctx ctx;
	int r;

	if (import_owner(im, e, &ctx) < 0)
		return -1;
	sa.uid = ctx.uid;
	sa.gid = ctx.gid;
	if (type != AE_IFLNK) {
		sa.valid |= FS_SET_MODE;
		sa.mode = archive_entry_perm(e) & 07777;
	}
	if (type != AE_IFDIR) {
		sa.valid |= FS_SET_MTIME | FS_SET_ATIME;
		sa.mtime = import_time(archive_entry_mtime(e),
		    archive_entry_mtime_nsec(e));
		sa.atime = archive_entry_atime_is_set(e) ? import_time(
		    archive_entry_atime(e), archive_entry_atime_nsec(e)) : sa.mtime;
		if (archive_entry_ctime_is_set(e)) {
			sa.valid |= FS_SET_CTIME;
			sa.ctime = import_time(archive_entry_ctime(e),
			    archive_entry_ctime_nsec(e));
		}
	}
	if ((r = fs_setattr(im->fs, ino, &sa, &a)) < 0)
		return import_failed(im, "setting its attributes", r);
	return type == AE_IFDIR ? import_defer_times(im, e, ino) : 0;
}

/* Import one member.  0 or -1 (refused or failed, said). */
static int
import_member(struct import *im, struct archive_entry *e)
{
	const char *path = archive_entry_pathname(e);
	uint64_t parent, ino = 0;
	char *copy, *name, *rel;
	int r = -1;

	im->member = path;
	if (!path)
		return import_refuse(im, "it has no name (or one this locale "
		    "cannot read)", NULL);
	if (!(copy = strdup(path)))
		return import_failed(im, "reading it", -ENOMEM);
	if (import_acls(im, e) < 0 || !(rel = import_unprefix(im, copy)) ||
	    import_walk(im, rel, 1, &parent, &name) < 0)
		goto out;
	if (archive_entry_hardlink(e))
		r = import_link(im, e, parent, name, &ino);
	else if (!name)
		r = archive_entry_filetype(e) == AE_IFDIR ? (ino = FS_ROOT_INO, 0) :
		    import_refuse(im, "the root can only be a directory", NULL);
	else
		r = import_create(im, e, parent, name, &ino);
	if (r == 0 && archive_entry_filetype(e) == AE_IFREG &&
	    (!archive_entry_hardlink(e) || archive_entry_size(e) > 0))
		r = import_data(im, e, ino);
	if (r == 0)
		r = import_xattrs(im, e, ino);
	if (r == 0)
		r = import_attrs(im, e, ino);
out:
	free(copy);
	im->members++;
	return r;
}

/* Set every directory's times, as the archive gave them.  0 or -1. */
static int
import_dir_times(struct import *im)
{
	struct import_dirtime t;
	struct fs_setattr sa;
	struct fs_attr a;
	int r;

	im->member = NULL;
	if (fflush(im->dirtimes) != 0 || fseek(im->dirtimes, 0, SEEK_SET) != 0)
		return import_failed(im, "reading directories' times", -errno);
	while (fread(&t, sizeof(t), 1, im->dirtimes) == 1) {
		sa = (struct fs_setattr){ .valid = FS_SET_ATIME | FS_SET_MTIME |
		    (t.has_ctime ? FS_SET_CTIME : 0),
		    .atime = import_time(t.atime, t.atime_ns),
		    .mtime = import_time(t.mtime, t.mtime_ns),
		    .ctime = import_time(t.ctime, t.ctime_ns) };
		if ((r = fs_setattr(im->fs, t.ino, &sa, &a)) < 0)
			return import_failed(im, "setting a directory's times", r);
	}
	return ferror(im->dirtimes) ?
	    import_failed(im, "reading directories' times", -EIO) : 0;
}

/* Read every member.  0 or -1 (said). */
static int
import_all(struct import *im)
{
	struct archive_entry *e;
	int r;

	while ((r = archive_read_next_header(im->a, &e)) == ARCHIVE_OK ||
	    r == ARCHIVE_WARN) {
		if (r == ARCHIVE_WARN)
			fprintf(stderr, "atrium-fs: import: %s\n",
			    archive_error_string(im->a));
		if (import_member(im, e) < 0)
			return -1;
	}
	if (r != ARCHIVE_EOF) {
		fprintf(stderr, "atrium-fs: import: the archive is damaged or no "
		    "tar: %s\n", archive_error_string(im->a));
		return -1;
	}
	return import_dir_times(im);
}

/* 1 when the workspace holds any inode but its root, 0 when not, or
 * -errno. */
static int
import_has_files(struct fs *fs)
{
	sqlite3_stmt *st;
	int rc, r;

	fs_lock(fs);
	if (!(st = db_stmt(fs, "SELECT 1 FROM inodes WHERE ino != 1 LIMIT 1"))) {
		fs_unlock(fs);
		return -EIO;
	}
	rc = sqlite3_step(st);
	sqlite3_reset(st);
	r = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 :
	    db_errno(fs, rc, "looking for files");
	fs_unlock(fs);
	return r;
}

/* What an import made, to remove again if it fails. */
enum {
	IMPORT_MADE_DB = 1 << 0,	/* the database */
	IMPORT_MADE_LOCK = 1 << 1,	/* its lock file, DB-mount */
};

/* Open db for the import: its mount lock taken into *lock_fd first, so
 * that no daemon mounts it meanwhile and none serves it now; then made
 * when missing; refused when it holds files.  What it made into *made
 * (IMPORT_MADE_*).  0 or -1 (said). */
static int
import_open(struct import *im, const char *db, int *lock_fd, int *made)
{
	struct lockfile_holder h;
	int r, had_lock = lockfile_exists(db);

	*made = 0;
	if ((r = lockfile_acquire(db, lock_fd, &h)) == -EBUSY) {
		mount_holder_refuse(db, &h, "import into");
		return -1;
	}
	if (r < 0) {
		fs_explain_open(db, r, "import into");
		return -1;
	}
	if (!had_lock)
		*made |= IMPORT_MADE_LOCK;
	if (access(db, F_OK) < 0 && errno == ENOENT) {
		if ((r = fs_mkfs(db, 0, 0)) < 0) {
			fs_explain_open(db, r, "create");
			return -1;
		}
		*made |= IMPORT_MADE_DB;
	}
	if ((r = fs_open(db, 0, &im->fs)) < 0) {
		fs_explain_open(db, r, "import into");
		return -1;
	}
	if ((r = import_has_files(im->fs)) != 0) {
		if (r > 0)
			fprintf(stderr, "atrium-fs: %s already holds files; import "
			    "fills only a new or empty workspace (give a new "
			    "path)\n", db);
		else
			fs_explain_open(db, r, "import into");
		return -1;
	}
	if ((im->o->quota_bytes || im->o->quota_inodes) &&
	    (r = fs_quota_set(im->fs, im->o->quota_bytes,
	    im->o->quota_inodes)) < 0) {
		fs_explain_open(db, r, "set the quota of");
		return -1;
	}
	return fs_committer_start(im->fs, 1000) < 0 ? -1 : 0;
}

struct archive *
import_archive_open(int fd)
{
	struct archive *a = archive_read_new();

	if (!a || archive_read_support_format_tar(a) != ARCHIVE_OK ||
	    archive_read_support_filter_all(a) != ARCHIVE_OK ||
	    archive_read_open_fd(a, fd, IMPORT_BLOCK) != ARCHIVE_OK) {
		fprintf(stderr, "atrium-fs: import: cannot read the archive: %s\n",
		    a ? archive_error_string(a) : strerror(ENOMEM));
		if (a)
			archive_read_free(a);
		return NULL;
	}
	return a;
}

/* Start reading the archive from fd (or take a, when not NULL).  0 or
 * -1 (said). */
static int
import_open_archive(struct import *im, int fd, struct archive *a)
{
	if (!(im->a = a ? a : import_archive_open(fd)))
		return -1;
	if (!(im->dirtimes = tmpfile())) {
		fprintf(stderr, "atrium-fs: import: cannot make a temporary file: "
		    "%s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Remove a database this import made (and its -wal and -shm), and its
 * lock file when the import made that too (IMPORT_MADE_*).  With the lock
 * still held: no daemon can have opened the database meanwhile.  The lock
 * file goes last: a mount that opens it afterwards makes a new one and
 * finds no database. */
static void
import_remove(const char *db, int made)
{
	static const char *const suffixes[] = { "", "-wal", "-shm", "-mount" };
	char path[4096];
	size_t n = sizeof(suffixes) / sizeof(suffixes[0]);

	if (!(made & IMPORT_MADE_LOCK))
		n--;
	for (size_t i = 0; i < n; i++)
		if (snprintf(path, sizeof(path), "%s%s", db, suffixes[i]) <
		    (int)sizeof(path))
			unlink(path);
}

/* Import into db from fd, or from a (then the caller's).  0 or 1. */
static int
import_from(const char *db, int fd, struct archive *a,
    const struct import_opts *o)
{
	struct import im = { .o = o };
	int lock_fd = -1, made = 0, r = -1;

	if (import_open(&im, db, &lock_fd, &made) == 0 &&
	    import_open_archive(&im, fd, a) == 0 && import_all(&im) == 0) {
		r = fs_sync(im.fs, 1);
		if (r < 0)
			fprintf(stderr, "atrium-fs: import: saving %s failed: %s\n",
			    db, strerror(-r));
	}
	if (r == 0 && o->members)
		*o->members = im.members;
	if (im.a && !a)
		archive_read_free(im.a);
	if (im.dirtimes)
		fclose(im.dirtimes);
	fs_close(im.fs);
	if (r < 0 && (made & IMPORT_MADE_DB)) {
		import_remove(db, made);
		fprintf(stderr, "atrium-fs: import failed; %s was removed\n", db);
	} else if (r < 0 && im.members > 0) {
		fprintf(stderr, "atrium-fs: import failed; %s holds part of the "
		    "archive: remove it before importing again\n", db);
	}
	/* Only now: until the removal above, no daemon may open db. */
	if (lock_fd >= 0)
		lockfile_release(lock_fd);
	return r < 0 ? 1 : 0;
}

int
import_run(const char *db, int fd)
{
	static const struct import_opts plain;

	if (isatty(fd)) {
		fprintf(stderr, "atrium-fs: import reads a tar archive from "
		    "standard input; redirect it from a file or a pipe\n");
		return 2;
	}
	return import_from(db, fd, NULL, &plain);
}

int
import_into(const char *db, struct archive *a, const struct import_opts *o)
{
	return import_from(db, -1, a, o);
}
