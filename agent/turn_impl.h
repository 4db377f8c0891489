/*
 * turn_impl.h: what the files of a turn share (turn.c, the state machine;
 * turn_context.c, turn_summary.c, turn_errors.c, turn_approval.c,
 * turn_tools.c, one phase or concern each).  Not for the rest of agent/:
 * that uses turn.h only.
 *
 * Every function here that takes a turn may end it: those documented to
 * return -errno on a failed checkpoint, or to end the turn, have freed t
 * by then (turn_checkpoint), so the caller returns at once and touches t
 * no more.
 */
#ifndef ATRIUM_AGENT_TURN_IMPL_H
#define ATRIUM_AGENT_TURN_IMPL_H

#include <stddef.h>
#include <json-c/json.h>

#include "approval.h"
#include "compact_context.h"
#include "context.h"
#include "provider.h"

struct agent;
struct http_result;
struct provider_http;

#define TURN_REFUSAL_MAX	400	/* bytes of a server's refusal shown */

enum turn_phase { PHASE_IDLE, PHASE_CONTEXT, PHASE_MODEL, PHASE_RETRY,
	PHASE_APPROVAL, PHASE_TOOL };

struct turn {
	struct agent *a;
	long long id;			/* turns.id */
	char user[64];			/* who prompted */
	int step;			/* model responses stored so far */
	long long busy_mark;		/* loop_busy_us when this step began */
	long long cpu_mark;		/* loop_cpu_us then */
	long in_tokens, out_tokens;	/* totals of this turn */
	enum turn_phase phase;
	/* PHASE_CONTEXT */
	struct ws_file_read *read;	/* AGENTS.md, at the first request */
	struct ws_skills *skills_read;	/* the workspace's skills, once */
	int skills_loaded;		/* a->skills is this turn's set */
	int agents_loaded;		/* agents_md is this turn's AGENTS.md */
	char *agents_md;		/* it (NULL: none, or unreadable) */
	size_t agents_len;
	struct context_rows rows;	/* the transcript, kept between steps */
	/* PHASE_MODEL / PHASE_RETRY */
	enum provider_kind kind;
	struct http_call *call;
	struct provider_stream *stream;
	int feed_err;			/* provider_stream_feed's failure */
	int streamed;			/* this attempt sent agent_delta text */
	int attempt;			/* attempts of this step so far */
	long long timer;		/* retry, approval or next request
					 * timer, 0 */
	json_object *bad_args;		/* call id -> raw arguments */
	/* PHASE_APPROVAL / PHASE_TOOL */
	json_object *calls;		/* tool_use blocks being answered */
	int call_step;			/* their assistant message's step */
	int next;			/* index of the call in hand */
	const struct tool_def *run_def;	/* the running call's tool */
	void *run;			/* and the call, or NULL */
	int held;			/* all this step recorded is in the open
					 * transaction, watched (journal_watch):
					 * see "Held steps" in turn.c */
	long long ask_deadline;		/* monotonic ms an ask times out */
	long long ask_started;		/* monotonic ms it was asked (0: no
					 * ask is open) */
	/* A summary step (compact_context.h), PHASE_MODEL / PHASE_RETRY */
	int summarising;		/* the request is a summary request */
	int refused_capped;		/* this step was refused for the answer
					 * it asked for and made again asking
					 * less */
	int refused_summarised;		/* this step was refused as too long
					 * and summarised: a second refusal
					 * ends the turn */
	int sum_shrink;			/* summary requests refused as too
					 * long in this turn: each halves the
					 * next one's text */
	char sum_reason[16];		/* window or refused */
	long long sum_id;		/* the pending compactions row */
	long long sum_cut, sum_upto;	/* transcript rowids: first row kept,
					 * last row */
	size_t sum_msgs, sum_kept;	/* rows summarised, rows kept */
	long sum_before, sum_window;	/* estimate before, window (tokens) */
	long sent_estimate;		/* the request's estimate, tokens */
	size_t sent_bytes;		/* and its body's bytes */
	/* The latest refusal as too long, in the server's words and
	 * figures (compact_context.h: struct compact_refusal); words[0] = 0:
	 * none */
	char refusal[TURN_REFUSAL_MAX];
	struct compact_refusal refused;
};

