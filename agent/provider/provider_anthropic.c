/*
 * provider_anthropic.c: the Anthropic Messages API, streaming, both ways.
 *
 * Called only through its table, provider_anthropic_ops (provider_impl.h),
 * by provider.c: anthropic_build makes the request, anthropic_event takes
 * each SSE event of the response.  The neutral transcript is this API's own form, so the request is the
 * transcript tidied (provider_transcript_normalize) plus tool ids made safe,
 * one message at a time (anthropic_message), so that provider.c
 * keeps the settled ones' text between requests.
 *
 * Request:  POST BASE/v1/messages  (BASE may already end in /v1)
 *   content-type: application/json, anthropic-version: 2023-06-01,
 *   x-api-key: KEY (only when given), accept: text/event-stream
 *   {"model","max_tokens","stream":true,"system"?,"messages",
 *    "tools"?:[{"name","description","input_schema"}]}
 *
 * Response (event: NAME / data: JSON with data.type == NAME):
 *   message_start        message.usage.input_tokens (+ cache tokens)
 *   content_block_start  index, content_block {type:text,text} or
 *                        {type:tool_use,id,name,input:{}}; other types
 *                        (thinking, server tools) are skipped
 *   content_block_delta  index, delta {type:text_delta,text} or
 *                        {type:input_json_delta,partial_json}; others skipped
 *   content_block_stop   index: the block is whole (tool input parsed now;
 *                        "" means {})
 *   message_delta        delta.stop_reason, usage.output_tokens (cumulative)
 *   message_stop         the answer is complete
 *   ping                 ignored, as are unknown events
 *   error                error {type,message}, or llama-server's
 *                        {code,message,type:"server_error"}: -EPROTO
 *                        (the event: name decides, whatever data.type)
 *
 * Invariants: at most ANTHROPIC_MAX_OPEN blocks open at once (the API
 * sends them one after another); each block's text or input is capped at
 * PROVIDER_MAX_BLOCK.  The event type is read from data.type, falling back
 * to the event: name, so proxies that drop event: lines still work.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "provider_impl.h"

#define ANTHROPIC_VERSION "2023-06-01"
#define ANTHROPIC_MAX_OPEN 16
#define ANTHROPIC_DEFAULT_MAX_TOKENS 4096

enum anthropic_kind { AB_TEXT, AB_TOOL, AB_OTHER };

/* One content block being streamed. */
struct anthropic_block {
	int used;			/* this slot holds an open block */
	long index;			/* the block's index in the answer */
	enum anthropic_kind kind;
	int preset;			/* buf holds an input given whole at
					 * start; the first delta replaces it */
	struct buf buf;			/* text, or tool input JSON so far */
	char *id, *name;		/* tool_use only */
};

struct anthropic_state {
	struct anthropic_block open[ANTHROPIC_MAX_OPEN];
};

/* --- request ------------------------------------------------------------ */

