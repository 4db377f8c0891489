/*
 * cgroup.c: making, joining, killing and removing atrium's cgroups on v2
 * or v1 (cgroup.h).  atriumd makes PARENT at start, atrium-agent its
 * room's group, sandbox.c one group per command around each spawn; the
 * joining half runs in a forked child and so uses only open, write and
 * close.  The stale-group sweep is cgroup_sweep.c.
 */
#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* Controller names, in CGROUP_* bit order; v1 mounts each at ROOT/NAME. */
static const char *const cg_names[CGROUP_NCTL] = { "memory", "pids", "cpu" };

/* Write text to DIR/FILE.  0 or -errno.  Async-signal-safe. */
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

/* The controllers that ROOT/cgroup.controllers lists (v2), as CGROUP_*. */
static int
cg_v2_controllers(const char *root)
{
	char path[300], buf[512] = "", *tok, *save = NULL;
	int have = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	if (!(f = fopen(path, "re")))
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	for (tok = strtok_r(buf, " \n", &save); tok;
	    tok = strtok_r(NULL, " \n", &save))
		for (int i = 0; i < CGROUP_NCTL; i++)
			if (strcmp(tok, cg_names[i]) == 0)
				have |= 1 << i;
	return have;
}

/* Where controller i's hierarchy starts: ROOT (v2) or ROOT/NAME (v1). */
static void
cg_base(const struct cgroup_tree *t, int i, char *out, size_t outlen)
{
	if (t->v2)
		snprintf(out, outlen, "%s", t->root);
	else
		snprintf(out, outlen, "%s/%s", t->root, cg_names[i]);
}

/* v2: let the groups below dir use our controllers. */
static void
cg_enable_below(const struct cgroup_tree *t, const char *dir)
{
	char what[16];

	for (int i = 0; i < CGROUP_NCTL; i++) {
		if (!(t->have & (1 << i)))
			continue;
		snprintf(what, sizeof(what), "+%s", cg_names[i]);
		cg_write(dir, "cgroup.subtree_control", what);
	}
}

/* Make BASE/PARENT/rel and the missing groups above it; the path goes
 * to out.  On v2 each new group's parent hands its controllers down.
 * 0 or -errno. */
static int
cg_make_path(const struct cgroup_tree *t, const char *base, const char *rel,
    char *out, size_t outlen)
{
	char up[CGROUP_PATH_MAX];
	size_t n;

	if ((size_t)snprintf(out, outlen, "%s/%s%s%s", base, t->parent,
	    *rel ? "/" : "", rel) >= outlen)
		return -ENAMETOOLONG;
	/* Each '/' after base ends an ancestor; the last step is out. */
	for (n = strlen(base) + 1; n <= strlen(out); n++) {
		if (out[n] != '/' && out[n] != '\0')
			continue;
		snprintf(up, sizeof(up), "%.*s", (int)n, out);
		if (mkdir(up, 0755) == 0) {
			if (t->v2) {
				char above[CGROUP_PATH_MAX];

				snprintf(above, sizeof(above), "%.*s",
				    (int)(strrchr(up, '/') - up), up);
				cg_enable_below(t, above);
			}
		} else if (errno != EEXIST) {
			return -errno;
		}
	}
	return 0;
}

int
cgroup_probe(struct cgroup_tree *t, const char *root, const char *parent)
{
	char base[300], dir[CGROUP_PATH_MAX];
	int v2have;

	memset(t, 0, sizeof(*t));
	snprintf(t->root, sizeof(t->root), "%s", root);
	snprintf(t->parent, sizeof(t->parent), "%s", parent);
	v2have = cg_v2_controllers(root);
	t->v2 = v2have != 0;
	for (int i = 0; i < CGROUP_NCTL; i++) {
		if (t->v2 && !(v2have & (1 << i)))
			continue;
		cg_base(t, i, base, sizeof(base));
		snprintf(dir, sizeof(dir), "%s/cgroup.procs", base);
		if (access(dir, F_OK) != 0)
			continue;
		t->have |= 1 << i;	/* cg_make_path enables what is had */
		if (cg_make_path(t, base, "", dir, sizeof(dir)) < 0 ||
		    access(dir, W_OK) != 0)
			t->have &= ~(1 << i);
	}
	return t->have;
}

