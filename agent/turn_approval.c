/*
 * turn_approval.c: a turn's APPROVAL phase (turn.c): asking the room about
 * a call (approval.h), the ask's timer, and how the ask ended.
 *
 * The approval_request is stored and committed before anyone can answer,
 * and each outcome is an approval_result committed with the call's start
 * or end that follows, so a replay shows question, answer and result in
 * order.  With nobody connected who could answer, a call is denied at
 * once; the timer looks every TURN_ASK_CHECK_MS and denies the call when
 * its time is up or the last member who could answer has left.
 */
#include "turn_impl.h"

#include <stdio.h>
#include <json-c/json.h>

#include "agent.h"
#include "approval.h"
#include "jsonl.h"
#include "loop_uring.h"
#include "room_events.h"
#include "tools.h"
#include "util.h"

#define TURN_APPROVAL_TEXT	1600	/* an approval's line, its reason
					 * (APPROVAL_REASON_MAX) included */
#define TURN_ASK_CHECK_MS	1000	/* how often a waiting ask looks for
					 * someone who could still answer */

static int turn_someone_can_answer(struct agent *a);

/* Record how the approval of the call in hand ended: an approval_result
 * event (who, how, the reason, how long it waited, and the line the room
 * shows), committed with the call's start or end that follows.  0, or
 * -errno when the write failed: the turn was suspended (t freed). */
int
turn_approval_record(struct turn *t, enum approval_outcome outcome,
    const char *who, const char *reason)
{
	json_object *b = json_object_array_get_idx(t->calls, (size_t)t->next);
	json_object *ev = room_event_new("approval_result");
	const char *name = json_get_string(b, "name");
	long long waited = t->ask_started ? time_mono_ms() - t->ask_started :
	    0;
	char text[TURN_APPROVAL_TEXT];

	approval_outcome_text(outcome, who, name, reason, waited,
	    t->a->approval_timeout, text, sizeof(text));
	t->ask_started = 0;
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "id", json_object_new_string(
	    json_get_string(b, "id") ? json_get_string(b, "id") : ""));
	json_object_object_add(ev, "tool", json_object_new_string(
	    name ? name : ""));
	json_object_object_add(ev, "status", json_object_new_string(
	    approval_outcome_name(outcome)));
	if (who)
		json_object_object_add(ev, "user", json_object_new_string(who));
	if (reason && *reason)
		json_object_object_add(ev, "reason",
		    json_object_new_string(reason));
	json_object_object_add(ev, "waited_ms", json_object_new_int64(waited));
	json_object_object_add(ev, "text", json_object_new_string(text));
	return turn_checkpoint_on_failure(t, room_record(t->a, ev));
}

/* The call in hand was not approved (outcome): its approval_result, then
 * its end with what the model is told (the reason a member gave, or
 * why nobody answered).  0, or -errno when the turn was suspended (t
 * freed). */
int
turn_approval_deny(struct turn *t, enum approval_outcome outcome,
    const char *who, const char *reason)
{
	char out[TURN_APPROVAL_TEXT];

	if (turn_approval_record(t, outcome, who, reason) < 0)
		return -1;
	approval_outcome_output(outcome, who, reason, t->a->approval_timeout,
	    out, sizeof(out));
	return turn_tool_end(t, t->next, "denied", out);
}

/* The call in hand waited for approval when user stopped the turn: its
 * approval_result (stopped), then its end, "stopped by USER before it was
 * approved".  0, or -errno when the turn was suspended (t freed). */
int
turn_approval_stopped(struct turn *t, const char *user)
{
	char out[TURN_APPROVAL_TEXT];

	if (turn_approval_record(t, APPROVAL_STOPPED, user, NULL) < 0)
		return -1;
	approval_outcome_output(APPROVAL_STOPPED, user, NULL, 0, out,
	    sizeof(out));
	if (turn_tool_end(t, t->next, "stopped", out) < 0)
		return -1;
	t->next++;
	return 0;
}

/* Timer of a waiting ask: deny it when its time is up, or when the last
 * member who could answer has left; else look again soon. */
static long
turn_approval_tick(struct loop *l, long long id, void *arg)
{
	struct turn *t = arg;
	long long left = t->ask_deadline - time_mono_ms();

	if (left > 0 && turn_someone_can_answer(t->a))
		return left < TURN_ASK_CHECK_MS ? (long)left :
		    TURN_ASK_CHECK_MS;
	t->timer = 0;
	if (turn_approval_deny(t, left > 0 ? APPROVAL_LEFT :
	    APPROVAL_TIMED_OUT, NULL, NULL) < 0)
		return LOOP_NOMORE;
	t->next++;
	turn_tools_next(t);
	return LOOP_NOMORE;
}

/* The approval_request event for call b, with the seconds left. */
static json_object *
turn_ask_event(struct turn *t, json_object *b, long seconds)
{
	json_object *ev = room_event_new("approval_request"), *in = NULL;

	json_object_object_get_ex(b, "input", &in);
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "id", json_object_new_string(
	    json_get_string(b, "id") ? json_get_string(b, "id") : ""));
	json_object_object_add(ev, "tool", json_object_new_string(
	    json_get_string(b, "name") ? json_get_string(b, "name") : ""));
	json_object_object_add(ev, "input", json_object_get(in));
	json_object_object_add(ev, "modifies", json_object_new_boolean(
	    !tools_lookup(t->a, json_get_string(b, "name")) ||
	    tools_lookup(t->a, json_get_string(b, "name"))->modifies));
	json_object_object_add(ev, "seconds", json_object_new_int64(seconds));
	return ev;
}

/* 1 when someone connected could answer an approval request now: a
 * member in the chat or on the control protocol. */
static int
turn_someone_can_answer(struct agent *a)
{
	json_object *who = room_members(a);
	int n = (int)json_object_array_length(who);

	json_object_put(who);
	return n > 0;
}

/* Ask the room about call b; with no one connected to answer, it is
 * denied at once rather than left to time out. */
void
turn_ask(struct turn *t, json_object *b)
{
	if (!turn_someone_can_answer(t->a)) {
		if (turn_approval_deny(t, APPROVAL_NOBODY, NULL, NULL) < 0)
			return;
		t->next++;
		turn_tools_next(t);
		return;
	}
	/* The question is stored (so a replay shows it, and its answer
	 * after it) and committed with what was recorded before it (the
	 * answer, earlier calls' ends): it may wait long. */
	if (turn_checkpoint(t, room_record(t->a, turn_ask_event(t, b,
	    t->a->approval_timeout))) < 0)
		return;
	t->ask_started = time_mono_ms();
	t->phase = PHASE_APPROVAL;
	t->ask_deadline = time_mono_ms() + t->a->approval_timeout * 1000LL;
	t->timer = loop_add_timer(t->a->loop, t->a->approval_timeout * 1000L <
	    TURN_ASK_CHECK_MS ? t->a->approval_timeout * 1000L :
	    TURN_ASK_CHECK_MS, turn_approval_tick, t);
}

void
turn_joined(struct agent *a, struct conn *c)
{
	struct turn *t = a->turn;
	long left;

	if (!t || t->phase != PHASE_APPROVAL)
		return;
	left = (long)((t->ask_deadline - time_mono_ms() + 999) / 1000);
	room_send(c, turn_ask_event(t, json_object_array_get_idx(t->calls,
	    (size_t)t->next), left > 0 ? left : 0));
}
