/*
 * lockfile.c: the mount lock, DB + "-mount", held with flock(LOCK_EX) by the
 * daemon serving DB for as long as it is mounted.  Called by fs/mount.c
 * (acquire, record, release) and fs/main.c (probe, for fsck).
 *
 * The file holds "PID\nMOUNTPOINT\nMAJOR:MINOR\n" of the holder so that a
 * refused second mount can say where the first one is, and whether that
 * mount still exists (fs/mount_holder.c looks for MAJOR:MINOR, the FUSE
 * connection's device, in the mount tables).  The third line is missing
 * from the files of older atrium-fs and when the device could not be found.  The kernel drops the flock when the
 * holder dies, so a stale file never blocks a mount; its text is rewritten
 * by the next holder.
 */
#include "mount.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* The lock file's path for db into out.  0 or -ENAMETOOLONG. */
static int
lockfile_path(const char *db, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s-mount", db);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

/* Read what the holder recorded from fd into *h. */
static void
lockfile_read(int fd, struct lockfile_holder *h)
{
	char buf[PATH_MAX + 128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *p, *nl;

	memset(h, 0, sizeof(*h));
	if (n <= 0)
		return;
	buf[n] = '\0';
	h->pid = (pid_t)strtol(buf, &p, 10);
	if (h->pid < 0 || *p != '\n') {
		h->pid = 0;
		return;
	}
	p++;
	if (!(nl = strchr(p, '\n')))
		return;
	*nl = '\0';
	snprintf(h->dir, sizeof(h->dir), "%s", p);
	if (sscanf(nl + 1, "%u:%u\n", &h->major, &h->minor) == 2)
		h->has_dev = 1;
}

/* Take the mount lock without waiting: 0, -EBUSY (holder filled) or -errno. */
int
lockfile_acquire(const char *db, int *fd, struct lockfile_holder *h)
{
	char path[4096];
	int r;

	*fd = -1;
	memset(h, 0, sizeof(*h));
	if ((r = lockfile_path(db, path, sizeof(path))) < 0)
		return r;
	if ((*fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return -errno;
	if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	r = errno == EWOULDBLOCK ? -EBUSY : -errno;
	if (r == -EBUSY)
		lockfile_read(*fd, h);
	close(*fd);
	*fd = -1;
	return r;
}

/* Write our pid, mount point and device into the held lock: 0 or -errno. */
int
lockfile_record(int fd, const char *dir, int dev_known, unsigned major,
    unsigned minor)
{
	char buf[PATH_MAX + 128], dev[32] = "";
	int n;

	if (dev_known)
		snprintf(dev, sizeof(dev), "%u:%u\n", major, minor);
	n = snprintf(buf, sizeof(buf), "%ld\n%s\n%s", (long)getpid(), dir, dev);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		return -errno;
	return 0;
}

/* Whether a daemon holds the mount lock: 1, 0 or -errno. */
int
lockfile_probe(const char *db, struct lockfile_holder *h)
{
	char path[4096];
	int fd, r;

	memset(h, 0, sizeof(*h));
	if ((r = lockfile_path(db, path, sizeof(path))) < 0)
		return r;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		close(fd);
		return 0;
	}
	r = errno == EWOULDBLOCK ? 1 : -errno;
	if (r == 1)
		lockfile_read(fd, h);
	close(fd);
	return r;
}

/* Clear the record and drop the lock (closing its fd). */
void
lockfile_release(int fd)
{
	if (fd < 0)
		return;
	if (ftruncate(fd, 0) < 0) {
		/* The stale text is harmless: the flock is what counts. */
	}
	close(fd);
}
