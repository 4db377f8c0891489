/*
 * reslimits.c: the nesting of the total, room and command limits (reslimits.h).
 * Pure arithmetic apart from reslimits_host, so that the defaults and the
 * clamping are unit-tested.
 */
#include "reslimits.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

void
reslimits_total_auto(long long mem_total, int ncpus, struct reslimits *out)
{
	long long reserve = mem_total / 8;

	if (reserve < RESLIMITS_MIN_RESERVE)
		reserve = RESLIMITS_MIN_RESERVE;
	/* A host with less than twice the reserve keeps half for itself. */
	out->memory = mem_total > 2 * reserve ? mem_total - reserve :
	    mem_total / 2;
	out->pids = RESLIMITS_AUTO_PIDS;
	out->cpus = ncpus * 1000 - RESLIMITS_CPU_RESERVE;
	if (out->cpus < RESLIMITS_CPU_RESERVE)
		out->cpus = RESLIMITS_CPU_RESERVE;
}

int
reslimits_host(long long *mem_total, int *ncpus)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemTotal: %lld kB", &kb) == 1)
			break;
	fclose(f);
	*ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (kb <= 0 || *ncpus <= 0)
		return -EIO;
	*mem_total = kb * 1024;
	return 0;
}

/* v clamped to above (a 0 is "none": the other wins). */
static long long
reslimits_min(long long v, long long above)
{
	if (above <= 0)
		return v;
	return v <= 0 || v > above ? above : v;
}

/* Each field of l clamped to above's. */
static void
reslimits_clamp(struct reslimits *l, const struct reslimits *above)
{
	l->memory = reslimits_min(l->memory, above->memory);
	l->pids = (int)reslimits_min(l->pids, above->pids);
	l->cpus = (int)reslimits_min(l->cpus, above->cpus);
}

void
reslimits_nest(const struct config *c, const struct reslimits *owner,
    struct reslimits *total, struct reslimits *room, struct reslimits *cmd)
{
	total->memory = c->total_memory;
	total->pids = c->total_pids;
	total->cpus = c->total_cpus;
	room->memory = c->room_memory;
	room->pids = c->room_pids;
	room->cpus = c->room_cpus;
	reslimits_clamp(room, total);
	if (owner) {
		/* The owner's values below the operator's; never above. */
		struct reslimits op = *room;

		*room = *owner;
		reslimits_clamp(room, &op);
	}
	cmd->memory = (long long)c->sandbox_memory_mb << 20;
	cmd->pids = c->sandbox_pids;
	cmd->cpus = c->sandbox_cpu_percent * 10;
	reslimits_clamp(cmd, room);
}

void
reslimits_format(const struct reslimits *l, char *out, size_t outlen)
{
	char mem[32], pids[32], cpus[32];

	if (l->memory >= (1LL << 30))
		snprintf(mem, sizeof(mem), "%.1f GiB memory",
		    (double)l->memory / (1 << 30));
	else if (l->memory > 0)
		snprintf(mem, sizeof(mem), "%.0f MiB memory",
		    (double)l->memory / (1 << 20));
	else
		snprintf(mem, sizeof(mem), "no memory limit");
	if (l->pids > 0)
		snprintf(pids, sizeof(pids), "%d pids", l->pids);
	else
		snprintf(pids, sizeof(pids), "no pids limit");
	if (l->cpus > 0)
		snprintf(cpus, sizeof(cpus), "%g CPUs", l->cpus / 1000.0);
	else
		snprintf(cpus, sizeof(cpus), "no CPU limit");
	snprintf(out, outlen, "%s, %s, %s", mem, pids, cpus);
}
