/*
 * confine.c: what atrium-agent may do once it serves (confine.h).
 *
 * Why.  The agent parses the most hostile bytes of a room: the model's
 * stream, MCP servers' JSON-RPC, the shared terminal's output, workspace
 * files through PCRE2, and every protocol line.  A memory bug in any of
 * them must not be root on the host.  So the agent runs as its room's
 * sandbox uid and gid, with no capability, no_new_privs, not dumpable,
 * Landlock rules that leave it its room's directories (and the host's
 * read-only system files it needs to reach the model), and a seccomp
 * allow list.  What still needs root is done before (agent_main.c): the
 * listening socket, the sandbox's passwd file, the room's cgroup (whose
 * directories are then handed to the room's uid, so the agent makes and
 * removes its commands' groups below it, and the room's own limits stay
 * root's); and by the spawner (spawner.h), which stays root with a fixed
 * table of checked requests.
 *
 * Why the sandbox uid.  The file tools must create files owned by it and
 * may touch only what it may, exactly as a command in the sandbox would:
 * running as that uid, the kernel checks them as it checks the command.
 * No sandboxed command can signal, trace or read the agent although they
 * share a uid: each command has its own pid namespace, in which the
 * agent has no pid (kill, ptrace, pidfd_open, process_vm_readv and /proc
 * all need one), and the agent is not dumpable, so its /proc files are
 * root's and ptrace needs CAP_SYS_PTRACE.
 *
 * room.db.  The room's directory holds workspace.db and the room's uid
 * file, which root reads; so the agent may not add, remove or rename
 * anything there (root's directory, 0710 to the room's group).  room.db,
 * room.db-wal and room.db-shm are made here and given to the room's uid
 * (a new room.db already in WAL mode, so that no rollback journal is ever
 * needed); room_db.c keeps the WAL file (SQLITE_FCNTL_PERSIST_WAL) and never needs
 * another file there (temp_store=MEMORY).
 *
 * The allow list is what the loop, SQLite, libcurl with OpenSSL and its
 * resolver, liburing, the pty of the shared terminal and glibc call;
 * anything else fails with EPERM (execve, ptrace, mount, unshare, setns,
 * bpf, keyctl, the set*id calls, chroot...), and a system call of
 * another architecture's table kills the process.  clone makes threads
 * only.  io_uring's operations are not seen by seccomp; they are by
 * Landlock and the uid.
 */
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"
#include "becomeuser.h"
#include "landlock.h"
#include "log.h"
#include "seccomp_allow.h"
#include "protocol.h"
#include "room_db.h"

/* ---- room.db's files ---------------------------------------------------- */

/* DIR/name exists, uid's and gid's, mode 0600 (no symbolic link
 * followed).  0 or -errno. */
static int
confine_own(int dirfd, const char *name, uid_t uid, gid_t gid)
{
	int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC | O_NOCTTY, 0600), r = 0;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = -EINVAL;
	else if ((st.st_uid != uid || st.st_gid != gid) &&
	    fchown(fd, uid, gid) < 0)
		r = -errno;
	else if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* A new, empty room.db gets its WAL journal mode here, as root: setting
 * it writes through a rollback journal, room.db-journal, which the agent
 * could neither make nor remove in the room's directory.  An existing
 * room.db is never opened as root: the agent wrote it.  0 or -errno. */
