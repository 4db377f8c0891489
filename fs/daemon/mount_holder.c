/*
 * mount_holder.c: who holds a workspace database's mount, for the message
 * of a refused `atrium-fs mount` (fs/daemon/mount.c) or of a refused offline
 * command that would change the database (mount_holder_refuse), and for
 * the record the daemon leaves in the lock file (fs/daemon/lockfile.c).
 *
 * A daemon serves its database until the kernel ends its FUSE connection,
 * and the kernel does so only when the last mount of it is gone from every
 * mount namespace.  A process in another namespace that copied the mount
 * (unshare -m, a container, a systemd service with a private /tmp) keeps
 * it after `fusermount3 -u` on the host, where propagation is private.
 * Then the lock file names a mount point that is no longer a mount here,
 * and asking the user to unmount it would ask for what was just done; so
 * the message says that the mount is gone here, and which process keeps a
 * copy, found by the mount's device (MAJOR:MINOR of its FUSE connection) in
 * the mount tables of the other namespaces.
 *
 * Workload: only on a refused mount; reads /proc/PID/mountinfo once per
 * mount namespace on the host.
 */
#include "mount.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mountinfo.h"

#define HOLDER_MAX_NS	1024	/* namespaces remembered as searched */

/* Whether e is the holder's mount: its device when recorded, otherwise an
 * atrium-fs mount at its mount point (a lock file of an older atrium-fs). */
static int
holder_matches(const struct mountinfo_entry *e,
    const struct lockfile_holder *h, int by_point)
{
	if (h->has_dev)
		return e->major == h->major && e->minor == h->minor &&
		    (!by_point || strcmp(e->point, h->dir) == 0);
	return strcmp(e->fstype, "fuse.atrium-fs") == 0 &&
	    strcmp(e->point, h->dir) == 0;
}

/* Find h's mount in the table at path into point (when not NULL): 1 when
 * there, 0 when not, -errno when the table cannot be read.  by_point: the
 * mount must also be at h->dir. */
static int
holder_find(const char *path, const struct lockfile_holder *h, int by_point,
    char *point, size_t pointlen)
{
	struct mountinfo_reader *r = malloc(sizeof(*r));
	struct mountinfo_entry e;
	int n, found = 0;

	if (!r)
		return -ENOMEM;
	if ((n = mountinfo_open(r, path)) < 0) {
		free(r);
		return n;
	}
	while (!found && (n = mountinfo_next(r, &e)) == 1) {
		if (!holder_matches(&e, h, by_point))
			continue;
		found = 1;
		if (point)
			snprintf(point, pointlen, "%s", e.point);
	}
	mountinfo_close(r);
	free(r);
	return found ? 1 : n;
}

int
mount_holder_dev(const char *dir, unsigned *major, unsigned *minor)
{
	struct mountinfo_reader *r = malloc(sizeof(*r));
	struct mountinfo_entry e;
	int n, found = -ENOENT;

	*major = *minor = 0;
	if (!r)
		return -ENOMEM;
	if ((n = mountinfo_open(r, "/proc/self/mountinfo")) < 0) {
		free(r);
		return n;
	}
	/* The last one listed at dir is the one on top: ours, just made. */
	while ((n = mountinfo_next(r, &e)) == 1) {
		if (strcmp(e.point, dir) != 0 ||
		    strcmp(e.fstype, "fuse.atrium-fs") != 0)
			continue;
		*major = e.major;
		*minor = e.minor;
		found = 0;
	}
	mountinfo_close(r);
	free(r);
	return n < 0 ? n : found;
}

/* The mount namespace of pid (its inode) into *ns: 0 or -1. */
static int
holder_ns(const char *pid, ino_t *ns)
{
	char path[300];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%s/ns/mnt", pid);
	if (stat(path, &st) < 0)
		return -1;
	*ns = st.st_ino;
	return 0;
}

