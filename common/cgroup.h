/*
 * cgroup.h: one cgroup per sandboxed command, on cgroup v2 (unified) or v1
 * (memory, pids and cpu hierarchies), whichever the host has.  The groups
 * live under "atrium/" in each hierarchy:
 *
 *   v2  /sys/fs/cgroup/atrium/NAME          memory.max pids.max cpu.max
 *   v1  /sys/fs/cgroup/memory/atrium/NAME   memory.limit_in_bytes
 *       /sys/fs/cgroup/pids/atrium/NAME     pids.max
 *       /sys/fs/cgroup/cpu/atrium/NAME      cpu.cfs_quota_us, cpu.cfs_period_us
 *
 * A host where none of this is writable (not root, read-only cgroupfs) runs
 * commands without these limits: cgroup_create returns -ENOTSUP and the
 * caller logs it once.
 */
#ifndef ATRIUM_CGROUP_H
#define ATRIUM_CGROUP_H

#define CGROUP_MAX_DIRS 3
#define CGROUP_PATH_MAX 256

struct cgroup_set {
	char dir[CGROUP_MAX_DIRS][CGROUP_PATH_MAX];	/* "" when unused */
};

/* Make the groups named name with the limits (0: none).  0 or -errno;
 * -ENOTSUP when no hierarchy is usable. */
int cgroup_create(const char *name, long memory_mb, int pids, int cpu_percent,
    struct cgroup_set *set);

/* Move the calling process into every group of the set.  0 or -errno.
 * Async-signal-safe: called in a forked child. */
int cgroup_join_self(const struct cgroup_set *set);

/* SIGKILL every process in the set's groups. */
void cgroup_kill(const struct cgroup_set *set);

/* Remove the groups (they must be empty, retried briefly). */
void cgroup_destroy(struct cgroup_set *set);

#endif
