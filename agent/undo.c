/*
 * undo.c: recording a turn's undo point (undo.h).  One INSERT OR IGNORE
 * per call that may write: the first one of a turn makes the row, the rest
 * (and a resumed call) find it.  No snapshot is taken yet: the workspace's
 * filesystem has none to offer; this is where it will be taken.
 */
#include "undo.h"

#include "agent.h"
#include "log.h"
#include "room_db.h"

int
undo_before_write(struct agent *a, long long turn, int step, int idx,
    const char *tool)
{
	int r = room_db_undo_mark(a->db, turn, step, idx, tool, NULL);

	if (r < 0)
		log_error("turn %lld: its undo point could not be recorded: %s",
		    turn, room_db_strerror(r));
	return r;
}