/* Is block[key] a tool id the API takes ([A-Za-z0-9_-], not empty)? */
static int
anthropic_id_ok(json_object *block, const char *key)
{
	const char *id = provider_json_str(block, key);

	if (!id || !*id)
		return 0;
	for (const char *c = id; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
			return 0;
	return 1;
}

/* Replace characters the API refuses in tool ids ([A-Za-z0-9_-] only; ids
 * may come from another provider) in block[key]. */
static void
anthropic_fix_id(json_object *block, const char *key)
{
	const char *id = provider_json_str(block, key);
	char *fixed;

	if (!id || !*id) {
		json_object_object_add(block, key,
		    json_object_new_string("toolu_missing"));
		return;
	}
	fixed = strdup(id);
	if (!fixed)
		return;
	for (char *c = fixed; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
			*c = '_';
	json_object_object_add(block, key, json_object_new_string(fixed));
	free(fixed);
}

/* Does a block of type t need anthropic_fix_block? */
static int
anthropic_block_ok(json_object *b, const char *t)
{
	json_object *in;

	if (strcmp(t, "tool_use") == 0)
		return anthropic_id_ok(b, "id") &&
		    json_object_object_get_ex(b, "input", &in) &&
		    json_object_is_type(in, json_type_object);
	if (strcmp(t, "tool_result") == 0)
		return anthropic_id_ok(b, "tool_use_id");
	return 1;
}

/* Fix a block of type t in place (anthropic_block_ok said it needs it). */
static void
anthropic_fix_block(json_object *b, const char *t)
{
	json_object *in;

	if (strcmp(t, "tool_use") == 0) {
		anthropic_fix_id(b, "id");
		if (!json_object_object_get_ex(b, "input", &in) ||
		    !json_object_is_type(in, json_type_object))
			json_object_object_add(b, "input",
			    json_object_new_object());
	} else if (strcmp(t, "tool_result") == 0) {
		anthropic_fix_id(b, "tool_use_id");
	}
}

/* Make the tool blocks of a normalised message acceptable: safe ids and
 * an object input on every tool_use.  The blocks are the caller's
 * (provider_transcript_normalize shares them): one that needs a fix is
 * replaced in the message's (new) content array by a fixed copy. */
static void
anthropic_fix_blocks(json_object *msg)
{
	json_object *c = NULL;

	json_object_object_get_ex(msg, "content", &c);
	for (size_t j = 0; j < json_object_array_length(c); j++) {
		json_object *b = json_object_array_get_idx(c, j);
		const char *t = provider_json_str(b, "type");
		json_object *copy = NULL;

		if (!t || anthropic_block_ok(b, t))
			continue;
		if (json_object_deep_copy(b, &copy, NULL) != 0)
			continue;
		anthropic_fix_block(copy, t);
		json_object_array_put_idx(c, j, copy);
	}
}

/* One normalised message on the wire; see provider_impl.h. */
static int
anthropic_message(json_object *msg, struct buf *out)
{
	const char *s;
	size_t n;
	int r;

	anthropic_fix_blocks(msg);
	s = json_object_to_json_string_length(msg, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	if (!s)
		return -ENOMEM;
	r = buf_append(out, s, n);
	return r < 0 ? r : buf_append(out, ",", 1);
}

/* [{name, description, input_schema}] from the agent's tool list. */
static json_object *
anthropic_tools(json_object *tools)
{
	json_object *out = json_object_new_array();

	for (size_t i = 0; out && i < json_object_array_length(tools); i++)
		json_object_array_add(out, provider_tool_object(
		    json_object_array_get_idx(tools, i), "input_schema"));
	return out;
}

/* The request body's members but messages and tools. */
static json_object *
anthropic_head(const struct provider_request *req)
{
	json_object *body = json_object_new_object();

	json_object_object_add(body, "model", json_object_new_string(
	    req->model));
	json_object_object_add(body, "max_tokens", json_object_new_int(
	    req->max_tokens > 0 ? req->max_tokens :
	    ANTHROPIC_DEFAULT_MAX_TOKENS));
	json_object_object_add(body, "stream", json_object_new_boolean(1));
	if (req->system && *req->system)
		json_object_object_add(body, "system",
		    json_object_new_string(req->system));
	return body;
}

/* Build the streaming request; see provider.h.  -EINVAL, -ENOMEM. */
static int
anthropic_build(const char *base_url, const char *api_key,
    const struct provider_request *req, struct provider_http *out)
{
	size_t n = strlen(base_url);
	json_object *head;
	int rc;

	while (n > 0 && base_url[n - 1] == '/')
		n--;
	rc = provider_http_url(out, base_url, n >= 3 &&
	    strncmp(base_url + n - 3, "/v1", 3) == 0 ? "/messages" :
	    "/v1/messages");
	if (rc < 0)
		return rc;
	if ((rc = provider_http_header(out, "content-type",
	    "application/json")) < 0 ||
	    (rc = provider_http_header(out, "accept",
	    "text/event-stream")) < 0 ||
	    (rc = provider_http_header(out, "anthropic-version",
	    ANTHROPIC_VERSION)) < 0 ||
	    (api_key && (rc = provider_http_header(out, "x-api-key",
	    api_key)) < 0))
		return rc;
	head = anthropic_head(req);
	rc = head ? provider_http_body(out, PROVIDER_ANTHROPIC, head, NULL,
	    req->messages, req->tools, anthropic_tools, req->cache) : -ENOMEM;
	json_object_put(head);
	return rc;
}

/* --- response ------------------------------------------------------------ */

/* Empty parse state; NULL when out of memory. */
static void *
anthropic_state_new(void)
{
	return calloc(1, sizeof(struct anthropic_state));
}

/* Empty a block slot. */
static void
anthropic_block_clear(struct anthropic_block *b)
{
	buf_free(&b->buf);
	free(b->id);
	free(b->name);
	memset(b, 0, sizeof(*b));
}

/* Free parse state; NULL is fine. */
static void
anthropic_state_free(void *state)
{
	struct anthropic_state *st = state;

	if (!st)
		return;
	for (int i = 0; i < ANTHROPIC_MAX_OPEN; i++)
		anthropic_block_clear(&st->open[i]);
	free(st);
}

/* The open block with this index, or NULL. */
static struct anthropic_block *
anthropic_block_find(struct anthropic_state *st, long index)
{
	for (int i = 0; i < ANTHROPIC_MAX_OPEN; i++)
		if (st->open[i].used && st->open[i].index == index)
			return &st->open[i];
	return NULL;
}

/* Add to a block's text or input.  0 or -EBADMSG past the cap. */
static int
anthropic_block_append(struct provider_stream *s, struct anthropic_block *b,
    const char *p, size_t n)
{
	if (buf_append(&b->buf, p, n) == 0)
		return 0;
	return provider_stream_fail(s, -EBADMSG, "invalid_stream",
	    "a content block of the answer is over %u bytes",
	    PROVIDER_MAX_BLOCK);
}

/* Record usage from a usage object: input counts cached tokens too. */
static void
anthropic_usage(struct provider_stream *s, json_object *usage)
{
	long in = provider_json_long(usage, "input_tokens", -1);
	long out = provider_json_long(usage, "output_tokens", -1);
	long cc = provider_json_long(usage, "cache_creation_input_tokens", 0);
	long cr = provider_json_long(usage, "cache_read_input_tokens", 0);

	/* The server's numbers: a huge one must not overflow the sum. */
	if (in >= 0 && (__builtin_add_overflow(in, cc > 0 ? cc : 0, &in) ||
	    __builtin_add_overflow(in, cr > 0 ? cr : 0, &in)))
		in = LONG_MAX;
	if (in >= 0)
		s->input_tokens = in;
	if (out >= 0)
		s->output_tokens = out;
}

/* content_block_start: open a slot.  0 or -EBADMSG. */
static int
anthropic_block_start(struct provider_stream *s, json_object *d)
{
	struct anthropic_state *st = s->wire;
	struct anthropic_block *b = NULL;
	long index = provider_json_long(d, "index", -1);
	json_object *cb, *in;
	const char *type, *text;

	json_object_object_get_ex(d, "content_block", &cb);
	type = provider_json_str(cb, "type");
	if (index < 0 || !type || anthropic_block_find(st, index))
		return provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "content_block_start without a new index and a type");
	for (int i = 0; i < ANTHROPIC_MAX_OPEN && !b; i++)
		if (!st->open[i].used)
			b = &st->open[i];
	if (!b)
		return provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "more than %d content blocks open at once",
		    ANTHROPIC_MAX_OPEN);
	b->used = 1;
	b->index = index;
	buf_init(&b->buf, PROVIDER_MAX_BLOCK);
	if (strcmp(type, "text") == 0) {
		b->kind = AB_TEXT;
		text = provider_json_str(cb, "text");
		if (text && *text) {
			provider_stream_text(s, text, strlen(text));
			return anthropic_block_append(s, b, text, strlen(text));
		}
		return 0;
	}
	if (strcmp(type, "tool_use") != 0) {
		b->kind = AB_OTHER;
		return 0;
	}
	b->kind = AB_TOOL;
	b->id = strdup(provider_json_str(cb, "id") ?: "");
	b->name = strdup(provider_json_str(cb, "name") ?: "");
	if (!b->id || !b->name)
		return -ENOMEM;
	if (json_object_object_get_ex(cb, "input", &in) &&
	    json_object_is_type(in, json_type_object) &&
	    json_object_object_length(in) > 0) {
		const char *js = json_object_to_json_string_ext(in,
		    JSON_C_TO_STRING_PLAIN);
		b->preset = 1;
		return anthropic_block_append(s, b, js, strlen(js));
	}
	return 0;
}

/* content_block_delta: text to the sink, input JSON to the slot. */
static int
anthropic_block_delta(struct provider_stream *s, json_object *d)
{
	struct anthropic_block *b = anthropic_block_find(s->wire,
	    provider_json_long(d, "index", -1));
	json_object *delta;
	const char *type, *piece;

	if (!b)
		return provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "content_block_delta for a block that was not started");
	json_object_object_get_ex(d, "delta", &delta);
	type = provider_json_str(delta, "type");
	if (!type)
		return 0;
	if (b->kind == AB_TEXT && strcmp(type, "text_delta") == 0) {
		piece = provider_json_str(delta, "text");
		if (!piece)
			return 0;
		provider_stream_text(s, piece, strlen(piece));
		return anthropic_block_append(s, b, piece, strlen(piece));
	}
	if (b->kind == AB_TOOL && strcmp(type, "input_json_delta") == 0) {
		piece = provider_json_str(delta, "partial_json");
		if (!piece)
			return 0;
		if (b->preset) {
			b->preset = 0;
			buf_reset(&b->buf);
		}
		return anthropic_block_append(s, b, piece, strlen(piece));
	}
	return 0;	/* thinking, signature, citations: not kept */
}

