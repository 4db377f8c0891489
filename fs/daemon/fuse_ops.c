/*
 * fuse_ops.c: the FUSE low-level adapter.  fs/daemon/mount.c registers
 * fuse_ops_table (fs/daemon/fuse_timed.c, which times each request and calls
 * fuse_ops_untimed here) with a session whose userdata is the struct
 * fuse_ops_data; each op_X
 * converts the request, calls the core (fs.h) and replies exactly once.  No
 * SQL and no filesystem rules live here.
 *
 * Caching: this daemon is the only way to the data, so the kernel may keep
 * entries, attributes, negative lookups, symlink targets and file pages for
 * a long time (FS_TIMEOUT, keep_cache), and hold dirty pages (the writeback
 * cache, unless mounted with -o no_writeback).  Anything changed behind the
 * kernel's back (a snapshot restore, fs/daemon/control_socket.c) must be
 * invalidated through fuse_lowlevel_notify_inval_*.
 *
 * Lookup counts: every reply that hands the kernel an inode (lookup, mknod,
 * mkdir, symlink, link, create, readdirplus entries) pins it in the core;
 * forget unpins.  A core call with pin=1 whose reply then fails leaves one
 * pin too many, which only delays the removal of an unlinked inode until
 * unmount.
 *
 * Every request that changes the tree notes its success (ops_changed,
 * fs_changed), so that the agent can tell a command that changed files
 * from one that only read them (fs/daemon/control_socket.c's "changes").
 */
#include "fs.h"
#include "fuse_ops.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Seconds the kernel may cache entries and attributes. */
#define FS_TIMEOUT 86400.0

/* The core behind a request. */
static struct fs *
ops_fs(fuse_req_t req)
{
	return ((struct fuse_ops_data *)fuse_req_userdata(req))->fs;
}

/* r, a change's result, after noting a success for fs_changes: every
 * request that changes the tree passes its result through here. */
static long long
ops_changed(fuse_req_t req, long long r)
{
	if (r >= 0)
		fs_changed(ops_fs(req));
	return r;
}

/* struct stat from core attributes. */
static void
ops_stat(const struct fs_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_rdev = a->rdev;
	st->st_blocks = (blkcnt_t)a->blocks;
	st->st_blksize = 65536;
	st->st_atim = a->atime;
	st->st_mtim = a->mtime;
	st->st_ctim = a->ctime;
}

/* A fuse_entry_param for a (ino 0 means a cached negative entry). */
static void
ops_entry(const struct fs_attr *a, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = a->ino;
	e->generation = 0;
	e->attr_timeout = FS_TIMEOUT;
	e->entry_timeout = FS_TIMEOUT;
	ops_stat(a, &e->attr);
}

/* Reply to an entry-making call: the entry or the error. */
static void
ops_reply_entry(fuse_req_t req, int r, const struct fs_attr *a)
{
	struct fuse_entry_param e;

	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	ops_entry(a, &e);
	fuse_reply_entry(req, &e);
}

/* Negotiate capabilities: big I/O, caching, no opendir round trips. */
static void
op_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fuse_ops_data *d = userdata;

	/* Directories need no open state (readdir cookies are stable), so
	 * spare the opendir and releasedir round trips. */
	if (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		d->no_opendir = 1;
	}
	/* Big requests: 1 MiB writes and readahead (max_pages 256). */
	conn->max_write = FS_MAX_IO;
	conn->max_readahead = FS_MAX_IO;
	/* O_TRUNC arrives with open: one round trip fewer than a setattr. */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	/* Symlink targets never change behind the kernel's back. */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	/* ls -l, git status: attributes come with the listing. */
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS | FUSE_CAP_READDIRPLUS_AUTO;
	/* No POSIX ACLs: no inode has one (xattr.c refuses system.* with
	 * EOPNOTSUPP), and without them the kernel checks permissions on the
	 * mode bits alone (default_permissions) and never asks for an ACL to
	 * do so.  Only a program's own getxattr of an ACL reaches us, and its
	 * EOPNOTSUPP makes `ls -l` stop asking on this filesystem after the
	 * first file.  With them on, the kernel would ask once per inode and
	 * again after each readdirplus (which forgets an inode's cached ACLs):
	 * a round trip per file of every `ls -l` whose listing was not cached. */
	conn->want &= ~FUSE_CAP_POSIX_ACL;
	/* The kernel clears setuid/setgid itself, through setattr. */
	conn->want &= ~FUSE_CAP_HANDLE_KILLPRIV;
	/* Locks stay in the kernel: this mount is the only way to the files. */
	conn->want &= ~(FUSE_CAP_POSIX_LOCKS | FUSE_CAP_FLOCK_LOCKS);
	/* Small writes gather in the page cache and reach us in big ones; the
	 * kernel then keeps size and mtime and sends them by setattr, which
	 * works without a file handle. */
	if (d->writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	conn->want &= conn->capable;
	d->writeback_on = !!(conn->want & FUSE_CAP_WRITEBACK_CACHE);
	conn->time_gran = 1;
}

