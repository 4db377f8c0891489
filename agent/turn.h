/*
 * turn.h: the agent's turns, a checkpointed state machine (turn.c).
 *
 *   prompt -> [queued] -> [summary step, when the transcript nears the
 *     model's window: summary stored] -> model request -> stream deltas
 *     -> response stored
 *     -> for each tool call, in order: approval -> journal start (committed)
 *        -> run -> journal end (committed) -> tool_result
 *     -> tool results stored -> next model request ... -> turn_end
 *
 * One turn runs at a time; prompts that arrive meanwhile wait in room.db.
 */
#ifndef ATRIUM_AGENT_TURN_H
#define ATRIUM_AGENT_TURN_H

#include <json-c/json.h>

struct agent;
struct conn;


/* Queue a prompt from user; starts it when no turn runs.  0 or -errno. */
int turn_prompt(struct agent *a, const char *user, const char *text);

/* Answer the approval request id; a denial may carry a reason (NULL: none;
 * cleaned text, at most APPROVAL_REASON_MAX bytes), which the model is told
 * with the call's result.  0, or -ENOENT when no such request is waiting. */
int turn_approve(struct agent *a, const char *user, const char *id,
    int approve, const char *reason);

/* A member joined: show them the approval request that is waiting, if
 * any. */
void turn_joined(struct agent *a, struct conn *c);

/* End the running turn now.  0, or -ENOENT when none runs. */
int turn_stop(struct agent *a, const char *user);

/* Continue an unfinished turn found in room.db, or start a queued one.
 * Called at start and after each turn ends. */
void turn_resume(struct agent *a);

/* Shut down: drop the model request and kill the running command, leaving
 * the journal as a crash would (the turn resumes on the next start). */
void turn_shutdown(struct agent *a);

/* 1 while a turn runs or waits in the queue. */
int turn_busy(struct agent *a);

/* What the agent is doing, for the operator's `atriumd status` (through
 * the watchdog's pong): "phase" (idle, context, model, retry, approval or
 * tool), and with a turn its "turn" id, "user", "step", the running
 * "tool", and "queued" prompts; and for atriumd's metrics "model": the
 * provider and this process's model requests, tokens and failed
 * requests (struct model_counts).  Added to o. */
void turn_report(struct agent *a, json_object *o);

#endif
