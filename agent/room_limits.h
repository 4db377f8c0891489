/*
 * room_limits.h: the room's cgroup (room_limits.c), the middle level of
 * common/reslimits.h: made when the agent starts with the room's memory,
 * pids and CPU limits, swept of command groups a killed predecessor left,
 * handed to the sandbox template so that every command's group goes below
 * it, and removed when the agent exits.
 *
 * The room's owner (or an admin) may lower the limits for the room, never
 * raise them above the operator's (room-memory, room-pids, room-cpus,
 * themselves under the total): the `limits` request.  The lowered values
 * live in room.db's config table (limit_memory in bytes, limit_pids,
 * limit_cpus in thousandths of a CPU; "0": the operator's), so they
 * survive restarts; reslimits_nest takes the lower of the two.
 */
#ifndef ATRIUM_AGENT_ROOM_LIMITS_H
#define ATRIUM_AGENT_ROOM_LIMITS_H

#include <json-c/json.h>

struct agent;
struct conn;

/* As root, before room.db is open: probe the host's cgroups, sweep the
 * room's stale command groups, make the room's group with the operator's
 * limits and hand its directories (not its limits) to the room's uid, so
 * that the agent makes its commands' groups below it.  Never fails: what
 * cannot be done is logged, and the sandbox then refuses commands unless
 * --no-limits was given. */
void room_limits_prepare(struct agent *a);

/* Once room.db is open: the owner's lowered values from it, written to
 * the room's group by the spawner and into a->sb.  Never fails (logged). */
void room_limits_open(struct agent *a);

/* A `limits` line from c.  Without memory, pids or cpus: a `limits` event
 * to c alone (the limits now and the operator's maximum).  With them (the
 * owner or an admin only): checked against the operator's maximum,
 * applied to the room's group at once and to commands started after,
 * stored, and announced to every member with a stored `limits` event.
 * Errors go to c. */
void room_limits_request(struct agent *a, struct conn *c, json_object *req);

/* Remove the room's group (it is empty once every command has ended). */
void room_limits_close(struct agent *a);

#endif
