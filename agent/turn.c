/*
 * turn.c: the agent's turns (turn.h), a state machine whose every step is
 * checkpointed in room.db, so a crash at any point resumes where it was:
 *
 *   phase      in flight                      what room.db holds meanwhile
 *   CONTEXT    the skills and AGENTS.md, read transcript ends with a user
 *              at the turn's first step
 *              (ws_skills.h, ws_file.h)
 *   MODEL      one model request (http.c)      transcript ends with a user
 *   RETRY      a timer before the next attempt message: redo the request
 *              (a summary request when        (and a pending compactions
 *              summarising)                    row: summarise first)
 *   APPROVAL   an approval_request (stored)    assistant tool_use stored;
 *              and its timer; the outcome an
 *              approval_result (approval.h)
 *   TOOL       one tool call (tools.c)         journal row per call answered
 *
 * Checkpoints (explicit commits): the model's response (assistant message,
 * tool_call events) before any tool runs; a tool's journal start and its
 * audit row (tools.h: "Auditing") before it is spawned (with, for the
 * turn's first call that may change the workspace, the turn's undo point:
 * undo.h, where a snapshot plugs in); its end before the next call; the
 * tool results message before the next request.  Each commits as late as
 * that allows, with what follows: the response with its first call's
 * start (or end, or approval request) or with the turn's end; a call's
 * end with the next call's start or with the results message.  On start
 * (turn_resume) the last transcript message says what to do next: a user
 * message means the model call was in flight (make it again); an
 * assistant message with tool calls means answer the calls with no
 * journal end, where a start without an end becomes "interrupted" and is
 * never run again.
 *
 * Held steps.  A call that changes nothing (read, ls, grep, skill: not
 * tools.h's modifies) runs before its start commits when nothing of its
 * step is committed yet: the response, such calls' starts, audit rows and
 * ends then commit once, with the results message, where two commits per
 * step would cost more system calls (locks, WAL frames) than the rest of
 * the step's own work.  Until then the loop's before-sleep commits are
 * held (journal_hold), for TURN_HOLD_MS at most, so a longer call is shown
 * while it runs, and while nobody else writes.  A crash before that commit
 * leaves room.db as if the model call were in flight: the step is asked
 * again, which repeats no change to anything, and no result that anyone
 * saw, since nothing uncommitted is announced.  Once anything of the step
 * is committed (a call that may change the workspace, an approval request,
 * the hold's time, someone else's write), the rules above apply again.
 * Someone else's failed commit can roll the held writes back: the journal
 * says so (journal_watch), and the turn is suspended as at a failed
 * checkpoint, never building on them.
 *
 * Each checkpoint is one transaction with the events it records (room_events.h:
 * room_record): they are announced only once it committed (journal.h).
 * Every write of a checkpoint is checked; when one fails, or the commit
 * does, the checkpoint is rolled back whole and the turn is suspended
 * (turn_suspend): it stops where room.db says it is, never past a tool's
 * unrecorded start, tells the room, and resumes from room.db once a
 * commit stores something again or after a restart.
 *
 * Before each request, context.c decides from room.db whether a summary
 * step comes first (the transcript nears the model's window, or the
 * provider refused the last request as too long): its pending row is
 * committed before the summary request, and the summary, the step and the
 * compaction event are committed together; then the step's request is
 * made with the summary and the recent turns (compact_context.h).
 *
 * A turn ends with turn_end (stop_reason end_turn, max_tokens, stopped,
 * error, max_steps) and always leaves the transcript valid: every tool_use
 * has its tool_result, and a failed model call leaves the user's message in
 * place for the next turn.
 *
 * This file is the state machine: its checkpoints, the model request and
 * its answer, and starting, resuming and stopping.  Each phase's own work
 * is in a file of its own, all sharing struct turn (turn_impl.h), and
 * each calls back here only to checkpoint, go on or end the turn:
 * turn_context.c (CONTEXT: the skills and AGENTS.md), turn_summary.c (the
 * summary step and refusals as too long), turn_errors.c (what the room is
 * told when a turn cannot go on), turn_approval.c (APPROVAL: the ask and
 * its timer), turn_tools.c (TOOL: answering a step's calls).  The last two
 * hand the call in hand to each other: an ask, then its run or its end.
 */
