/*
 * proc.h: one sandboxed command driven by the event loop (proc.c): spawned
 * with common/sandbox.c, its output pipes read as they fill, its stdin written
 * as the pipe drains, its end noticed through a pidfd, its wall-clock limit
 * kept with a loop timer.  Used by exec.c (people's commands),
 * tool_bash.c (the agent's bash tool) and seed.c (seed_git's clone).
 */
#ifndef ATRIUM_AGENT_PROC_H
#define ATRIUM_AGENT_PROC_H

#include <stddef.h>

#include "sandbox.h"

struct agent;
struct proc;

#define PROC_STDOUT	1
#define PROC_STDERR	2
#define PROC_CHUNK	65536	/* most bytes one output callback carries */

struct proc_end {
	struct sandbox_exit how;	/* exit code or signal */
	int timed_out;			/* killed because time was up */
	int killed;			/* killed by proc_kill */
};

struct proc_opts {
	const char *shell;		/* bash -c shell, or */
	char *const *argv;		/* this argv */
	const char *cwd;		/* in the sandbox; NULL: /workspace */
	char *const *env;		/* extra NAME=VALUE, may be NULL */
	int tty;			/* fd_in is a pty slave */
	int fds[3];			/* given stdin/out/err; -1: see below */
	int capture;			/* fds[1], fds[2] < 0: pipes to output */
	const char *stdin_data;		/* fds[0] < 0 and set: written to it */
	size_t stdin_len;
	int timeout_s;			/* 0: none */
	int network;			/* sandbox.h: the host's network */
	const char *seed_root;		/* sandbox.h: /seed, or NULL */
	const char *seed_rel;
	long long tmp_bytes;		/* sandbox.h: /tmp's size, 0: default */
	/* Output of a captured stream (PROC_STDOUT / PROC_STDERR). */
	void (*output)(void *arg, int stream, const char *p, size_t n);
	/* The command ended; p is freed right after this returns. */
	void (*exit)(void *arg, const struct proc_end *end);
	void *arg;
};

/* Start a command.  0 with *out set, or -errno (logged). */
int proc_spawn(struct agent *a, const struct proc_opts *o, struct proc **out);

/* Send sig to the command (KILL kills the whole tree). */
void proc_signal(struct proc *p, int sig);

/* Kill the whole tree; the exit callback still comes, with killed set. */
void proc_kill(struct proc *p);

/* Kill, reap now and free without calling back (shutdown). */
void proc_abandon(struct proc *p);

/* Signal names: "INT" -> SIGINT; 0 when unknown.  And back: NULL when not
 * one of ours. */
int proc_signal_parse(const char *name);
const char *proc_signal_name(int sig);

#endif
