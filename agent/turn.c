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
 * Each checkpoint is one transaction with the events it records (room.h:
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
 * made with the summary and the recent turns (compact.h).
 *
 * A turn ends with turn_end (stop_reason end_turn, max_tokens, stopped,
 * error, max_steps) and always leaves the transcript valid: every tool_use
 * has its tool_result, and a failed model call leaves the user's message in
 * place for the next turn.
 */
#include "turn.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "approval.h"
#include "caps.h"
#include "compact.h"
#include "context.h"
#include "endpoint.h"
#include "http.h"
#include "journal.h"
#include "jsonl.h"
#include "log.h"
#include "loop.h"
#include "mcp.h"
#include "model_fit.h"
#include "model_window.h"
#include "prompt.h"
#include "provider.h"
#include "room.h"
#include "room_db.h"
#include "text.h"
#include "tools.h"
#include "undo.h"
#include "util.h"
#include "skills.h"
#include "ws_file.h"
#include "ws_skills.h"

#define TURN_AGENTS_MD		"AGENTS.md"	/* at the workspace root */
#define TURN_AGENTS_MD_READ	(1024 * 1024)	/* read at most */
#define TURN_CONNECT_TIMEOUT	10	/* s to connect to the model server */
#define TURN_MAX_SHRINK		3	/* halvings of a refused summary request */
#define TURN_EVENT_SUMMARY_MAX	(32 * 1024)	/* of a summary in its event */
#define TURN_REFUSAL_MAX	400	/* bytes of a server's refusal shown */
#define TURN_HOLD_MS		100	/* a call that changes nothing goes
					 * unshown for at most this long */
#define TURN_WAIT_MS		1000	/* a suspended turn looks this often
						 * whether room.db takes writes */
#define TURN_APPROVAL_TEXT	1600	/* an approval's line, its reason
					 * (APPROVAL_REASON_MAX) included */

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
					 * see "Held steps" above */
	long long ask_deadline;		/* monotonic ms an ask times out */
	long long ask_started;		/* monotonic ms it was asked (0: no
					 * ask is open) */
	/* A summary step (compact.h), PHASE_MODEL / PHASE_RETRY */
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
	 * figures (compact.h: struct compact_refusal); words[0] = 0: none */
	char refusal[TURN_REFUSAL_MAX];
	struct compact_refusal refused;
};

static void turn_model_start(struct turn *t);
static void turn_tools_next(struct turn *t);

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
static int
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
static int
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
static int
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
static void
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
static void
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

/* The room's provider has neither key nor URL: tell the room how to set
 * one up. */
static void
turn_no_model(struct turn *t)
{
	char text[1200];
	int i = keys_index(t->a->provider);

	snprintf(text, sizeof(text), "No model is configured for this room's "
	    "provider (%s), so I cannot answer yet. To configure one, start "
	    "atriumd with %s in its environment, or with --api-key-file FILE "
	    "and --provider %s; or use a local OpenAI-compatible server with "
	    "--provider openai --model-url http://127.0.0.1:11434/v1 (Ollama) "
	    "and --model NAME.", t->a->provider, i >= 0 ? keys_env_name(i) :
	    "ANTHROPIC_API_KEY or OPENAI_API_KEY", t->a->provider);
	turn_finish_after(t, "end_turn", turn_say(t, text));
}

static void turn_model_done(void *arg, const struct http_result *r);

/* Nothing older than this turn and the one before it is left to summarise
 * and the conversation is still too long: the pending request is dropped
 * and the turn fails, saying what to do. */
