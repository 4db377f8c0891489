/*
 * provider_openai.c: OpenAI-compatible Chat Completions, streaming, both
 * ways: OpenAI itself, Ollama, vLLM, llama.cpp's server, Cloudflare Workers
 * AI and the like.
 *
 * Called only through its table, provider_openai_ops (provider_impl.h), by
 * provider.c: openai_build turns the neutral
 * (Anthropic-form) transcript into Chat Completions messages,
 * openai_event takes each SSE event of the response.
 *
 * Request:  POST BASE/chat/completions  (BASE ends in /v1)
 *   content-type: application/json, accept: text/event-stream,
 *   authorization: Bearer KEY (only when given)
 *   {"model","stream":true,"stream_options":{"include_usage":true},
 *    "max_tokens" (or "max_completion_tokens" for api.openai.com, whose
 *    newer models refuse max_tokens; the others all take max_tokens),
 *    "messages","tools"?:[{"type":"function","function":{"name",
 *    "description","parameters"}}]}
 *
 * Transcript mapping (neutral -> Chat Completions):
 *   system prompt                 {"role":"system","content"} first
 *   user text blocks              {"role":"user","content":"a\n\nb"}
 *   user tool_result blocks       {"role":"tool","tool_call_id","content"}
 *                                 each, before the user's text; is_error
 *                                 prefixes the content with "Error: "
 *   assistant text + tool_use     {"role":"assistant","content":"text",
 *                                 "tool_calls":[{"id","type":"function",
 *                                 "function":{"name","arguments":"{..}"}}]}
 *
 * Response: "data: {chunk}" events, then "data: [DONE]".
 *   choices[0].delta.content      text
 *   choices[0].delta.tool_calls[] fragments keyed by index: id and
 *                                 function.name on the first, arguments
 *                                 concatenated.  Ollama sends each call
 *                                 whole (maybe without id or index): a
 *                                 fragment without index, or whose id
 *                                 differs from the call at its index, is a
 *                                 new call; a missing id is made up.
 *   choices[0].finish_reason      stop / length / tool_calls /
 *                                 content_filter -> end_turn / max_tokens /
 *                                 tool_use / refusal; tool_use whenever
 *                                 calls came (Ollama says "stop"), unless
 *                                 the answer was cut at length
 *   usage (last chunk, choices [])  prompt_tokens, completion_tokens
 *   {"error":{...}} or {"object":"error",...}   -EPROTO
 *   event "error" (llama-server's "error: {code,message,type}" line,
 *   which sse.c reads as an event)  -EPROTO with the server's message
 *
 * Completeness: [DONE] ends the answer.  Without it, an answer that had a
 * finish_reason (Workers AI may send it only on the usage chunk) is taken
 * as complete when the body ends cleanly; anything else is cut (-EPIPE).
 * The answer's blocks (text first, then calls in order) are built and the
 * calls told to the sink at [DONE] or at that clean end, because some
 * servers send finish_reason before the last fragments.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "buf.h"
#include "provider_impl.h"

#define OPENAI_DEFAULT_MAX_TOKENS 4096

/* One tool call being assembled from fragments. */
struct openai_call {
	long index;			/* the server's index, -1 when none */
	char *id;			/* NULL until a fragment names it */
	char *name;
	struct buf args;		/* arguments JSON so far */
};

struct openai_state {
	struct openai_call calls[PROVIDER_MAX_CALLS];
	int ncalls;
	struct buf text;		/* the answer's text so far */
	int done;			/* [DONE] seen */
	int finished;			/* a finish_reason seen */
	int flushed;			/* blocks built, calls told */
	char finish[32];		/* the last finish_reason */
	unsigned long long seed;	/* for made-up call ids */
};

/* --- request ------------------------------------------------------------ */

