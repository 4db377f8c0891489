/*
 * access_record.h: the monitor's own record of a room's access list,
 * DATA/rooms/ROOM/access.json (access_record.c).  atriumd's decisions
 * before it starts anything for a session (room_access.h, monitor.c) and
 * the rooms listing read it; only the monitor writes it, from what the
 * room's agent reports (agentwatch.h) and at an import (room_transfer.c).
 * atriumd never reads room.db, the agent's, except once for a room made
 * before the record existed (access_record_get).
 *
 * The file, root's, mode 0600, replaced whole (a temporary file, fsync,
 * rename, fsync of the directory), one JSON object:
 *
 *   field        type                 meaning
 *   version      1                    of this format
 *   owner        string | null        a user name (names.h), or none
 *   visibility   "open" | "private"
 *   members      [string]             user names, at most
 *                                     ACCESS_MAX_MEMBERS, not the owner
 */
#ifndef ATRIUMD_ACCESS_RECORD_H
#define ATRIUMD_ACCESS_RECORD_H

#include <json-c/json.h>

#include "access.h"

#define ACCESS_RECORD_NAME	"access.json"
#define ACCESS_RECORD_VERSION	1
#define ACCESS_RECORD_MAX	(64 * 1024)	/* bytes of the file */

/* Fill out from o (a record, or an agent's `access` report: owner,
 * visibility, members), checking every field as hostile input: names
 * valid, no duplicate, at most ACCESS_MAX_MEMBERS.  0, or -EINVAL (out
 * then empty). */
int access_record_parse(json_object *o, struct access_list *out);

/* Read the record of the room in room_dir (DATA/rooms/ROOM).  0, -ENOENT
 * when it has none, -EIO when it cannot be read or is not well formed
 * (logged). */
int access_record_read(const char *room_dir, struct access_list *out);

/* Add l's "owner" (null for none), "visibility" and "members" to o, as
 * the record, a listing and an access answer all show them.  0, or
 * -ENOMEM. */
int access_record_fields(json_object *o, const struct access_list *l);

/* Replace the record of the room in room_dir with l, durably, unless it
 * already says the same (no write then).  1 written, 0 unchanged, -errno
 * (logged). */
int access_record_write(const char *room_dir, const struct access_list *l);

/* The list to decide on for the room in room_dir, which exists:
 *   - its record;
 *   - none, and no room.db yet: a room being made, whose agent has not
 *     started (open, no owner: what its agent will start with; the first
 *     user with may_create becomes the owner, and the agent reports it);
 *   - none, and a room.db that is root's: a room made before the record
 *     existed: read from room.db once (access_db.h), and, when migrate,
 *     recorded;
 *   - none otherwise (a room.db that is not root's, one that cannot be
 *     read): fail closed, private with no owner and no members (an admin
 *     may still enter, which starts the agent, which reports).
 * 0, or -EIO when the record exists but cannot be read (callers refuse). */
int access_record_get(const char *room_dir, int migrate,
    struct access_list *out);

/* Record, from room.db, the list of every room in DATA (data) made before
 * the record existed, at the monitor's start: before its loop runs and
 * any agent holds a room.db, rather than one by one on the loop.  Rooms
 * copied in later are recorded by access_record_get.  Cannot fail (each
 * room's trouble is logged, and that room fails closed). */
void access_record_migrate(const char *data);

#endif