void
cgroup_missing(int have, char *out, size_t outlen)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < CGROUP_NCTL && used < outlen; i++)
		if (!(have & (1 << i)))
			used += (size_t)snprintf(out + used, outlen - used,
			    "%s%s", used ? ", " : "", cg_names[i]);
}

/* Write controller i's limit from l into dir (v2 or v1 files).  0 when
 * written or there is none to write, or -errno. */
static int
cg_write_limit(const struct cgroup_tree *t, int i, const char *dir,
    const struct reslimits *l)
{
	char v[64];
	int r;

	if (i == 0 && l->memory > 0) {
		snprintf(v, sizeof(v), "%lld", l->memory);
		/* v1 keeps memory <= memory+swap: raising an existing group's
		 * limit needs memsw raised first, lowering needs it after. */
		if (!t->v2)
			cg_write(dir, "memory.memsw.limit_in_bytes", v);
		r = cg_write(dir, t->v2 ? "memory.max" : "memory.limit_in_bytes", v);
		/* Swap would let a group hold more than its limit; the file is
		 * missing where swap is not accounted, and then none is. */
		if (r == 0 && t->v2)
			cg_write(dir, "memory.swap.max", "0");
		else if (r == 0)
			cg_write(dir, "memory.memsw.limit_in_bytes", v);
		return r;
	}
	if (i == 1 && l->pids > 0) {
		snprintf(v, sizeof(v), "%d", l->pids);
		return cg_write(dir, "pids.max", v);
	}
	if (i == 2 && l->cpus > 0) {
		/* Quota per 100 ms period: a thousandth of a CPU is 100 us. */
		if (t->v2) {
			snprintf(v, sizeof(v), "%d 100000", l->cpus * 100);
			return cg_write(dir, "cpu.max", v);
		}
		if ((r = cg_write(dir, "cpu.cfs_period_us", "100000")) < 0)
			return r;
		snprintf(v, sizeof(v), "%d", l->cpus * 100);
		return cg_write(dir, "cpu.cfs_quota_us", v);
	}
	return 0;
}

/* Is there a limit in l for controller i? */
static int
cg_wants(const struct reslimits *l, int i)
{
	return i == 0 ? l->memory > 0 : i == 1 ? l->pids > 0 : l->cpus > 0;
}

int
cgroup_make(const struct cgroup_tree *t, const char *rel,
    const struct reslimits *l, struct cgroup_set *set)
{
	char base[300];
	int err = 0, r;

	memset(set, 0, sizeof(*set));
	for (int i = 0; i < CGROUP_NCTL; i++) {
		/* v2: one group holds every controller, in dir[0]. */
		char *dir = set->dir[t->v2 ? 0 : i];

		if (!(t->have & (1 << i))) {
			if (cg_wants(l, i) && !err)
				err = -ENOTSUP;
			continue;
		}
		if (!dir[0]) {
			cg_base(t, i, base, sizeof(base));
			if ((r = cg_make_path(t, base, rel, dir,
			    CGROUP_PATH_MAX)) < 0) {
				dir[0] = '\0';
				err = err ? err : r;
				continue;
			}
		}
		if ((r = cg_write_limit(t, i, dir, l)) < 0 && !err)
			err = r;
	}
	return err;
}

/* v1 refuses a parent's CPU quota below a child's: bring each group
 * directly below dir (commands) down to quota first.  Best effort: a
 * group that went meanwhile is no matter. */
static void
cg_v1_lower_children_cpu(const char *dir, long quota)
{
	char child[CGROUP_PATH_MAX + 300], v[32];
	struct dirent *d;
	long cur;
	DIR *dp = opendir(dir);
	FILE *f;

	if (!dp)
		return;
	while ((d = readdir(dp))) {
		if (d->d_type != DT_DIR || d->d_name[0] == '.')
			continue;
		snprintf(child, sizeof(child), "%s/%s/cpu.cfs_quota_us", dir,
		    d->d_name);
		if (!(f = fopen(child, "re")))
			continue;
		if (fscanf(f, "%ld", &cur) != 1)
			cur = -1;
		fclose(f);
		if (cur >= 0 && cur <= quota)
			continue;
		snprintf(child, sizeof(child), "%s/%s", dir, d->d_name);
		snprintf(v, sizeof(v), "%ld", quota);
		cg_write(child, "cpu.cfs_quota_us", v);
	}
	closedir(dp);
}

