/*
 * lockfile.c: the mount lock, DB + "-mount", held with flock(LOCK_EX) by the
 * daemon serving DB from before it opens DB until its process ends (the
 * kernel drops the flock after it has freed the process's memory, so the
 * next daemon never runs beside it).  Called by fs/daemon/mount.c (acquire,
 * record), fs/fs_main.c (probe, for fsck) and the commands that take the
 * lock for a while (acquire, release): every command that changes a
 * database takes it, or goes through the mounted daemon's control socket
 * (fs/daemon/control_socket.c) when a daemon holds it; none writes beside a
 * daemon. Nothing removes the lock file of a database that stays: only an
 * import that made the database and the lock file, and fails, removes both
 * again, with the lock still held.
 *
 * The file holds "PID\nMOUNTPOINT\nMAJOR:MINOR\n" of the holder so that a
 * refused second mount can say where the first one is, and whether that
 * mount still exists (fs/daemon/mount_holder.c looks for MAJOR:MINOR, the FUSE
 * connection's device, in the mount tables).  The third line is missing
 * from the files of older atrium-fs and when the device could not be
 * found.  A last line "closing" says that the mount has ended and the
 * daemon is closing the database: committing what it holds and copying
 * the log into the database, seconds after a big write.  The kernel drops
 * the flock when the holder's process ends, so a stale file never blocks a
 * mount; its text is rewritten by the next holder once that one has the
 * lock, and until then it names a process with no thread left
 * (lockfile_pid_runs), which is never waited for.
 *
 * "Dies" is not instant.  A daemon killed with SIGKILL keeps its files,
 * and so the flock, until its last thread leaves the kernel; a thread in
 * fsync of a big WAL can take many seconds, during which its main thread
 * already reads as a zombie.  Telling the user "already mounted" then would
 * send them after a mount that is gone, so lockfile_acquire waits for such
 * a holder (lockfile_holder_ending), and for one that says it is closing
 * (`fusermount3 -u` then a mount at once), for up to ENDING_WAIT_S, saying
 * so.
 */
#include "mount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENDING_WAIT_S	120	/* longest wait for a killed holder to end */
#define ENDING_POLL_MS	20

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
	for (p = nl + 1; *p; p = nl + 1) {
		if (!(nl = strchr(p, '\n')))
			break;          /* a line still being written */
		*nl = '\0';
		if (strcmp(p, "closing") == 0)
			h->closing = 1;
		else if (sscanf(p, "%u:%u", &h->major, &h->minor) == 2)
			h->has_dev = 1;
	}
}

/* Whether the line "Key:\thex" in a /proc status text has SIGKILL's bit. */
static int
status_has_sigkill(const char *status, const char *key)
{
	const char *p = strstr(status, key);

	return p && (strtoull(p + strlen(key), NULL, 16) &
	    (1ULL << (SIGKILL - 1))) != 0;
}

/* Whether pid is on its way out: SIGKILL pending, or its main thread a
 * zombie while another thread still finishes in the kernel.  The holder of
 * a held flock cannot be a reused pid: the thread group keeps it. */
static int
lockfile_holder_ending(pid_t pid)
{
	char path[64], buf[4096], *state;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
	if (pid <= 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if ((state = strstr(buf, "\nState:\t")) &&
	    (state[8] == 'Z' || state[8] == 'X'))
		return 1;
	return status_has_sigkill(buf, "\nSigPnd:\t") ||
	    status_has_sigkill(buf, "\nShdPnd:\t");
}

/* Whether a thread of pid has not ended.  A process whose threads are
 * all zombies has closed its files and holds no lock: a record naming it
 * is stale, left under a lock that another process has taken since (a
 * daemon leaves its record, "closing" included, when its process ends;
 * the next holder rewrites it only once it has the lock). */
static int
lockfile_pid_runs(pid_t pid)
{
	char path[64], stat[128], buf[512], *p;
	struct dirent *d;
	DIR *dir;
	int runs = 0, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
	if (pid <= 0 || !(dir = opendir(path)))
		return 0;
	while (!runs && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(stat, sizeof(stat), "%s/%.32s/stat", path, d->d_name);
		if ((fd = open(stat, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		p = strrchr(buf, ')');
		runs = p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	}
	closedir(dir);
	return runs;
}

/* Wait on fd's flock while its holder (*h, read again at each try) is
 * ending or closing, for up to ENDING_WAIT_S: 0 when taken, -EBUSY when
 * not. */
static int
lockfile_wait_ending(const char *db, int fd, struct lockfile_holder *h)
{
	const struct timespec poll = { 0, ENDING_POLL_MS * 1000000L };
	int said = 0;

	for (long waited = 0; waited < ENDING_WAIT_S * 1000L;
	    waited += ENDING_POLL_MS) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -EBUSY;
		lockfile_read(fd, h);
		if (!lockfile_pid_runs(h->pid) ||
		    (!h->closing && !lockfile_holder_ending(h->pid)))
			return -EBUSY;
		if (!said++)
			fprintf(stderr, "atrium-fs: %s: waiting for atrium-fs "
			    "pid %ld, which is ending (%s), to finish the "
			    "writes it had started\n", db, (long)h->pid,
			    h->closing ? "unmounted, closing the database" :
			    "killed, or exiting");
		nanosleep(&poll, NULL);
	}
	fprintf(stderr, "atrium-fs: %s: atrium-fs pid %ld is ending but has "
	    "not ended after %d s; its disk may have stalled\n", db, (long)h->pid,
	    ENDING_WAIT_S);
	return -EBUSY;
}

/* Take the mount lock: 0, -EBUSY (holder filled) or -errno.  Only a holder
 * that is ending is waited for (see the head). */
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
	if (r == -EBUSY) {
		if (lockfile_wait_ending(db, *fd, h) == 0) {
			memset(h, 0, sizeof(*h));
			return 0;
		}
	}
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

int
lockfile_record_closing(int fd)
{
	static const char line[] = "closing\n";
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	n = pwrite(fd, line, sizeof(line) - 1, st.st_size);
	if (n < 0)
		return -errno;
	return n == (ssize_t)(sizeof(line) - 1) ? 0 : -EIO;
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

int
lockfile_exists(const char *db)
{
	char path[4096];

	return lockfile_path(db, path, sizeof(path)) == 0 &&
	    access(path, F_OK) == 0;
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
