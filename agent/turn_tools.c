/*
 * turn_tools.c: a turn's TOOL phase (turn.c): the calls of a step answered
 * in order, each run (tools.h), denied, or answered from the journal, then
 * the results message stored and the next request made.
 *
 * A call's journal start and audit row commit before it is spawned, its
 * end before the next call; a start without an end is "interrupted" and
 * never run again (see turn.c for the checkpoints and "Held steps").
 */
#include "turn_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "agent.h"
#include "approval.h"
#include "journal.h"
#include "jsonl.h"
#include "mcp.h"
#include "room_events.h"
#include "room_db.h"
#include "tools.h"
#include "undo.h"

#define TURN_HOLD_MS		100	/* a call that changes nothing goes
					 * unshown for at most this long */

/* Record call idx's end (journal, tool_result event) for the next
 * checkpoint, which turn_tools_next always reaches: the next call's start
 * or approval request, or the results message.  0, or -errno when a write
 * failed: the checkpoint is rolled back, the turn suspended and t freed
 * (turn_checkpoint). */
int
turn_tool_end(struct turn *t, int idx, const char *status,
    const char *output)
{
	json_object *b = json_object_array_get_idx(t->calls, (size_t)idx);
	json_object *in = NULL, *ev;
	const char *id = json_get_string(b, "id");
	int r;

	if (t->held && journal_watched(t->a->journal) < 0)
		return turn_checkpoint(t, 0);	/* the start is gone */
	json_object_object_get_ex(b, "input", &in);
	r = room_db_tool_end(t->a->db, t->id, t->call_step, idx, id ? id : "",
	    json_get_string(b, "name") ? json_get_string(b, "name") : "",
	    json_object_to_json_string_ext(in, JSON_C_TO_STRING_PLAIN), status,
	    output);
	ev = room_event_new("tool_result");
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "id", json_object_new_string(id ? id : ""));
	/* The tool's name: a replay shows a streamed tool's output where it
	 * streamed, before the end line. */
	json_object_object_add(ev, "name", json_object_new_string(
	    json_get_string(b, "name") ? json_get_string(b, "name") : ""));
	json_object_object_add(ev, "status", json_object_new_string(status));
	json_object_object_add(ev, "output", json_object_new_string(output));
	if (r == 0)
		r = room_record(t->a, ev);
	else
		json_object_put(ev);
	return r < 0 ? turn_checkpoint(t, r) : 0;
}

static void
turn_tool_done(void *arg, const char *status, const char *output)
{
	struct turn *t = arg;

	t->run = NULL;
	if (turn_tool_end(t, t->next, status, output) < 0)
		return;
	t->next++;
	turn_tools_next(t);
}

/* Run call idx: its journal start and audit row committed first (with
 * whatever was recorded before them: the answer, earlier calls' ends),
 * then the command; never past a start that room.db did not take.  In a
 * held step (see "Held steps"), a call that changes nothing runs with its
 * start written and left to commit with its end.  1
 * when it is running, 0 when it ended at once (error recorded), -errno
 * when the turn was suspended (t freed). */
int
turn_tool_run(struct turn *t, int idx)
{
	json_object *b = json_object_array_get_idx(t->calls, (size_t)idx);
	json_object *in = NULL;
	const char *id = json_get_string(b, "id");
	const char *name = json_get_string(b, "name"), *what = NULL;
	const struct tool_def *def = tools_lookup(t->a, name);
	char err[512], buf[TOOLS_AUDIT_BUF];
	long long audit_id = 0;
	int r;

	if (!def)	/* turn_tool_known answered unknown names */
		return turn_tool_end(t, idx, "error", "error: unknown tool");
	json_object_object_get_ex(b, "input", &in);
	if (def->audit && !(what = def->audit(t->a, name, in, buf,
	    sizeof(buf), err, sizeof(err))))
		return turn_tool_end(t, idx, "error", err);
	/* The undo point goes in the commit of the journal start, so the
	 * workspace is as it was before this turn's first write; neither
	 * recorded, the call does not run.  Nor does it unaudited. */
	r = def->modifies ? undo_before_write(t->a, t->id, t->call_step, idx,
	    name) : 0;
	if (r == 0)
		r = room_db_tool_start(t->a->db, t->id, t->call_step, idx,
		    id ? id : "", name,
		    json_object_to_json_string_ext(in, JSON_C_TO_STRING_PLAIN));
	if (r == 0 && what)
		r = room_db_audit_add(t->a->db, "agent", "tool", what,
		    def->audit_cwd, &audit_id);
	if (r == 0 && !def->modifies && t->held &&
	    journal_watched(t->a->journal) == 0)
		journal_hold(t->a->journal, TURN_HOLD_MS);
	else if ((r = turn_checkpoint(t, r)) < 0)
		return r;
	if (tools_start(def, t->a, name, id ? id : "", in, audit_id,
	    turn_tool_done, t, &t->run, err, sizeof(err)) < 0) {
		t->run = NULL;
		return turn_tool_end(t, idx, "error", err);
	}
	t->run_def = def;
	t->phase = PHASE_TOOL;
	return 1;
}