/* Reply the entry (pinned) or a cached negative entry. */
static void
op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_attr a;
	struct fuse_entry_param e;
	int r = fs_lookup(ops_fs(req), parent, name, 1, &a);

	if (r == -ENOENT) {
		/* Cache the miss: nothing else can create the name. */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = FS_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	ops_reply_entry(req, r, &a);
}

/* Drop the kernel's lookups of ino; no reply. */
static void
op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fs_forget(ops_fs(req), ino, nlookup);
	fuse_reply_none(req);
}

/* Drop many inodes' lookups at once; no reply. */
static void
op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		fs_forget(ops_fs(req), forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

/* The FUSE GETATTR request: do it in the core and reply once. */
static void
op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_attr a;
	struct stat st;
	int r = fs_getattr(ops_fs(req), ino, &a);

	(void)fi;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	ops_stat(&a, &st);
	fuse_reply_attr(req, &st, FS_TIMEOUT);
}

/* The core's setattr mask from FUSE's. */
static void
ops_setattr_of(const struct stat *attr, int to_set, struct fs_setattr *sa)
{
	memset(sa, 0, sizeof(*sa));
	if (to_set & FUSE_SET_ATTR_MODE)
		sa->valid |= FS_SET_MODE;
	if (to_set & FUSE_SET_ATTR_UID)
		sa->valid |= FS_SET_UID;
	if (to_set & FUSE_SET_ATTR_GID)
		sa->valid |= FS_SET_GID;
	if (to_set & FUSE_SET_ATTR_SIZE)
		sa->valid |= FS_SET_SIZE;
	if (to_set & FUSE_SET_ATTR_ATIME)
		sa->valid |= FS_SET_ATIME;
	if (to_set & FUSE_SET_ATTR_MTIME)
		sa->valid |= FS_SET_MTIME;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		sa->valid |= FS_SET_ATIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		sa->valid |= FS_SET_MTIME_NOW;
	if (to_set & FUSE_SET_ATTR_CTIME)
		sa->valid |= FS_SET_CTIME;
	sa->mode = attr->st_mode;
	sa->uid = attr->st_uid;
	sa->gid = attr->st_gid;
	sa->size = (uint64_t)attr->st_size;
	sa->atime = attr->st_atim;
	sa->mtime = attr->st_mtim;
	sa->ctime = attr->st_ctim;
}

/* Works with or without a file handle (writeback flushes carry none). */
static void
op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi)
{
	struct fs_setattr sa;
	struct fs_attr a;
	struct stat st;
	int r;

	(void)fi;
	ops_setattr_of(attr, to_set, &sa);
	if ((r = (int)ops_changed(req, fs_setattr(ops_fs(req), ino, &sa,
	    &a))) < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	ops_stat(&a, &st);
	fuse_reply_attr(req, &st, FS_TIMEOUT);
}

/* The FUSE READLINK request: do it in the core and reply once. */
static void
op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	char buf[FS_SYMLINK_MAX + 1];
	int r = fs_readlink(ops_fs(req), ino, buf, sizeof(buf));

	if (r < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_readlink(req, buf);
}

/* The caller of req, owner of what it creates. */
static struct fs_ctx
ops_ctx(fuse_req_t req)
{
	const struct fuse_ctx *c = fuse_req_ctx(req);
	struct fs_ctx ctx = { c->uid, c->gid };

	return ctx;
}

/* The FUSE MKNOD request: do it in the core and reply once. */
static void
op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    dev_t rdev)
{
	struct fs_ctx ctx = ops_ctx(req);
	struct fs_attr a;
	int r = (int)ops_changed(req, fs_mknod(ops_fs(req), &ctx, parent, name,
	    mode, rdev, 1, &a));

	ops_reply_entry(req, r, &a);
}

