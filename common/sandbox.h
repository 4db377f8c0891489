/*
 * sandbox.h: run one command in a bubblewrap sandbox over a room's workspace.
 *
 * Every command of a room (a person's exec, the agent's bash tool, sftp-server)
 * runs through sandbox_spawn.  The child is started as root only long enough
 * to join its cgroup and set rlimits, then drops to the unprivileged sandbox
 * uid before exec'ing bwrap (bwrap run as root would keep every capability):
 *
 *   /workspace      the room's mounted workspace, read-write, the cwd
 *   /usr, /bin...   the host's, read-only; /etc: a few files, read-only,
 *                   plus passwd and group naming the sandbox uid
 *   /tmp, /run      private tmpfs: no other command sees them (each
 *                   sandbox has its own mount and pid namespaces), so /tmp
 *                   is where a command may keep what the room must not
 *                   write; /tmp holds at most the command's tmp_bytes
 *                   when set; /proc and /dev of its own
 *   network         none (only lo), unless the command's `network` is set
 *                   (the host's, with /etc/resolv.conf: used for one
 *                   command only, a seed_git clone of an https URL, which
 *                   runs nothing the room could have written: seed.c);
 *                   own pid, ipc, uts, user namespaces
 *   /seed           only when the command's seed_root is set: the host
 *                   directory seed_rel beneath seed_root, read-only,
 *                   resolved with RESOLVE_BENEATH (no symlink or ..
 *                   leads out of seed_root)
 *   environment     cleared: PATH, HOME, USER, LANG, TERM and what the caller
 *                   passes in env; never a secret
 *   limits          memory, pids and CPU through a cgroup per command below
 *                   the room's (cgroup.h, v1 or v2); when they cannot be
 *                   applied the command does not run (-ENOTSUP), unless
 *                   require_limits is off (the operator's --no-limits);
 *                   and rlimits (core, nofile)
 *
 * Inside, atrium-sandbox-init is the command's parent: it reports on a pipe
 * whether the command exited (and its code) or was killed (and the signal),
 * which bwrap's own exit status cannot tell apart.
 *
 * The wall-clock timeout is the caller's: it owns the event loop and calls
 * sandbox_kill when time is up.
 */
#ifndef ATRIUM_SANDBOX_H
#define ATRIUM_SANDBOX_H

#include <sys/types.h>

#include "cgroup.h"

struct sandbox {
	const char *workspace;	/* host path bound as /workspace */
	const char *run_dir;	/* room's run dir: passwd and group go here */
	const char *room;	/* room name, for cgroup names and hostname */
	const char *init_path;	/* host path of atrium-sandbox-init */
	uid_t uid;		/* unprivileged uid the command runs as */
	gid_t gid;
	const struct cgroup_tree *cg;	/* where the groups go; NULL: none */
	struct reslimits room_limits;	/* of the room's group, remade with
					 * them when it has gone */
	struct reslimits limits;		/* of each command's group */
	int require_limits;		/* no limits, no command */
};

struct sandbox_cmd {
	const char *shell;	/* run as "bash -c shell" (login-free), or */
	char *const *argv;	/* this argv, when shell is NULL */
	const char *cwd;	/* inside the sandbox; NULL: /workspace */
	char *const *env;	/* extra NAME=VALUE entries, may be NULL */
	int fd_in;		/* become the command's 0, 1, 2; -1: /dev/null */
	int fd_out;
	int fd_err;
	int tty;		/* fd_in is a pty slave: make it the ctty */
	int network;		/* share the host's network (see the head) */
	const char *seed_root;	/* a host directory the operator allows, */
	const char *seed_rel;	/* and a path beneath it bound read-only at
				 * /seed; NULL: no /seed */
	long long tmp_bytes;	/* size of the /tmp tmpfs; 0: tmpfs's
				 * default (half the host's memory) */
};

struct sandbox_proc {
	pid_t pid;		/* bwrap's pid, a child of the caller */
	int status_fd;		/* read end of the init's status pipe */
	struct cgroup_set cg;	/* its cgroups (empty when unavailable) */
};

enum sandbox_end { SANDBOX_EXITED, SANDBOX_SIGNALED };

struct sandbox_exit {
	enum sandbox_end how;
	int code;		/* exit code, or signal number */
};

/* Start the command.  The caller keeps its fds; the child gets copies.
 * 0 with *p filled, or -errno (logged): -ENOTSUP when require_limits is
 * set and the command's cgroup limits cannot be applied. */
int sandbox_spawn(const struct sandbox *sb, const struct sandbox_cmd *cmd,
    struct sandbox_proc *p);

/* sandbox_spawn in two halves, for a caller that forks in another
 * process (agent/spawner.c): sandbox_prepare makes the command's cgroups
 * into p (0, -ENOENT without bwrap, -ENOTSUP as above; logged), and
 * sandbox_start, in the forking process, starts the command with p's
 * cgroups: with beside_me the child is made with CLONE_PARENT, so it is
 * the caller's parent's child (reaped and watched by it), else forked.
 * 0 with p->pid and p->status_fd set, or -errno (logged); the cgroups
 * stay for the caller to destroy. */
int sandbox_prepare(const struct sandbox *sb, struct sandbox_proc *p);
int sandbox_start(const struct sandbox *sb, const struct sandbox_cmd *cmd,
    struct sandbox_proc *p, int beside_me);

/* Decide how the command ended, given bwrap's wait status (from waitpid)
 * and what the init wrote on status_fd.  Call after the child was reaped. */
void sandbox_result(struct sandbox_proc *p, int wait_status,
    struct sandbox_exit *out);

/* Kill the whole process tree (SIGKILL to bwrap, and every process left in
 * its cgroup).  Safe to call more than once. */
void sandbox_kill(struct sandbox_proc *p);

/* Close the status pipe and remove the cgroups.  After the child is reaped. */
void sandbox_release(struct sandbox_proc *p);

/* As sandbox_release, but never waits: the groups still busy stay in
 * p->cg (cgroup_remove_now) and their number is returned, for the caller
 * to retry from its loop's timer. */
int sandbox_release_nowait(struct sandbox_proc *p);

/* Open the directory rel beneath the directory root_path (O_PATH), as the
 * sandbox binds /seed: openat2 RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, so
 * a symlink or ".." that leads out of root_path fails with -EXDEV.  The fd
 * or -errno. */
int sandbox_seed_open(const char *root_path, const char *rel);

/* The same beneath the directory open at root (O_PATH will do). */
int sandbox_seed_open_at(int root, const char *rel);

/* Write DIR/passwd and DIR/group naming uid/gid as "atrium" with home
 * /workspace, for sftp-server, git and ssh tools that look themselves up. */
int sandbox_write_identity(const char *run_dir, uid_t uid, gid_t gid);

#endif
