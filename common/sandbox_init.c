/*
 * sandbox_init.c: atrium-sandbox-init, the command's parent inside every
 * sandbox.  bwrap reports a command killed by signal N as exit status
 * 128+N, the same as a command that called exit(128+N); this process waits
 * for the command itself and writes the truth on a pipe:
 *
 *   atrium-sandbox-init STATUS_FD -t|-n -- ARGV...
 *
 *   -t  stdin is a terminal: give the command its own session with it as the
 *       controlling terminal (job control, Ctrl-C)
 *   -n  no terminal: the command leads its own process group
 *
 * It writes "exit N\n" or "signal N\n" to STATUS_FD and exits with the
 * command's status.  SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to it are
 * passed to the command's process group.
 *
 * Before the command starts it installs a seccomp filter that
 * makes a chown to another user or group fail with EPERM, as it does for
 * any unprivileged user.  The sandbox's user namespace maps one uid and one
 * gid, and the kernel answers EINVAL for the others; OpenSSH's sftp-server
 * turns EINVAL into "bad message", so `cp -a` onto an sshfs mount failed
 * with "Bad message" where tools expect "Operation not permitted".
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t init_child;

/* Pass a signal on to the command's process group. */
static void
init_forward(int sig)
{
	if (init_child > 0)
		kill(-init_child, sig);
}

/* The filter's architecture: it passes everything on any other. */
#if defined(__x86_64__)
#define INIT_AUDIT_ARCH		AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define INIT_AUDIT_ARCH		AUDIT_ARCH_AARCH64
#endif

/* Where the low 32 bits of syscall argument i are in seccomp_data. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define INIT_ARG_LO(i)	(offsetof(struct seccomp_data, args) + 8 * (i))
#else
#define INIT_ARG_LO(i)	(offsetof(struct seccomp_data, args) + 8 * (i) + 4)
#endif

#define INIT_LD(off)	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define INIT_JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define INIT_RET(v)	BPF_STMT(BPF_RET | BPF_K, (v))

/* Accept an id argument equal to ours or to -1 ("unchanged"), else EPERM:
 * four instructions. */
#define INIT_ID_CHECK(arg, id) \
	INIT_LD(INIT_ARG_LO(arg)), \
	INIT_JEQ((id), 2, 0), \
	INIT_JEQ((uint32_t)-1, 1, 0), \
	INIT_RET(SECCOMP_RET_ERRNO | EPERM)

/* Both ids of a chown whose uid is argument arg, then allow: nine
 * instructions. */
#define INIT_CHOWN_CHECK(arg, uid, gid) \
	INIT_ID_CHECK((arg), (uid)), \
	INIT_ID_CHECK((arg) + 1, (gid)), \
	INIT_RET(SECCOMP_RET_ALLOW)

/* EPERM for a chown to another user or group than ours.  The filter is
 * written as BPF because libseccomp cannot compare one argument twice in a
 * rule (our id, and -1).  0, or -1 when it cannot be installed: then the
 * kernel's EINVAL stands, which is no weaker (the id is unmapped anyway). */
static int
init_chown_filter(void)
{
#ifdef INIT_AUDIT_ARCH
	uint32_t uid = (uint32_t)getuid(), gid = (uint32_t)getgid();
	struct sock_filter code[] = {
		INIT_LD(offsetof(struct seccomp_data, arch)),
		INIT_JEQ(INIT_AUDIT_ARCH, 1, 0),
		INIT_RET(SECCOMP_RET_ALLOW),
		INIT_LD(offsetof(struct seccomp_data, nr)),
		/* fchown and fchownat jump over the checks before them */
		INIT_JEQ(__NR_fchownat, 0, 9),
		INIT_CHOWN_CHECK(2, uid, gid),
		INIT_JEQ(__NR_fchown, 0, 9),
		INIT_CHOWN_CHECK(1, uid, gid),
#ifdef __NR_chown
		INIT_JEQ(__NR_chown, 1, 0),
		INIT_JEQ(__NR_lchown, 0, 9),
		INIT_CHOWN_CHECK(1, uid, gid),
#endif
		INIT_RET(SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {
		.len = (unsigned short)(sizeof(code) / sizeof(*code)),
		.filter = code,
	};

	/* bwrap set no_new_privs already; asking again costs nothing. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -1;
#endif
	return 0;
}

/* The command: its own group (and tty), default signals, then exec. */
static void __attribute__((noreturn))
init_exec(char **argv, int tty, int status_fd)
{
	int code;

	close(status_fd);
	if (tty) {
		setsid();
		ioctl(0, TIOCSCTTY, 0);
	} else {
		setpgid(0, 0);
	}
	signal(SIGPIPE, SIG_DFL);
	execvp(argv[0], argv);
	code = errno == ENOENT ? 127 : 126;
	fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
	_exit(code);
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = init_forward };
	int status_fd, tty, status;
	char report[32];
	pid_t pid;

	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fprintf(stderr, "usage: atrium-sandbox-init FD -t|-n -- ARGV...\n");
		return 125;
	}
	status_fd = atoi(argv[1]);
	tty = strcmp(argv[2], "-t") == 0;
	init_chown_filter();
	pid = fork();
	if (pid < 0) {
		perror("atrium-sandbox-init: fork");
		return 125;
	}
	if (pid == 0)
		init_exec(argv + 4, tty, status_fd);
	init_child = pid;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 125;
	if (WIFSIGNALED(status))
		snprintf(report, sizeof(report), "signal %d\n", WTERMSIG(status));
	else
		snprintf(report, sizeof(report), "exit %d\n", WEXITSTATUS(status));
	if (write(status_fd, report, strlen(report)) < 0) {
		/* The agent is gone; the exit status below still tells. */
	}
	return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}
