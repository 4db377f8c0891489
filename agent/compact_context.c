/*
 * compact_context.c: context compaction's pure parts (compact_context.h): the
 * token estimate, the threshold, the cut, the summary request and the messages
 * sent after a summary; what a server's refusal as too long says (is it
 * one, its window and count) and the answer a window leaves room for.
 * Called by context.c (what a step sends) and turn_summary.c (the summary
 * step, a refusal); no I/O, no state.
 *
 * Invariants: a cut falls only before a prompt row (a user message without
 * tool_result), so every tool_use sent has its tool_result sent with it;
 * the running turn and the one before it are never summarised.  Text put
 * into a summary request is cut at UTF-8 character boundaries only.
 */
#include "compact_context.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "jsonl.h"

/* The largest summary request text built (the budget is smaller). */
#define COMPACT_RENDER_MAX	(64u << 20)

long
compact_window(enum provider_kind kind, long configured)
{
	if (configured > 0)
		return configured;
	return kind == PROVIDER_OPENAI ? COMPACT_WINDOW_OPENAI :
	    COMPACT_WINDOW_ANTHROPIC;
}

long
compact_threshold(long window, long max_tokens)
{
	long t = window / 4 * 3 - max_tokens;

	return t < window / 4 ? window / 4 : t;
}

long
compact_tokens_of_bytes(size_t n)
{
	return (long)((n + COMPACT_BYTES_PER_TOKEN - 1) /
	    COMPACT_BYTES_PER_TOKEN);
}

/* Tokens of n estimated bytes at scale_pm (compact_estimate). */
static long
compact_scaled(size_t n, long scale_pm)
{
	long t = compact_tokens_of_bytes(n);

	if (scale_pm <= 1000 || t > LONG_MAX / scale_pm)
		return t;
	return (t * scale_pm + 999) / 1000;
}

long
compact_estimate(const struct room_db_msg *rows, size_t n, long long upto,
    size_t fixed, long scale_pm)
{
	size_t base = n, bytes = 0;

	for (size_t i = n; i-- > 0;) {
		if (strcmp(rows[i].role, "assistant") == 0 &&
		    rows[i].input_tokens > 0 && rows[i].rowid > upto) {
			base = i;
			break;
		}
	}
	if (base == n) {
		for (size_t i = 0; i < n; i++)
			bytes += rows[i].bytes;
		return compact_scaled(fixed + bytes, scale_pm);
	}
	for (size_t i = base; i < n; i++)
		bytes += rows[i].bytes;
	return rows[base].input_tokens + compact_scaled(bytes, scale_pm);
}

/* The content blocks of a message, or NULL. */
static json_object *
compact_blocks(json_object *msg)
{
	json_object *content = NULL;

	if (!json_object_object_get_ex(msg, "content", &content) ||
	    !json_object_is_type(content, json_type_array))
		return NULL;
	return content;
}

int
compact_is_prompt(const struct room_db_msg *row)
{
	json_object *blocks = compact_blocks(row->msg);

	if (strcmp(row->role, "user") != 0)
		return 0;
	for (size_t i = 0; blocks && i < json_object_array_length(blocks);
	    i++) {
		const char *type = json_get_string(
		    json_object_array_get_idx(blocks, i), "type");

		if (type && strcmp(type, "tool_result") == 0)
			return 0;
	}
	return 1;
}

size_t
compact_cut(const struct room_db_msg *rows, size_t n, long long turn)
{
	long long prev = -1, keep;
	size_t first = n;

	for (size_t i = 0; i < n; i++)
		if (rows[i].turn < turn && rows[i].turn > prev)
			prev = rows[i].turn;
	keep = prev >= 0 ? prev : turn;
	for (size_t i = 0; i < n; i++) {
		if (rows[i].turn >= keep) {
			first = i;
			break;
		}
	}
	if (first == n)		/* nothing of the last two turns: keep all */
		return 0;
	for (size_t i = first; i > 0; i--)
		if (compact_is_prompt(&rows[i]))
			return i;
	return 0;
}

const char *
compact_summary_system(void)
{
	return "You are the agent of an Atrium room, a shared workspace where "
	    "people chat with each other and with you. Your conversation has "
	    "grown too long for your context window, so you are writing the "
	    "summary of its older part that will stand in for it from now on.";
}

