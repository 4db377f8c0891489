/*
 * mount_confine.c: a mount's daemon gives up root before it serves a
 * request (mount_confine.h).  Called by fs/daemon/mount.c under -o run_as,
 * and by `atrium-fs fsck --run-as` (fs/fs_main.c), which atriumd runs on a
 * database restored from the object store before it is put in place: the
 * same files, the same limits, and nothing more to parse than SQLite's
 * pages.
 *
 * Why: the daemon parses every byte the room's commands write and every
 * name they choose; one memory bug in it must not be root on the host.
 * It needs root only to mount (allow_other, without a setuid helper) and
 * to unmount, which its keeper (mount_keeper.c), a parent that parses
 * nothing, does for it.
 *
 * Its files: the database's directory stays root's (atriumd makes a room's
 * root:GID 0710), so the daemon can neither add nor remove a file there;
 * the database, its -wal and its -shm are UID's.  SQLite as root gives a
 * -wal or -shm it makes to the database's owner, so those it makes while
 * the mount is set up are UID's too, and after the drop nothing is made:
 * the writer's connection holds the WAL open for the mount's life, and a
 * reader or the checkpointer opens files that exist.  At the end SQLite
 * may fail to remove the WAL; it leaves it, as it does under
 * PERSIST_WAL.
 *
 * What a subverted daemon reaches: its database's three files (Landlock
 * names them, each by its inode), the system's libraries for reading, and
 * the descriptors it holds (its mount's /dev/fuse, its control socket, its
 * mount lock).  It cannot execute, trace, mount or make a socket (the
 * seccomp list), nor open another room's files (Landlock, and its uid).
 * The room's commands run as the same uid, but in a pid namespace where
 * the daemon has no pid, and it is not dumpable.
 */
#include "mount_confine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "becomeuser.h"
#include "landlock.h"
#include "log.h"
#include "seccomp_allow.h"

static const char *const confine_suffixes[] = { "", "-wal", "-shm" };
#define CONFINE_NFILES (sizeof(confine_suffixes) / sizeof(*confine_suffixes))