/* The FUSE MKDIR request: do it in the core and reply once. */
static void
op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs_ctx ctx = ops_ctx(req);
	struct fs_attr a;
	int r = (int)ops_changed(req, fs_mknod(ops_fs(req), &ctx, parent, name,
	    S_IFDIR | (mode & 07777), 0, 1, &a));

	ops_reply_entry(req, r, &a);
}

/* The FUSE SYMLINK request: do it in the core and reply once. */
static void
op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
    const char *name)
{
	struct fs_ctx ctx = ops_ctx(req);
	struct fs_attr a;
	int r = (int)ops_changed(req, fs_symlink(ops_fs(req), &ctx, parent,
	    name, link, 1, &a));

	ops_reply_entry(req, r, &a);
}

/* The FUSE LINK request: do it in the core and reply once. */
static void
op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname)
{
	struct fs_attr a;
	int r = (int)ops_changed(req, fs_link(ops_fs(req), ino, newparent,
	    newname, 1, &a));

	ops_reply_entry(req, r, &a);
}

/* The FUSE UNLINK request: do it in the core and reply once. */
static void
op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -(int)ops_changed(req, fs_unlink(ops_fs(req),
	    parent, name)));
}

/* The FUSE RMDIR request: do it in the core and reply once. */
static void
op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, -(int)ops_changed(req, fs_rmdir(ops_fs(req),
	    parent, name)));
}

/* The FUSE RENAME request: do it in the core and reply once. */
static void
op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags)
{
	fuse_reply_err(req, -(int)ops_changed(req, fs_rename(ops_fs(req),
	    parent, name, newparent, newname, flags)));
}

/* Open flags of a new handle: keep the page cache; no flush request at
 * close (see op_flush).  Near the quota a writer gets direct I/O instead,
 * so that each write(2) is answered by the core and sees EDQUOT
 * (fs_quota_near); the page cache of that file is dropped, not kept, as
 * direct writes bypass it.  Such a handle cannot be mapped shared (the
 * kernel refuses it). */
static void
ops_open_flags(fuse_req_t req, struct fuse_file_info *fi)
{
	int writing = (fi->flags & O_ACCMODE) != O_RDONLY;

	fi->direct_io = writing && fs_quota_near(ops_fs(req));
	fi->keep_cache = !fi->direct_io;
	fi->noflush = 1;
}

/* Open a file: O_TRUNC truncates here (atomic_o_trunc), whatever the
 * access mode: the kernel has checked write permission for it (as for
 * ext4, O_RDONLY|O_TRUNC truncates) and, trusting this open, only drops
 * its own page cache and size.  Keep the page cache otherwise. */
static void
op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int r;

	if ((fi->flags & O_TRUNC) &&
	    (r = (int)ops_changed(req, fs_truncate(ops_fs(req), ino, 0))) < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	ops_open_flags(req, fi);
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		fs_writers(ops_fs(req), ino, 1);
	if (fuse_reply_open(req, fi) != 0 && (fi->flags & O_ACCMODE) != O_RDONLY)
		fs_writers(ops_fs(req), ino, -1);
}

