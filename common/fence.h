/*
 * fence.h: the fence page of a room on a cluster host (cluster/node.c
 * makes and updates it; walbuf.c consults it before every commit).
 *
 * One page, shared by the monitor (writer) with a room's writers
 * (atrium-agent for room.db, atrium-fs for workspace.db), read-only to them.
 * until_ns: CLOCK_MONOTONIC ns until which this host may commit to the room;
 * 0 = no cluster, no limit.  epoch: the room's epoch.
 *
 * The writers check the clock themselves at each commit, so a monitor that
 * is stopped (kill -STOP, a stalled host) fences its rooms all the same:
 * the time written is where this host's lease might end, less a margin,
 * and it only moves when a renewal succeeded.
 */
#ifndef ATRIUM_FENCE_H
#define ATRIUM_FENCE_H

#include <stdatomic.h>
#include <stdint.h>

struct fence_page {
	_Atomic int64_t until_ns;
	_Atomic int64_t epoch;
};
int fence_map(int fd, const struct fence_page **out);   /* read-only mmap; -errno */
int fence_may_commit(const struct fence_page *f);        /* 1 yes, 0 fenced */

#endif
