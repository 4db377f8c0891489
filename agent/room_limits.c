/*
 * room_limits.c: the room's cgroup (room_limits.h).  Called by main.c
 * once at start and once at exit.
 */
#include "room_limits.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "cgroup.h"
#include "log.h"
#include "reslimits.h"

void
room_limits_open(struct agent *a)
{
	struct reslimits total, room, cmd;
	char missing[64], text[128];
	int swept, r;

	reslimits_nest(&a->cfg, &total, &room, &cmd);
	a->sb.cg = &a->cg;
	a->sb.room_limits = room;
	a->sb.limits = cmd;
	a->sb.require_limits = !a->cfg.no_limits;
	if (cgroup_probe(&a->cg, a->cfg.cgroup_root, a->cfg.cgroup_parent) !=
	    CGROUP_ALL) {
		cgroup_missing(a->cg.have, missing, sizeof(missing));
		log_warn("cgroup controllers missing under %s: %s; %s",
		    a->cfg.cgroup_root, missing, a->cfg.no_limits ?
		    "commands run without those limits (--no-limits)" :
		    "commands will be refused");
	}
	swept = cgroup_sweep(&a->cg, a->room, getpid());
	if (swept)
		log_info("removed %d stale command cgroup(s) of this room",
		    swept);
	r = cgroup_make(&a->cg, a->room, &room, &a->room_cg);
	reslimits_format(&room, text, sizeof(text));
	if (r < 0)
		log_warn("cannot apply the room's limits (%s): %s", text,
		    strerror(-r));
	else
		log_info("room limits: %s", text);
}

void
room_limits_close(struct agent *a)
{
	cgroup_destroy(&a->room_cg);
}