#include "turn.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "context.h"
#include "endpoint.h"
#include "http.h"
#include "journal.h"
#include "jsonl.h"
#include "log.h"
#include "loop_uring.h"
#include "mcp.h"
#include "model_window.h"
#include "prompt.h"
#include "provider.h"
#include "room_events.h"
#include "room_db.h"
#include "tools.h"
#include "util.h"
#include "ws_file.h"
#include "ws_skills.h"
#include "turn_impl.h"

#define TURN_CONNECT_TIMEOUT	10	/* s to connect to the model server */
#define TURN_WAIT_MS		1000	/* a suspended turn looks this often
						 * whether room.db takes writes */

static void turn_model_done(void *arg, const struct http_result *r);

/* ---- small helpers ------------------------------------------------------- */

static void
turn_free(struct turn *t)
{
	if (!t)
		return;
	if (t->call)
		http_cancel(t->call);
	if (t->timer)
		loop_del_timer(t->a->loop, t->timer);
	ws_file_read_cancel(t->read);
	ws_skills_read_cancel(t->skills_read);
	mcp_unwait(t->a, t);
	provider_stream_free(t->stream);
	json_object_put(t->bad_args);
	json_object_put(t->calls);
	context_rows_free(&t->rows);
	free(t->agents_md);
	free(t);
}

/* A debug line with the agent's own time (its loop's work: the model's
 * and the commands' time excluded, the checkpoint commits included)
 * since the step began, for make bench; then the next step begins. */
static void
turn_step_timing(struct turn *t)
{
	long long now = loop_busy_us(t->a->loop), cpu = loop_cpu_us();

	log_debug("turn %lld step %d: agent time %lld us, cpu %lld us", t->id,
	    t->step, now - t->busy_mark, cpu - t->cpu_mark);
	t->busy_mark = now;
	t->cpu_mark = cpu;
}

/* A suspended turn waits: once a commit stores something again (a chat
 * line, a prompt), it resumes from room.db. */
static long
turn_wait_cb(struct loop *l, long long id, void *arg)
{
	struct agent *a = arg;

	if (journal_failed(a->journal))
		return TURN_WAIT_MS;
	a->turn_wait = 0;
	turn_resume(a);
	return LOOP_NOMORE;
}

/* room.db did not take a checkpoint (err): stop the turn where room.db
 * says it is, since nothing in memory past the last commit is recorded,
 * and say so to the room.  The turn stays running in room.db; the journal
 * stays failed (journal_failed) until a commit stores something, and
 * turn_resume then picks the turn up from its last checkpoint: a call
 * whose start was not recorded never ran, one whose end was not recorded
 * is reported as interrupted.  Frees t. */
static void
turn_suspend(struct turn *t, int err)
{
	struct agent *a = t->a;

	log_error("turn %lld stopped: room.db did not take its checkpoint: %s",
	    t->id, room_db_strerror(err));
	room_notice(a, "the agent stopped: room.db could not record its work "
	    "(%s). It picks up from its last recorded step once room.db can "
	    "be written again (send a message or a prompt, or restart the "
	    "room); nothing it did after that step is lost from the record.",
	    room_db_strerror(err));
	a->turn = NULL;
	turn_free(t);
	if (!a->turn_wait)
		a->turn_wait = loop_add_timer(a->loop, TURN_WAIT_MS,
		    turn_wait_cb, a);
}

/* A checkpoint: the writes since the last one committed, then what they
 * recorded announced.  r is the first of those writes' failures (0: none):
 * then they are rolled back instead.  0, or -errno when room.db did not
 * take them: the turn is suspended and t freed (turn_suspend), so the
 * caller returns at once. */
int
turn_checkpoint(struct turn *t, int r)
{
	/* A held step that someone else's failed commit rolled back: the
	 * turn stops where room.db says it is, as after its own failure. */
	if (r == 0 && t->held && journal_watched(t->a->journal) < 0)
		r = journal_watched(t->a->journal);
	t->held = 0;
	if (r < 0)
		journal_abort(t->a->journal, r);
	else
		r = journal_commit(t->a->journal);
	if (r < 0)
		turn_suspend(t, r);
	return r;
}