/* Create and open a file; without O_EXCL an existing file is opened. */
static void
op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi)
{
	struct fs_ctx ctx = ops_ctx(req);
	struct fuse_entry_param e;
	struct fs_attr a;
	int r;

	r = fs_mknod(ops_fs(req), &ctx, parent, name, S_IFREG | (mode & 07777), 0,
	    1, &a);
	if (r == -EEXIST && !(fi->flags & O_EXCL)) {
		/* Created by someone else since the kernel's lookup: open it. */
		r = fs_lookup(ops_fs(req), parent, name, 1, &a);
		if (r == 0 && S_ISDIR(a.mode)) {
			fs_forget(ops_fs(req), a.ino, 1);
			r = -EISDIR;
		}
		if (r == 0 && (fi->flags & O_TRUNC) &&
		    (r = fs_truncate(ops_fs(req), a.ino, 0)) == 0)
			r = fs_getattr(ops_fs(req), a.ino, &a);
	}
	if ((r = (int)ops_changed(req, r)) < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	ops_open_flags(req, fi);
	ops_entry(&a, &e);
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		fs_writers(ops_fs(req), a.ino, 1);
	if (fuse_reply_create(req, &e, fi) != 0 &&
	    (fi->flags & O_ACCMODE) != O_RDONLY)
		fs_writers(ops_fs(req), a.ino, -1);
}

/* Reply up to size bytes at off (fewer at the end of the file). */
static void
op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	char *buf;
	ssize_t n;

	(void)fi;
	if (size > FS_MAX_IO)
		size = FS_MAX_IO;
	if (!(buf = malloc(size ? size : 1))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = fs_read(ops_fs(req), ino, (uint64_t)off, buf, size);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

/* Write and reply the byte count. */
static void
op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi)
{
	ssize_t n;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/* A page written back was stamped by the kernel at write(2); a
	 * later stamp here would differ from what it shows and, at the next
	 * mount, move the file's mtime by the delay of the writeback. */
	if (fi && fi->writepage)
		n = fs_write_back(ops_fs(req), ino, (uint64_t)off, buf, size);
	else
		n = fs_write(ops_fs(req), ino, (uint64_t)off, buf, size);
	/* From the writeback cache, the kernel turns every error but ENOSPC
	 * into close's EIO, which reads as a broken disk: out of quota is
	 * out of room. */
	if (n == -EDQUOT && fi && fi->writepage)
		n = -ENOSPC;
	if ((n = ops_changed(req, n)) < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

/* close(2) of a file.  Before it asks, the kernel writes the file's dirty
 * pages and times back (write and setattr requests, which get ENOSPC, or
 * EIO once the mount has failed, and close returns that), so the request
 * itself has nothing left to do; a commit here would promise what close
 * does not, and cost `tar x` dearly.  ENOSYS tells the kernel never to
 * send it again (the writeback cache ignores noflush): one round trip
 * fewer on every close, a seventh of a small file's create, write and
 * close.  What it no longer reports: a failed mount to the close of a file
 * whose data had all been written back before (its fsync still does). */
static void
op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, ENOSYS);
}

/* Nothing is kept per open file but the count of writers (fs_writers). */
static void
op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		fs_writers(ops_fs(req), ino, -1);
	fuse_reply_err(req, 0);
}

/* Commit and sync everything pending: what fsync returns for is on disk. */
static void
op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -fs_sync(ops_fs(req), 1));
}

/* ENOSYS when the kernel can do without opendir, else an empty handle. */
static void
op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	if (((struct fuse_ops_data *)fuse_req_userdata(req))->no_opendir) {
		/* The kernel then stops sending opendir and releasedir. */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fuse_reply_open(req, fi);
}

/* A readdir reply being filled. */
struct ops_dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	int plus;
};

/* fs_readdir callback: add one entry, or 1 when it does not fit. */
static int
ops_dir_add(void *arg, const struct fs_dirent *de)
{
	struct ops_dirbuf *b = arg;
	struct fuse_entry_param e;
	struct stat st;
	size_t n;

	if (b->plus) {
		ops_entry(de->attr, &e);
		e.attr.st_ino = de->ino;
		/* "." and ".." are not looked up by the kernel: no pin. */
		if (strcmp(de->name, ".") == 0 || strcmp(de->name, "..") == 0)
			e.ino = 0;
		n = fuse_add_direntry_plus(b->req, b->buf + b->used,
		    b->size - b->used, de->name, &e, de->off);
	} else {
		memset(&st, 0, sizeof(st));
		st.st_ino = de->ino;
		st.st_mode = de->mode;
		n = fuse_add_direntry(b->req, b->buf + b->used, b->size - b->used,
		    de->name, &st, de->off);
	}
	if (n > b->size - b->used)
		return 1;
	b->used += n;
	return 0;
}

/* readdir and readdirplus. */
static void
ops_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct ops_dirbuf b = { req, NULL, size, 0, plus };
	int r;

	if (size > FS_MAX_IO)
		b.size = size = FS_MAX_IO;
	if (!(b.buf = malloc(size ? size : 1))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	r = fs_readdir(ops_fs(req), ino, off, plus, ops_dir_add, &b);
	if (r < 0 && b.used == 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_buf(req, b.buf, b.used);
	free(b.buf);
}

/* A page of entries after the cookie off. */
static void
op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)fi;
	ops_readdir(req, ino, size, off, 0);
}

