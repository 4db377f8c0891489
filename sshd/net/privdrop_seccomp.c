/*
 * privdrop_seccomp.c: the network process's seccomp filter (privdrop.h),
 * an allow list: what its loop, libssh, OpenSSL's libcrypto, json-c and
 * glibc's allocator call while serving sessions, found with strace over
 * the test suite.  Anything else fails with EPERM, so a path not seen
 * there fails one request, not every session; and for the calls an
 * attacker who took the process would want (execve, ptrace, socket,
 * connect, bind, pipe, mount, setuid, bpf, io_uring, keyctl...) EPERM is
 * the end of it.  Syscalls of another architecture's table (i386, x32) kill
 * the process: nothing here makes them.
 *
 * One kind of new socket: a TCP one, which a cluster's front connects
 * to its room's home with (relay.h: the address is the monitor's answer,
 * numeric, never a name to resolve); socket is allowed for AF_INET and
 * AF_INET6 streams only, so no unix, netlink, raw or packet socket.
 *
 * Threads, and nothing else: clone is allowed with exactly the flags
 * glibc's pthread_create passes (the handshake threads, kexpool.h), so no
 * fork, vfork or new namespace; clone3, whose flags sit in memory where a
 * filter cannot read them, fails with ENOSYS, on which glibc falls back
 * to clone.
 *
 * Opening files stays allowed (openpty opens /dev/ptmx and /dev/pts/N),
 * as the privsep user, who may read nothing of DATA, and only beneath the
 * few trees Landlock leaves it (privdrop_landlock).  ioctl is limited to
 * what terminals and non-blocking sockets need, so that TIOCSTI and the
 * rest of the ioctl surface are out of reach.
 */
#include "privdrop.h"

#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <termios.h>

#include "log.h"
#include "seccomp_allow.h"

static const char *const privdrop_allowed[] = {
	/* memory */
	"brk", "mmap", "munmap", "mremap", "madvise", "mprotect",
	/* descriptors */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek",
	"close", "close_range", "dup", "dup2", "dup3", "fcntl", "openat",
	"open", "fstat", "newfstatat", "stat", "lstat",
	"statx", "access", "faccessat", "faccessat2", "readlink",
	/* sockets: accepted and passed ones, and TCP to a room's home
	 * (privdrop_seccomp_socket) */
	"connect", "accept", "accept4", "recvfrom", "recvmsg", "sendto", "sendmsg",
	"shutdown", "getsockopt", "setsockopt", "getsockname", "getpeername",
	/* the loop */
	"poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl",
	"epoll_wait", "epoll_pwait", "eventfd2",
	/* signals (the signalfd is made before the filter) */
	"rt_sigprocmask", "rt_sigaction", "rt_sigreturn", "sigaltstack",
	"signalfd4",
	"restart_syscall", "tgkill", "tkill",
	/* time */
	"clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep",
	"clock_nanosleep",
	/* this process */
	"getpid", "gettid", "getppid", "getuid", "geteuid", "getgid",
	"getegid", "getresuid", "getresgid", "getgroups", "getrlimit",
	"prlimit64", "getrandom", "futex", "set_robust_list", "rseq",
	"sched_yield", "sched_getaffinity", "uname", "sysinfo", "membarrier",
	"exit", "exit_group",
};

/* ioctl requests a pty master and non-blocking fds need. */
static const unsigned long privdrop_ioctls[] = {
	TCGETS, TCSETS, TCSETSW, TCSETSF, TIOCGWINSZ, TIOCSWINSZ, TIOCGPTN,
	TIOCSPTLCK, TIOCGPTPEER, FIONREAD, FIONBIO, FIOCLEX, FIONCLEX,
};

/* setpriority on the calling thread only (the handshake threads lower
 * their own: kexpool.h); an unprivileged caller can only lower it. */
static int
privdrop_seccomp_nice(scmp_filter_ctx ctx)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setpriority), 2,
	    SCMP_A0(SCMP_CMP_EQ, PRIO_PROCESS), SCMP_A1(SCMP_CMP_EQ, 0));

	if (r < 0)
		log_error("seccomp: cannot allow setpriority: %s", strerror(-r));
	return r;
}

/* socket(AF_INET or AF_INET6, SOCK_STREAM with SOCK_NONBLOCK and
 * SOCK_CLOEXEC, 0) only: a relay's link to a room's home (relay.c). */
static int
privdrop_seccomp_socket(scmp_filter_ctx ctx)
{
	static const int domains[] = { AF_INET, AF_INET6 };
	const int type = SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC;

	for (size_t i = 0; i < 2; i++) {
		int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket),
		    3, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)domains[i]),
		    SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)type),
		    SCMP_A2(SCMP_CMP_EQ, 0));

		if (r < 0) {
			log_error("seccomp: cannot allow TCP sockets: %s",
			    strerror(-r));
			return r;
		}
	}
	return 0;
}

/* The network process's own rules: setpriority and TCP sockets. */
static int
privdrop_seccomp_more(scmp_filter_ctx ctx)
{
	int r = privdrop_seccomp_nice(ctx);

	return r < 0 ? r : privdrop_seccomp_socket(ctx);
}

/* See privdrop.h. */
int
privdrop_seccomp(void)
{
	static const struct seccomp_allow allow = {
		privdrop_allowed, SECCOMP_ALLOW_N(privdrop_allowed),
		privdrop_ioctls, SECCOMP_ALLOW_N(privdrop_ioctls),
		NULL, 0, 0, privdrop_seccomp_more,
	};

	return seccomp_allow_load(&allow);
}
