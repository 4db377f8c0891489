/*
 * event_types.h: which room events are history (event_types.c).  A room
 * stores some of the events it sends in room.db and replays them to whoever
 * asks (`history`, a join's replay); every other event is live or meant
 * for one connection, and some of those are acted on by atriumd rather
 * than shown (exec_done uncounts a command, access_denied ends a session,
 * synced ends a batch).  Both sides hold to the one list here:
 * atrium-agent stores, imports and replays only these types (each through
 * its constructor, agent/stored_event.c), and atriumd drops any line
 * marked as a replay whose type is not one of them, so a stored event can
 * never pass for one it acts on.  Pure; unit-tested.
 */
#ifndef ATRIUM_EVENT_TYPES_H
#define ATRIUM_EVENT_TYPES_H

/* 1 when type is one a room stores and replays, else 0 (also for NULL). */
int event_type_stored(const char *type);

/* The stored types, NULL-terminated (for the checks that each has its
 * constructor). */
extern const char *const event_types_stored[];

#endif