/* A write for the next checkpoint returned r: on failure, roll the
 * checkpoint back now and suspend the turn (t freed).  r. */
int
turn_checkpoint_on_failure(struct turn *t, int r)
{
	return r < 0 ? turn_checkpoint(t, r) : 0;
}

/* The tool_use blocks of an assistant message, a new array (maybe empty). */
static json_object *
turn_tool_uses(json_object *msg)
{
	json_object *content = NULL, *out = json_object_new_array();

	if (!json_object_object_get_ex(msg, "content", &content) ||
	    !json_object_is_type(content, json_type_array))
		return out;
	for (size_t i = 0; i < json_object_array_length(content); i++) {
		json_object *b = json_object_array_get_idx(content, i);
		const char *type = json_get_string(b, "type");

		if (type && strcmp(type, "tool_use") == 0)
			json_object_array_add(out, json_object_get(b));
	}
	return out;
}

/* The text blocks of an assistant message joined, into b. */
static void
turn_message_text(json_object *msg, struct buf *b)
{
	json_object *content = NULL;

	if (!json_object_object_get_ex(msg, "content", &content) ||
	    !json_object_is_type(content, json_type_array))
		return;
	for (size_t i = 0; i < json_object_array_length(content); i++) {
		json_object *blk = json_object_array_get_idx(content, i);
		const char *type = json_get_string(blk, "type");
		const char *text = json_get_string(blk, "text");

		if (type && text && strcmp(type, "text") == 0)
			buf_append(b, text, strlen(text));
	}
}

/* A message from "agent" to the room, recorded for the next checkpoint.
 * 0 or -errno. */
int
turn_say(struct turn *t, const char *text)
{
	json_object *ev = room_event_new("message");

	json_object_object_add(ev, "user", json_object_new_string("agent"));
	json_object_object_add(ev, "text", json_object_new_string(text));
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	return room_record(t->a, ev);
}

static long
turn_resume_cb(struct loop *l, long long id, void *arg)
{
	turn_resume(arg);
	return LOOP_NOMORE;
}

/* End the turn: turn_end stored and committed with what was recorded
 * before it (r: the first of those writes' failures, or 0), the next
 * prompt scheduled.  t is freed either way (turn_checkpoint). */
void
turn_finish_after(struct turn *t, const char *stop_reason, int r)
{
	struct agent *a = t->a;
	json_object *ev = room_event_new("turn_end"), *usage;

	if (r == 0)
		r = room_db_turn_end(a->db, t->id, stop_reason);
	usage = json_object_new_object();
	json_object_object_add(usage, "input_tokens",
	    json_object_new_int64(t->in_tokens));
	json_object_object_add(usage, "output_tokens",
	    json_object_new_int64(t->out_tokens));
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "stop_reason",
	    json_object_new_string(stop_reason));
	json_object_object_add(ev, "usage", usage);
	if (r == 0)
		r = room_record(a, ev);
	else
		json_object_put(ev);
	if (turn_checkpoint(t, r) < 0)
		return;
	turn_step_timing(t);
	log_info("turn %lld ended: %s", t->id, stop_reason);
	a->turn = NULL;
	turn_free(t);
	loop_add_timer(a->loop, 0, turn_resume_cb, a);
}

static void
turn_finish(struct turn *t, const char *stop_reason)
{
	turn_finish_after(t, stop_reason, 0);
}

/* End the turn with an error event for the room. */
void
turn_fail(struct turn *t, const char *message)
{
	json_object *ev = room_event_new("error");

	json_object_object_add(ev, "message", json_object_new_string(message));
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	room_emit(t->a, ev, 0);
	log_warn("turn %lld failed: %s", t->id, message);
	turn_finish(t, "error");
}

/* ---- the model request ---------------------------------------------------- */

