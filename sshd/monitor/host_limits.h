/*
 * host_limits.h: atriumd's share of the resource limits (host_limits.c):
 * at start it settles the total (common/reslimits.h) from the host where
 * the operator left it at 0, claims the atrium parent cgroup
 * (cgroup_claim.h: no other live atriumd may use it), makes it with the
 * total, sweeps every room's stale command groups, and says at WARN when
 * commands will be refused (controllers missing) or will run without
 * limits (--no-limits).  The room and command levels are atrium-agent's.
 */
#ifndef ATRIUMD_HOST_LIMITS_H
#define ATRIUMD_HOST_LIMITS_H

struct config;
struct cgroup_claim;

/* Fill in the automatic totals of c (so each agent is handed the real
 * numbers), claim the parent group into *claim, make it, sweep, log.  0;
 * -1 only when another atriumd holds the parent or the claim cannot be
 * made (said on stderr: the server must not start).  What else cannot be
 * done is logged, and the agents then refuse commands unless
 * --no-limits. */
int host_limits_start(struct config *c, struct cgroup_claim *claim);

#endif
