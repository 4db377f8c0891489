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
 * Before the command starts it installs the sandbox's seccomp filters
 * (sandbox_seccomp.c): one denies the kernel interfaces a command has no
 * use for (io_uring, keyrings, bpf, perf, userfaultfd, mounts, kexec,
 * modules), one makes a chown to another user or group fail with EPERM.
 * When the first cannot be installed the command does not run: it exits
 * 125 with the reason on stderr, as a sandbox that cannot be made does.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "sandbox_seccomp.h"

static volatile sig_atomic_t init_child;

/* Pass a signal on to the command's process group, or to the command
 * alone while it has not made its group yet (it then dies of it, with
 * the default action it still has). */
static void
init_forward(int sig)
{
	if (init_child > 0 && kill(-init_child, sig) < 0)
		kill(init_child, sig);
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
	char report[32], err[256];
	pid_t pid;

	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("atrium-sandbox-init %s\n", ATRIUM_VERSION);
		return 0;
	}
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fprintf(stderr, "usage: atrium-sandbox-init FD -t|-n -- ARGV...\n");
		return 125;
	}
	status_fd = atoi(argv[1]);
	tty = strcmp(argv[2], "-t") == 0;
	if (sandbox_seccomp_deny(err, sizeof(err)) < 0) {
		/* Fail closed: no command runs without its filter. */
		fprintf(stderr, "atrium-sandbox-init: cannot install the "
		    "sandbox's seccomp filter (%s); the command was not run\n",
		    err);
		return 125;
	}
	sandbox_seccomp_chown();
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