static void
turn_summary_impossible(struct turn *t, const struct context *c)
{
	char msg[TURN_REFUSAL_MAX + 400];

	room_db_compaction_drop(t->a->db, c->pending.id);
	if (t->refusal[0])
		snprintf(msg, sizeof(msg), "the model server refused the "
		    "request: \"%s\"; nothing older than this turn and the "
		    "one before it is left to summarise: send a new, shorter "
		    "prompt (the next turn can summarise this one)%s",
		    t->refusal, c->window_told ? "" : ", or set context-window "
		    "to the model's real window if it is smaller");
	else
		snprintf(msg, sizeof(msg), "the conversation is too long for "
		    "the model's context window (about %ld tokens, window %ld) "
		    "and nothing older than this turn and the one before it is "
		    "left to summarise: send a new, shorter prompt (the next "
		    "turn can summarise this one)%s", c->estimate, c->window,
		    c->window_told ? "" : ", or set context-window to the "
		    "model's real window if it is larger");
	turn_fail(t, msg);
}

/* Tell the room why and what is summarised. */
static void
turn_summary_notice(struct turn *t, const struct context *c)
{
	char turns[64];
	long long from = c->rows[0].turn, to = c->rows[c->cut - 1].turn;

	if (from == to)
		snprintf(turns, sizeof(turns), "turn %lld", from);
	else
		snprintf(turns, sizeof(turns), "turns %lld to %lld", from, to);
	if (strcmp(t->sum_reason, "refused") == 0 && t->refusal[0])
		room_notice(t->a, "compacting the conversation: the model "
		    "server refused it: \"%s\"; summarising its %zu oldest "
		    "messages (%s) to fit a window of %ld tokens%s and keeping "
		    "the %zu most recent whole", t->refusal, c->cut, turns,
		    c->window, c->window_told ? " (the server's)" : "",
		    t->sum_kept);
	else
		room_notice(t->a, "compacting the conversation: %s (about %ld "
		    "of %ld tokens); summarising its %zu oldest messages (%s) "
		    "and keeping the %zu most recent whole",
		    strcmp(t->sum_reason, "refused") == 0 ? "the model refused "
		    "it as longer than its context window" : "it nears the "
		    "model's context window", c->estimate, c->window, c->cut,
		    turns, t->sum_kept);
}

/* Make this step a summary step: the pending row asked for and committed
 * (so a crash makes the step again), the room told, the request built.
 * 0, 1 when the turn ended here, or -errno (message in err). */
static int
turn_summary_prepare(struct turn *t, const struct context *c,
    struct provider_http *http, char *err, size_t errlen)
{
	struct agent *a = t->a;
	struct room_db_compaction p;
	int r;