/* Whether ns is among seen (adding it when there is room). */
static int
holder_seen(ino_t *seen, int *nseen, ino_t ns)
{
	for (int i = 0; i < *nseen; i++)
		if (seen[i] == ns)
			return 1;
	if (*nseen < HOLDER_MAX_NS)
		seen[(*nseen)++] = ns;
	return 0;
}

/* A process in another mount namespace whose table has h's mount: its pid
 * (its mount point there into point), or 0 when none is found. */
static long
holder_elsewhere(const struct lockfile_holder *h, char *point,
    size_t pointlen)
{
	ino_t seen[HOLDER_MAX_NS], ns;
	char path[300];
	struct dirent *d;
	int nseen = 0;
	long found = 0;
	DIR *proc;

	if (!h->has_dev || holder_ns("self", &ns) < 0 ||
	    !(proc = opendir("/proc")))
		return 0;
	holder_seen(seen, &nseen, ns);
	while (!found && (d = readdir(proc))) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9' ||
		    holder_ns(d->d_name, &ns) < 0 ||
		    holder_seen(seen, &nseen, ns))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/mountinfo", d->d_name);
		if (holder_find(path, h, 0, point, pointlen) == 1)
			found = strtol(d->d_name, NULL, 10);
	}
	closedir(proc);
	return found;
}

/* The command name of pid into out ("?" when it cannot be read). */
static void
holder_comm(long pid, char *out, size_t outlen)
{
	char path[300];
	FILE *f;

	snprintf(out, outlen, "?");
	snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	if (!(f = fopen(path, "re")))
		return;
	if (fgets(out, (int)outlen, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* The daemon's mount is gone here: say who keeps it. */
static void
holder_explain_gone(const char *db, const struct lockfile_holder *h)
{
	char point[PATH_MAX], comm[64];
	long other = holder_elsewhere(h, point, sizeof(point));

	fprintf(stderr, "atrium-fs: %s is still held by atrium-fs pid %ld, "
	    "but its mount at %s is gone: ", db, (long)h->pid, h->dir);
	if (other > 0) {
		holder_comm(other, comm, sizeof(comm));
		fprintf(stderr, "pid %ld (%s) runs in another mount namespace "
		    "that keeps a copy of it (at %s there)", other, comm, point);
	} else {
		fprintf(stderr, "a process in another mount namespace keeps "
		    "a copy of it");
	}
	fprintf(stderr, ", so the kernel keeps its FUSE connection and the "
	    "daemon serves on.  The daemon ends when that copy goes (end that "
	    "process, or unmount the copy in its namespace); to end it now: "
	    "kill %ld\n", (long)h->pid);
}

int
mount_holder_gone(const struct lockfile_holder *h)
{
	return h->pid > 0 && h->dir[0] &&
	    holder_find("/proc/self/mountinfo", h, 1, NULL, 0) == 0;
}

void
mount_holder_explain(const char *db, const struct lockfile_holder *h)
{
	if (h->pid <= 0 || !h->dir[0]) {
		fprintf(stderr, "atrium-fs: %s is being mounted by another "
		    "atrium-fs; unmount that one first\n", db);
		return;
	}
	if (mount_holder_gone(h)) {
		holder_explain_gone(db, h);
		return;
	}
	fprintf(stderr, "atrium-fs: %s is already mounted at %s by pid %ld; "
	    "unmount it first (fusermount3 -u %s)\n", db, h->dir, (long)h->pid,
	    h->dir);
}

void
mount_holder_refuse(const char *db, const struct lockfile_holder *h,
    const char *verb)
{
	if (h->pid <= 0 || !h->dir[0]) {
		/* A command holds it (it records nothing), or a mount that has
		 * not recorded itself yet. */
		fprintf(stderr, "atrium-fs: cannot %s %s: another atrium-fs "
		    "holds %s-mount (a mount starting, or a command changing "
		    "it); try again once that one has ended\n", verb, db, db);
		return;
	}
	fprintf(stderr, "atrium-fs: cannot %s %s: it is mounted at %s by "
	    "atrium-fs pid %ld; unmount it first (fusermount3 -u %s)\n", verb,
	    db, h->dir, (long)h->pid, h->dir);
}
