/*
 * cgroup_claim.h: one atriumd per cgroup parent.  A server's groups live
 * below ROOT/PARENT (cgroup.h): its total limits on PARENT itself, one
 * group per room named after the room, and at start it removes the room
 * groups left empty below PARENT (cgroup_sweep).  Two live servers under
 * one parent would share one total, share the group of any room name
 * both have, and each start would remove the other's idle rooms' groups,
 * whose commands are then refused.  So the monitor claims its parent
 * before it sets the total or sweeps, and a second atriumd on the same
 * ROOT/PARENT is refused at start, naming the holder's pid.
 *
 * The claim is datalock.h's record lock on a file of root's own,
 * /run/atrium/cgroup-HASH.lock, HASH naming the real path of ROOT and
 * PARENT: the kernel drops it when the monitor ends, however it ends, so
 * a dead server never blocks the next start.  Not a lock on a file of the
 * cgroup itself: those are readable by every user, and a read lock taken
 * by a room's process would keep atriumd from starting again.
 */
#ifndef ATRIUMD_CGROUP_CLAIM_H
#define ATRIUMD_CGROUP_CLAIM_H

#include "datalock.h"

#define CGROUP_CLAIM_DIR	"/run/atrium"	/* root's, 0700 */

struct cgroup_tree;

struct cgroup_claim {
	struct datalock lock;	/* fd -1: nothing claimed */
	char path[64];		/* CGROUP_CLAIM_DIR/cgroup-HASH.lock */
};

/* Claim t's ROOT/PARENT for this process's life, into *c.  0 (also when
 * t has no usable controller: then no group is made, none shared); -1
 * when another atriumd holds it or the claim cannot be made, with why
 * said on stderr (the server must not start). */
int cgroup_claim(const struct cgroup_tree *t, struct cgroup_claim *c);

/* At the end of a clean stop, once the rooms are stopped: remove the
 * claim's file and drop the claim (a next start makes a new file; one
 * that opened the old file finds it gone and tries again). */
void cgroup_claim_release(struct cgroup_claim *c);

#endif
