/*
 * room_limits.h: the room's cgroup (room_limits.c), the middle level of
 * common/reslimits.h: made when the agent starts with the room's memory,
 * pids and CPU limits, swept of command groups a killed predecessor left,
 * handed to the sandbox template so that every command's group goes below
 * it, and removed when the agent exits.
 *
 * The room's owner cannot change these limits: room.db's settings have no
 * limit keys (yet); the operator's settings are the room's.
 */
#ifndef ATRIUM_AGENT_ROOM_LIMITS_H
#define ATRIUM_AGENT_ROOM_LIMITS_H

struct agent;

/* Probe the host's cgroups, make the room's group, sweep and fill a->sb's
 * limits.  Never fails: what cannot be done is logged, and the sandbox
 * then refuses commands unless --no-limits was given. */
void room_limits_open(struct agent *a);

/* Remove the room's group (it is empty once every command has ended). */
void room_limits_close(struct agent *a);

#endif
