/*
 * fuse_ops.h: the FUSE low-level operations over the core
 * (fs/daemon/fuse_ops.c). The session's userdata must be a struct
 * fuse_ops_data.
 */
#ifndef ATRIUM_FUSE_OPS_H
#define ATRIUM_FUSE_OPS_H

#include <fuse_lowlevel.h>

struct fs;

/* Biggest write and read the kernel may send (libfuse's buffer limit), and
 * the read-ahead the daemon asks for. */
#define FS_MAX_IO (1u << 20)

/* The session's userdata: the core, and what init learnt of the kernel. */
struct fuse_ops_data {
	struct fs *fs;
	struct fuse_session *se;  /* set by the mounter, for notifications */
	int writeback;    /* set by the mounter: ask for the writeback cache */
	int no_opendir;   /* set by init: opendir may answer ENOSYS */
	int writeback_on; /* set by init: the kernel holds dirty pages */
};

/* What a mount registers: each request timed for the core's opstats
 * (fs/daemon/fuse_timed.c), then served by fuse_ops_untimed
 * (fs/daemon/fuse_ops.c). */
extern const struct fuse_lowlevel_ops fuse_ops_table;
extern const struct fuse_lowlevel_ops fuse_ops_untimed;

#endif