/* The largest k <= n that does not split a UTF-8 character of p. */
static size_t
compact_utf8_floor(const char *p, size_t n)
{
	while (n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Append text to b, keeping its head and tail when it is over max bytes. */
static int
compact_append_capped(struct buf *b, const char *text, size_t max)
{
	size_t len = strlen(text), head, tail;

	if (len <= max)
		return buf_append(b, text, len);
	head = compact_utf8_floor(text, max / 4 * 3);
	tail = compact_utf8_floor(text, len - max / 4);
	if (buf_append(b, text, head) < 0 || buf_printf(b, "\n[... %zu bytes "
	    "left out ...]\n", tail - head) < 0)
		return -ENOBUFS;
	return buf_append(b, text + tail, len - tail);
}

/* One content block of a message written out as a line of text. */
static int
compact_render_block(struct buf *b, const char *role, json_object *blk)
{
	const char *type = json_get_string(blk, "type"), *s;
	json_object *v = NULL;
	int r;

	if (!type)
		return 0;
	if (strcmp(type, "text") == 0 && (s = json_get_string(blk, "text"))) {
		r = buf_printf(b, strcmp(role, "user") == 0 ? "[person] " :
		    "[agent] ");
		return r < 0 ? r : compact_append_capped(b, s, COMPACT_ITEM_MAX);
	}
	if (strcmp(type, "tool_use") == 0) {
		json_object_object_get_ex(blk, "input", &v);
		s = json_get_string(blk, "name");
		r = buf_printf(b, "[agent calls %s] ", s ? s : "a tool");
		return r < 0 ? r : compact_append_capped(b,
		    json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN),
		    COMPACT_ITEM_MAX);
	}
	if (strcmp(type, "tool_result") == 0) {
		json_object_object_get_ex(blk, "content", &v);
		r = buf_printf(b, "[result%s] ", json_get_bool(blk, "is_error",
		    0) ? ", failed" : "");
		s = json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN);
		return r < 0 ? r : compact_append_capped(b, s ? s : "",
		    COMPACT_ITEM_MAX);
	}
	return 0;
}

/* A row written out as text, each block on its own line(s), into b. */
static int
compact_render_row(struct buf *b, const struct room_db_msg *row)
{
	json_object *blocks = compact_blocks(row->msg);
	int r = 0;

	for (size_t i = 0; r == 0 && blocks &&
	    i < json_object_array_length(blocks); i++) {
		size_t before = b->len;

		r = compact_render_block(b, row->role,
		    json_object_array_get_idx(blocks, i));
		if (r == 0 && b->len > before)
			r = buf_append(b, "\n", 1);
	}
	return r;
}

/* The instruction after the conversation. */
static const char compact_instruction[] =
	"</conversation>\n\n"
	"Write a summary of the conversation above%s for yourself, the "
	"room's agent: it replaces these messages in your context, so the "
	"work must be able to go on from the summary alone. Keep who asked for "
	"what, the decisions and facts established, the files, commands and "
	"results that matter (exact names, paths and numbers), the errors met, "
	"and what is still to do or was promised. Be concise. Answer with the "
	"summary only.";

/* The rows written out, the oldest left out first past budget bytes. */
static int
compact_render_rows(struct buf *out, const struct room_db_msg *rows,
    size_t n, size_t budget)
{
	struct buf *each = calloc(n ? n : 1, sizeof(*each));
	size_t from = n, used = 0;
	int r = 0;

	if (!each)
		return -ENOMEM;
	for (size_t i = 0; r == 0 && i < n; i++) {
		buf_init(&each[i], COMPACT_RENDER_MAX);
		r = compact_render_row(&each[i], &rows[i]);
	}
	while (r == 0 && from > 0 && used + each[from - 1].len <= budget)
		used += each[--from].len;
	if (r == 0 && from > 0)
		r = buf_printf(out, "[... the %zu oldest messages are left out: "
		    "too long to summarise at once ...]\n", from);
	for (size_t i = from; r == 0 && i < n; i++)
		if (each[i].len)
			r = buf_append(out, each[i].data, each[i].len);
	for (size_t i = 0; i < n; i++)
		buf_free(&each[i]);
	free(each);
	return r;
}