int
cgroup_relimit(const struct cgroup_tree *t, const struct cgroup_set *set,
    const struct reslimits *l)
{
	int err = 0, r;

	for (int i = 0; i < CGROUP_NCTL; i++) {
		const char *dir = set->dir[t->v2 ? 0 : i];

		if (!(t->have & (1 << i)) || !dir[0]) {
			if (cg_wants(l, i) && !err)
				err = -ENOTSUP;
			continue;
		}
		if (i == 2 && !t->v2 && l->cpus > 0)
			cg_v1_lower_children_cpu(dir, (long)l->cpus * 100);
		if ((r = cg_write_limit(t, i, dir, l)) < 0) {
			log_warn("cannot set the %s limit of %s: %s",
			    cg_names[i], dir, strerror(-r));
			err = err ? err : r;
		}
	}
	return err;
}

int
cgroup_exists(const struct cgroup_tree *t, const char *rel)
{
	char base[300], dir[CGROUP_PATH_MAX];

	for (int i = 0; i < CGROUP_NCTL; i++) {
		if (!(t->have & (1 << i)))
			continue;
		cg_base(t, i, base, sizeof(base));
		snprintf(dir, sizeof(dir), "%s/%s/%s", base, t->parent, rel);
		if (access(dir, F_OK) != 0)
			return 0;
	}
	return 1;
}

int
cgroup_join_self(const struct cgroup_set *set)
{
	int err = 0, r;

	for (int i = 0; i < CGROUP_NCTL; i++)
		if (set->dir[i][0] &&
		    (r = cg_write(set->dir[i], "cgroup.procs", "0")) < 0)
			err = r;
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
	for (int i = 0; i < CGROUP_NCTL; i++) {
		if (!set->dir[i][0])
			continue;
		if (cg_write(set->dir[i], "cgroup.kill", "1") == 0)
			continue;
		/* v1 has no cgroup.kill: a few passes catch forks in flight. */
		for (int pass = 0; pass < 5 && cg_kill_listed(set->dir[i]); pass++)
			;
	}
}

int
cgroup_remove_now(struct cgroup_set *set)
{
	int left = 0;

	for (int i = 0; i < CGROUP_NCTL; i++) {
		if (!set->dir[i][0])
			continue;
		/* v1: a removed group lingers in the kernel while references
		 * to it remain, and its CPU quota still counts against its
		 * parent's: a room could not then be lowered below it
		 * (cgroup_relimit).  Gone, it asks for nothing.  (No such file
		 * elsewhere: nothing is written.) */
		cg_write(set->dir[i], "cpu.cfs_quota_us", "-1");
		if (rmdir(set->dir[i]) < 0 && errno == EBUSY)
			left++;
		else
			set->dir[i][0] = '\0';
	}
	return left;
}

void
cgroup_destroy(struct cgroup_set *set)
{
	struct timespec ts = { 0, 2000000 };

	for (int tries = 0; tries < 50 && cgroup_remove_now(set); tries++)
		nanosleep(&ts, NULL);
	for (int i = 0; i < CGROUP_NCTL; i++)
		set->dir[i][0] = '\0';
}

int
cgroup_delegate(const struct cgroup_tree *t, const struct cgroup_set *set,
    uid_t uid, gid_t gid, const char **what)
{
	static const char *const v2files[] = { "cgroup.procs",
	    "cgroup.threads", "cgroup.subtree_control" };
	char path[CGROUP_PATH_MAX + 64];

	for (int i = 0; i < CGROUP_NCTL; i++) {
		if (!set->dir[i][0])
			continue;
		*what = set->dir[i];
		if (chown(set->dir[i], uid, gid) < 0)
			return -errno;
		for (size_t k = 0; t->v2 && k < 3; k++) {
			snprintf(path, sizeof(path), "%s/%s", set->dir[i],
			    v2files[k]);
			*what = v2files[k];
			if (chown(path, uid, gid) < 0 && errno != ENOENT)
				return -errno;
		}
	}
	return 0;
}
