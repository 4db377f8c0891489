/*
 * turn_summary.c: a turn's summary step (compact_context.h) and the model
 * server's refusals as too long, for turn.c.
 *
 * When context.c says a step must summarise first, the pending
 * compactions row is committed before the summary request (a crash makes
 * the step again); the summary, the step and the compaction event are
 * then committed together and the step's request made again with the
 * summary.  A request refused as too long is summarised once per step, a
 * refused summary request made smaller at most TURN_MAX_SHRINK times, and
 * a request refused for the answer it asked for made once again asking
 * less; past that the turn fails with what the room can do.  The server's
 * words are sanitised and cut (TURN_REFUSAL_MAX) before anyone sees them.
 */
#include "turn_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "agent.h"
#include "compact_context.h"
#include "context.h"
#include "http.h"
#include "log.h"
#include "model_fit.h"
#include "provider.h"
#include "room_events.h"
#include "room_db.h"
#include "utf8.h"

#define TURN_MAX_SHRINK		3	/* halvings of a refused summary request */
#define TURN_EVENT_SUMMARY_MAX	(32 * 1024)	/* of a summary in its event */

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
int
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

/* The summary came: commit it as a step of the turn, then make the step's
 * request again, now with the summary. */
void
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
	r = turn_step_usage(t, r, in, out);
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
int
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
int
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
