/*
 * ws_snapshot.h: where the room's workspace database is, for the requests
 * undo.c and snapshots.c send to the room's atrium-fs through its control
 * socket (common/fsctl_client.h, served by fs/daemon/control_socket.c next to
 * the database: ROOM_DIR/workspace.db-ctl).
 *
 * Those requests block the agent's loop for at most their timeout: they
 * are kept to the few an undo point, an undo, a redo or a restore needs,
 * and the count of changes read before and after each person's command
 * (undo.c's marks), with short bounds (a snapshot copies metadata only,
 * the count is a counter's read).
 */
#ifndef ATRIUM_AGENT_WS_SNAPSHOT_H
#define ATRIUM_AGENT_WS_SNAPSHOT_H

#include <stddef.h>

#include "fsctl_client.h"

/* The workspace database of the room in room_dir into out.  0 or
 * -ENAMETOOLONG. */
int ws_snapshot_db(const char *room_dir, char *out, size_t size);

#endif