static int
confine_new_db(int dirfd, const char *room_dir)
{
	char path[PATH_MAX + 16];
	struct stat st;
	sqlite3 *db = NULL;
	int r = 0;

	if (fstatat(dirfd, ROOM_DB_NAME, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (st.st_size > 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", room_dir, ROOM_DB_NAME);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) !=
	    SQLITE_OK || sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL,
	    NULL) != SQLITE_OK) {
		log_error("%s: %s", path, db ? sqlite3_errmsg(db) :
		    "out of memory");
		r = -EIO;
	}
	if (db)
		room_db_keep_files(db);
	sqlite3_close(db);
	return r;
}

int
confine_room_files(struct agent *a)
{
	static const char *const names[] = { ROOM_DB_NAME,
	    ROOM_DB_NAME "-wal", ROOM_DB_NAME "-shm" };
	int dirfd, r = 0;

	if (geteuid() != 0)
		return 0;
	dirfd = open(a->room_dir, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 || fchown(dirfd, 0, a->sb.gid) < 0 ||
	    fchmod(dirfd, 0710) < 0)
		r = -errno;
	if (r == 0 && (r = confine_own(dirfd, names[0], a->sb.uid,
	    a->sb.gid)) == 0)
		r = confine_new_db(dirfd, a->room_dir);
	for (size_t i = 1; r == 0 && i < sizeof(names) / sizeof(*names); i++)
		r = confine_own(dirfd, names[i], a->sb.uid, a->sb.gid);
	if (dirfd >= 0)
		close(dirfd);
	if (r < 0)
		log_error("%s: cannot hand room.db to the room's uid %u: %s",
		    a->room_dir, (unsigned)a->sb.uid, strerror(-r));
	return r;
}

/* ---- the room's directories ---------------------------------------------- */

/* Hold the room's two directories open and name them, from now on,
 * through those descriptors ("/proc/self/fd/N"): the room's uid may not
 * walk DATA's parents (DATA is 0700), but a process may follow its own
 * descriptors' links, and each directory lets the room's group search it.
 * The operator's seed directory is held open too.
 * The spawner keeps the real paths (its copy was made at its fork).  0 or
 * -errno (logged). */
static int
confine_reach_dirs(struct agent *a)
{
	char *paths[2] = { a->room_dir, a->run_dir };
	int *fds[2] = { &a->room_fd, &a->run_fd };

	for (int i = 0; i < 2; i++) {
		*fds[i] = open(paths[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (*fds[i] < 0) {
			int e = errno;

			log_error("%s: %s", paths[i], strerror(e));
			return -e;
		}
		snprintf(paths[i], PATH_MAX, "/proc/self/fd/%d", *fds[i]);
	}
	if ((size_t)snprintf(a->workspace, sizeof(a->workspace), "/proc/self/"
	    "fd/%d/%s", a->run_fd, WORKSPACE_DIR_NAME) >= sizeof(a->workspace))
		return -ENAMETOOLONG;
	/* The operator's seed directory likewise (seed.c); it may be missing
	 * until someone asks for it, which then fails as before. */
	if (a->cfg.seed_dir[0] && (a->seed_fd = open(a->cfg.seed_dir, O_PATH |
	    O_DIRECTORY | O_CLOEXEC)) >= 0 && !realpath(a->cfg.seed_dir,
	    a->seed_real))
		a->seed_real[0] = '\0';
	return 0;
}

/* ---- Landlock ------------------------------------------------------------ */

/* The trees the agent may open: its room's (and the cgroup parent of its
 * room's group) for everything, the system's for reading, the devices a
 * pty needs. */
static int
confine_landlock(struct agent *a)
{
	struct landlock_tree t[32];
	char err[PATH_MAX + 64], groups[CGROUP_NCTL][CGROUP_PATH_MAX];
	char seed[32];
	int n = 0, r;

	t[n++] = (struct landlock_tree){ a->room_dir, LANDLOCK_WRITE, 0 };
	t[n++] = (struct landlock_tree){ a->run_dir, LANDLOCK_WRITE, 0 };
	for (int i = 0; i < CGROUP_NCTL; i++) {
		char *slash = strrchr(a->room_cg.dir[i], '/');

		/* The parent of the room's group, not the group: the group is
		 * made again when it went (by another atriumd's sweep, say),
		 * and a rule holds one inode.  Root's, so the uid's rights
		 * still leave the agent its own room's group alone. */
		if (!slash || slash == a->room_cg.dir[i])
			continue;
		snprintf(groups[i], sizeof(groups[i]), "%.*s",
		    (int)(slash - a->room_cg.dir[i]), a->room_cg.dir[i]);
		t[n++] = (struct landlock_tree){ groups[i], LANDLOCK_WRITE, 1 };
	}
	if (a->seed_fd >= 0) {
		snprintf(seed, sizeof(seed), "/proc/self/fd/%d", a->seed_fd);
		t[n++] = (struct landlock_tree){ seed, LANDLOCK_READ, 0 };
	}
	t[n++] = (struct landlock_tree){ "/usr", LANDLOCK_EXEC, 0 };
	t[n++] = (struct landlock_tree){ "/etc", LANDLOCK_READ, 0 };
	t[n++] = (struct landlock_tree){ "/proc", LANDLOCK_READ, 0 };
	/* its threads' names (pthread_setname_np writes comm) */
	t[n++] = (struct landlock_tree){ "/proc/self/task", LANDLOCK_DEVICE,
	    1 };
	t[n++] = (struct landlock_tree){ "/sys", LANDLOCK_READ, 1 };
	t[n++] = (struct landlock_tree){ "/run/systemd/resolve", LANDLOCK_READ,
	    1 };	/* where /etc/resolv.conf often points */
	t[n++] = (struct landlock_tree){ "/lib", LANDLOCK_EXEC, 1 };
	t[n++] = (struct landlock_tree){ "/lib64", LANDLOCK_EXEC, 1 };
	t[n++] = (struct landlock_tree){ "/dev/null", LANDLOCK_DEVICE, 0 };
	t[n++] = (struct landlock_tree){ "/dev/zero", LANDLOCK_DEVICE, 1 };
	t[n++] = (struct landlock_tree){ "/dev/urandom", LANDLOCK_READ, 1 };
	t[n++] = (struct landlock_tree){ "/dev/random", LANDLOCK_READ, 1 };
	t[n++] = (struct landlock_tree){ "/dev/ptmx", LANDLOCK_DEVICE, 1 };
	t[n++] = (struct landlock_tree){ "/dev/pts", LANDLOCK_DEVICE, 1 };
	t[n] = (struct landlock_tree){ NULL, LANDLOCK_READ, 0 };
	r = landlock_restrict(t, err, sizeof(err));
	if (r == -EOPNOTSUPP) {
		log_warn("the kernel has no Landlock: the agent's files are "
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
	/* descriptors and files */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv",
	"pwritev", "preadv2", "pwritev2", "lseek", "close", "close_range",
	"dup", "dup2", "dup3", "fcntl", "flock", "open", "openat", "openat2",
	"creat", "fstat", "newfstatat", "stat", "lstat", "statx", "access",
	"faccessat", "faccessat2", "readlink", "readlinkat", "getdents64",
	"fsync", "fdatasync", "ftruncate", "truncate", "fallocate",
	"fadvise64", "readahead", "unlink", "unlinkat", "rename", "renameat",
	"renameat2", "mkdir", "mkdirat", "rmdir", "link", "linkat", "symlink",
	"symlinkat", "fchmod", "fchmodat", "chmod", "utimensat", "futimesat",
	"getcwd", "chdir", "fchdir", "statfs", "fstatfs", "umask", "pipe",
	"pipe2", "splice", "tee", "sendfile", "copy_file_range", "memfd_create",
	/* sockets: the model's connections, the room's clients */
	"socket", "socketpair", "connect", "accept", "accept4", "bind",
	"listen", "recvfrom", "recvmsg", "recvmmsg", "sendto", "sendmsg",
	"sendmmsg", "shutdown", "getsockopt", "setsockopt", "getsockname",
	"getpeername",
	/* the loop and its ring */
	"poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1",
	"epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd",
	"eventfd2", "timerfd_create", "timerfd_settime", "timerfd_gettime",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	/* signals, and the commands (children through the spawner) */
	"rt_sigprocmask", "rt_sigaction", "rt_sigreturn", "rt_sigtimedwait",
	"sigaltstack", "signalfd", "signalfd4", "restart_syscall", "kill",
	"tgkill", "tkill", "pidfd_open", "pidfd_send_signal", "waitid", "wait4",
	"alarm", "setitimer", "getitimer",
	/* time */
	"clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep",
	"clock_nanosleep",
	/* this process */
	"getpid", "gettid", "getppid", "getpgrp", "getpgid", "getsid",
	"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
	"getgroups", "capget", "getrlimit", "prlimit64", "getrusage", "getrandom",
	"futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq",
	"set_tid_address", "sched_yield", "sched_getaffinity", "uname",
	"sysinfo", "getpriority", "exit", "exit_group",
};

/* ioctl requests of the shared terminal's pty and of non-blocking fds. */
static const unsigned long confine_ioctls[] = {
	TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, TIOCSWINSZ, TIOCGPTN,
	TIOCSPTLCK, TIOCGPTPEER, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX,
	TCFLSH, TIOCOUTQ,
};

/* prctl options glibc, libcurl and the agent use: nothing that gives a
 * right back (PR_SET_DUMPABLE is not among them). */
static const int confine_prctls[] = {
	PR_SET_NAME, PR_GET_NAME, PR_GET_DUMPABLE, PR_SET_PDEATHSIG,
	PR_GET_PDEATHSIG, PR_SET_VMA, PR_GET_NO_NEW_PRIVS, PR_CAPBSET_READ,
	PR_GET_SECCOMP,
};

/* setpriority of this process only. */
static int
confine_seccomp_nice(scmp_filter_ctx ctx)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setpriority), 1,
	    SCMP_A0(SCMP_CMP_EQ, PRIO_PROCESS, 0));

	if (r < 0)
		log_error("seccomp: cannot allow setpriority: %s", strerror(-r));
	return r;
}

int
confine_seccomp(void)
{
	static const struct seccomp_allow allow = {
		confine_allowed, SECCOMP_ALLOW_N(confine_allowed),
		confine_ioctls, SECCOMP_ALLOW_N(confine_ioctls),
		confine_prctls, SECCOMP_ALLOW_N(confine_prctls),
		1, confine_seccomp_nice,
	};

	return seccomp_allow_load(&allow);
}

/* ---- all of it ---------------------------------------------------------- */

int
confine_agent(struct agent *a)
{
	const char *step;
	pid_t parent = getppid();
	int deathsig = 0, r;

	if (geteuid() != 0) {
		log_info("not started as root: the agent keeps uid %u",
		    (unsigned)geteuid());
		return 0;
	}
	prctl(PR_GET_PDEATHSIG, &deathsig, 0, 0, 0);
	if ((r = confine_reach_dirs(a)) < 0)
		return r;
	if ((r = become_user(a->sb.uid, a->sb.gid, &step)) < 0) {
		log_error("cannot become the room's uid %u (%s): %s",
		    (unsigned)a->sb.uid, step, strerror(-r));
		return r;
	}
	/* The uid change cleared atriumd's death signal: set it again, and
	 * go if atriumd went meanwhile. */
	if (deathsig && (prctl(PR_SET_PDEATHSIG, deathsig, 0, 0, 0) < 0 ||
	    getppid() != parent)) {
		log_error("atriumd went while the agent started");
		return -ESRCH;
	}
	if ((r = confine_landlock(a)) < 0 || (r = confine_seccomp()) < 0)
		return r;
	return 0;
}
