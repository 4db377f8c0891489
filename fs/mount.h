/*
 * mount.h: mounting a workspace database (fs/mount.c) and the mount lock
 * that keeps a database mounted at most once (fs/lockfile.c).
 */
#ifndef ATRIUM_MOUNT_H
#define ATRIUM_MOUNT_H

#include <stddef.h>
#include <sys/types.h>

struct mount_opts {
	const char *db;          /* the workspace database */
	const char *dir;         /* the mount point */
	const char *fuse_opts;   /* extra -o options, or NULL */
	int foreground;          /* stay in the foreground (-f) */
	int ready_fd;            /* write "ready\n" here once mounted, or -1 */
};

/* Mount and serve until unmounted or signalled.  The process exit status:
 * 0 after a clean unmount, 1 when anything failed (already reported on
 * stderr).  In the background unless foreground: the calling process then
 * exits once the mount is live (0) or has failed (1). */
int mount_run(const struct mount_opts *o);

/* Take the exclusive lock DB-mount for the life of the mount.  The lock's fd
 * into *fd.  -EBUSY when another process holds it: its pid and mount point
 * into holder (empty if not yet written).  0 or -errno. */
int lockfile_acquire(const char *db, int *fd, char *holder, size_t holdersize,
    pid_t *pid);

/* Record our pid and mount point in the held lock file.  0 or -errno. */
int lockfile_record(int fd, const char *dir);

/* 1 when some process holds DB's mount lock (its pid and mount point into
 * holder, pid), 0 when none does, or -errno. */
int lockfile_probe(const char *db, char *holder, size_t holdersize, pid_t *pid);

/* Clear the record and release the lock. */
void lockfile_release(int fd);

#endif
