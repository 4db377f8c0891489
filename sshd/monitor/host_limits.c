/*
 * host_limits.c: the atrium parent cgroup and the start-time sweep
 * (host_limits.h).  Called once by monitor_main.c before the server listens.
 * The parent is claimed (cgroup_claim.c) before its total is written or
 * anything below it swept: the sweep removes every room group left empty,
 * which is safe only while no other server's rooms live there.
 */
#include "host_limits.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroup_claim.h"
#include "config.h"
#include "log.h"
#include "reslimits.h"

/* Replace the total's zeros with what the host allows. */
static void
host_limits_auto(struct config *c)
{
	struct reslimits host = { 0, 0, 0 };
	long long mem;
	int ncpus;

	if (reslimits_host(&mem, &ncpus) == 0)
		reslimits_total_auto(mem, ncpus, &host);
	else
		log_warn("cannot read the host's memory and CPUs: the total "
		    "limits of all rooms default to none");
	if (!c->total_memory)
		c->total_memory = host.memory;
	if (!c->total_pids)
		c->total_pids = host.pids;
	if (!c->total_cpus)
		c->total_cpus = host.cpus;
}

/* One WARN line on what the controllers found mean for commands. */
static void
host_limits_warn(const struct config *c, const struct cgroup_tree *t)
{
	char missing[64];

	cgroup_missing(t->have, missing, sizeof(missing));
	if (c->no_limits)
		log_warn("--no-limits: commands run even where their memory, "
		    "pids and CPU limits cannot be applied (cgroup controllers "
		    "missing under %s: %s)", c->cgroup_root,
		    missing[0] ? missing : "none");
	else if (missing[0])
		log_warn("cgroup controllers missing under %s: %s; every "
		    "command will be refused until they are available (or "
		    "start with --no-limits to run commands without limits)",
		    c->cgroup_root, missing);
}

int
host_limits_start(struct config *c, struct cgroup_claim *claim)
{
	struct reslimits total, room, cmd;
	struct cgroup_set parent;
	struct cgroup_tree t;
	char text[3][128];
	int r, swept;

	host_limits_auto(c);
	reslimits_nest(c, NULL, &total, &room, &cmd);
	cgroup_probe(&t, c->cgroup_root, c->cgroup_parent);
	host_limits_warn(c, &t);
	if (cgroup_claim(&t, claim) < 0)
		return -1;
	r = cgroup_make(&t, "", &total, &parent);
	reslimits_format(&total, text[0], sizeof(text[0]));
	if (r < 0 && t.have)
		log_warn("cannot apply the total limits of all rooms (%s) to "
		    "%s/%s: %s", text[0], c->cgroup_root, c->cgroup_parent,
		    strerror(-r));
	swept = cgroup_sweep(&t, NULL, getpid());
	if (swept)
		log_info("removed %d stale command cgroup(s)", swept);
	reslimits_format(&room, text[1], sizeof(text[1]));
	reslimits_format(&cmd, text[2], sizeof(text[2]));
	log_info("limits: all rooms %s; each room %s; each command %s; each "
	    "user %d commands at once, %d rooms created", text[0], text[1],
	    text[2], c->max_commands_per_user, c->max_rooms_per_user);
	return 0;
}
