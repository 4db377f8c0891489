/*
 * front_exec.h: how the monitor starts one of its fronts, atriumd-net or
 * atriumd-http (front_exec.c): the command line and environment, made
 * before the fork, and the child's few steps from fork to execve.  What
 * the front makes of that command line is front_start.h's, the other
 * side of the same format:
 *
 *   argv: PROGRAM MONITOR-PID UID GID USER [--KEY VALUE ...]
 *   env:  ATRIUM_LOG=LEVEL when the monitor has it, nothing else
 *   fds:  the front's own, at 3, 4, ... in the order the caller gives
 *
 * Only the settings the caller names are passed on (never the API keys'
 * file), each as config_each gives it.  The child does nothing but move
 * fds and execute: the monitor's memory is gone with the execve.
 */
#ifndef ATRIUMD_FRONT_EXEC_H
#define ATRIUMD_FRONT_EXEC_H

#include <limits.h>
#include <stddef.h>

#include "config.h"
#include "privdrop_id.h"

#define FRONT_EXEC_MAX_SETTINGS	16	/* settings one front reads */
#define FRONT_EXEC_MAX_FDS	8	/* fds one front is handed */
#define FRONT_EXEC_FD_TOP	16	/* fds are moved above this first, so
					 * that moving one down to 3.. never
					 * overwrites another */

/* A front's command line and environment, made before the fork. */
struct front_exec {
	char *argv[6 + 2 * FRONT_EXEC_MAX_SETTINGS];
	int argc;
	const char *const *settings;	/* the keys to pass on */
	size_t nsettings;
	int skip_empty;			/* leave out a key whose value is "" */
	char nums[3][24];		/* MONITOR-PID, UID, GID */
	char name[64];			/* USER */
	char keys[FRONT_EXEC_MAX_SETTINGS][48];	/* "--KEY" */
	char values[FRONT_EXEC_MAX_SETTINGS][PATH_MAX];
	char *envp[2];
	char log_env[64];		/* ATRIUM_LOG=LEVEL, for --log-level */
};

/* Fill cmd to run path as id, this process its monitor, with those of
 * the n settings of c that are set (without one whose value is "" when
 * skip_empty).  0, or -E2BIG when n is over FRONT_EXEC_MAX_SETTINGS. */
int front_exec_cmd(struct front_exec *cmd, const char *path,
    const struct config *c, const struct privdrop_id *id,
    const char *const *settings, size_t n, int skip_empty);

/* Duplicate the n fds of src (n at most FRONT_EXEC_MAX_FDS) above
 * FRONT_EXEC_FD_TOP into fds, close-on-exec.  0, or -errno with nothing
 * left open. */
int front_exec_fds(const int *src, int n, int *fds);

/* Close the n fds (each may be -1). */
void front_exec_close(int *fds, int n);

/* In the forked child: fds[0..n) to 3..3+n-1, every fd above those
 * closed, then execve; on failure the line failed on stderr and exit
 * 127.  Only async-signal-safe calls.  Never returns. */
void front_exec_child(const struct front_exec *cmd, const int *fds, int n,
    const char *failed) __attribute__((noreturn));

#endif
