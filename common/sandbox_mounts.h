/*
 * sandbox_mounts.h: rid the sandbox's staging mount namespace of the FUSE
 * mounts it copied from the host (sandbox_mounts.c).  Used by sandbox.c
 * only, in the forked child.
 */
#ifndef ATRIUM_SANDBOX_MOUNTS_H
#define ATRIUM_SANDBOX_MOUNTS_H

#include <stddef.h>

/* Detach (umount2 MNT_DETACH) every FUSE mount of the calling process's
 * mount namespace but the one with mount id keep_id (the room's workspace;
 * -1 for none), shallowest first.  0, or -errno with the mount that could not
 * be detached and why in err. */
int sandbox_mounts_detach_fuse(int keep_id, char *err, size_t errlen);

/* The mount id of the mount that the file open at fd lies on.  0 or
 * -errno. */
int sandbox_mounts_id(int fd, int *id);

#endif
