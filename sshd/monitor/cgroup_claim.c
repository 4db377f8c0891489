/*
 * cgroup_claim.c: one atriumd per cgroup parent (cgroup_claim.h).  Called
 * by host_limits.c at start, before the total is set or anything swept,
 * and by monitor_main.c at the end of a clean stop.
 *
 * The lock file's directory is root's alone (0700, checked on every
 * start, never followed through a symlink): no other user can make, swap
 * or lock a claim.  Its name is a hash of the real path of the cgroup
 * root and the parent, so /sys/fs/cgroup and /sys/fs/cgroup/ meet on one
 * file; the file's text is the holder's pid, for people.
 */
#include "cgroup_claim.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"

/* FNV-1a, 64 bits: a short stable name for a long path. */
static uint64_t
claim_hash(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* CGROUP_CLAIM_DIR, made when missing; refused unless it is a directory
 * of root's that no one else may write.  0 or -1 (said on stderr). */
static int
claim_dir(void)
{
	struct stat st;

	if (mkdir(CGROUP_CLAIM_DIR, 0700) < 0 && errno != EEXIST) {
		fprintf(stderr, "atriumd: cannot make %s for the cgroup "
		    "parent's lock: %s\n", CGROUP_CLAIM_DIR, strerror(errno));
		return -1;
	}
	if (lstat(CGROUP_CLAIM_DIR, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != 0 || (st.st_mode & 022)) {
		fprintf(stderr, "atriumd: %s must be a directory of root's "
		    "that only root may write (it holds the cgroup parents' "
		    "locks); remove it and start again\n", CGROUP_CLAIM_DIR);
		return -1;
	}
	return 0;
}

/* The claim file's path for t into c->path.  0, or -1 when the root's
 * real path cannot be had (said on stderr). */
static int
claim_path(const struct cgroup_tree *t, struct cgroup_claim *c)
{
	char root[PATH_MAX];
	uint64_t h;

	if (!realpath(t->root, root)) {
		fprintf(stderr, "atriumd: cgroup root %s: %s\n", t->root,
		    strerror(errno));
		return -1;
	}
	h = claim_hash(root, 0xcbf29ce484222325ULL);
	h = claim_hash("/", h);
	h = claim_hash(t->parent, h);
	snprintf(c->path, sizeof(c->path), "%s/cgroup-%016llx.lock",
	    CGROUP_CLAIM_DIR, (unsigned long long)h);
	return 0;
}

/* See cgroup_claim.h. */
int
cgroup_claim(const struct cgroup_tree *t, struct cgroup_claim *c)
{
	char who[48];
	pid_t holder;
	int r;

	c->lock.fd = -1;
	c->path[0] = '\0';
	if (!t->have)
		return 0;
	if (claim_dir() < 0 || claim_path(t, c) < 0)
		return -1;
	r = datalock_take_file(&c->lock, c->path, &holder);
	if (r == -EBUSY) {
		if (holder > 0)
			snprintf(who, sizeof(who), "atriumd pid %ld",
			    (long)holder);
		else
			snprintf(who, sizeof(who), "an atriumd in another pid "
			    "namespace");
		fprintf(stderr, "atriumd: cgroup parent %s under %s is in use: "
		    "%s holds %s.  Two servers under one parent would share "
		    "its total limits and remove each other's room groups: "
		    "give this one a --cgroup-parent of its own (atriumd(8), "
		    "--cgroup-parent)\n", t->parent, t->root, who, c->path);
		return -1;
	}
	if (r < 0) {
		fprintf(stderr, "atriumd: cannot lock %s for cgroup parent %s: "
		    "%s\n", c->path, t->parent, strerror(-r));
		return -1;
	}
	log_debug("cgroup parent %s/%s: claimed (%s)", t->root, t->parent,
	    c->path);
	return 0;
}

/* See cgroup_claim.h. */
void
cgroup_claim_release(struct cgroup_claim *c)
{
	if (c->lock.fd < 0)
		return;
	if (unlink(c->path) < 0 && errno != ENOENT)
		log_warn("%s: cannot remove: %s", c->path, strerror(errno));
	close(c->lock.fd);
	c->lock.fd = -1;
}