static void
turn_sink_text(void *arg, const char *text, size_t len)
{
	struct turn *t = arg;
	json_object *ev = room_event_new("agent_delta");

	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "text", json_object_new_string_len(text,
	    (int)len));
	room_emit(t->a, ev, 0);
	t->streamed = 1;
}

/* An attempt that streamed text failed: tell clients to drop that text
 * (agent_discard; like the deltas it is not stored), so a retry's text is
 * not shown after it.  retry: another attempt follows. */
static void
turn_discard_partial(struct turn *t, int retry)
{
	json_object *ev;

	if (!t->streamed)
		return;
	t->streamed = 0;
	ev = room_event_new("agent_discard");
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "step", json_object_new_int(t->step + 1));
	json_object_object_add(ev, "attempt", json_object_new_int(t->attempt));
	json_object_object_add(ev, "retry", json_object_new_boolean(retry));
	room_emit(t->a, ev, 0);
}

static void
turn_sink_tool(void *arg, const char *id, const char *name,
    json_object *input, const char *raw)
{
	struct turn *t = arg;

	if (!input && id)
		json_object_object_add(t->bad_args, id,
		    json_object_new_string(raw ? raw : ""));
}

static int
turn_http_body(void *arg, const char *p, size_t n)
{
	struct turn *t = arg;
	int r = provider_stream_feed(t->stream, p, n);

	if (r < 0)
		t->feed_err = r;
	return r;
}

/* Build this step's request: a summary when the context asks for one,
 * else the conversation.  0, 1 when the turn ended here, or -errno
 * (message in err). */
static int
turn_prepare(struct turn *t, const char *agents_md, size_t agents_len,
    struct provider_http *http, char *err, size_t errlen)
{
	struct context c;
	int r = context_load(t->a, t->id, &t->rows, agents_md, agents_len, &c,
	    err, errlen);

	if (r < 0)
		return r;
	t->kind = c.kind;
	t->summarising = 0;
	if (context_wants_summary(&c)) {
		r = turn_summary_prepare(t, &c, http, err, errlen);
	} else {
		t->sent_estimate = c.estimate;
		r = context_build(t->a, &c, http);
		if (r < 0)
			snprintf(err, errlen, "the model request could not be "
			    "built (%s)", strerror(-r));
	}
	context_free(&c);
	t->sent_bytes = r == 0 ? http->body_len : 0;
	return r;
}

/* AGENTS.md is in (or not): build the request and start it. */
void
turn_model_request(struct turn *t, const char *agents_md, size_t agents_len)
{
	struct agent *a = t->a;
	struct provider_sink sink = { .arg = t, .text = turn_sink_text,
	    .tool_call = turn_sink_tool };
	struct http_cbs cbs = { .arg = t, .body = turn_http_body,
	    .done = turn_model_done };
	struct provider_http http = { 0 };
	char err[700];
	int r;

	r = turn_prepare(t, agents_md, agents_len, &http, err, sizeof(err));
	if (r != 0) {
		provider_http_free(&http);
		if (r < 0)
			turn_fail(t, err);
		return;
	}
	if (t->summarising)	/* the summary is not the agent's answer */
		sink.text = NULL;
	provider_stream_free(t->stream);
	json_object_put(t->bad_args);
	t->bad_args = json_object_new_object();
	t->stream = provider_stream_new(t->kind, &sink);
	t->feed_err = 0;
	t->streamed = 0;
	t->attempt++;
	t->phase = PHASE_MODEL;
	if (!t->stream || http_start(a->http, &http, TURN_CONNECT_TIMEOUT,
	    a->model_idle_timeout, &cbs, &t->call) < 0) {
		provider_http_free(&http);
		turn_fail(t, "the model request could not be started: the "
		    "agent's log says why");
		return;
	}
	provider_http_free(&http);
	if (t->attempt == 1 && t->step > 0)
		turn_step_timing(t);
	log_debug("turn %lld step %d: %s request, attempt %d", t->id,
	    t->step + 1, t->summarising ? "summary" : "model", t->attempt);
}

/* The room's MCP servers are started (or failed): their tools are known. */
static void
turn_mcp_ready(void *arg)
{
	turn_read_context(arg);
}