/* A page of entries with attributes (each one pinned). */
static void
op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi)
{
	(void)fi;
	ops_readdir(req, ino, size, off, 1);
}

/* Nothing is kept per open directory. */
static void
op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	fuse_reply_err(req, 0);
}

/* As op_fsync, for directories. */
static void
op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
    struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	(void)fi;
	fuse_reply_err(req, -fs_sync(ops_fs(req), 1));
}

/* Space figures of the disk holding the database. */
static void
op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs_statfs s;
	struct statvfs sv;
	int r = fs_statfs(ops_fs(req), &s);

	(void)ino;
	if (r < 0) {
		fuse_reply_err(req, -r);
		return;
	}
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = s.bsize;
	sv.f_frsize = s.bsize;
	sv.f_blocks = s.blocks;
	sv.f_bfree = s.bfree;
	sv.f_bavail = s.bavail;
	sv.f_files = s.files;
	sv.f_ffree = s.ffree;
	sv.f_favail = s.ffree;
	sv.f_namemax = s.namemax;
	fuse_reply_statfs(req, &sv);
}

/* The FUSE SETXATTR request: do it in the core and reply once. */
static void
op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
    const char *value, size_t size, int flags)
{
	fuse_reply_err(req, -(int)ops_changed(req, fs_setxattr(ops_fs(req),
	    ino, name, value, size, flags)));
}

/* getxattr and listxattr share the size-probe protocol. */
static void
ops_reply_xattr(fuse_req_t req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
}

/* The FUSE GETXATTR request: do it in the core and reply once. */
static void
op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	char *buf = NULL;
	ssize_t n;

	if (size > FS_XATTR_VALUE_MAX)
		size = FS_XATTR_VALUE_MAX;
	if (size && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = fs_getxattr(ops_fs(req), ino, name, buf, size);
	ops_reply_xattr(req, n, buf, size);
	free(buf);
}

/* The FUSE LISTXATTR request: do it in the core and reply once. */
static void
op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	char *buf = NULL;
	ssize_t n;

	if (size > FS_MAX_IO)
		size = FS_MAX_IO;
	if (size && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	n = fs_listxattr(ops_fs(req), ino, buf, size);
	ops_reply_xattr(req, n, buf, size);
	free(buf);
}

/* The FUSE REMOVEXATTR request: do it in the core and reply once. */
static void
op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, -(int)ops_changed(req, fs_removexattr(ops_fs(req),
	    ino, name)));
}

/* fallocate modes 0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE and ZERO_RANGE; others
 * EOPNOTSUPP.  The kernel writes back and drops its cached pages of a
 * punched or zeroed range itself. */
static void
op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
    struct fuse_file_info *fi)
{
	(void)fi;
	if (off < 0 || len <= 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fuse_reply_err(req, -(int)ops_changed(req, fs_fallocate(ops_fs(req),
	    ino, mode, (uint64_t)off, (uint64_t)len)));
}

/* lseek SEEK_DATA and SEEK_HOLE (the kernel does the others itself).
 * The kernel asks without writing back its dirty pages first, so data
 * still in the writeback cache would look like a hole, and a copy made by
 * SEEK_DATA would lose it.  Invalidating the file's pages makes the kernel
 * write each dirty one back (its launder step) before it returns; those
 * writes are served by other threads while this one waits. */
static void
op_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
    struct fuse_file_info *fi)
{
	struct fuse_ops_data *d = fuse_req_userdata(req);
	uint64_t pos;
	int r;

	(void)fi;
	if (d->se && d->writeback_on &&
	    (r = fuse_lowlevel_notify_inval_inode(d->se, ino, 0, 0)) < 0 &&
	    r != -ENOENT) {
		fuse_reply_err(req, EIO);
		return;
	}
	if (off < 0) {
		fuse_reply_err(req, ENXIO);
		return;
	}
	if ((r = fs_seek(ops_fs(req), ino, (uint64_t)off, whence, &pos)) < 0)
		fuse_reply_err(req, -r);
	else
		fuse_reply_lseek(req, (off_t)pos);
}

const struct fuse_lowlevel_ops fuse_ops_untimed = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.symlink = op_symlink,
	.link = op_link,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.rename = op_rename,
	.open = op_open,
	.create = op_create,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.setxattr = op_setxattr,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
	.lseek = op_lseek,
};
