/*
 * cgroup_sweep.c: removing stale command groups (cgroup.h).  A command's
 * group is removed when the command ends (sandbox_release); one is left
 * behind only when its atrium-agent died first (kill -9, a crash), and then
 * the sandbox died with it (bwrap's parent-death signal), so the group is
 * empty or nearly.  atrium-agent sweeps its room when it starts (the
 * restart after a crash), atriumd every room when it starts.
 *
 * Which groups are stale is read from their names: cmd-PID-N belongs to
 * agent PID, and is left alone while an atrium-agent of that pid runs, so
 * two atriumd sharing a host (tests, a restart overlapping the old
 * process) never remove each other's live groups.  xfer-PID-N holds a
 * room transfer's helper (sshd/monitor/transfer_sandbox.c) and belongs to
 * atriumd PID in the same way.
 */
#include "cgroup.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The pid in name when it is PREFIX-PID-N, else 0. */
static pid_t
cgs_owner(const char *name, const char *prefix)
{
	const char *p = name + strlen(prefix);
	long pid = 0;

	if (strncmp(name, prefix, strlen(prefix)) != 0 ||
	    !isdigit((unsigned char)*p))
		return 0;
	for (; isdigit((unsigned char)*p); p++)
		if ((pid = pid * 10 + (*p - '0')) > 0x3fffffff)
			return 0;
	if (*p++ != '-' || !isdigit((unsigned char)*p))
		return 0;
	while (isdigit((unsigned char)*p))
		p++;
	return *p ? 0 : (pid_t)pid;
}

pid_t
cgroup_cmd_owner(const char *name)
{
	return cgs_owner(name, "cmd-");
}

/* 1 when pid runs the program called comm. */
static int
cgs_runs(pid_t pid, const char *comm)
{
	char path[64], line[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return strcmp(line, comm) == 0;
}

/* The owner of group name when it is stale (its owner is self or gone),
 * else 0. */
static pid_t
cgs_stale(const char *name, pid_t self)
{
	pid_t owner = cgroup_cmd_owner(name);
	const char *comm = "atrium-agent";

	if (!owner) {
		owner = cgs_owner(name, "xfer-");
		comm = "atriumd";
	}
	if (!owner || (owner != self && cgs_runs(owner, comm)))
		return 0;
	return owner;
}

/* Remove the stale command groups in one room's group dir.  How many. */
static int
cgs_room(const char *dir, pid_t self)
{
	struct cgroup_set set;
	char path[CGROUP_PATH_MAX + 256];
	struct dirent *d;
	DIR *dp = opendir(dir);
	int n = 0;

	if (!dp)
		return 0;
	while ((d = readdir(dp))) {
		if (!cgs_stale(d->d_name, self))
			continue;
		memset(&set, 0, sizeof(set));
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    d->d_name) >= sizeof(set.dir[0]))
			continue;
		memcpy(set.dir[0], path, strlen(path) + 1);
		cgroup_kill(&set);
		cgroup_destroy(&set);
		n += access(path, F_OK) != 0;
	}
	closedir(dp);
	return n;
}

/* Sweep below one hierarchy's PARENT.  How many groups were removed. */
static int
cgs_hierarchy(const char *top, const char *room, pid_t self)
{
	char dir[CGROUP_PATH_MAX + 256];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	if (room) {
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", top, room) >=
		    sizeof(dir))
			return 0;
		return cgs_room(dir, self);
	}
	if (!(dp = opendir(top)))
		return 0;
	while ((d = readdir(dp))) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", top,
		    d->d_name) >= sizeof(dir))
			continue;
		n += cgs_room(dir, self);
		/* A room group with no command left goes too; one that is
		 * busy stays.  The parent is this server's alone (the
		 * monitor claims it first: sshd/monitor/cgroup_claim.h), so
		 * no other server's idle room loses its group here. */
		rmdir(dir);
	}
	closedir(dp);
	return n;
}

int
cgroup_sweep(const struct cgroup_tree *t, const char *room, pid_t self)
{
	static const char *const names[CGROUP_NCTL] = { "memory", "pids", "cpu" };
	char top[CGROUP_PATH_MAX];
	int n = 0, here;

	for (int i = 0; i < CGROUP_NCTL; i++) {
		if (!(t->have & (1 << i)))
			continue;
		if (t->v2)
			snprintf(top, sizeof(top), "%s/%s", t->root, t->parent);
		else
			snprintf(top, sizeof(top), "%s/%s/%s", t->root,
			    names[i], t->parent);
		/* v1 holds a command in three trees: count it once. */
		here = cgs_hierarchy(top, room, self);
		n = here > n ? here : n;
		if (t->v2)
			break;	/* one tree holds every controller */
	}
	return n;
}
