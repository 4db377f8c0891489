/*
 * loop.h: the threads that serve a mounted session's requests (fs/loop.c).
 */
#ifndef ATRIUM_FS_LOOP_H
#define ATRIUM_FS_LOOP_H

#include "fs.h"

#include <fuse_lowlevel.h>

/* Serve se's requests on nthreads threads until the session ends
 * (unmount, or a signal caught by libfuse's handlers).  0 or -errno. */
int loop_serve(struct fuse_session *se, struct fs *fs, unsigned nthreads);

#endif