/* Texts of blocks (or a string) joined with sep, as a new string object. */
static json_object *
openai_join_text(json_object *content, const char *prefix)
{
	struct buf b;
	json_object *out;

	buf_init(&b, PROVIDER_MAX_BLOCK * 4);
	if (prefix)
		buf_append(&b, prefix, strlen(prefix));
	if (json_object_is_type(content, json_type_string)) {
		buf_append(&b, json_object_get_string(content),
		    (size_t)json_object_get_string_len(content));
	} else if (json_object_is_type(content, json_type_array)) {
		int first = 1;

		for (size_t i = 0; i < json_object_array_length(content); i++) {
			json_object *blk = json_object_array_get_idx(content,
			    i);
			const char *t = provider_json_str(blk, "type");
			const char *text = provider_json_str(blk, "text");

			if (!t || strcmp(t, "text") != 0 || !text || !*text)
				continue;
			if (!first)
				buf_append(&b, "\n\n", 2);
			buf_append(&b, text, strlen(text));
			first = 0;
		}
	}
	out = json_object_new_string_len(b.data ? b.data : "", (int)b.len);
	buf_free(&b);
	return out;
}

/* A {"role":"tool"} message for a tool_result block. */
static json_object *
openai_tool_message(json_object *blk)
{
	json_object *m = json_object_new_object(), *content = NULL, *err;
	int is_error = json_object_object_get_ex(blk, "is_error", &err) &&
	    json_object_get_boolean(err);

	json_object_object_get_ex(blk, "content", &content);
	json_object_object_add(m, "role", json_object_new_string("tool"));
	json_object_object_add(m, "tool_call_id", json_object_new_string(
	    provider_json_str(blk, "tool_use_id") ?: ""));
	json_object_object_add(m, "content", openai_join_text(content,
	    is_error ? "Error: " : NULL));
	return m;
}

/* Append a user message's blocks: tool messages, then its text. */
static void
openai_user(json_object *out, json_object *blocks)
{
	json_object *text;
	int has_text = 0;

	for (size_t i = 0; i < json_object_array_length(blocks); i++) {
		json_object *blk = json_object_array_get_idx(blocks, i);
		const char *t = provider_json_str(blk, "type");

		if (strcmp(t, "tool_result") == 0)
			json_object_array_add(out, openai_tool_message(blk));
		else if (strcmp(t, "text") == 0)
			has_text = 1;
	}
	if (!has_text)
		return;
	text = json_object_new_object();
	json_object_object_add(text, "role", json_object_new_string("user"));
	json_object_object_add(text, "content", openai_join_text(blocks, NULL));
	json_object_array_add(out, text);
}

/* One tool_use block as a tool_calls entry. */
static json_object *
openai_tool_call(json_object *blk)
{
	json_object *c = json_object_new_object();
	json_object *fn = json_object_new_object(), *input = NULL;
	const char *args = "{}";

	if (json_object_object_get_ex(blk, "input", &input) &&
	    json_object_is_type(input, json_type_object))
		args = json_object_to_json_string_ext(input,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	json_object_object_add(c, "id", json_object_new_string(
	    provider_json_str(blk, "id") ?: ""));
	json_object_object_add(c, "type", json_object_new_string("function"));
	json_object_object_add(fn, "name", json_object_new_string(
	    provider_json_str(blk, "name") ?: ""));
	json_object_object_add(fn, "arguments", json_object_new_string(args));
	json_object_object_add(c, "function", fn);
	return c;
}

/* Append an assistant message: its text as content, its tool_use blocks
 * as tool_calls. */
static void
openai_assistant(json_object *out, json_object *blocks)
{
	json_object *m = json_object_new_object();
	json_object *calls = json_object_new_array();

	for (size_t i = 0; i < json_object_array_length(blocks); i++) {
		json_object *blk = json_object_array_get_idx(blocks, i);

		if (strcmp(provider_json_str(blk, "type"), "tool_use") == 0)
			json_object_array_add(calls, openai_tool_call(blk));
	}
	json_object_object_add(m, "role", json_object_new_string("assistant"));
	json_object_object_add(m, "content", openai_join_text(blocks, NULL));
	if (json_object_array_length(calls) > 0)
		json_object_object_add(m, "tool_calls", calls);
	else
		json_object_put(calls);
	json_object_array_add(out, m);
}

/* One normalised message as Chat Completions messages; see
 * provider_impl.h. */
static int
openai_message(json_object *msg, struct buf *out)
{
	json_object *wire = json_object_new_array(), *blocks = NULL;
	const char *s;
	size_t n;
	int r = 0;

	if (!wire)
		return -ENOMEM;
	json_object_object_get_ex(msg, "content", &blocks);
	if (strcmp(provider_json_str(msg, "role"), "user") == 0)
		openai_user(wire, blocks);
	else
		openai_assistant(wire, blocks);
	for (size_t i = 0; r == 0 && i < json_object_array_length(wire); i++) {
		s = json_object_to_json_string_length(
		    json_object_array_get_idx(wire, i), JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE, &n);
		r = s ? buf_append(out, s, n) : -ENOMEM;
		if (r == 0)
			r = buf_append(out, ",", 1);
	}
	json_object_put(wire);
	return r;
}

/* The system prompt as the first message, or NULL when there is none. */
static json_object *
openai_system(const char *system)
{
	json_object *m;

	if (!system || !*system)
		return NULL;
	m = json_object_new_object();
	json_object_object_add(m, "role", json_object_new_string("system"));
	json_object_object_add(m, "content", json_object_new_string(system));
	return m;
}

/* [{type:function, function:{name, description, parameters}}]. */
static json_object *
openai_tools(json_object *tools)
{
	json_object *out = json_object_new_array();

	for (size_t i = 0; out && i < json_object_array_length(tools); i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "type",
		    json_object_new_string("function"));
		json_object_object_add(o, "function", provider_tool_object(
		    json_object_array_get_idx(tools, i), "parameters"));
		json_object_array_add(out, o);
	}
	return out;
}