	if (c->cut == 0) {
		turn_summary_impossible(t, c);
		return 1;
	}
	if (room_db_compaction_request(a->db, t->id, "window") < 0 ||
	    room_db_compaction_get(a->db, 1, &p) != 1) {
		snprintf(err, errlen, "the summary step could not be recorded "
		    "in room.db: the agent's log says why");
		return -EIO;
	}
	if (turn_checkpoint(t, 0) < 0)
		return 1;
	t->summarising = 1;
	snprintf(t->sum_reason, sizeof(t->sum_reason), "%s", p.reason);
	free(p.summary);
	t->sum_id = p.id;
	t->sum_cut = c->rows[c->cut].rowid;
	t->sum_upto = c->rows[c->n - 1].rowid;
	t->sum_msgs = c->cut;
	t->sum_kept = c->n - c->cut;
	t->sum_before = c->estimate;
	t->sum_window = c->window;
	if (t->attempt == 0)
		turn_summary_notice(t, c);
	log_info("turn %lld: summarising %zu messages (about %ld tokens of "
	    "%ld)", t->id, c->cut, c->estimate, c->window);
	r = context_build_summary(a, c, t->sum_shrink, http,
	    &t->sent_estimate);
	if (r < 0)
		snprintf(err, errlen, "the summary request could not be built "
		    "(%s)", strerror(-r));
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
static void
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

/* AGENTS.md was read through the confined path, or could not be: the
 * prompt simply goes without it then.  Kept for the turn's later requests
 * (turn_read_agents_md). */
static void
turn_agents_md_done(void *arg, int err, char *data, size_t len)
{
	struct turn *t = arg;
	char why[256];

	t->read = NULL;
	if (err < 0 && err != -ENOENT) {
		ws_file_why(why, sizeof(why), err);
		log_warn("%s not put in the system prompt: %s", TURN_AGENTS_MD,
		    why);
	}
	t->agents_md = data;
	t->agents_len = data ? len : 0;
	t->agents_loaded = 1;
	turn_model_request(t, t->agents_md, t->agents_len);
}

/* A later request of the turn, with the AGENTS.md read for its first. */
static long
turn_agents_md_kept_cb(struct loop *l, long long id, void *arg)
{
	struct turn *t = arg;

	t->timer = 0;
	turn_model_request(t, t->agents_md, t->agents_len);
	return LOOP_NOMORE;
}

/* Before each model request: end the turn with a message to the room
 * when it has made its steps or the room has used its tokens for the
 * day.  1 when it ended. */
static int
turn_capped(struct turn *t)
{
	struct agent *a = t->a;
	char text[256];

	if (t->step >= caps_max_steps(a)) {
		snprintf(text, sizeof(text), "I stopped after %d model requests "
		    "in this turn, the most this room allows. Ask me to "
		    "continue if there is more to do.", caps_max_steps(a));
		turn_finish_after(t, "max_steps", turn_say(t, text));
		return 1;
	}
	if (caps_day_spent(a)) {
		snprintf(text, sizeof(text), "This room has used its %lld "
		    "tokens for today (UTC), the most it allows; I can work "
		    "again after midnight UTC, or when the owner or the "
		    "operator raises the cap.", caps_max_tokens_per_day(a));
		turn_finish_after(t, "max_tokens_per_day", turn_say(t, text));
		return 1;
	}
	return 0;
}

/* Read AGENTS.md, then make the request.  It is read once a turn, as the
 * skills are: the system prompt stays the same through the turn (so a
 * provider's prompt cache keeps it), and a step reads nothing of the
 * workspace for itself.  A later request is made from a 0 ms timer, so
 * that, as after a read, it never starts inside the callback of the
 * request before it. */
static void
turn_read_agents_md(struct turn *t)
{
	int r;

	if (t->agents_loaded) {
		t->timer = loop_add_timer(t->a->loop, 0, turn_agents_md_kept_cb,
		    t);
		r = t->timer ? 0 : -ENOMEM;
	} else {
		r = ws_file_read_start(t->a, TURN_AGENTS_MD,
		    TURN_AGENTS_MD_READ, turn_agents_md_done, t, &t->read);
	}
	if (r < 0)
		turn_fail(t, "the model request could not be prepared: out of "
		    "memory");
}

/* The turn's skills: the room's config ones, then the workspace's (found,
 * taken; NULL when they could not be read) whose names are free. */
static void
turn_skills_set(struct agent *a, json_object *found)
{
	json_object *set = json_object_new_array();
	size_t n = a->config_skills ?
	    json_object_array_length(a->config_skills) : 0;

	for (size_t i = 0; i < n; i++)
		skills_add(set, json_object_get(
		    json_object_array_get_idx(a->config_skills, i)));
	n = found ? json_object_array_length(found) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(found, i);

		if (!skills_add(set, json_object_get(s)))
			log_warn("skill %s of the workspace skipped: the room's "
			    "config has one of that name, or the room has %d "
			    "skills already", json_get_string(s, "name"),
			    SKILLS_MAX);
	}
	json_object_put(found);
	json_object_put(a->skills);
	a->skills = set;
}

/* The workspace's skills were read on the confined path, or could not be:
 * the turn goes on with the config's alone then. */
static void
turn_skills_done(void *arg, int err, json_object *found)
{
	struct turn *t = arg;

	t->skills_read = NULL;
	if (err < 0)
		log_warn("the workspace's skills were not read: %s",
		    strerror(-err));
	turn_skills_set(t->a, found);
	t->skills_loaded = 1;
	turn_read_agents_md(t);
}

