/*
 * consent.h: the yes of the people whose work an undo, redo or restore
 * would take back (consent.c).
 *
 * undo.c knows what an action changes and whose commands since its point
 * changed the workspace; when that names people other than the one who
 * asked, and the asker did not force it, it starts a round here instead
 * of acting.  The round is announced to the room (consent_request, with
 * the preview's lists and whom it asks); each person asked answers with
 * the `consent` request (consent_answer); the first refusal ends it
 * (consent_end "refused"), and so does the time running out
 * (a->approval_timeout: "timeout") or the room changing under it
 * ("cancelled").  Once everyone asked agreed, undo_consented (undo.h)
 * plans the action again and acts.  Every one of these events is stored,
 * so a reconnect replays the round as it went.
 *
 * One round at a time per room, in memory: an agent restart forgets it,
 * and the action does not happen; the restarted agent ends it in the
 * history as cancelled (consent_resume).
 */
#ifndef ATRIUM_AGENT_CONSENT_H
#define ATRIUM_AGENT_CONSENT_H

#include <json-c/json.h>

struct agent;
struct conn;

/* What a round waits to do: what undo.c acts on once everyone agreed. */
struct consent_action {
	char what[8];		/* "undo", "redo" or "restore" */
	char name[132];		/* restore: the snapshot; else "" */
	long long turn;		/* undo, redo: the turn previewed; else 0 */
	char user[64];		/* who asked */
};

/* Start a round for act, asking the names in preview's "ask" (the
 * preview event, whose lists it shows; not taken).  0, or -1 with an
 * error sent to c (another round waits, or room.db could not record
 * it). */
int consent_start(struct agent *a, struct conn *c,
    const struct consent_action *act, json_object *preview);

/* The `consent` request of c: id, approve (bool). */
void consent_request(struct agent *a, struct conn *c, json_object *req);

/* The action of the round that waits, or NULL. */
const struct consent_action *consent_waiting(struct agent *a);

/* End the waiting round (if any) with result ("forced", "cancelled"),
 * naming user (who forced it; may be NULL) and why (may be NULL). */
void consent_end(struct agent *a, const char *result, const char *user,
    const char *why);

/* At start: end, as cancelled by the restart, the round a previous run
 * of the agent left waiting (room.db says which). */
void consent_resume(struct agent *a);

/* Forget the round without a word (the agent is closing). */
void consent_free(struct agent *a);

#endif