json_object *
compact_summary_request(const char *prev_summary,
    const struct room_db_msg *rows, size_t n, size_t budget)
{
	struct buf b;
	json_object *msgs, *msg, *content, *blk;
	size_t half;
	int r;

	if (budget < COMPACT_MIN_BUDGET)
		budget = COMPACT_MIN_BUDGET;
	half = budget / 2;
	buf_init(&b, COMPACT_RENDER_MAX);
	r = buf_printf(&b, "Here is the older part of the conversation in this "
	    "room between its people and you, its agent, which no longer fits "
	    "in your context window.\n\n");
	if (r == 0 && prev_summary && *prev_summary) {
		r = buf_printf(&b, "<previous-summary>\n");
		if (r == 0)
			r = compact_append_capped(&b, prev_summary, half);
		if (r == 0)
			r = buf_printf(&b, "\n</previous-summary>\n\n");
	}
	if (r == 0)
		r = buf_printf(&b, "<conversation>\n");
	if (r == 0)
		r = compact_render_rows(&b, rows, n, budget - (b.len < half ?
		    b.len : half));
	if (r == 0)
		r = buf_printf(&b, compact_instruction, prev_summary &&
		    *prev_summary ? " and of the previous summary before it" :
		    "");
	if (r < 0) {
		buf_free(&b);
		return NULL;
	}
	blk = json_object_new_object();
	json_object_object_add(blk, "type", json_object_new_string("text"));
	json_object_object_add(blk, "text", json_object_new_string_len(b.data,
	    (int)b.len));
	buf_free(&b);
	content = json_object_new_array();
	json_object_array_add(content, blk);
	msg = json_object_new_object();
	json_object_object_add(msg, "role", json_object_new_string("user"));
	json_object_object_add(msg, "content", content);
	msgs = json_object_new_array();
	json_object_array_add(msgs, msg);
	return msgs;
}

json_object *
compact_summary_message(const char *summary)
{
	json_object *blk, *content, *msg;
	size_t hl = strlen(COMPACT_SUMMARY_HEAD), sl;
	char *text;

	if (!summary)
		return NULL;
	sl = strlen(summary);
	text = malloc(hl + sl + 1);
	if (!text)
		return NULL;
	memcpy(text, COMPACT_SUMMARY_HEAD, hl);
	memcpy(text + hl, summary, sl + 1);
	blk = json_object_new_object();
	content = json_object_new_array();
	msg = json_object_new_object();
	json_object_object_add(blk, "type", json_object_new_string("text"));
	json_object_object_add(blk, "text", json_object_new_string(text));
	free(text);
	json_object_array_add(content, blk);
	json_object_object_add(msg, "role", json_object_new_string("user"));
	json_object_object_add(msg, "content", content);
	return msg;
}

json_object *
compact_messages(json_object *head, const struct room_db_msg *rows,
    size_t n)
{
	json_object *msgs = json_object_new_array();

	if (head)
		json_object_array_add(msgs, json_object_get(head));
	for (size_t i = 0; i < n; i++)
		json_object_array_add(msgs, json_object_get(rows[i].msg));
	return msgs;
}

char *
compact_summary_text(json_object *answer)
{
	json_object *blocks = compact_blocks(answer);
	struct buf b;
	size_t start = 0;
	char *s;

	buf_init(&b, COMPACT_RENDER_MAX);
	for (size_t i = 0; blocks && i < json_object_array_length(blocks);
	    i++) {
		json_object *blk = json_object_array_get_idx(blocks, i);
		const char *type = json_get_string(blk, "type");
		const char *text = json_get_string(blk, "text");

		if (type && text && strcmp(type, "text") == 0 &&
		    buf_append(&b, text, strlen(text)) < 0)
			break;
	}
	while (start < b.len && isspace((unsigned char)b.data[start]))
		start++;
	while (b.len > start && isspace((unsigned char)b.data[b.len - 1]))
		b.data[--b.len] = '\0';
	s = b.len > start ? strdup(b.data + start) : NULL;
	buf_free(&b);
	return s;
}

