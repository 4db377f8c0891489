/*
 * http_privdrop.c: atriumd-http's privileges, given up (http_privdrop.h).
 * Called by http_main.c once, as root, before anything else is parsed.  The
 * steps are every front's (front_privdrop.h); what is atriumd-http's own
 * is here: the trees Landlock leaves it and its seccomp allow list.
 *
 * The seccomp allow list is what its loop, libmicrohttpd (external epoll,
 * suspend and resume through an eventfd, upgrade to a raw socket),
 * libcrypto's SHA-1 (the WebSocket handshake), json-c and glibc's
 * allocator call, found with strace over tests/test_http.py.  No socket,
 * connect, bind, listen, fork, clone of a process, execve, ptrace or
 * mount: the listening socket is handed in, rooms are reached through
 * sockets the monitor dials.  Anything else fails with EPERM (one request
 * fails, not the process).  Landlock leaves it nothing to write and
 * little to read (/usr and /etc, for libraries and their settings).
 */
#include "http_privdrop.h"

#include <sys/ioctl.h>

#include <seccomp.h>

#include "front_privdrop.h"
#include "seccomp_allow.h"

static const char *const http_privdrop_calls[] = {
	/* memory */
	"brk", "mmap", "munmap", "mremap", "madvise", "mprotect",
	/* descriptors */
	"read", "write", "readv", "writev", "pread64", "lseek", "close",
	"close_range", "dup", "fcntl", "openat", "open", "fstat", "newfstatat",
	"stat", "statx", "access", "faccessat", "faccessat2", "readlink",
	/* sockets: the accepted and passed ones only */
	"accept", "accept4", "recvfrom", "recvmsg", "sendto", "sendmsg",
	"sendfile", "shutdown", "getsockopt", "setsockopt", "getsockname",
	"getpeername",
	/* the loop and MHD's */
	"poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl",
	"epoll_wait", "epoll_pwait", "eventfd2",
	/* signals (the signalfd is made after the filter: allowed) */
	"rt_sigprocmask", "rt_sigaction", "rt_sigreturn", "sigaltstack",
	"signalfd4", "restart_syscall", "tgkill", "tkill",
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

static const unsigned long http_privdrop_ioctls[] = {
	FIONREAD, FIONBIO, FIOCLEX, FIONCLEX,
};

/* Load the allow list above.  0 or -errno (logged). */
static int
http_privdrop_seccomp(void)
{
	static const struct seccomp_allow allow = {
		http_privdrop_calls, SECCOMP_ALLOW_N(http_privdrop_calls),
		http_privdrop_ioctls, SECCOMP_ALLOW_N(http_privdrop_ioctls),
		NULL, 0, 0, NULL,
	};

	return seccomp_allow_load(&allow);
}

/* See http_privdrop.h. */
int
http_privdrop_apply(const struct privdrop_id *id, pid_t monitor)
{
	/* Landlock: read /usr and /etc, nothing else; nothing writable. */
	static const struct landlock_tree trees[] = {
		{ "/usr", LANDLOCK_READ, 0 },
		{ "/etc", LANDLOCK_READ, 0 },
		{ "/dev/urandom", LANDLOCK_READ, 1 },
		{ NULL, LANDLOCK_READ, 0 },
	};
	static const struct front_privdrop drop = {
		"HTTP process", trees, http_privdrop_seccomp,
	};

	return front_privdrop_apply(&drop, id, monitor);
}
