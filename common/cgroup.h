/*
 * cgroup.h: atrium's cgroups, on cgroup v2 (unified) or v1 (separate
 * memory, pids and cpu hierarchies), whichever the host has.  Three levels
 * (limits.h says which settings and who sets each):
 *
 *   ROOT/PARENT                  every room together     atriumd at start
 *   ROOT/PARENT/ROOM             one room                atrium-agent
 *   ROOT/PARENT/ROOM/cmd-PID-N   one command             sandbox.c
 *
 *   v2   ROOT/PARENT/...          memory.max, memory.swap.max, pids.max,
 *                                 cpu.max; controllers enabled down the
 *                                 tree through cgroup.subtree_control
 *   v1   ROOT/memory/PARENT/...   memory.limit_in_bytes (and
 *                                 memory.memsw.limit_in_bytes when swap
 *                                 is accounted)
 *        ROOT/pids/PARENT/...     pids.max
 *        ROOT/cpu/PARENT/...      cpu.cfs_period_us, cpu.cfs_quota_us
 *
 * ROOT is cgroup-root (/sys/fs/cgroup), PARENT cgroup-parent ("atrium").
 * PID in cmd-PID-N is the atrium-agent's that made it: a command group
 * whose agent is gone (killed, crashed) is stale, and cgroup_sweep removes
 * it, killing what is left in it.  Only one process per room makes
 * command groups, so a live agent's groups are never touched, even by
 * another atriumd that shares the host.
 *
 * Whether commands may run without limits is the caller's choice: every
 * function here says what it could not do, and does the rest.
 */
#ifndef ATRIUM_CGROUP_H
#define ATRIUM_CGROUP_H

#include <sys/types.h>

#include "reslimits.h"

#define CGROUP_MEMORY	0x1
#define CGROUP_PIDS	0x2
#define CGROUP_CPU	0x4
#define CGROUP_ALL	0x7
#define CGROUP_NCTL	3	/* controllers, and v1 hierarchies */
#define CGROUP_PATH_MAX	512

/* Where atrium's groups live on this host (from cgroup_probe). */
struct cgroup_tree {
	char root[256];		/* cgroupfs mount, "/sys/fs/cgroup" */
	char parent[64];	/* atrium's group below it */
	int v2;			/* the unified hierarchy holds our controllers */
	int have;		/* CGROUP_* that are usable */
};

/* One group in each hierarchy (v1), or one for all (v2: dir[0]). */
struct cgroup_set {
	char dir[CGROUP_NCTL][CGROUP_PATH_MAX];	/* "" when unused */
};

/* Find the controllers under root and make sure PARENT can be made in
 * each (it is made, without limits).  Fills t; returns t->have. */
int cgroup_probe(struct cgroup_tree *t, const char *root, const char *parent);

/* The controllers missing from have, as "memory, pids", into out ("" when
 * none is). */
void cgroup_missing(int have, char *out, size_t outlen);

/* Make PARENT/rel (rel "" is PARENT itself) with the limits l, and its
 * missing ancestors without.  The set gets the groups made (even on
 * failure, so a caller that runs without limits can still use them).
 * 0 when every limit asked for is in place; -ENOTSUP when a controller
 * that one needs is missing; another -errno when the kernel refused. */
int cgroup_make(const struct cgroup_tree *t, const char *rel,
    const struct reslimits *l, struct cgroup_set *set);

/* Write the limits l into the groups of set (made by cgroup_make), at
 * once: what runs in them is held to the new limits from now on.  On v1
 * a lower CPU quota is first written into the groups below (commands),
 * which the kernel requires.  0, -ENOTSUP when a controller that l needs
 * is missing, or the kernel's -errno (-EBUSY: the group uses more memory
 * than l allows and cannot give it back). */
int cgroup_relimit(const struct cgroup_tree *t, const struct cgroup_set *set,
    const struct reslimits *l);

/* PARENT/rel exists in every usable hierarchy: 1, else 0. */
int cgroup_exists(const struct cgroup_tree *t, const char *rel);

/* Move the calling process into every group of the set.  0 or -errno.
 * Async-signal-safe: called in a forked child. */
int cgroup_join_self(const struct cgroup_set *set);

/* SIGKILL every process in the set's groups. */
void cgroup_kill(const struct cgroup_set *set);

/* Remove the groups (they must be empty; retried briefly while the
 * killed processes go: it sleeps, so not for an event loop). */
void cgroup_destroy(struct cgroup_set *set);

/* Hand the groups of set to uid and gid as the kernel's delegation model
 * says: the directories (so groups may be made and removed below them)
 * and, on v2, their cgroup.procs, cgroup.threads and
 * cgroup.subtree_control; never a limit file, so the groups' own limits
 * stay root's and bound everything made below.  0, or -errno with the
 * path that failed in *what. */
int cgroup_delegate(const struct cgroup_tree *t, const struct cgroup_set *set,
    uid_t uid, gid_t gid, const char **what);

/* One attempt, without waiting: remove each group that can go and forget
 * it; keep those still busy (processes not yet gone, a group below).  How
 * many are left: a loop retries from a timer. */
int cgroup_remove_now(struct cgroup_set *set);

/* The agent pid a command group's name holds ("cmd-PID-N"), or 0 when
 * name is not a command group's. */
pid_t cgroup_cmd_owner(const char *name);

/* Remove the stale command groups below PARENT/room, or below every room
 * when room is NULL (and then the room groups left empty).  A group is
 * stale when its agent pid is self or no running atrium-agent.  How many
 * groups were removed. */
int cgroup_sweep(const struct cgroup_tree *t, const char *room, pid_t self);

#endif