void
turn_model_start(struct turn *t)
{
	struct agent *a = t->a;

	if (!endpoint_ready(a, a->provider)) {
		turn_no_model(t);
		return;
	}
	if (turn_capped(t))
		return;
	t->phase = PHASE_CONTEXT;
	if (mcp_prepare(a, t->id, turn_mcp_ready, t) == 0)
		turn_read_context(t);
}

/* One answered model request, for atriumd's metrics (turn_report). */
static void
turn_count_request(struct agent *a, long in, long out)
{
	a->counts.requests++;
	a->counts.input_tokens += in > 0 ? in : 0;
	a->counts.output_tokens += out > 0 ? out : 0;
}

/* The tokens of an answered model request (in, out) added for the next
 * checkpoint to the turn's row and the day's usage, after the writes
 * before them (r: the first of their failures, or 0), and counted for the
 * metrics whatever r.  The first failure of all, or 0. */
int
turn_step_usage(struct turn *t, int r, long in, long out)
{
	struct agent *a = t->a;

	if (r == 0)
		r = room_db_turn_step(a->db, t->id, in, out);
	if (r == 0)
		r = room_db_usage_add(a->db, t->user, a->model, in, out);
	turn_count_request(a, in, out);
	return r;
}

/* ---- the model's answer --------------------------------------------------- */

/* Give every tool_use an object input; remember which had none. */
static void
turn_fix_inputs(struct turn *t, json_object *calls)
{
	for (size_t i = 0; i < json_object_array_length(calls); i++) {
		json_object *b = json_object_array_get_idx(calls, i), *in;

		if (!json_object_object_get_ex(b, "input", &in) ||
		    !json_object_is_type(in, json_type_object)) {
			const char *id = json_get_string(b, "id");

			json_object_object_add(b, "input",
			    json_object_new_object());
			if (id && !json_object_object_get_ex(t->bad_args, id,
			    NULL))
				json_object_object_add(t->bad_args, id,
				    json_object_new_string(""));
		}
	}
}

/* Record the answer's events for the checkpoint: the finished text, then
 * each tool call.  0 or the first failure. */
static int
turn_announce(struct turn *t, json_object *msg, json_object *calls)
{
	struct buf text;
	json_object *ev;
	int r = 0;

	buf_init(&text, 16 * 1024 * 1024);
	turn_message_text(msg, &text);
	if (text.len)
		r = turn_say(t, text.data);
	buf_free(&text);
	for (size_t i = 0; r == 0 && i < json_object_array_length(calls);
	    i++) {
		json_object *b = json_object_array_get_idx(calls, i), *in = NULL;

		json_object_object_get_ex(b, "input", &in);
		ev = room_event_new("tool_call");
		json_object_object_add(ev, "turn", json_object_new_int64(t->id));
		json_object_object_add(ev, "id", json_object_new_string(
		    json_get_string(b, "id") ? json_get_string(b, "id") : ""));
		json_object_object_add(ev, "name", json_object_new_string(
		    json_get_string(b, "name") ? json_get_string(b, "name") : ""));
		json_object_object_add(ev, "input", json_object_get(in));
		r = room_record(t->a, ev);
	}
	return r;
}

/* A complete answer: record it and go on; it is committed (and so
 * announced) with what comes next, before any tool runs: the turn's end,
 * or the first call's start, end or approval request. */