/* Close a block: a whole text or tool call goes into the answer. */
static int
anthropic_block_close(struct provider_stream *s, struct anthropic_block *b)
{
	int rc = 0;

	if (b->kind == AB_TEXT)
		rc = provider_stream_add_text(s, b->buf.data, b->buf.len);
	else if (b->kind == AB_TOOL)
		rc = provider_stream_add_tool(s, b->id, b->name,
		    b->buf.data ? b->buf.data : "", b->buf.len);
	anthropic_block_clear(b);
	return rc;
}

/* message_stop: close blocks left open (in index order) and mark the
 * answer complete. */
static int
anthropic_message_stop(struct provider_stream *s)
{
	struct anthropic_state *st = s->wire;
	struct anthropic_block *next;
	int rc;

	for (;;) {
		next = NULL;
		for (int i = 0; i < ANTHROPIC_MAX_OPEN; i++)
			if (st->open[i].used &&
			    (!next || st->open[i].index < next->index))
				next = &st->open[i];
		if (!next)
			break;
		if ((rc = anthropic_block_close(s, next)) < 0)
			return rc;
	}
	s->complete = 1;
	return 0;
}

/* message_delta: stop reason and cumulative usage. */
static int
anthropic_message_delta(struct provider_stream *s, json_object *d)
{
	json_object *delta, *usage;
	const char *reason;

	if (json_object_object_get_ex(d, "delta", &delta) &&
	    (reason = provider_json_str(delta, "stop_reason")))
		snprintf(s->stop_reason, sizeof(s->stop_reason), "%s", reason);
	if (json_object_object_get_ex(d, "usage", &usage))
		anthropic_usage(s, usage);
	return 0;
}

