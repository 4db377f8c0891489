/*
 * front_privdrop.h: how a front (atriumd-net, atriumd-http) gives up root
 * (front_privdrop.c), first thing, before it parses a byte of settings or
 * of a client: the steps both take, in this order; what differs between
 * them (the trees Landlock leaves, the seccomp allow list) each passes in
 * (sshd/net/privdrop.h, sshd/http/http_privdrop.h).
 *
 *   1. become the privsep user for good (becomeuser.h: no supplementary
 *      groups, gid and uid set, every capability dropped and checked,
 *      no_new_privs, not dumpable);
 *   2. PR_SET_PDEATHSIG after the uid change (which clears it), and the
 *      parent checked to still be the monitor: it ends with the monitor;
 *   3. chdir /;
 *   4. Landlock, where the kernel has it: only the trees given;
 *   5. the seccomp filter, last.
 */
#ifndef ATRIUMD_FRONT_PRIVDROP_H
#define ATRIUMD_FRONT_PRIVDROP_H

#include <sys/types.h>

#include "landlock.h"
#include "privdrop_id.h"

/* What one front keeps. */
struct front_privdrop {
	const char *who;		/* "network process": for the log */
	const struct landlock_tree *trees;	/* what it may still open,
					 * ended by a NULL path */
	int (*seccomp)(void);		/* load its allow list: 0 or -errno */
};

/* Step 4 alone: Landlock over trees, with who in the log.  0 when the
 * kernel has no Landlock (warned), or -errno (logged).  Call with one
 * thread, no_new_privs set. */
int front_privdrop_landlock(const char *who,
    const struct landlock_tree *trees);

/* Steps 1 to 5 for p, becoming id; monitor is the parent's pid.  0, or
 * -errno with the step that failed logged: the caller exits. */
int front_privdrop_apply(const struct front_privdrop *p,
    const struct privdrop_id *id, pid_t monitor);

#endif
