/*
 * transfer_sandbox.h: the confinement of a room transfer's helpers
 * (transfer_sandbox.c), for room_transfer.c.  An import's helpers parse a
 * stranger's tar and SQLite file; an export's read the room's own.  Each
 * runs as the room's uid (room_transfer.c) and, from here, with:
 *   - the sandbox's seccomp filters (sandbox/sandbox_seccomp.c, the ones
 *     atrium-sandbox-init installs before every command);
 *   - a network namespace of its own, holding only a down loopback;
 *   - a cgroup of its own under the room's, PARENT/ROOM/xfer-PID-N (PID
 *     the monitor's), with the room's memory, pids and CPU limits.
 * The cgroup is made in the monitor before the fork; the rest happens in
 * the forked child, the namespace and the group as root (before the
 * change of uid), the filters last, after it.
 */
#ifndef ATRIUMD_TRANSFER_SANDBOX_H
#define ATRIUMD_TRANSFER_SANDBOX_H

#include <stddef.h>

#include "cgroup.h"

struct config;

/* One transfer's groups. */
struct transfer_cg {
	struct cgroup_set helper;	/* PARENT/ROOM/xfer-PID-N: its helpers */
	struct cgroup_set room;		/* PARENT/ROOM when made for the
					 * transfer (no agent had it), else
					 * empty: removed with the helper's */
};

/* Make the helpers' group of room into cg.  0; or -ENOTSUP, with the
 * reason for the user in why, when the room's limits cannot be applied
 * and cfg does not say --no-limits (the helpers must then not run: limits
 * fail closed, as for commands). */
int transfer_sandbox_prepare(const struct config *cfg, const char *room,
    struct transfer_cg *cg, char *why, size_t len);

/* In the forked child, as root: a network namespace of its own and the
 * group of cg.  0 or -errno. */
int transfer_sandbox_enter(const struct transfer_cg *cg);

/* In the forked child, after the change of uid and just before exec: the
 * sandbox's seccomp filters.  0, or -errno (the helper must not run). */
int transfer_sandbox_seal(void);

/* After the helpers ended: remove their group (and the room's, when made
 * for them and idle); what is still busy is left to the next start's
 * sweep (cgroup_sweep). */
void transfer_sandbox_release(struct transfer_cg *cg);

#endif