int
mount_confine_parse(const char *v, uid_t *uid, gid_t *gid)
{
	unsigned long long u, g;
	char *end;

	errno = 0;
	u = strtoull(v, &end, 10);
	if (errno || end == v || *end != ':')
		return -EINVAL;
	v = end + 1;
	g = strtoull(v, &end, 10);
	if (errno || end == v || *end || u == 0 || g == 0 ||
	    u >= (uid_t)-1 || g >= (gid_t)-1 || *v == '-')
		return -EINVAL;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

/* 1 when uid:gid (no other groups) may search the directory st. */
static int
confine_may_search(const struct stat *st, uid_t uid, gid_t gid)
{
	if (st->st_uid == uid)
		return !!(st->st_mode & S_IXUSR);
	if (st->st_gid == gid)
		return !!(st->st_mode & S_IXGRP);
	return !!(st->st_mode & S_IXOTH);
}

/* Give dirfd's file name to uid:gid when it exists; never through a
 * symbolic link, and only a regular file.  0 or -errno. */
static int
confine_give(int dirfd, const char *name, uid_t uid, gid_t gid)
{
	struct stat st;
	int fd, r = 0;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if ((st.st_uid != uid || st.st_gid != gid) &&
	    fchown(fd, uid, gid) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* db's directory (into dir) and its last part (a pointer into db). */
static const char *
confine_split(const char *db, char *dir, size_t len)
{
	const char *slash = strrchr(db, '/');

	if (!slash) {
		snprintf(dir, len, ".");
		return db;
	}
	snprintf(dir, len, "%.*s", slash == db ? 1 : (int)(slash - db), db);
	return slash + 1;
}

int
mount_confine_prepare(const char *db, uid_t uid, gid_t gid, char *path,
    size_t len)
{
	char dir[PATH_MAX], name[NAME_MAX + 8];
	const char *base = confine_split(db, dir, sizeof(dir));
	struct stat st;
	int dirfd, r = 0;

	if ((dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    fstat(dirfd, &st) < 0) {
		fprintf(stderr, "atrium-fs: %s: %s\n", dir, strerror(errno));
		if (dirfd >= 0)
			close(dirfd);
		return -1;
	}
	if (!confine_may_search(&st, uid, gid)) {
		fprintf(stderr, "atrium-fs: -o run_as=%u:%u: %s must let that "
		    "uid or gid search it (mode %o, owner %u:%u); atriumd makes "
		    "a room's directory root's and the room group's, 0710\n",
		    (unsigned)uid, (unsigned)gid, dir,
		    (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid,
		    (unsigned)st.st_gid);
		close(dirfd);
		return -1;
	}
	for (size_t i = 0; r == 0 && i < CONFINE_NFILES; i++) {
		snprintf(name, sizeof(name), "%s%s", base, confine_suffixes[i]);
		if ((r = confine_give(dirfd, name, uid, gid)) < 0)
			fprintf(stderr, "atrium-fs: giving %s/%s to %u:%u: %s\n",
			    dir, name, (unsigned)uid, (unsigned)gid,
			    strerror(-r));
	}
	if (r == 0 && (size_t)snprintf(path, len, "/proc/self/fd/%d/%s", dirfd,
	    base) >= len) {
		fprintf(stderr, "atrium-fs: %s: name too long\n", db);
		r = -ENAMETOOLONG;
	}
	if (r < 0)
		close(dirfd);
	return r < 0 ? -1 : 0;
}

/* ---- Landlock ------------------------------------------------------------ */

/* The database's three files, read and written; the system's libraries
 * (glibc loads libgcc_s when a thread is cancelled) and its /etc (time
 * zone) for reading; the names of its threads; /dev/null. */
static int
confine_landlock(const char *db)
{
	char files[CONFINE_NFILES][PATH_MAX + 8], err[PATH_MAX + 64];
	struct landlock_tree t[16];
	int n = 0, r;

	for (size_t i = 0; i < CONFINE_NFILES; i++) {
		snprintf(files[i], sizeof(files[i]), "%s%s", db,
		    confine_suffixes[i]);
		/* A -wal or -shm that does not exist now is never made. */
		t[n++] = (struct landlock_tree){ files[i], LANDLOCK_FILE,
		    i > 0 };
	}
	t[n++] = (struct landlock_tree){ "/usr", LANDLOCK_EXEC, 0 };
	t[n++] = (struct landlock_tree){ "/lib", LANDLOCK_EXEC, 1 };
	t[n++] = (struct landlock_tree){ "/lib64", LANDLOCK_EXEC, 1 };
	t[n++] = (struct landlock_tree){ "/etc", LANDLOCK_READ, 0 };
	t[n++] = (struct landlock_tree){ "/proc/self/task", LANDLOCK_DEVICE,
	    1 };
	t[n++] = (struct landlock_tree){ "/dev/null", LANDLOCK_DEVICE, 0 };
	t[n] = (struct landlock_tree){ NULL, LANDLOCK_READ, 0 };
	r = landlock_restrict(t, err, sizeof(err));
	if (r == -EOPNOTSUPP) {
		log_warn("the kernel has no Landlock: the daemon's files are "
		    "limited by its uid alone");
		return 0;
	}
	if (r < 0)
		log_error("Landlock: %s", err);
	return r;
}

/* ---- seccomp ------------------------------------------------------------- */

static const char *const confine_allowed[] = {
	/* memory */
	"brk", "mmap", "munmap", "mremap", "madvise", "mprotect", "msync",
	"membarrier", "mincore",
	/* its files, its mount's device, the control socket's peers */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv",
	"pwritev", "preadv2", "pwritev2", "lseek", "close", "close_range",
	"dup", "dup2", "dup3", "fcntl", "flock", "open", "openat", "openat2",
	"fstat", "newfstatat", "stat", "lstat", "statx", "access",
	"faccessat", "faccessat2", "readlink", "readlinkat", "getdents64",
	"fsync", "fdatasync", "sync_file_range", "ftruncate", "fallocate",
	"fadvise64", "readahead", "unlink", "unlinkat", "getcwd", "statfs",
	"fstatfs", "umask", "pipe", "pipe2", "splice", "vmsplice", "tee",
	"accept", "accept4", "recvfrom", "recvmsg", "sendto", "sendmsg",
	"shutdown", "getsockopt", "setsockopt", "getsockname", "getpeername",
	"poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl",
	"epoll_wait", "epoll_pwait", "eventfd2",
	/* signals: the keeper's, libfuse's handlers, abort */
	"rt_sigprocmask", "rt_sigaction", "rt_sigreturn", "sigaltstack",
	"restart_syscall", "tgkill", "tkill", "getitimer", "setitimer",
	/* time */
	"clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep",
	"clock_nanosleep",
	/* this process */
	"getpid", "gettid", "getppid", "getuid", "geteuid", "getgid",
	"getegid", "getresuid", "getresgid", "getgroups", "capget",
	"getrlimit", "prlimit64", "getrusage", "getrandom", "futex",
	"futex_waitv", "set_robust_list", "get_robust_list", "rseq",
	"set_tid_address", "sched_yield", "sched_getaffinity", "uname",
	"sysinfo", "exit", "exit_group",
};

/* ioctl requests: stderr's isatty and non-blocking fds. */
static const unsigned long confine_ioctls[] = {
	TCGETS, TIOCGWINSZ, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX,
};

/* prctl options glibc and libfuse use: nothing that gives a right back. */
static const int confine_prctls[] = {
	PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_SET_PDEATHSIG,
	PR_GET_PDEATHSIG, PR_SET_VMA, PR_GET_NO_NEW_PRIVS, PR_CAPBSET_READ,
	PR_GET_SECCOMP,
};

/* Every other call fails with EPERM (a SQLite or libfuse path that needs
 * one then reports an error, never a wrong byte). */
static int
confine_seccomp(void)
{
	static const struct seccomp_allow allow = {
		confine_allowed, SECCOMP_ALLOW_N(confine_allowed),
		confine_ioctls, SECCOMP_ALLOW_N(confine_ioctls),
		confine_prctls, SECCOMP_ALLOW_N(confine_prctls),
		1, NULL,
	};

	return seccomp_allow_load(&allow);
}

/* ---- all of it ----------------------------------------------------------- */

int
mount_confine_drop(const char *db, uid_t uid, gid_t gid)
{
	const char *step;
	pid_t parent = getppid();
	int deathsig = 0, r;

	prctl(PR_GET_PDEATHSIG, &deathsig, 0, 0, 0);
	if ((r = become_user(uid, gid, &step)) < 0) {
		log_error("cannot become uid %u (%s): %s", (unsigned)uid, step,
		    strerror(-r));
		return -1;
	}
	/* The uid change cleared the death signal (the keeper's): set it
	 * again, and go if the keeper went meanwhile. */
	if (deathsig && (prctl(PR_SET_PDEATHSIG, deathsig, 0, 0, 0) < 0 ||
	    getppid() != parent)) {
		log_error("the mount's keeper went while the daemon started");
		return -1;
	}
	if (confine_landlock(db) < 0 || confine_seccomp() < 0)
		return -1;
	return 0;
}