/* Is base_url OpenAI's own service (which wants max_completion_tokens)? */
static int
openai_is_openai_com(const char *base_url)
{
	const char *h = strstr(base_url, "://");
	size_t n;

	h = h ? h + 3 : base_url;
	n = strcspn(h, ":/");
	return n == 14 && strncasecmp(h, "api.openai.com", 14) == 0;
}

/* The request body's members but messages and tools. */
static json_object *
openai_head(const char *base_url, const struct provider_request *req)
{
	json_object *body = json_object_new_object();
	json_object *so = json_object_new_object();

	json_object_object_add(body, "model",
	    json_object_new_string(req->model));
	json_object_object_add(body, "stream", json_object_new_boolean(1));
	json_object_object_add(so, "include_usage", json_object_new_boolean(1));
	json_object_object_add(body, "stream_options", so);
	json_object_object_add(body, openai_is_openai_com(base_url) ?
	    "max_completion_tokens" : "max_tokens", json_object_new_int(
	    req->max_tokens > 0 ? req->max_tokens : OPENAI_DEFAULT_MAX_TOKENS));
	return body;
}

/* Build the streaming request; see provider.h.  -EINVAL, -ENOMEM. */
static int
openai_build(const char *base_url, const char *api_key,
    const struct provider_request *req, struct provider_http *out)
{
	json_object *head, *system;
	char *auth = NULL;
	int rc;

	if ((rc = provider_http_url(out, base_url, "/chat/completions")) < 0 ||
	    (rc = provider_http_header(out, "content-type",
	    "application/json")) < 0 ||
	    (rc = provider_http_header(out, "accept", "text/event-stream")) < 0)
		return rc;
	if (api_key) {
		if (asprintf(&auth, "Bearer %s", api_key) < 0)
			return -ENOMEM;
		rc = provider_http_header(out, "authorization", auth);
		explicit_bzero(auth, strlen(auth));
		free(auth);
		if (rc < 0)
			return rc;
	}
	head = openai_head(base_url, req);
	system = openai_system(req->system);
	rc = head ? provider_http_body(out, PROVIDER_OPENAI, head, system,
	    req->messages, req->tools, openai_tools, req->cache) : -ENOMEM;
	json_object_put(head);
	json_object_put(system);
	return rc;
}

/* --- response ------------------------------------------------------------ */

/* Empty parse state; NULL when out of memory. */
static void *
openai_state_new(void)
{
	struct openai_state *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	buf_init(&st->text, PROVIDER_MAX_BLOCK);
	if (getrandom(&st->seed, sizeof(st->seed), GRND_NONBLOCK) !=
	    sizeof(st->seed))
		st->seed = (unsigned long long)time(NULL) *
		    0x9E3779B97F4A7C15ull;
	return st;
}

