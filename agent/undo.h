/*
 * undo.h: a turn's undo point (undo.c), the one place where the agent
 * knows "this is the first call of this turn that may change the
 * workspace" (bash, write, edit, an MCP tool: a tool_def with modifies).
 *
 * turn.c calls undo_before_write after the call was approved and before
 * its journal start is written; the first such call of a turn is recorded
 * in room.db's turn_undo table (turn id, step, call index, tool), in the
 * same commit as the journal start, so after a crash the point is known
 * exactly once per turn (a later call, or the same call resumed, finds
 * the row and does nothing).
 *
 * The workspace snapshot (turn-ID) is taken here, before the first
 * write, and named in the row; undo_request restores it (undo.c).
 */
#ifndef ATRIUM_AGENT_UNDO_H
#define ATRIUM_AGENT_UNDO_H

#include <json-c/json.h>

struct agent;
struct conn;

/* Before call idx of the assistant message of step runs tool (which may
 * change the workspace): record the turn's undo point unless it has one.
 * 0, or -errno when it could not be recorded (the call must not run). */
int undo_before_write(struct agent *a, long long turn, int step, int idx,
    const char *tool);

/* The undo and redo requests of c (redo 0 or 1): without "confirm" the
 * preview (undo_preview, redo_preview: turn, added, removed, modified,
 * users) to c alone; with "confirm": true the restore, then undo_done or
 * redo_done with the same lists to the room.  Errors go to c. */
void undo_request(struct agent *a, struct conn *c, json_object *req,
    int redo);

#endif
