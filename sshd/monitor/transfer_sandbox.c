/*
 * transfer_sandbox.c: seccomp, network namespace and cgroup for a room
 * transfer's helpers (transfer_sandbox.h).  Called by room_transfer.c:
 * prepare in the monitor before each transfer, enter and seal in each
 * helper's forked child, release when the transfer is over.
 *
 * Why each part:
 *   - seccomp: the helpers are the first code to parse an archive's bytes
 *     (libarchive's tar reader, SQLite's b-tree), as a sandboxed command
 *     parses a workspace's; a memory bug there gets the same kernel
 *     surface a command has, not more (no io_uring, keyrings, bpf, perf,
 *     userfaultfd, mounts, modules).  The filters are the sandbox's own
 *     code, linked in.  libseccomp allocates while building the filter:
 *     safe in the child because the monitor has one thread.
 *   - a network namespace: no helper needs the network, and a subverted
 *     one would otherwise reach the host's (its loopback services, the
 *     cluster, the model's endpoint).  Its pipes and the fsctl connection
 *     an export is handed were made before, so they still work.
 *   - a cgroup: an archive made to be costly (a tar of a billion empty
 *     entries, a room.db whose integrity check walks a huge index) costs
 *     the room's memory and CPU, not the host's; a fork bomb after an
 *     escape meets the room's pids limit.  The group is the room's
 *     (PARENT/ROOM, made with the operator's room limits when no agent
 *     has made it: an imported room.db's own limits are not trusted), and
 *     the helper is in a leaf below it, as a command is (cgroup v2 puts
 *     no process in a group whose controllers are handed down).
 * The leaf's name, xfer-PID-N, carries the monitor's pid: cgroup_sweep
 * leaves it alone while that atriumd runs and removes it after.
 */
#include "transfer_sandbox.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "reslimits.h"
#include "sandbox_seccomp.h"

/* Tells one transfer's group from the next in the same monitor. */
static unsigned transfer_sandbox_seq;

/* See transfer_sandbox.h. */
int
transfer_sandbox_prepare(const struct config *cfg, const char *room,
    struct transfer_cg *cg, char *why, size_t len)
{
	struct reslimits total, limits, cmd;
	struct cgroup_tree t;
	char rel[160];
	int r = 0, rr;

	memset(cg, 0, sizeof(*cg));
	reslimits_nest(cfg, NULL, &total, &limits, &cmd);
	if (cgroup_probe(&t, cfg->cgroup_root, cfg->cgroup_parent) !=
	    CGROUP_ALL)
		r = -ENOTSUP;
	if (t.have && !cgroup_exists(&t, room) &&
	    (rr = cgroup_make(&t, room, &limits, &cg->room)) < 0)
		r = r ? r : rr;
	snprintf(rel, sizeof(rel), "%s/xfer-%d-%u", room, (int)getpid(),
	    ++transfer_sandbox_seq);
	if (t.have && (rr = cgroup_make(&t, rel, &limits, &cg->helper)) < 0)
		r = r ? r : rr;
	if (r == 0 || cfg->no_limits) {
		if (r < 0)
			log_debug("room %s: a transfer runs without all its "
			    "cgroup limits: %s", room, strerror(-r));
		return 0;
	}
	log_error("room %s: cannot apply the room's cgroup limits to a "
	    "transfer's helper: %s", room, strerror(-r));
	snprintf(why, len, "the room's limits cannot be applied on this "
	    "server (cgroups: %s); nothing was started", strerror(-r));
	transfer_sandbox_release(cg);
	return -ENOTSUP;
}

/* See transfer_sandbox.h. */
int
transfer_sandbox_enter(const struct transfer_cg *cg)
{
	if (unshare(CLONE_NEWNET) < 0)
		return -errno;
	return cgroup_join_self(&cg->helper);
}

/* See transfer_sandbox.h. */
int
transfer_sandbox_seal(void)
{
	char err[256];
	int r;

	if ((r = sandbox_seccomp_deny(err, sizeof(err))) < 0) {
		fprintf(stderr, "atriumd: cannot install the sandbox's seccomp "
		    "filter (%s)\n", err);
		return r;
	}
	/* The import's files are all the helper's own: a chown to anyone
	 * else is refused either way. */
	sandbox_seccomp_chown();
	return 0;
}

/* See transfer_sandbox.h. */
void
transfer_sandbox_release(struct transfer_cg *cg)
{
	/* Its helpers have been reaped: only a grandchild a subverted one
	 * left behind can still be in it. */
	cgroup_kill(&cg->helper);
	if (cgroup_remove_now(&cg->helper))
		log_debug("a transfer's cgroup is still busy; the next start "
		    "of atriumd removes it");
	/* Busy (EBUSY) when the room's agent started meanwhile: then it is
	 * the agent's, and stays.  A bare rmdir, not cgroup_remove_now, which
	 * first lifts the group's CPU quota (an agent's, by then). */
	for (int i = 0; i < CGROUP_NCTL; i++)
		if (cg->room.dir[i][0] && rmdir(cg->room.dir[i]) < 0 &&
		    errno != EBUSY && errno != ENOENT)
			log_debug("cannot remove %s: %s", cg->room.dir[i],
			    strerror(errno));
	memset(cg, 0, sizeof(*cg));
}