/* Read the skills (once a turn) and AGENTS.md for the next request. */
static void
turn_read_context(struct turn *t)
{
	if (t->skills_loaded) {
		turn_read_agents_md(t);
	} else if (ws_skills_read_start(t->a, turn_skills_done, t,
	    &t->skills_read) < 0) {
		turn_fail(t, "the model request could not be prepared: out of "
		    "memory");
	}
}

/* The room's MCP servers are started (or failed): their tools are known. */
static void
turn_mcp_ready(void *arg)
{
	turn_read_context(arg);
}

static void
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

/* ---- the summary step ------------------------------------------------------ */

/* The stored compaction event: what was summarised, and the summary,
 * recorded for the next checkpoint.  0 or -errno. */
static int
turn_summary_event(struct turn *t, const char *summary, long in, long out)
{
	json_object *ev = room_event_new("compaction");

	json_object_object_add(ev, "turn", json_object_new_int64(t->id));
	json_object_object_add(ev, "reason",
	    json_object_new_string(t->sum_reason));
	json_object_object_add(ev, "summarized",
	    json_object_new_int64((int64_t)t->sum_msgs));
	json_object_object_add(ev, "kept",
	    json_object_new_int64((int64_t)t->sum_kept));
	json_object_object_add(ev, "tokens_before",
	    json_object_new_int64(t->sum_before));
	json_object_object_add(ev, "context_window",
	    json_object_new_int64(t->sum_window));
	/* The event stays a fraction of a protocol line; room.db keeps it
	 * whole. */
	json_object_object_add(ev, "summary", json_object_new_string_len(
	    summary, (int)utf8_complete(summary, strnlen(summary,
	    TURN_EVENT_SUMMARY_MAX))));
	json_object_object_add(ev, "usage", json_object_new_object());
	json_object_object_add(json_object_object_get(ev, "usage"),
	    "input_tokens", json_object_new_int64(in));
	json_object_object_add(json_object_object_get(ev, "usage"),
	    "output_tokens", json_object_new_int64(out));
	return room_record(t->a, ev);
}

/* One answered model request, for atriumd's metrics (turn_report). */
static void
turn_count_request(struct agent *a, long in, long out)
{
	a->counts.requests++;
	a->counts.input_tokens += in > 0 ? in : 0;
	a->counts.output_tokens += out > 0 ? out : 0;
}

/* The summary came: commit it as a step of the turn, then make the step's
 * request again, now with the summary. */
static void
turn_summary_complete(struct turn *t)
{
	struct agent *a = t->a;
	json_object *msg = provider_stream_message(t->stream);
	char *summary = msg ? compact_summary_text(msg) : NULL;
	long in = 0, out = 0;
	int r;

	json_object_put(msg);
	if (!summary) {
		turn_fail(t, "the model answered the request to summarise the "
		    "older conversation with no text; the next turn tries "
		    "again");
		return;
	}
	provider_stream_usage(t->stream, &in, &out);
	r = room_db_compaction_done(a->db, t->sum_id, t->sum_cut, t->sum_upto,
	    summary, in, out);
	if (r == 0)
		r = room_db_turn_step(a->db, t->id, in, out);
	if (r == 0)
		r = room_db_usage_add(a->db, t->user, a->model, in, out);
	turn_count_request(a, in, out);
	if (r == 0)
		r = turn_summary_event(t, summary, in, out);
	free(summary);
	if (turn_checkpoint(t, r) < 0)
		return;
	t->in_tokens += in;
	t->out_tokens += out;
	t->step++;
	log_info("turn %lld: %zu messages summarised", t->id, t->sum_msgs);
	t->summarising = 0;
	t->refused_capped = 0;
	t->attempt = 0;
	turn_model_start(t);
}

/* Was the request refused as too long for the model's window? */
static int
turn_is_too_long(struct turn *t, const struct http_result *r)
{
	const char *type, *msg = NULL;

	if (r->status >= 200 && r->status < 300 && t->feed_err == -EPROTO) {
		type = provider_stream_error(t->stream, &msg);
		return compact_too_long_error(type, msg);
	}
	return compact_too_long(r->status, r->body, r->body_len);
}