/* Deal with call idx without running anything when its fate is already
 * known.  1 when it was answered here, 0 when it still needs a decision,
 * -errno when the turn was suspended (t freed): also when the journal
 * cannot be read, since a call whose start cannot be ruled out is never
 * run. */
static int
turn_tool_known(struct turn *t, int idx, json_object *b)
{
	struct room_db_tool j;
	const char *id = json_get_string(b, "id"), *name;
	json_object *raw = NULL;
	char msg[1024];
	int found = room_db_tool_get(t->a->db, t->id, t->call_step, idx, &j);

	if (found < 0)
		return turn_checkpoint(t, found);
	if (found == 1 && j.ended) {
		free(j.output);
		return 1;
	}
	if (found == 1 && j.started)
		return turn_tool_end(t, idx, "interrupted", "interrupted: the "
		    "agent stopped while this command was running, so its "
		    "result is unknown; it was not run again. Check its "
		    "effects before running it again.") < 0 ? -1 : 1;
	name = json_get_string(b, "name");
	if (id && json_object_object_get_ex(t->bad_args, id, &raw)) {
		snprintf(msg, sizeof(msg), "error: the arguments of this tool "
		    "call were not a JSON object (%.600s); send an object with "
		    "the fields of the tool's schema, such as {\"command\": "
		    "\"...\"} for bash", json_object_get_string(raw));
		return turn_tool_end(t, idx, "error", msg) < 0 ? -1 : 1;
	}
	if (!tools_lookup(t->a, name) &&
	    mcp_tool_missing(t->a, name, msg, sizeof(msg)))
		return turn_tool_end(t, idx, "error", msg) < 0 ? -1 : 1;
	if (!tools_lookup(t->a, name)) {
		snprintf(msg, sizeof(msg), "error: there is no tool named "
		    "\"%.100s\"; the tools are %s", name ? name : "",
		    tools_names());
		return turn_tool_end(t, idx, "error", msg) < 0 ? -1 : 1;
	}
	return 0;
}

/* The user message answering every call of t->calls, from the journal,
 * stored and committed.  0, or -errno when the turn was suspended (t
 * freed). */
int
turn_store_results(struct turn *t)
{
	json_object *msg = json_object_new_object();
	json_object *content = json_object_new_array();
	struct room_db_tool j;
	int r = 0;

	for (size_t i = 0; i < json_object_array_length(t->calls); i++) {
		json_object *b = json_object_array_get_idx(t->calls, i);
		json_object *res = json_object_new_object();
		int found = room_db_tool_get(t->a->db, t->id, t->call_step,
		    (int)i, &j);

		json_object_object_add(res, "type",
		    json_object_new_string("tool_result"));
		json_object_object_add(res, "tool_use_id", json_object_new_string(
		    json_get_string(b, "id") ? json_get_string(b, "id") : ""));
		json_object_object_add(res, "content", json_object_new_string(
		    found == 1 && j.output ? j.output : "interrupted"));
		json_object_object_add(res, "is_error", json_object_new_boolean(
		    found != 1 || strcmp(j.status, "ok") != 0));
		json_object_array_add(content, res);
		if (found == 1)
			free(j.output);
		if (found < 0 && r == 0)
			r = found;
	}
	json_object_object_add(msg, "role", json_object_new_string("user"));
	json_object_object_add(msg, "content", content);
	if (r == 0)
		r = room_db_transcript_add(t->a->db, t->id, t->call_step, "user",
		    msg);
	json_object_put(msg);
	if ((r = turn_checkpoint(t, r)) < 0)
		return r;
	json_object_put(t->calls);
	t->calls = NULL;
	t->next = 0;
	t->attempt = 0;
	return r;
}

/* Answer every call of the message in order; when all are answered, store
 * the results and make the next request. */
void
turn_tools_next(struct turn *t)
{
	struct agent *a = t->a;
	json_object *b, *in;
	char why[200];
	int r;

	while ((size_t)t->next < json_object_array_length(t->calls)) {
		b = json_object_array_get_idx(t->calls, (size_t)t->next);
		in = NULL;
		json_object_object_get_ex(b, "input", &in);
		if ((r = turn_tool_known(t, t->next, b)) < 0)
			return;
		if (r) {
			t->next++;
			continue;
		}
		switch (approval_decide(a->approval, a->allow_list,
		    json_get_string(b, "name"), in)) {
		case APPROVAL_ASK:
			turn_ask(t, b);
			return;
		case APPROVAL_DENY:
			snprintf(why, sizeof(why), "denied: the room's approval "
			    "policy (%s) does not allow this call", a->approval);
			if (turn_tool_end(t, t->next, "denied", why) < 0)
				return;
			t->next++;
			continue;
		case APPROVAL_ALLOW:
			if (turn_tool_run(t, t->next) != 0)
				return;
			t->next++;
			continue;
		}
	}
	if (turn_store_results(t) < 0)
		return;
	turn_model_start(t);
}
