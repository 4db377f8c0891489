/*
 * control.h: a mounted workspace's control socket (fs/control.c): the
 * daemon serves snapshot, restore, drop, diff, list and compact requests
 * on DB-ctl; common/fsctl_client.h sends them.
 */
#ifndef ATRIUM_CONTROL_H
#define ATRIUM_CONTROL_H

#include <fuse_lowlevel.h>
#include <stddef.h>
#include <sys/types.h>

struct fs;
struct control;

/* Serve db's socket for fs mounted through se, to root, the daemon's uid
 * and control_uid ((uid_t)-1: none), which then owns the socket; NULL
 * (logged) when it cannot.  control_stop before fs_close; it accepts
 * NULL. */
struct control *control_start(const char *db, struct fs *fs,
    struct fuse_session *se, uid_t control_uid);
void control_stop(struct control *c);

#endif