static void
turn_model_complete(struct turn *t)
{
	struct agent *a = t->a;
	json_object *msg = provider_stream_message(t->stream), *calls;
	const char *stop = provider_stream_stop_reason(t->stream);
	long in = 0, out = 0;
	char stop_reason[32];
	int r;

	snprintf(stop_reason, sizeof(stop_reason), "%s", stop && *stop ? stop :
	    "end_turn");
	if (!msg) {
		turn_fail(t, "the model's answer could not be read: the "
		    "agent's log says why");
		return;
	}
	provider_stream_usage(t->stream, &in, &out);
	calls = turn_tool_uses(msg);
	turn_fix_inputs(t, calls);	/* the blocks are shared with msg */
	r = room_db_transcript_answer(a->db, t->id, t->step, msg, in);
	r = turn_step_usage(t, r, in, out);
	if (r == 0)
		r = turn_announce(t, msg, calls);
	json_object_put(msg);
	t->in_tokens += in;
	t->out_tokens += out;
	if (r < 0 || json_object_array_length(calls) == 0) {
		/* The answer commits with the turn's end. */
		json_object_put(calls);
		turn_finish_after(t, stop_reason, r);
		return;
	}
	/* It commits with the first call's start or end, or with an
	 * approval request (turn_tools_next reaches one of them). */
	t->attempt = 0;
	t->refused_summarised = 0;
	t->refused_capped = 0;
	t->refusal[0] = '\0';
	json_object_put(t->calls);
	t->calls = calls;
	t->call_step = t->step;
	t->next = 0;
	t->step++;
	t->held = 1;
	journal_watch(a->journal);
	turn_tools_next(t);
}

static long
turn_retry_cb(struct loop *l, long long id, void *arg)
{
	struct turn *t = arg;

	t->timer = 0;
	turn_model_start(t);
	return LOOP_NOMORE;
}

static void
turn_model_done(void *arg, const struct http_result *r)
{
	struct turn *t = arg;
	struct agent *a = t->a;
	char what[1024], hint[512], msg[1600];
	long delay;
	int retry;

	t->call = NULL;
	if (r->status >= 200 && r->status < 300 && !r->curl_code &&
	    !t->feed_err) {
		if (provider_stream_finish(t->stream) == 0) {
			if (t->summarising)
				turn_summary_complete(t);
			else
				turn_model_complete(t);
			return;
		}
		snprintf(what, sizeof(what), "the model's answer was cut short: "
		    "the server ended the stream before the answer was "
		    "complete, without an error message");
		hint[0] = '\0';
		retry = 1;
	} else if (turn_is_too_long(t, r)) {
		turn_discard_partial(t, 1);
		turn_refused_too_long(t, r);
		return;
	} else {
		retry = turn_describe_failure(t, r, what, sizeof(what), hint,
		    sizeof(hint));
	}
	a->counts.errors++;
	turn_discard_partial(t, retry && t->attempt < a->max_retries);
	if (retry && t->attempt < a->max_retries) {
		delay = provider_retry_delay_ms(t->attempt, r->retry_after,
		    r->retry_after_ms, a->retry_base_ms);
		room_notice(a, "%s; retrying in %ld s, attempt %d of %d", what,
		    (delay + 999) / 1000, t->attempt + 1, a->max_retries);
		log_warn("%s; retrying in %ld ms", what, delay);
		t->phase = PHASE_RETRY;
		t->timer = loop_add_timer(a->loop, delay, turn_retry_cb, t);
		return;
	}
	snprintf(msg, sizeof(msg), "%s%s%s%s", what, t->attempt > 1 ?
	    " (after retries)" : "", hint[0] ? ": " : "", hint);
	turn_fail(t, msg);
}

/* ---- starting, resuming, stopping -------------------------------------------- */

/* Put the prompt in the transcript (merged into a trailing user message so
 * roles keep alternating), mark the turn running, announce it.  0, or
 * -errno when room.db did not take it (the turn is suspended, t freed). */
static int
turn_begin(struct turn *t, const char *prompt)
{
	struct agent *a = t->a;
	struct room_db_msg last;
	json_object *block, *content = NULL, *msg, *ev;
	char *text = prompt_user_text(t->user, prompt);
	int r, found;

	if (!text)
		return -ENOMEM;
	block = json_object_new_object();
	json_object_object_add(block, "type", json_object_new_string("text"));
	json_object_object_add(block, "text", json_object_new_string(text));
	free(text);
	found = room_db_transcript_last(a->db, &last);
	if (found == 1 && strcmp(last.role, "user") == 0 &&
	    json_object_object_get_ex(last.msg, "content", &content) &&
	    json_object_is_type(content, json_type_array)) {
		json_object_array_add(content, block);
		r = room_db_transcript_replace(a->db, last.rowid, last.msg);
	} else {
		msg = json_object_new_object();
		content = json_object_new_array();
		json_object_array_add(content, block);
		json_object_object_add(msg, "role", json_object_new_string("user"));
		json_object_object_add(msg, "content", content);
		r = room_db_transcript_add(a->db, t->id, 0, "user", msg);
		json_object_put(msg);
	}
	json_object_put(last.msg);
	if (r == 0)
		r = room_db_turn_start(a->db, t->id);
	ev = room_event_new("turn_start");
	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "user", json_object_new_string(t->user));
	if (r == 0)
		r = room_record(a, ev);
	else
		json_object_put(ev);
	if ((r = turn_checkpoint(t, r)) < 0)
		return r;
	log_info("turn %lld started by %s", t->id, t->user);
	return 0;
}

