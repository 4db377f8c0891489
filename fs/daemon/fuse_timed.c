/*
 * fuse_timed.c: the operations table a mount registers (fuse_ops_table):
 * each entry times the request it passes to fs/daemon/fuse_ops.c's handler
 * (fuse_ops_untimed) and notes its kind and latency in the core's
 * opstats (fs/engine/opstats.h), for atriumd's GET /metrics.  Nothing here
 * looks at or changes what a request asks or what it is answered.
 *
 * Rules: the core is found before the handler runs, since its reply
 * frees req; the time is the handler's, reply included (every handler
 * replies before it returns).  forget and forget_multi have no reply and
 * are not counted; init is not a request.  Cost: two clock_gettime
 * (vDSO) and three relaxed atomic adds per request.
 */
#include "fs.h"
#include "fuse_ops.h"
#include "opstats.h"

#include <fuse_lowlevel.h>

/* The counts of the mount behind req. */
static struct opstats *
timed_stats(fuse_req_t req)
{
	return fs_opstats(((struct fuse_ops_data *)fuse_req_userdata(req))->fs);
}

/* timed_NAME: run the untimed NAME with ARGS, noted as KIND. */
#define TIMED(name, kind, params, args)					\
static void								\
timed_##name params							\
{									\
	struct opstats *s = timed_stats(req);				\
	uint64_t t0 = opstats_now_ns();					\
									\
	fuse_ops_untimed.name args;					\
	opstats_note(s, kind, opstats_now_ns() - t0);			\
}

TIMED(lookup, OPSTATS_LOOKUP,
    (fuse_req_t req, fuse_ino_t parent, const char *name),
    (req, parent, name))
TIMED(getattr, OPSTATS_GETATTR,
    (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
    (req, ino, fi))
TIMED(setattr, OPSTATS_SETATTR,
    (fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
    struct fuse_file_info *fi),
    (req, ino, attr, to_set, fi))
TIMED(readlink, OPSTATS_READ, (fuse_req_t req, fuse_ino_t ino), (req, ino))
TIMED(mknod, OPSTATS_CREATE,
    (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    dev_t rdev),
    (req, parent, name, mode, rdev))
TIMED(mkdir, OPSTATS_CREATE,
    (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode),
    (req, parent, name, mode))
TIMED(symlink, OPSTATS_CREATE,
    (fuse_req_t req, const char *link, fuse_ino_t parent, const char *name),
    (req, link, parent, name))
TIMED(link, OPSTATS_CREATE,
    (fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
    const char *newname),
    (req, ino, newparent, newname))
TIMED(unlink, OPSTATS_REMOVE,
    (fuse_req_t req, fuse_ino_t parent, const char *name),
    (req, parent, name))
TIMED(rmdir, OPSTATS_REMOVE,
    (fuse_req_t req, fuse_ino_t parent, const char *name),
    (req, parent, name))
TIMED(rename, OPSTATS_RENAME,
    (fuse_req_t req, fuse_ino_t parent, const char *name,
    fuse_ino_t newparent, const char *newname, unsigned int flags),
    (req, parent, name, newparent, newname, flags))
TIMED(open, OPSTATS_OPEN,
    (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
    (req, ino, fi))
TIMED(create, OPSTATS_CREATE,
    (fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
    struct fuse_file_info *fi),
    (req, parent, name, mode, fi))
TIMED(read, OPSTATS_READ,
    (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi),
    (req, ino, size, off, fi))
TIMED(write, OPSTATS_WRITE,
    (fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
    off_t off, struct fuse_file_info *fi),
    (req, ino, buf, size, off, fi))
TIMED(flush, OPSTATS_OPEN,
    (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
    (req, ino, fi))
TIMED(release, OPSTATS_OPEN,
    (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
    (req, ino, fi))
TIMED(fsync, OPSTATS_FSYNC,
    (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
    (req, ino, datasync, fi))
TIMED(opendir, OPSTATS_READDIR,
    (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
    (req, ino, fi))
TIMED(readdir, OPSTATS_READDIR,
    (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi),
    (req, ino, size, off, fi))
TIMED(readdirplus, OPSTATS_READDIR,
    (fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
    struct fuse_file_info *fi),
    (req, ino, size, off, fi))
TIMED(releasedir, OPSTATS_READDIR,
    (fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi),
    (req, ino, fi))
TIMED(fsyncdir, OPSTATS_FSYNC,
    (fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi),
    (req, ino, datasync, fi))
TIMED(statfs, OPSTATS_GETATTR, (fuse_req_t req, fuse_ino_t ino), (req, ino))
TIMED(setxattr, OPSTATS_XATTR,
    (fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
    size_t size, int flags),
    (req, ino, name, value, size, flags))
TIMED(getxattr, OPSTATS_XATTR,
    (fuse_req_t req, fuse_ino_t ino, const char *name, size_t size),
    (req, ino, name, size))
TIMED(listxattr, OPSTATS_XATTR,
    (fuse_req_t req, fuse_ino_t ino, size_t size), (req, ino, size))
TIMED(removexattr, OPSTATS_XATTR,
    (fuse_req_t req, fuse_ino_t ino, const char *name), (req, ino, name))
TIMED(fallocate, OPSTATS_WRITE,
    (fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
    struct fuse_file_info *fi),
    (req, ino, mode, off, len, fi))
TIMED(lseek, OPSTATS_READ,
    (fuse_req_t req, fuse_ino_t ino, off_t off, int whence,
    struct fuse_file_info *fi),
    (req, ino, off, whence, fi))

/* Not requests that are answered: passed on, not counted. */
static void
timed_init(void *userdata, struct fuse_conn_info *conn)
{
	fuse_ops_untimed.init(userdata, conn);
}

static void
timed_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	fuse_ops_untimed.forget(req, ino, nlookup);
}

static void
timed_forget_multi(fuse_req_t req, size_t count,
    struct fuse_forget_data *forgets)
{
	fuse_ops_untimed.forget_multi(req, count, forgets);
}

const struct fuse_lowlevel_ops fuse_ops_table = {
	.init = timed_init,
	.forget = timed_forget,
	.forget_multi = timed_forget_multi,
	.lookup = timed_lookup,
	.getattr = timed_getattr,
	.setattr = timed_setattr,
	.readlink = timed_readlink,
	.mknod = timed_mknod,
	.mkdir = timed_mkdir,
	.symlink = timed_symlink,
	.link = timed_link,
	.unlink = timed_unlink,
	.rmdir = timed_rmdir,
	.rename = timed_rename,
	.open = timed_open,
	.create = timed_create,
	.read = timed_read,
	.write = timed_write,
	.flush = timed_flush,
	.release = timed_release,
	.fsync = timed_fsync,
	.opendir = timed_opendir,
	.readdir = timed_readdir,
	.readdirplus = timed_readdirplus,
	.releasedir = timed_releasedir,
	.fsyncdir = timed_fsyncdir,
	.statfs = timed_statfs,
	.setxattr = timed_setxattr,
	.getxattr = timed_getxattr,
	.listxattr = timed_listxattr,
	.removexattr = timed_removexattr,
	.fallocate = timed_fallocate,
	.lseek = timed_lseek,
};
