/*
 * datalock.c: the data directory's lock (datalock.h).  Called by monitor_main.c
 * (take at start), room_cli.c (take for an offline deletion, probe),
 * status.c (probe) and cgroup_claim.c (the cgroup parent's lock file).
 *
 * Why a POSIX record lock and not flock or an OFD lock: those two belong
 * to the open file description, which fork shares with the child.  Had a
 * child forked by the monitor kept a copy of the descriptor, it would hold
 * the lock too: after a kill -9 of the monitor the lock would last as long
 * as that child, and the child could release it.  A record lock belongs to the process that set it: a child never
 * holds it, cannot release it (F_UNLCK in a process drops only that
 * process's locks), and the kernel drops it when the monitor exits.  Its
 * one trap is that closing any descriptor of the file in the holding
 * process drops the lock: this file is the only code that opens
 * DATA/atriumd.lock, and the monitor opens it once.  F_GETLK names the
 * holder's pid (as seen from the asker's pid namespace), so a refusal
 * names it without trusting the file's text.
 *
 * The descriptor is close-on-exec: the rooms' programs and the network
 * process (atriumd-net, executed) never see it.
 */
#include "datalock.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define DATALOCK_TRIES	8	/* holder gone or file replaced meanwhile */

/* DATA/atriumd.lock into out.  0 or -ENAMETOOLONG. */
static int
datalock_path(const char *data, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/%s", data, DATALOCK_NAME);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The whole file, for F_SETLK and F_GETLK. */
static struct flock
datalock_range(short type)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	return fl;
}

/* Who holds fd's file: 1 (pid in *holder), 0 (nobody) or -errno. */
static int
datalock_query(int fd, pid_t *holder)
{
	struct flock fl = datalock_range(F_WRLCK);

	*holder = 0;
	if (fcntl(fd, F_GETLK, &fl) < 0)
		return -errno;
	if (fl.l_type == F_UNLCK)
		return 0;
	*holder = fl.l_pid > 0 ? fl.l_pid : 0;
	return 1;
}

/* 1 when fd is still the regular file at path (not removed or replaced
 * between our open and our lock), else 0. */
static int
datalock_same(int fd, const char *path)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
	    S_ISREG(a.st_mode) && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Write our pid into the held lock file, for people (`cat`). */
static void
datalock_record(int fd, const char *path)
{
	char text[32];
	int n = snprintf(text, sizeof(text), "%ld\n", (long)getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, text, (size_t)n, 0) != n)
		log_warn("%s: cannot record the pid: %s (the lock holds all "
		    "the same)", path, strerror(errno));
}

/* One try at path: 0 (held, as *fd), 1 (try again), -EBUSY (holder in
 * *holder) or -errno (logged). */
static int
datalock_try(const char *path, int *fd, pid_t *holder)
{
	struct flock fl = datalock_range(F_WRLCK);
	int e, r;

	*fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (*fd < 0) {
		e = errno;
		log_error("%s: cannot open the data directory's lock: %s",
		    path, strerror(e));
		return -e;
	}
	if (fcntl(*fd, F_SETLK, &fl) == 0) {
		if (datalock_same(*fd, path))
			return 0;
		close(*fd);		/* drops the lock on the old file */
		return 1;
	}
	e = errno;
	if (e != EAGAIN && e != EACCES) {
		log_error("%s: cannot lock: %s", path, strerror(e));
		close(*fd);
		return -e;
	}
	r = datalock_query(*fd, holder);
	close(*fd);
	/* Nobody now: the holder ended between the two calls. */
	return r == 1 ? -EBUSY : r == 0 ? 1 : r;
}

/* See datalock.h. */
int
datalock_take(struct datalock *l, const char *data, pid_t *holder)
{
	char path[PATH_MAX + 32];
	int r;

	l->fd = -1;
	*holder = 0;
	if ((r = datalock_path(data, path, sizeof(path))) < 0) {
		log_error("%s: path too long for its lock", data);
		return r;
	}
	return datalock_take_file(l, path, holder);
}

/* See datalock.h. */
int
datalock_take_file(struct datalock *l, const char *path, pid_t *holder)
{
	int fd, r;

	l->fd = -1;
	*holder = 0;
	for (int i = 0; i < DATALOCK_TRIES; i++) {
		if ((r = datalock_try(path, &fd, holder)) == 1)
			continue;
		if (r == 0) {
			datalock_record(fd, path);
			l->fd = fd;
		}
		return r;
	}
	log_error("%s: the lock file keeps changing under us; is another "
	    "program removing it?", path);
	return -EBUSY;
}

/* See datalock.h. */
int
datalock_probe(const char *data, pid_t *holder)
{
	char path[PATH_MAX + 32];
	int fd, r;

	*holder = 0;
	if ((r = datalock_path(data, path, sizeof(path))) < 0)
		return r;
	/* Read-only: F_GETLK asks, whatever the descriptor's mode. */
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	r = datalock_query(fd, holder);
	close(fd);
	return r;
}

/* See datalock.h. */
void
datalock_explain(const char *who, const char *data, pid_t holder,
    const char *advice)
{
	char pid[48];

	if (holder > 0)
		snprintf(pid, sizeof(pid), "atriumd pid %ld", (long)holder);
	else
		snprintf(pid, sizeof(pid), "a process in another pid "
		    "namespace");
	fprintf(stderr, "%s: data directory %s is in use: %s holds %s/%s; "
	    "%s\n", who, data, pid, data, DATALOCK_NAME, advice);
}