/* The MCP servers are up (or failed) after a resume: answer the calls. */
static void
turn_mcp_resumed(void *arg)
{
	turn_tools_next(arg);
}

/* Decide the next step of a running turn from the transcript's end. */
static void
turn_continue(struct turn *t)
{
	struct room_db_msg last;
	json_object *calls;
	int found = room_db_transcript_last(t->a->db, &last);

	if (found != 1 || strcmp(last.role, "user") == 0) {
		json_object_put(last.msg);
		turn_model_start(t);
		return;
	}
	calls = turn_tool_uses(last.msg);
	json_object_put(last.msg);
	if (json_object_array_length(calls) == 0 || last.turn != t->id) {
		json_object_put(calls);
		turn_finish(t, "end_turn");
		return;
	}
	log_info("turn %lld resumes at the tool calls of step %d", t->id,
	    last.step + 1);
	t->calls = calls;
	t->call_step = last.step;
	t->next = 0;
	/* After a restart the MCP servers are not up yet: start them first,
	 * so that a call approved but not begun can still run. */
	t->phase = PHASE_CONTEXT;
	if (mcp_prepare(t->a, t->id, turn_mcp_resumed, t) == 0)
		turn_tools_next(t);
}

void
turn_resume(struct agent *a)
{
	struct room_db_turn rt;
	struct turn *t;
	int found;

	/* A turn stopped by a failed checkpoint waits for room.db to take
	 * writes again (journal.h): running it now would fail again. */
	if (a->turn || journal_failed(a->journal))
		return;
	found = room_db_turn_next(a->db, &rt);
	if (found != 1)
		return;
	t = calloc(1, sizeof(*t));
	if (!t) {
		free(rt.prompt);
		return;
	}
	t->a = a;
	t->busy_mark = loop_busy_us(a->loop);
	t->cpu_mark = loop_cpu_us();
	t->id = rt.id;
	snprintf(t->user, sizeof(t->user), "%s", rt.user);
	t->step = rt.steps;
	t->in_tokens = rt.input_tokens;
	t->out_tokens = rt.output_tokens;
	t->bad_args = json_object_new_object();
	a->turn = t;
	if (rt.state == TURN_QUEUED) {
		if (turn_begin(t, rt.prompt) < 0) {
			free(rt.prompt);
			return;
		}
	} else {
		log_info("turn %lld of %s was unfinished: resuming", t->id,
		    t->user);
	}
	free(rt.prompt);
	turn_continue(t);
}

int
turn_prompt(struct agent *a, const char *user, const char *text)
{
	long long id;
	int r = room_db_turn_add(a->db, user, text, &id);

	if (r < 0)
		return r;
	model_window_ask(a);	/* in the background, once per model */
	if (a->turn) {
		room_notice(a, "%s's prompt is queued: the agent is busy with "
		    "%s's turn; it runs after that (%d waiting)", user,
		    a->turn->user, room_db_turns_queued(a->db));
		return 0;
	}
	turn_resume(a);
	return 0;
}