/* The error event: -EPROTO with the server's own type and message, in
 * either shape real servers send: Anthropic's {"type":"error","error":
 * {"type","message"}} or llama-server's {"code":500,"message",
 * "type":"server_error"} (provider_error_fields reads both). */
static int
anthropic_error(struct provider_stream *s, json_object *d)
{
	const char *type = NULL, *msg = provider_error_fields(d, &type);

	if (type && strcmp(type, "error") == 0)
		type = NULL;	/* the envelope's type, not the error's */
	return provider_stream_fail(s, -EPROTO, type && *type ? type :
	    "api_error", "%s", msg && *msg ? msg :
	    "the model's stream reported an error without a message");
}

/* One parsed event by type. */
static int
anthropic_dispatch(struct provider_stream *s, const char *type,
    json_object *d)
{
	struct anthropic_block *b;
	json_object *msg, *usage;

	if (strcmp(type, "message_start") == 0) {
		if (json_object_object_get_ex(d, "message", &msg) &&
		    json_object_object_get_ex(msg, "usage", &usage))
			anthropic_usage(s, usage);
		return 0;
	}
	if (strcmp(type, "content_block_start") == 0)
		return anthropic_block_start(s, d);
	if (strcmp(type, "content_block_delta") == 0)
		return anthropic_block_delta(s, d);
	if (strcmp(type, "content_block_stop") == 0) {
		b = anthropic_block_find(s->wire,
		    provider_json_long(d, "index", -1));
		return b ? anthropic_block_close(s, b) : 0;
	}
	if (strcmp(type, "message_delta") == 0)
		return anthropic_message_delta(s, d);
	if (strcmp(type, "message_stop") == 0)
		return anthropic_message_stop(s);
	if (strcmp(type, "error") == 0)
		return anthropic_error(s, d);
	return 0;	/* ping and event types added later */
}

/* One SSE event of the response; see provider_impl.h.  0, -EPROTO on an
 * error event, -EBADMSG on data that is not this format. */
static int
anthropic_event(struct provider_stream *s, const struct sse_event *ev)
{
	json_object *d;
	const char *type;
	int rc;

	if (strcmp(ev->event, "ping") == 0)
		return 0;
	d = provider_json_parse(ev->data, ev->data_len);
	if (!d || !json_object_is_type(d, json_type_object)) {
		json_object_put(d);
		return provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "the model's stream sent an event that is not JSON: %.80s",
		    ev->data);
	}
	/* An error event is an error whatever its data's type says
	 * (llama-server puts "server_error" there). */
	if (strcmp(ev->event, "error") == 0)
		rc = anthropic_error(s, d);
	else if ((type = provider_json_str(d, "type")))
		rc = anthropic_dispatch(s, type, d);
	else
		rc = anthropic_dispatch(s, ev->event, d);
	json_object_put(d);
	return rc;
}

/* The body ended: complete only after message_stop. */
static int
anthropic_finish(struct provider_stream *s)
{
	return s->complete ? 0 : -EPIPE;
}

/* --- the table provider.c calls through ---------------------------------- */

const struct provider_ops provider_anthropic_ops = {
	.name = "anthropic",
	.build = anthropic_build,
	.message = anthropic_message,
	.state_new = anthropic_state_new,
	.state_free = anthropic_state_free,
	.event = anthropic_event,
	.finish = anthropic_finish,
};