/* Free parse state; NULL is fine. */
static void
openai_state_free(void *state)
{
	struct openai_state *st = state;

	if (!st)
		return;
	for (int i = 0; i < st->ncalls; i++) {
		free(st->calls[i].id);
		free(st->calls[i].name);
		buf_free(&st->calls[i].args);
	}
	buf_free(&st->text);
	free(st);
}

/* The call a fragment continues, or a new one; NULL when there are too
 * many.  The newest call with the index wins, so a server that reuses
 * index 0 for whole calls with distinct ids gets distinct calls. */
static struct openai_call *
openai_call_for(struct openai_state *st, long index, const char *id)
{
	struct openai_call *c;

	for (int i = st->ncalls - 1; index >= 0 && i >= 0; i--) {
		c = &st->calls[i];
		if (c->index != index)
			continue;
		if (id && *id && c->id && strcmp(c->id, id) != 0)
			break;
		return c;
	}
	if (st->ncalls == PROVIDER_MAX_CALLS)
		return NULL;
	c = &st->calls[st->ncalls++];
	c->index = index;
	buf_init(&c->args, PROVIDER_MAX_BLOCK);
	return c;
}

/* Merge one delta.tool_calls[] fragment.  0, -EBADMSG or -ENOMEM. */
static int
openai_fragment(struct provider_stream *s, json_object *frag)
{
	struct openai_state *st = s->wire;
	struct openai_call *c;
	json_object *fn = NULL, *args = NULL;
	const char *id = provider_json_str(frag, "id");
	const char *name, *a = NULL;

	c = openai_call_for(st, provider_json_long(frag, "index", -1), id);
	if (!c)
		return provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "the answer has more than %d tool calls",
		    PROVIDER_MAX_CALLS);
	json_object_object_get_ex(frag, "function", &fn);
	name = provider_json_str(fn, "name");
	if (id && *id && !c->id && !(c->id = strdup(id)))
		return -ENOMEM;
	if (name && *name && !c->name && !(c->name = strdup(name)))
		return -ENOMEM;
	if (json_object_object_get_ex(fn, "arguments", &args)) {
		if (json_object_is_type(args, json_type_string))
			a = json_object_get_string(args);
		else if (json_object_is_type(args, json_type_object))
			a = json_object_to_json_string_ext(args,
			    JSON_C_TO_STRING_PLAIN);
	}
	if (a && buf_append(&c->args, a, strlen(a)) < 0)
		return provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "a tool call's arguments are over %u bytes",
		    PROVIDER_MAX_BLOCK);
	return 0;
}

/* Build the answer's blocks and tell the sink the calls, once. */
static int
openai_flush(struct provider_stream *s)
{
	struct openai_state *st = s->wire;
	const char *f = st->finish;
	char made[48];
	int rc;

	if (st->flushed)
		return 0;
	st->flushed = 1;
	if ((rc = provider_stream_add_text(s, st->text.data, st->text.len)) < 0)
		return rc;
	for (int i = 0; i < st->ncalls; i++) {
		struct openai_call *c = &st->calls[i];
		const char *id = c->id;

		if (!id) {
			snprintf(made, sizeof(made), "call_%012llx%02d",
			    st->seed & 0xffffffffffffull, i);
			id = made;
		}
		rc = provider_stream_add_tool(s, id, c->name ? c->name : "",
		    c->args.data ? c->args.data : "", c->args.len);
		if (rc < 0)
			return rc;
	}
	snprintf(s->stop_reason, sizeof(s->stop_reason), "%s",
	    strcmp(f, "length") == 0 ? "max_tokens" :
	    st->ncalls > 0 ? "tool_use" :
	    strcmp(f, "content_filter") == 0 ? "refusal" : "end_turn");
	return 0;
}

