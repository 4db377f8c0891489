/*
 * ws_snapshot.c: the room's workspace database, for the requests of
 * undo.c, undo_act.c and snapshots.c to its atrium-fs (ws_snapshot.h);
 * the requests themselves are common/fsctl_client.c's, shared with the
 * atrium-fs command line.
 */
#include "ws_snapshot.h"

#include <errno.h>
#include <stdio.h>

int
ws_snapshot_db(const char *room_dir, char *out, size_t size)
{
	int n = snprintf(out, size, "%s/workspace.db", room_dir);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}
