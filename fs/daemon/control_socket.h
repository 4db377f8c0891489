/*
 * control_socket.h: a mounted workspace's control socket
 * (fs/daemon/control_socket.c): the daemon serves snapshot, restore, drop,
 * diff, list and compact requests on DB-ctl; common/fsctl_client.h sends them.
 */
#ifndef ATRIUM_CONTROL_H
#define ATRIUM_CONTROL_H

#include <fuse_lowlevel.h>
#include <stddef.h>
#include <sys/types.h>

struct fs;
struct control;

/* Bind db's socket for fs mounted through se, to be served to root, the
 * daemon's uid and control_uid ((uid_t)-1: none), which then owns the
 * socket; NULL (logged) when it cannot.  Binding makes a file in the
 * database's directory, so it comes before the daemon gives up root. */
struct control *control_open(const char *db, struct fs *fs,
    struct fuse_session *se, uid_t control_uid);

/* Start serving c on a thread of its own, made after the daemon gave up
 * root so that Landlock holds it too.  0, or -1 (logged; c is freed).
 * control_stop before fs_close; it accepts NULL and a c never run. */
int control_run(struct control *c);
void control_stop(struct control *c);

#endif
