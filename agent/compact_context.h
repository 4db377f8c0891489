/*
 * compact_context.h: context compaction, the pure parts (compact_context.c):
 * how big the next request is, when to summarise, where to cut the transcript,
 * the summary request, the messages sent once a summary exists, what a
 * server's refusal as too long says, and how long an answer the window
 * leaves room for.  No I/O; unit-tested.  turn_summary.c runs the summary step, context.c loads what these
 * work on from room.db.
 *
 * The transcript is sent whole until the next request would pass
 * compact_threshold of the model's window; then one model request (a step
 * of its own, without tools) summarises the rows before a cut, and later
 * requests carry that summary as their first user message followed by the
 * rows from the cut on.  The stored rows are never changed.
 */
#ifndef ATRIUM_AGENT_COMPACT_H
#define ATRIUM_AGENT_COMPACT_H

#include <stddef.h>
#include <json-c/json.h>

#include "provider.h"
#include "room_db.h"

/* The windows assumed when context-window is 0: the usual of each. */
#define COMPACT_WINDOW_ANTHROPIC	200000
#define COMPACT_WINDOW_OPENAI		128000
/* The estimate of text the provider has not counted yet: a token is about
 * four bytes of English or JSON (no tokenizer: it errs either way by a
 * fraction, which the threshold's margin absorbs). */
#define COMPACT_BYTES_PER_TOKEN		4
/* Of one message's text, the most kept in a summary request. */
#define COMPACT_ITEM_MAX		4096
/* The smallest room a summary request gets, in bytes. */
#define COMPACT_MIN_BUDGET		2048

/* The first line of the summary message, which marks it for the model. */
#define COMPACT_SUMMARY_HEAD "[Summary of the earlier conversation in this " \
	"room, written when it grew too long for the model's context window; " \
	"the messages after it follow in full.]\n\n"

/* The model's window in tokens: configured when > 0, else the kind's usual. */
long compact_window(enum provider_kind kind, long configured);

/* Tokens above which the next request is too big and older turns are
 * summarised first: 75% of the window less max_tokens (kept for the answer),
 * at least a quarter of the window.  context.c passes max_tokens capped at
 * a quarter of the window, so that a configured answer larger than a small
 * window's does not make every request "too big". */
long compact_threshold(long window, long max_tokens);

/* Tokens of n bytes not yet counted by the provider (rounded up). */
long compact_tokens_of_bytes(size_t n);

/*
 * The next request's input tokens.  rows are the transcript rows to be sent
 * (from the latest cut on), fixed the bytes sent besides them (system
 * prompt, tools, the summary message).  When an assistant row made after
 * the latest summary (rowid > upto) carries the provider's count, the
 * estimate is that count plus the bytes of that row and the rows after it;
 * otherwise every byte is estimated.  Estimated bytes count scale_pm / 1000
 * times what compact_tokens_of_bytes says (1000: as it says; more when the
 * server was seen to count more tokens per byte).
 */
long compact_estimate(const struct room_db_msg *rows, size_t n,
    long long upto, size_t fixed, long scale_pm);

/* Is row a prompt (a user message holding no tool_result)?  A cut may only
 * fall before one: a tool_use and its tool_result are never parted. */
int compact_is_prompt(const struct room_db_msg *row);

/*
 * Where to cut rows (the transcript from the latest cut on) when turn is
 * running: the index of the first row still sent in full, or 0 when
 * nothing can be summarised.  The cut keeps the running turn and the one
 * before it whole, falls before a prompt, and summarises as much as that
 * allows (the most room for the turns to come).
 */
size_t compact_cut(const struct room_db_msg *rows, size_t n, long long turn);

/* The system prompt of a summary request. */
const char *compact_summary_system(void);

/*
 * The summary request's messages: one user message with the previous
 * summary (may be NULL), rows[0..n) written out as text (each message's
 * text capped at COMPACT_ITEM_MAX, the oldest left out first past budget
 * bytes) and the instruction.  Tool calls and results become text, so no
 * tool is needed to read them.  A new array, NULL on ENOMEM.
 */
json_object *compact_summary_request(const char *prev_summary,
    const struct room_db_msg *rows, size_t n, size_t budget);

/* The summary as the message that opens a step's messages: a new user
 * message, NULL when summary is NULL or out of memory. */
json_object *compact_summary_message(const char *summary);

/* The messages of a step: head (compact_summary_message's, borrowed; may
 * be NULL) first, then rows[0..n) as stored.  A new array holding
 * references to those very objects, so that a request cache
 * (provider.h) sees the same messages step after step. */
json_object *compact_messages(json_object *head,
    const struct room_db_msg *rows, size_t n);

/* The text of a summary answer (its text blocks joined), trimmed;
 * malloc'd, NULL when empty or on ENOMEM. */
char *compact_summary_text(json_object *answer);

/* Did the provider refuse the request as longer than the model's window?
 * status and body of a non-2xx answer (Anthropic 400 invalid_request_error
 * "prompt is too long", OpenAI 400 context_length_exceeded, vLLM and
 * llama.cpp's messages); 1 yes, 0 no. */
int compact_too_long(int status, const char *body, size_t len);
/* The same for an error's type (or code) and message, e.g. from a stream's
 * error event. */
int compact_too_long_error(const char *type, const char *message);

/* The figures a server's refusal gives, in its own units (its tokenizer's
 * tokens): the model's window and the refused request's input tokens, 0
 * where its words do not say.  Read from the raw error body or message,
 * whatever its shape:
 *   llama.cpp  "request (N tokens) exceeds the available context size
 *              (W tokens)", "n_prompt_tokens":N,"n_ctx":W
 *   vLLM       "This model's maximum context length is W tokens. However,
 *              your request has N input tokens."
 *   OpenAI     "... maximum context length is W tokens. However, your
 *              messages resulted in N tokens."
 *   Anthropic  "prompt is too long: N tokens > W maximum", "input length
 *              and `max_tokens` exceed context limit: N + M > W"
 * Only the first COMPACT_REFUSAL_SCAN bytes are read; a figure outside
 * 1..COMPACT_FIGURE_MAX is taken as unknown. */
#define COMPACT_REFUSAL_SCAN	16384
#define COMPACT_FIGURE_MAX	100000000L
struct compact_refusal {
	long window;
	long prompt;
};
void compact_refusal_figures(const char *text, size_t len,
    struct compact_refusal *out);

/* The most tokens an answer may ask for: what the window leaves after the
 * request's input (estimate) and a margin of a fiftieth of the window for
 * the estimate's error, at most max_tokens, at least
 * COMPACT_MIN_ANSWER (or max_tokens when that is smaller): a server takes
 * the request's max_tokens over its operator's own limit, and one that
 * counts input and answer together refuses a request whose sum passes the
 * window. */
#define COMPACT_MIN_ANSWER	256
long compact_answer_tokens(long window, long estimate, long max_tokens);

#endif