/* choices[0] of a chunk: text, tool call fragments, finish_reason. */
static int
openai_choice(struct provider_stream *s, json_object *choice)
{
	struct openai_state *st = s->wire;
	json_object *delta = NULL, *calls;
	const char *text, *finish;
	int rc;

	json_object_object_get_ex(choice, "delta", &delta);
	text = provider_json_str(delta, "content");
	if (text && *text) {
		size_t n = strlen(text);

		provider_stream_text(s, text, n);
		if (buf_append(&st->text, text, n) < 0)
			return provider_stream_fail(s, -EBADMSG,
			    "invalid_stream",
			    "the answer's text is over %u bytes",
			    PROVIDER_MAX_BLOCK);
	}
	if (json_object_object_get_ex(delta, "tool_calls", &calls) &&
	    json_object_is_type(calls, json_type_array))
		for (size_t i = 0; i < json_object_array_length(calls); i++)
			if ((rc = openai_fragment(s,
			    json_object_array_get_idx(calls, i))) < 0)
				return rc;
	finish = provider_json_str(choice, "finish_reason");
	if (finish && *finish) {
		st->finished = 1;
		snprintf(st->finish, sizeof(st->finish), "%s", finish);
	}
	return 0;
}

/* A chunk that is an error: -EPROTO with its type and message. */
static int
openai_error(struct provider_stream *s, json_object *d)
{
	const char *type = NULL, *msg = provider_error_fields(d, &type);

	return provider_stream_fail(s, -EPROTO, type && *type ? type :
	    "api_error", "%s", msg && *msg ? msg :
	    "the model's stream reported an error");
}

/* One parsed chunk. */
static int
openai_chunk(struct provider_stream *s, json_object *d)
{
	json_object *e, *usage, *choices;
	const char *obj = provider_json_str(d, "object");

	if ((json_object_object_get_ex(d, "error", &e) &&
	    !json_object_is_type(e, json_type_null)) ||
	    (obj && strcmp(obj, "error") == 0))
		return openai_error(s, d);
	if (json_object_object_get_ex(d, "usage", &usage) &&
	    json_object_is_type(usage, json_type_object)) {
		s->input_tokens = provider_json_long(usage, "prompt_tokens",
		    s->input_tokens);
		s->output_tokens = provider_json_long(usage,
		    "completion_tokens", s->output_tokens);
	}
	if (!json_object_object_get_ex(d, "choices", &choices) ||
	    !json_object_is_type(choices, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(choices); i++) {
		json_object *c = json_object_array_get_idx(choices, i);

		/* Only the first choice is asked for (n is not sent). */
		if (provider_json_long(c, "index", 0) == 0)
			return openai_choice(s, c);
	}
	return 0;
}

/* One SSE event of the response; see provider_impl.h.  0, -EPROTO on an
 * error chunk, -EBADMSG on data that is not this format. */
static int
openai_event(struct provider_stream *s, const struct sse_event *ev)
{
	struct openai_state *st = s->wire;
	const char *p = ev->data;
	size_t n = ev->data_len;
	json_object *d;
	int rc;

	while (n > 0 && isspace((unsigned char)p[n - 1]))
		n--;
	if (n == 6 && memcmp(p, "[DONE]", 6) == 0) {
		st->done = 1;
		s->complete = 1;
		return openai_flush(s);
	}
	if (st->done)
		return 0;	/* nothing counts after [DONE] */
	d = provider_json_parse(p, n);
	if (strcmp(ev->event, "error") == 0 && (!d ||
	    !json_object_is_type(d, json_type_object))) {
		json_object_put(d);
		return provider_stream_fail(s, -EPROTO, "api_error", "%.*s",
		    (int)(n < 400 ? n : 400), p);
	}
	if (!d || !json_object_is_type(d, json_type_object)) {
		json_object_put(d);
		return provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "the model's stream sent an event that is not JSON: %.80s",
		    ev->data);
	}
	/* An error event (llama-server's "error:" line, see sse.c) may hold
	 * {code,message,type} with no "error" member. */
	rc = strcmp(ev->event, "error") == 0 ? openai_error(s, d) :
	    openai_chunk(s, d);
	json_object_put(d);
	return rc;
}

/* The body ended: complete after [DONE], or after a finish_reason. */
static int
openai_finish(struct provider_stream *s)
{
	struct openai_state *st = s->wire;

	if (st->done)
		return 0;
	if (!st->finished)
		return -EPIPE;
	s->complete = 1;
	return openai_flush(s);
}

/* --- the table provider.c calls through ---------------------------------- */

const struct provider_ops provider_openai_ops = {
	.name = "openai",
	.build = openai_build,
	.message = openai_message,
	.state_new = openai_state_new,
	.state_free = openai_state_free,
	.event = openai_event,
	.finish = openai_finish,
};