int
compact_too_long_error(const char *type, const char *message)
{
	static const char *const phrases[] = {
		"prompt is too long",		/* Anthropic */
		"context_length_exceeded",	/* OpenAI's code */
		"maximum context length",	/* OpenAI, vLLM */
		"context length exceeded",
		"exceeds the available context size",	/* llama.cpp */
		"exceed_context_size_error",
		"exceed context limit",		/* Anthropic, with max_tokens */
		"context window",
	};

	for (size_t i = 0; i < sizeof(phrases) / sizeof(phrases[0]); i++) {
		if (type && strcasestr(type, phrases[i]))
			return 1;
		if (message && strcasestr(message, phrases[i]))
			return 1;
	}
	return 0;
}

int
compact_too_long(int status, const char *body, size_t len)
{
	json_object *obj, *err = NULL;
	const char *type = NULL, *code = NULL, *msg = NULL;
	int r;

	if ((status != 400 && status != 413) || !body || len == 0)
		return 0;
	obj = json_tokener_parse(body);
	if (!obj)	/* not JSON: its words may still say it */
		return compact_too_long_error(NULL, body);
	if (json_object_object_get_ex(obj, "error", &err) &&
	    json_object_is_type(err, json_type_object)) {
		type = json_get_string(err, "type");
		code = json_get_string(err, "code");
		msg = json_get_string(err, "message");
	} else {
		msg = json_get_string(obj, "error");	/* {"error": "..."} */
		if (!msg)
			msg = json_get_string(obj, "message");
	}
	r = compact_too_long_error(type, msg) ||
	    compact_too_long_error(code, NULL);
	json_object_put(obj);
	return r;
}

/* The number right after the first anchor in s (spaces skipped), 0 when
 * there is none or it is out of range. */
static long
compact_figure_after(const char *s, const char *anchor)
{
	const char *p = strcasestr(s, anchor);
	long v = 0;

	if (!p)
		return 0;
	p += strlen(anchor);
	while (*p == ' ')
		p++;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > COMPACT_FIGURE_MAX)
			return 0;
	}
	return v;
}

/* The first anchor of list (NULL-terminated) followed by a figure. */
static long
compact_figure_first(const char *s, const char *const *list)
{
	long v = 0;

	for (size_t i = 0; list[i] && v == 0; i++)
		v = compact_figure_after(s, list[i]);
	return v;
}

/* Anthropic's "exceed context limit: N + M > W": W. */
static long
compact_figure_limit(const char *s)
{
	const char *p = strcasestr(s, "exceed context limit:");

	return p ? compact_figure_after(p, "> ") : 0;
}

void
compact_refusal_figures(const char *text, size_t len,
    struct compact_refusal *out)
{
	static const char *const windows[] = {
		"available context size (",	/* llama.cpp */
		"\"n_ctx\":",
		"maximum context length is ",	/* OpenAI, vLLM */
		"maximum context length of ",
		"tokens > ",			/* Anthropic */
		NULL,
	};
	static const char *const prompts[] = {
		"request (",			/* llama.cpp */
		"\"n_prompt_tokens\":",
		"your request has ",		/* vLLM */
		"resulted in ",			/* OpenAI */
		"prompt is too long: ",		/* Anthropic */
		"exceed context limit: ",
		"tokens (",	/* OpenAI's "N tokens (P in the messages" */
		NULL,
	};
	char s[COMPACT_REFUSAL_SCAN + 1];
	size_t n = text ? strnlen(text, len < COMPACT_REFUSAL_SCAN ? len :
	    COMPACT_REFUSAL_SCAN) : 0;

	memcpy(s, text ? text : "", n);
	s[n] = '\0';
	out->window = compact_figure_first(s, windows);
	if (out->window == 0)
		out->window = compact_figure_limit(s);
	out->prompt = compact_figure_first(s, prompts);
}

long
compact_answer_tokens(long window, long estimate, long max_tokens)
{
	long left = window - window / 50 - estimate;
	long floor = max_tokens < COMPACT_MIN_ANSWER ? max_tokens :
	    COMPACT_MIN_ANSWER;

	if (left > max_tokens)
		return max_tokens;
	return left < floor ? floor : left;
}
