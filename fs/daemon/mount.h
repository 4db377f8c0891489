/*
 * mount.h: mounting a workspace database (fs/daemon/mount.c) and the mount lock
 * that keeps a database mounted at most once (fs/daemon/lockfile.c).
 */
#ifndef ATRIUM_MOUNT_H
#define ATRIUM_MOUNT_H

#include <limits.h>
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

/* Give up the caller's stdin and stdout, and its stderr unless that is a
 * log file or journald's socket: a mount in the background must never
 * hold a caller's terminal or pipe open ($(atrium-fs mount ...) returns). */
void mount_detach_stdio(void);

/* Who holds a database's mount lock, as its lock file records it. */
struct lockfile_holder {
	pid_t pid;		/* the daemon; 0 when not yet recorded */
	char dir[PATH_MAX];	/* its mount point; "" when not yet recorded */
	int has_dev;		/* 1 when major:minor were recorded */
	unsigned major, minor;	/* st_dev of the mount (its FUSE connection) */
	int closing;		/* 1 when its mount has ended and it is
				 * closing the database */
};

/* Take the exclusive lock DB-mount for the life of the mount.  The lock's fd
 * into *fd.  -EBUSY when another process holds it: what it recorded into
 * *h (empty if not yet written).  A holder that was killed and is still
 * ending is waited for, with a line on stderr.  0 or -errno. */
int lockfile_acquire(const char *db, int *fd, struct lockfile_holder *h);

/* Record our pid, mount point and the mount's major:minor (dev_known 0:
 * unknown) in the held lock file.  0 or -errno. */
int lockfile_record(int fd, const char *dir, int dev_known, unsigned major,
    unsigned minor);

/* Record in the held lock file that the mount has ended and the database
 * is being closed, so that a mount of it waits for the lock rather than
 * refusing.  0 or -errno. */
int lockfile_record_closing(int fd);

/* 1 when some process holds DB's mount lock (what it recorded into *h),
 * 0 when none does, or -errno. */
int lockfile_probe(const char *db, struct lockfile_holder *h);

/* 1 when DB's lock file DB-mount exists, 0 when not (so that a command
 * that makes it can tell whether to remove it again). */
int lockfile_exists(const char *db);

/* Clear the record and release the lock. */
void lockfile_release(int fd);

/* The major:minor of the atrium-fs mount on top at dir in our mount
 * namespace: 0, or -ENOENT when dir is not one (mount_holder.c). */
int mount_holder_dev(const char *dir, unsigned *major, unsigned *minor);

/* 1 when the holder h recorded a mount that is not in our mount table
 * (unmounted here, or kept only by a copy in another mount namespace). */
int mount_holder_gone(const struct lockfile_holder *h);

/* Say on stderr why DB cannot be mounted, given the holder of its lock:
 * mounted (and where), being mounted, or held by a daemon whose mount is
 * gone here but kept by a copy in another mount namespace (mount_holder.c). */
void mount_holder_explain(const char *db, const struct lockfile_holder *h);

/* Say on stderr that verb ("repair", "import into", ...) of DB is refused
 * because the holder h of its mount lock uses it: the mount point and the
 * daemon's pid, or that another command holds it (mount_holder.c). */
void mount_holder_refuse(const char *db, const struct lockfile_holder *h,
    const char *verb);

#endif