int
turn_approve(struct agent *a, const char *user, const char *id, int approve,
    const char *reason)
{
	struct turn *t = a->turn;
	json_object *b;
	const char *cid;

	if (!t || t->phase != PHASE_APPROVAL)
		return -ENOENT;
	b = json_object_array_get_idx(t->calls, (size_t)t->next);
	cid = json_get_string(b, "id");
	if (!cid || strcmp(cid, id) != 0)
		return -ENOENT;
	loop_del_timer(a->loop, t->timer);
	t->timer = 0;
	if (approve && (turn_approval_record(t, APPROVAL_APPROVED, user,
	    NULL) < 0 || turn_tool_run(t, t->next) != 0))
		return 0;
	if (!approve && turn_approval_deny(t, APPROVAL_DENIED, user,
	    reason) < 0)
		return 0;
	t->next++;
	turn_tools_next(t);
	return 0;
}

int
turn_stop(struct agent *a, const char *user)
{
	struct turn *t = a->turn;
	char why[160];

	if (!t)
		return -ENOENT;
	if (t->call)
		http_cancel(t->call);
	t->call = NULL;
	if (t->timer)
		loop_del_timer(a->loop, t->timer);
	t->timer = 0;
	ws_file_read_cancel(t->read);
	ws_skills_read_cancel(t->skills_read);
	t->read = NULL;
	t->skills_read = NULL;
	if (t->run)
		t->run_def->cancel(t->run);
	t->run = NULL;
	room_notice(a, "%s stopped the agent", user);
	/* A call that waited for approval has its request answered in the
	 * record, as stopped, before its end says so too. */
	if (t->ask_started && t->calls && turn_approval_stopped(t, user) < 0)
		return 0;
	if (t->calls) {
		snprintf(why, sizeof(why), "stopped by %s before it finished",
		    user);
		for (; (size_t)t->next < json_object_array_length(t->calls);
		    t->next++) {
			struct room_db_tool j;
			int found = room_db_tool_get(a->db, t->id, t->call_step,
			    t->next, &j);

			if (found == 1 && j.ended)
				free(j.output);
			else if (turn_tool_end(t, t->next, "stopped", why) < 0)
				return 0;
		}
		if (turn_store_results(t) < 0)
			return 0;
	}
	turn_finish(t, "stopped");
	return 0;
}

void
turn_shutdown(struct agent *a)
{
	struct turn *t = a->turn;

	if (!t)
		return;
	if (t->run)
		t->run_def->abandon(t->run);
	t->run = NULL;
	ws_file_read_abandon(t->read);
	ws_skills_read_abandon(t->skills_read);
	t->read = NULL;
	t->skills_read = NULL;
	a->turn = NULL;
	turn_free(t);
}

int
turn_busy(struct agent *a)
{
	return a->turn != NULL || room_db_turns_queued(a->db) > 0;
}

/* The model requests of this process's life into o (see turn_report). */
static void
turn_report_counts(struct agent *a, json_object *o)
{
	json_object *m = json_object_new_object();

	if (!m)
		return;
	json_object_object_add(m, "provider",
	    json_object_new_string(a->provider));
	json_object_object_add(m, "requests",
	    json_object_new_int64(a->counts.requests));
	json_object_object_add(m, "input_tokens",
	    json_object_new_int64(a->counts.input_tokens));
	json_object_object_add(m, "output_tokens",
	    json_object_new_int64(a->counts.output_tokens));
	json_object_object_add(m, "errors",
	    json_object_new_int64(a->counts.errors));
	json_object_object_add(o, "model", m);
}

void
turn_report(struct agent *a, json_object *o)
{
	static const char *const phases[] = { "idle", "context", "model",
		"retry", "approval", "tool" };
	const struct turn *t = a->turn;
	long long queued = room_db_turns_queued(a->db);

	json_object_object_add(o, "phase", json_object_new_string(
	    t ? phases[t->phase] : "idle"));
	turn_report_counts(a, o);
	if (queued > 0)
		json_object_object_add(o, "queued",
		    json_object_new_int64(queued));
	if (!t)
		return;
	json_object_object_add(o, "turn", json_object_new_int64(t->id));
	json_object_object_add(o, "user", json_object_new_string(t->user));
	json_object_object_add(o, "step", json_object_new_int(t->step));
	if (t->phase == PHASE_TOOL && t->run_def)
		json_object_object_add(o, "tool",
		    json_object_new_string(t->run_def->name));
}

