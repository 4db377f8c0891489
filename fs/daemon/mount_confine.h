/*
 * mount_confine.h: a mount's daemon serves its requests without root
 * (mount_confine.c), and a small root parent takes the mount down when it
 * ends (mount_keeper.c).  Used by fs/daemon/mount.c when `-o run_as=UID:GID` is
 * given (atriumd gives the room's uid and gid).
 */
#ifndef ATRIUM_MOUNT_CONFINE_H
#define ATRIUM_MOUNT_CONFINE_H

#include <stddef.h>
#include <sys/types.h>

#include "mount.h"

/* Parse "UID:GID" (neither 0) into *uid and *gid: 0 or -EINVAL. */
int mount_confine_parse(const char *v, uid_t *uid, gid_t *gid);

/* As root, before the database is opened: check that uid:gid may search
 * db's directory, give db and its -wal and -shm (those that exist) to
 * uid:gid (SQLite, running as root until the drop, gives any it makes to
 * the database's owner as well), and hold the directory open: path gets
 * db's name through it ("/proc/self/fd/N/NAME"), which the daemon can
 * follow once it is no longer root, where db's parents (atriumd's DATA is
 * 0700) would refuse it.  0, or -1 with the reason on stderr. */
int mount_confine_prepare(const char *db, uid_t uid, gid_t gid, char *path,
    size_t len);

/* Give up root for good: become uid:gid with no capability, no_new_privs,
 * not dumpable, the death signal set again; Landlock to db's three files
 * (and the system's libraries, for reading); a seccomp allow list.  Call
 * it with one thread.  0, or -1 (logged).  Used by the daemon and by
 * `atrium-fs fsck --run-as`. */
int mount_confine_drop(const char *db, uid_t uid, gid_t gid);

/* The keeper: the root parent of a daemon that gives up root.  It forks
 * the daemon, which returns 0 here with *fd its end of the keeper's
 * socket.  The parent closes status_fd and o->ready_fd (the daemon's to
 * write) and waits: when the daemon has said that the mount is made ('M')
 * and later asks for it to go ('U'), or ends without asking, it unmounts
 * o->dir (resolved now, as root) and answers 'K'; it passes SIGTERM,
 * SIGINT and SIGHUP on to the daemon, removes o->db's control socket,
 * which the daemon could not, and exits with the daemon's status: it
 * never returns.  -1 (reported) when it cannot fork. */
int mount_keeper(const struct mount_opts *o, int status_fd, int *fd);

/* In the daemon: tell the keeper the mount is made ('M'), or ask it to
 * unmount and wait until it has ('U'): 0 or -errno. */
int mount_keeper_mounted(int fd);
int mount_keeper_unmount(int fd);

#endif