/* The server's refusal as too long, in its own words (sanitised, cut to
 * TURN_REFUSAL_MAX bytes) and figures, into t; what it says of the window
 * is kept for the model, in room.db too (model_fit.h). */
static void
turn_read_refusal(struct turn *t, const struct http_result *r)
{
	const char *type, *msg = NULL;

	if (r->status >= 200 && r->status < 300) {	/* a stream's error */
		type = provider_stream_error(t->stream, &msg);
		snprintf(t->refusal, sizeof(t->refusal), "%s", msg ? msg :
		    type ? type : "");
		compact_refusal_figures(msg, msg ? strlen(msg) : 0,
		    &t->refused);
	} else {
		provider_error_words(r->status, r->body, r->body_len,
		    t->refusal, sizeof(t->refusal));
		compact_refusal_figures(r->body, r->body_len, &t->refused);
	}
	log_warn("turn %lld: the model server refused the request (about %ld "
	    "tokens) as too long: %s", t->id, t->sent_estimate, t->refusal);
	model_fit_learn(t->a, &t->refused, t->sent_bytes);
}

/* What the room is told after the refusal words: the window the server
 * named, or the advice to set it when it named none. */
static const char *
turn_refusal_advice(struct turn *t, char *buf, size_t len)
{
	if (t->refused.window > 0)
		snprintf(buf, len, "its window is %ld tokens", 
		    t->refused.window);
	else
		snprintf(buf, len, "set context-window to the model's real "
		    "window if it is smaller than %ld tokens", t->sum_window);
	return buf;
}

/* Was the request refused for the answer it asked for (max_tokens), its
 * input fitting the window with room to spare?  Then make it again once,
 * asking no more than the window now known leaves (context.c), and say
 * so.  1 when done here. */
static int
turn_refused_answer(struct turn *t)
{
	const struct compact_refusal *f = &t->refused;

	if (t->refused_capped || f->window <= 0 || f->prompt <= 0 ||
	    f->prompt + COMPACT_MIN_ANSWER >= f->window)
		return 0;
	t->refused_capped = 1;
	room_notice(t->a, "the model server refused the request: \"%s\"; "
	    "asking again for no longer an answer than its window of %ld "
	    "tokens leaves", t->refusal, f->window);
	t->attempt = 0;
	turn_model_start(t);
	return 1;
}

/* A request refused as too long: summarise and make it again, once per
 * step.  1 when handled here (the turn goes on or has ended), 0 when the
 * failure is another one. */
