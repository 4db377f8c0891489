/*
 * undo.h: a turn's undo point (undo.c), the one place where the agent
 * knows "this is the first call of this turn that may change the
 * workspace" (bash, write, edit, an MCP tool: a tool_def with modifies).
 *
 * turn_tools.c calls undo_before_write after the call was approved and before
 * its journal start is written; the first such call of a turn is recorded
 * in room.db's turn_undo table (turn id, step, call index, tool), in the
 * same commit as the journal start, so after a crash the point is known
 * exactly once per turn (a later call, or the same call resumed, finds
 * the row and does nothing).
 *
 * The workspace snapshot (turn-ID) is taken here, before the first
 * write, and named in the row; undo_request restores it (undo_act.c,
 * which also restores people's named snapshots, and asks the people
 * whose work either would take back: consent.h).
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

/* Whether a person's command changed the workspace, for the attribution
 * of undo, redo and restore (who must agree): the count of atrium-fs's
 * changes before it ran (fsctl_changes), compared with the count at its
 * end.  A change by someone else while it ran counts as its own: the
 * attribution errs towards asking. */
struct undo_mark {
	int known;                    /* 0: the count could not be had */
	unsigned long long changes;
};
/* Before a person's command runs. */
void undo_mark_start(struct agent *a, struct undo_mark *m);
/* After it ended, into its audit row (audit_id): whether it changed the
 * workspace, left unknown (counted as changed) when either count is
 * missing.  Logged on failure. */
void undo_mark_end(struct agent *a, const struct undo_mark *m,
    long long audit_id);

/* The undo and redo requests of c (redo 0 or 1), and restore of the
 * snapshot name (checked by the caller), in undo_act.c: without
 * "confirm" the preview (undo_preview, redo_preview, restore_preview:
 * turn or name, added, removed, modified, users, ask) to c alone; with
 * "confirm": true the act, then undo_done, redo_done or restore_done with
 * the same lists to the room, or, when the act would take back the work
 * of people other than c (ask) and "force" is not true, a round of
 * consent (consent.h).  Errors go to c. */
void undo_request(struct agent *a, struct conn *c, json_object *req,
    int redo);
void undo_restore_request(struct agent *a, struct conn *c, json_object *req,
    const char *name);

struct consent_action;
/* Everyone asked agreed to act (consent.c): plan it again and act, the
 * done event naming agreed.  0, or -1 with why (len bytes): nothing was
 * done (the room changed meanwhile, or the act failed). */
int undo_consented(struct agent *a, const struct consent_action *act,
    json_object *agreed, char *why, size_t len);

#endif
