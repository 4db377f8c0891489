/*
 * cgroup.c: per-command cgroups on v2 or v1 (cgroup.h).  Called by the
 * sandbox around each spawn; the joining half runs in a forked child and so
 * uses only open, write and close.
 */
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CG_ROOT "/sys/fs/cgroup"

/* Write text to DIR/FILE.  0 or -errno. */
static int
cg_write(const char *dir, const char *file, const char *text)
{
	char path[CGROUP_PATH_MAX + 64];
	int fd, err = 0;
	size_t n = strlen(text);

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, text, n) != (ssize_t)n)
		err = -errno;
	close(fd);
	return err;
}

/* Is the unified (v2) hierarchy mounted with the controllers we need? */
static int
cg_is_v2(void)
{
	char buf[256] = "";
	FILE *f = fopen(CG_ROOT "/cgroup.controllers", "re");

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return strstr(buf, "memory") && strstr(buf, "pids");
}

/* Make parent/atrium/name; the path goes to out.  0 or -errno. */
static int
cg_mkdir(const char *parent, const char *name, char *out, size_t outlen)
{
	char mid[CGROUP_PATH_MAX];

	snprintf(mid, sizeof(mid), "%s/atrium", parent);
	if (mkdir(mid, 0755) < 0 && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(out, outlen, "%s/%s", mid, name) >= outlen)
		return -ENAMETOOLONG;
	if (mkdir(out, 0755) < 0 && errno != EEXIST) {
		int err = -errno;
		out[0] = '\0';
		return err;
	}
	return 0;
}

/* v2: one group with all three limits. */
static int
cg_create_v2(const char *name, long memory_mb, int pids, int cpu_percent,
    struct cgroup_set *set)
{
	char v[64];
	int r;

	/* Let the groups below the root and below atrium/ use controllers. */
	cg_write(CG_ROOT, "cgroup.subtree_control", "+memory +pids +cpu");
	if (mkdir(CG_ROOT "/atrium", 0755) < 0 && errno != EEXIST)
		return -errno;
	cg_write(CG_ROOT "/atrium", "cgroup.subtree_control",
	    "+memory +pids +cpu");
	r = cg_mkdir(CG_ROOT, name, set->dir[0], CGROUP_PATH_MAX);
	if (r < 0)
		return r;
	if (memory_mb > 0) {
		snprintf(v, sizeof(v), "%ld", memory_mb * 1024 * 1024);
		cg_write(set->dir[0], "memory.max", v);
		cg_write(set->dir[0], "memory.swap.max", "0");
	}
	if (pids > 0) {
		snprintf(v, sizeof(v), "%d", pids);
		cg_write(set->dir[0], "pids.max", v);
	}
	if (cpu_percent > 0) {
		snprintf(v, sizeof(v), "%d 100000", cpu_percent * 1000);
		cg_write(set->dir[0], "cpu.max", v);
	}
	return 0;
}

/* v1: a group in each of the memory, pids and cpu hierarchies. */
static int
cg_create_v1(const char *name, long memory_mb, int pids, int cpu_percent,
    struct cgroup_set *set)
{
	char v[64];
	int made = 0;

	if (memory_mb > 0 && cg_mkdir(CG_ROOT "/memory", name, set->dir[0],
	    CGROUP_PATH_MAX) == 0) {
		snprintf(v, sizeof(v), "%ld", memory_mb * 1024 * 1024);
		cg_write(set->dir[0], "memory.limit_in_bytes", v);
		made++;
	}
	if (pids > 0 && cg_mkdir(CG_ROOT "/pids", name, set->dir[1],
	    CGROUP_PATH_MAX) == 0) {
		snprintf(v, sizeof(v), "%d", pids);
		cg_write(set->dir[1], "pids.max", v);
		made++;
	}
	if (cpu_percent > 0 && cg_mkdir(CG_ROOT "/cpu", name, set->dir[2],
	    CGROUP_PATH_MAX) == 0) {
		cg_write(set->dir[2], "cpu.cfs_period_us", "100000");
		snprintf(v, sizeof(v), "%d", cpu_percent * 1000);
		cg_write(set->dir[2], "cpu.cfs_quota_us", v);
		made++;
	}
	return made ? 0 : -ENOTSUP;
}

int
cgroup_create(const char *name, long memory_mb, int pids, int cpu_percent,
    struct cgroup_set *set)
{
	memset(set, 0, sizeof(*set));
	if (cg_is_v2())
		return cg_create_v2(name, memory_mb, pids, cpu_percent, set) < 0 ?
		    -ENOTSUP : 0;
	return cg_create_v1(name, memory_mb, pids, cpu_percent, set);
}

int
cgroup_join_self(const struct cgroup_set *set)
{
	int err = 0;

	for (int i = 0; i < CGROUP_MAX_DIRS; i++) {
		if (set->dir[i][0] && cg_write(set->dir[i], "cgroup.procs", "0") < 0)
			err = -errno;
	}
	return err;
}

/* Kill each pid listed in DIR/cgroup.procs; how many were listed. */
static int
cg_kill_listed(const char *dir)
{
	char path[CGROUP_PATH_MAX + 32];
	FILE *f;
	int pid, n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fscanf(f, "%d", &pid) == 1) {
		kill(pid, SIGKILL);
		n++;
	}
	fclose(f);
	return n;
}

void
cgroup_kill(const struct cgroup_set *set)
{
	for (int i = 0; i < CGROUP_MAX_DIRS; i++) {
		if (!set->dir[i][0])
			continue;
		if (cg_write(set->dir[i], "cgroup.kill", "1") == 0)
			continue;
		/* v1 has no cgroup.kill: a few passes catch forks in flight. */
		for (int pass = 0; pass < 5 && cg_kill_listed(set->dir[i]); pass++)
			;
	}
}

void
cgroup_destroy(struct cgroup_set *set)
{
	struct timespec ts = { 0, 2000000 };

	for (int i = 0; i < CGROUP_MAX_DIRS; i++) {
		if (!set->dir[i][0])
			continue;
		for (int tries = 0; tries < 50 && rmdir(set->dir[i]) < 0 &&
		    errno == EBUSY; tries++)
			nanosleep(&ts, NULL);
		set->dir[i][0] = '\0';
	}
}
