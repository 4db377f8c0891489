/*
 * host_limits.h: atriumd's share of the resource limits (host_limits.c):
 * at start it settles the total (common/reslimits.h) from the host where
 * the operator left it at 0, makes the atrium parent cgroup with it,
 * sweeps every room's stale command groups, and says at WARN when
 * commands will be refused (controllers missing) or will run without
 * limits (--no-limits).  The room and command levels are atrium-agent's.
 */
#ifndef ATRIUMD_HOST_LIMITS_H
#define ATRIUMD_HOST_LIMITS_H

struct config;

/* Fill in the automatic totals of c (so each agent is handed the real
 * numbers), make the parent group, sweep, log.  Never fails: what cannot
 * be done is logged, and the agents then refuse commands unless
 * --no-limits. */
void host_limits_start(struct config *c);

#endif