static int
turn_refused_too_long(struct turn *t, const struct http_result *r)
{
	char msg[TURN_REFUSAL_MAX + 600], advice[200];

	if (!turn_is_too_long(t, r))
		return 0;
	turn_read_refusal(t, r);
	if (turn_refused_answer(t))
		return 1;
	if (t->summarising && t->sum_shrink < TURN_MAX_SHRINK) {
		log_warn("turn %lld: the summary request was refused as too "
		    "long: making it smaller", t->id);
		t->sum_shrink++;
		t->attempt = 0;
		turn_model_start(t);
		return 1;
	}
	if (t->summarising) {
		snprintf(msg, sizeof(msg), "the model server refused even the "
		    "request to summarise the older conversation: \"%s\"; %s",
		    t->refusal, turn_refusal_advice(t, advice, sizeof(advice)));
		turn_fail(t, msg);
		return 1;
	}
	if (t->refused_summarised) {
		snprintf(msg, sizeof(msg), "the model server refused the "
		    "request again even after the older turns were summarised: "
		    "\"%s\"; this turn and the one before it are too long by "
		    "themselves: send a new, shorter prompt (the next turn can "
		    "summarise this one)%s", t->refusal, t->refused.window > 0 ?
		    "" : ", or set context-window to the model's real window");
		turn_fail(t, msg);
		return 1;
	}
	log_warn("turn %lld: the model refused the request as too long: "
	    "summarising", t->id);
	t->refused_summarised = 1;
	if (room_db_compaction_request(t->a->db, t->id, "refused") < 0) {
		turn_fail(t, "the summary step could not be recorded in "
		    "room.db: the agent's log says why");
		return 1;
	}
	if (turn_checkpoint(t, 0) < 0)
		return 1;
	t->attempt = 0;
	turn_model_start(t);
	return 1;
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
	if (r == 0)
		r = room_db_turn_step(a->db, t->id, in, out);
	if (r == 0)
		r = room_db_usage_add(a->db, t->user, a->model, in, out);
	turn_count_request(a, in, out);
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

/* What to tell people about a failed request, and whether to retry. */
static int
turn_describe_failure(struct turn *t, const struct http_result *r,
    char *what, size_t whatlen, char *hint, size_t hintlen)
{
	const char *type, *msg = NULL, *url;
	struct endpoint e;
	char pm[600];

	url = endpoint_get(t->a, t->a->provider, &e) == 0 ? e.url : "?";
	hint[0] = '\0';
	if (r->status >= 200 && r->status < 300 && t->feed_err == -EPROTO) {
		type = provider_stream_error(t->stream, &msg);
		snprintf(what, whatlen, "model error (%s): %s",
		    type ? type : "error", msg ? msg : "");
		return provider_error_retryable(type);
	}
	if (r->status >= 200 && r->status < 300 && t->feed_err) {
		snprintf(what, whatlen, "the model server at %s answered in a "
		    "format that is not %s's", url, t->a->provider);
		snprintf(hint, hintlen, "check --provider and --model-url");
		return 0;
	}
	if (r->curl_code && r->status >= 200 && r->status < 300) {
		snprintf(what, whatlen, "the connection to the model server at "
		    "%s broke during the answer (%s)", url, r->error[0] ?
		    r->error : "no reason given");
		return provider_should_retry(0, NULL, 0);
	}
	if (r->status == 0 || (r->curl_code && r->status < 300)) {
		snprintf(what, whatlen, "could not reach the model server at "
		    "%s (%s)", url, r->error[0] ? r->error : "no answer");
		snprintf(hint, hintlen, "is the model server at %s running?",
		    url);
		return provider_should_retry(0, NULL, 0);
	}
	provider_error_message(t->kind, r->status, r->body, r->body_len, pm,
	    sizeof(pm));
	snprintf(what, whatlen, "model %s (%d): %s", r->status == 429 ?
	    "rate-limited" : r->status >= 500 ? "server error" : "request "
	    "refused", r->status, pm);
	if (r->status == 401 || r->status == 403)
		snprintf(hint, hintlen, "check %s's API key (%s in atriumd's "
		    "environment, or --api-key-file with --provider %s)",
		    t->a->provider, keys_env_name(keys_index(t->a->provider)),
		    t->a->provider);
	else if (r->status == 404)
		snprintf(hint, hintlen, "check --model-url (%s) and the model "
		    "name (%s)", url, t->a->model);
	else if (r->status == 400)
		snprintf(hint, hintlen, "the model server refused the request");
	return provider_should_retry(r->status, r->body, r->body_len);
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

/* ---- tool calls ------------------------------------------------------------ */

/* Record call idx's end (journal, tool_result event) for the next
 * checkpoint, which turn_tools_next always reaches: the next call's start
 * or approval request, or the results message.  0, or -errno when a write
 * failed: the checkpoint is rolled back, the turn suspended and t freed
 * (turn_checkpoint). */
static int
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
static int
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

static int turn_someone_can_answer(struct agent *a);

#define TURN_ASK_CHECK_MS	1000	/* how often a waiting ask looks for
					 * someone who could still answer */

/* Record how the approval of the call in hand ended: an approval_result
 * event (who, how, the reason, how long it waited, and the line the room
 * shows), committed with the call's start or end that follows.  0, or
 * -errno when the write failed: the turn was suspended (t freed). */
static int
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
static int
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
static int
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
static void
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
static int
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
static void
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
