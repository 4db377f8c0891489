/*
 * reslimits.h: the three levels of resource limits and how they nest.
 *
 *   level     cgroup (cgroup.h)            settings                set by
 *   total     PARENT                       total-memory/pids/cpus  atriumd
 *   room      PARENT/ROOM                  room-memory/pids/cpus   atrium-agent
 *   command   PARENT/ROOM/cmd-PID-N        sandbox-memory-mb,      sandbox.c
 *                                          sandbox-pids,
 *                                          sandbox-cpu-percent
 *
 * A level never asks for more than the one above it: the kernel would cap
 * it anyway, except that cgroup v1 refuses outright a CPU quota above the
 * parent's, which would refuse every command.  So reslimits_nest clamps.
 *
 * The total is what keeps the host alive whatever the number of rooms:
 * rooms start on demand and nothing bounds how many run at once (users
 * times rooms), so per-room caps alone multiply past any host.  Its
 * default (0 in the settings) comes from the host: all memory but a
 * reserve of an eighth (at least 1 GiB) for atriumd, atrium-fs, the
 * agents and the kernel, which live outside PARENT; all CPUs but half of
 * one; RESLIMITS_AUTO_PIDS processes.  See atriumd(8), LIMITS.
 */
#ifndef ATRIUM_RESLIMITS_H
#define ATRIUM_RESLIMITS_H

#include <stddef.h>

struct config;

#define RESLIMITS_AUTO_PIDS	8192	/* processes of every room together */
#define RESLIMITS_MIN_RESERVE	(1LL << 30)	/* memory kept from rooms */
#define RESLIMITS_CPU_RESERVE	500	/* thousandths of a CPU kept */

struct reslimits {
	long long memory;	/* bytes; 0: no limit at this level */
	int pids;		/* processes and threads; 0: none */
	int cpus;		/* thousandths of a CPU; 0: none */
};

/* The total for a host with mem_total bytes and ncpus CPUs. */
void reslimits_total_auto(long long mem_total, int ncpus, struct reslimits *out);

/* The host's memory (from /proc/meminfo) and online CPUs.  0 or -errno. */
int reslimits_host(long long *mem_total, int *ncpus);

/* The three levels from the settings, each clamped to the one above (a 0
 * below a limit takes the limit above: "no limit here" still means the
 * parent's).  The total's zeros are taken as they are: fill them first
 * with reslimits_total_auto.  owner, when not NULL, is what the room's
 * owner lowered the room to (0: the operator's): the room's limit is the
 * lower of the two, never above the operator's.  The one place that
 * computes a room's effective limits. */
void reslimits_nest(const struct config *c, const struct reslimits *owner,
    struct reslimits *total, struct reslimits *room, struct reslimits *cmd);

/* "4.0 GiB memory, 1024 pids, 1.5 CPUs" (or "no ... limit"), into out. */
void reslimits_format(const struct reslimits *l, char *out, size_t outlen);

#endif