/* turn.c: the state machine. */

/* Commit the writes since the last checkpoint (r 0), or roll them back (r
 * their first failure).  0, or -errno: the turn was suspended, t freed. */
int turn_checkpoint(struct turn *t, int r);

/* turn_checkpoint(t, r) when r < 0; else 0 and nothing done. */
int turn_checkpoint_on_failure(struct turn *t, int r);

/* A message from "agent" to the room, for the next checkpoint.  0 or
 * -errno. */
int turn_say(struct turn *t, const char *text);

/* End the turn with stop_reason, committing what was recorded (r: the
 * first of those writes' failures, or 0).  Frees t. */
void turn_finish_after(struct turn *t, const char *stop_reason, int r);

/* End the turn with an error event for the room.  Frees t. */
void turn_fail(struct turn *t, const char *message);

/* The context is read: build this step's request and start it. */
void turn_model_request(struct turn *t, const char *agents_md,
    size_t agents_len);

/* The next step: the context read, then a model request (or the turn
 * ended when no model is set up or a cap is reached). */
void turn_model_start(struct turn *t);

/* An answered request's tokens added to the turn's row and the day's
 * usage after earlier writes (r: their first failure, or 0), and counted
 * for the metrics.  The first failure, or 0. */
int turn_step_usage(struct turn *t, int r, long in, long out);

/* turn_context.c: the skills and AGENTS.md, read once a turn; then
 * turn_model_request. */
void turn_read_context(struct turn *t);

/* turn_summary.c: the summary step and the refusals as too long. */

/* Make this step a summary step (context c asks for one): 0 with the
 * request in http, 1 when the turn ended here, or -errno (message in
 * err). */
int turn_summary_prepare(struct turn *t, const struct context *c,
    struct provider_http *http, char *err, size_t errlen);

/* The summary came: commit it, then make the step's request again. */
void turn_summary_complete(struct turn *t);

/* 1 when the request was refused as too long for the model's window. */
int turn_is_too_long(struct turn *t, const struct http_result *r);

/* Such a refusal: summarise, ask less, or end the turn.  1 when handled
 * here, 0 when the failure is another one. */
int turn_refused_too_long(struct turn *t, const struct http_result *r);

/* turn_errors.c: what the room is told when a turn cannot go on. */

/* No model is set up for the room's provider: say how, end the turn. */
void turn_no_model(struct turn *t);

/* 1 when the turn ended here at its step or token cap, else 0. */
int turn_capped(struct turn *t);

/* What to tell people about the failed request r (what, and a hint);
 * 1 when it is worth retrying. */
int turn_describe_failure(struct turn *t, const struct http_result *r,
    char *what, size_t whatlen, char *hint, size_t hintlen);

/* turn_approval.c: asking the room about a call, and the ask's timer. */

/* The approval_result of the call in hand, for the next checkpoint.  0,
 * or -errno: the turn was suspended (t freed). */
int turn_approval_record(struct turn *t, enum approval_outcome outcome,
    const char *who, const char *reason);

/* The call in hand not approved: its approval_result, then its end.  0,
 * or -errno: the turn was suspended (t freed). */
int turn_approval_deny(struct turn *t, enum approval_outcome outcome,
    const char *who, const char *reason);

/* The call in hand waited for approval when user stopped the turn.  0, or
 * -errno: the turn was suspended (t freed). */
int turn_approval_stopped(struct turn *t, const char *user);

/* Ask the room about call b (the call in hand), or deny it at once when
 * nobody connected could answer. */
void turn_ask(struct turn *t, json_object *b);

/* turn_tools.c: answering the calls of a step. */

/* Record call idx's end for the next checkpoint.  0, or -errno: the turn
 * was suspended (t freed). */
int turn_tool_end(struct turn *t, int idx, const char *status,
    const char *output);

/* Run call idx.  1 when running, 0 when it ended at once, -errno when the
 * turn was suspended (t freed). */
int turn_tool_run(struct turn *t, int idx);

/* Store and commit the results message of t->calls.  0, or -errno: the
 * turn was suspended (t freed). */
int turn_store_results(struct turn *t);

/* Answer the step's calls in order, then make the next request. */
void turn_tools_next(struct turn *t);

#endif
