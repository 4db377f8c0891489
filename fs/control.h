/*
 * control.h: a mounted workspace's control socket (fs/control.c): the
 * daemon serves snapshot, restore and drop requests on DB-ctl; the
 * atrium-fs command line sends them.
 */
#ifndef ATRIUM_CONTROL_H
#define ATRIUM_CONTROL_H

#include <fuse_lowlevel.h>
#include <stddef.h>

struct fs;
struct control;

/* The socket's path for db into out: 0 or -ENAMETOOLONG. */
int control_path(const char *db, char *out, size_t size);

/* Serve db's socket for fs mounted through se; NULL (logged) when it
 * cannot.  control_stop before fs_close; it accepts NULL. */
struct control *control_start(const char *db, struct fs *fs,
    struct fuse_session *se);
void control_stop(struct control *c);

/* Ask the daemon serving db to run verb (snapshot, restore or drop) on
 * snapshot name: 0 or the -errno it answered; -ECONNREFUSED when none
 * listens. */
int control_request(const char *db, const char *verb, const char *name);

/* One entry of a diff answer: kind 'A', 'D' or 'M' and the path (valid
 * during the call).  Non-zero stops reading (-ECANCELED). */
typedef int (*control_diff_cb)(void *arg, char kind, const char *path);

/* Ask the daemon serving db what changed since snapshot name
 * (fs_snapshot_diff): cb per entry, *more when capped.  0 or -errno;
 * -ECONNREFUSED when none listens. */
int control_request_diff(const char *db, const char *name,
    control_diff_cb cb, void *arg, int *more);

#endif
