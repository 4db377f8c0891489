/*
 * snapshots.h: snapshots people name (snapshots.c): the requests
 * snapshot (name), restore (name) and snapshots of the room protocol,
 * behind the chat's /snapshot, /restore and /snapshots.  Taking and
 * restoring is for who may manage the room (room_access_may_manage), as
 * undo is; listing is for every member.
 */
#ifndef ATRIUM_AGENT_SNAPSHOTS_H
#define ATRIUM_AGENT_SNAPSHOTS_H

#include <json-c/json.h>

struct agent;
struct conn;

/* type is "snapshot", "restore" or "snapshots"; answers or errors go to c,
 * a done snapshot is announced to the room as a notice; a restore is
 * undo_restore_request's (undo.h): previewed, then done (restore_done)
 * or put to the people whose work it takes back. */
void snapshots_request(struct agent *a, struct conn *c, const char *type,
    json_object *req);

#endif
