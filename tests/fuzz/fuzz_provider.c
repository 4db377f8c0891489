/*
 * fuzz_provider.c: libFuzzer entry point for the model providers' stream
 * parsers (agent/provider/provider.c with provider_anthropic.c and
 * provider_openai.c), through provider.h only: provider_stream_new, _feed,
 * _finish, _message and the result getters.  The bytes are a response body
 * from a model server, which Atrium does not control.
 *
 * The input is one body, parsed as both kinds and by every split plan of
 * fuzz.h.  For each kind all plans must agree on everything: results of
 * feed and finish, the answer message, stop reason, usage, error, and what
 * the sink was told.  The answer must be in neutral form (text blocks with
 * text, tool_use blocks with id, name and an object input), a failed feed
 * must say why, and errors must stick.
 */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "provider.h"

#define OUT_MAX (8u << 20)

/* Everything one parse produced, as text to compare. */
struct outcome {
	struct buf sink;	/* text pieces and tool calls, in order */
	struct buf result;	/* codes, message, stop reason, usage, error */
};

/* Made-up OpenAI call ids ("call_" + 12 hex + 2 digits) are random per
 * stream: write them as one fixed name. */
static void
put_id(struct buf *b, const char *id)
{
	size_t n = strlen(id);

	if (n == 19 && strncmp(id, "call_", 5) == 0 &&
	    strspn(id + 5, "0123456789abcdef") == 14)
		id = "call_MADE_UP";
	FUZZ_CHECK(buf_append(b, id, strlen(id) + 1) == 0);
}

/* The sink's text: recorded in order. */
static void
on_text(void *arg, const char *text, size_t len)
{
	struct outcome *o = arg;

	FUZZ_CHECK(text != NULL && len > 0);
	FUZZ_CHECK(buf_append(&o->sink, "T", 1) == 0);
	FUZZ_CHECK(buf_append(&o->sink, text, len) == 0);
}

/* The sink's tool call: checked, then recorded. */
static void
on_tool(void *arg, const char *id, const char *name, json_object *input,
    const char *raw)
{
	struct outcome *o = arg;
	const char *js;

	FUZZ_CHECK(id != NULL && name != NULL);
	FUZZ_CHECK((input == NULL) != (raw == NULL));
	FUZZ_CHECK(!input || json_object_is_type(input, json_type_object));
	FUZZ_CHECK(buf_append(&o->sink, "C", 1) == 0);
	put_id(&o->sink, id);
	FUZZ_CHECK(buf_append(&o->sink, name, strlen(name) + 1) == 0);
	js = input ? json_object_to_json_string_ext(input,
	    JSON_C_TO_STRING_PLAIN) : raw;
	FUZZ_CHECK(buf_append(&o->sink, js, strlen(js) + 1) == 0);
}

/* The answer is in neutral form; written to o->result. */
static void
check_message(struct outcome *o, json_object *m)
{
	json_object *content, *v;
	const char *role;

	FUZZ_CHECK(m && json_object_is_type(m, json_type_object));
	FUZZ_CHECK(json_object_object_get_ex(m, "role", &v));
	role = json_object_get_string(v);
	FUZZ_CHECK(role && strcmp(role, "assistant") == 0);
	FUZZ_CHECK(json_object_object_get_ex(m, "content", &content));
	FUZZ_CHECK(json_object_is_type(content, json_type_array));
	for (size_t i = 0; i < json_object_array_length(content); i++) {
		json_object *b = json_object_array_get_idx(content, i), *t;
		const char *type;

		FUZZ_CHECK(json_object_object_get_ex(b, "type", &t));
		type = json_object_get_string(t);
		if (strcmp(type, "text") == 0) {
			FUZZ_CHECK(json_object_object_get_ex(b, "text", &v));
			FUZZ_CHECK(json_object_is_type(v, json_type_string));
			FUZZ_CHECK(json_object_get_string_len(v) > 0);
			FUZZ_CHECK(buf_append(&o->result, "t", 1) == 0);
			FUZZ_CHECK(buf_append(&o->result,
			    json_object_get_string(v),
			    (size_t)json_object_get_string_len(v)) == 0);
			continue;
		}
		FUZZ_CHECK(strcmp(type, "tool_use") == 0);
		FUZZ_CHECK(json_object_object_get_ex(b, "id", &v) &&
		    json_object_is_type(v, json_type_string));
		FUZZ_CHECK(buf_append(&o->result, "u", 1) == 0);
		put_id(&o->result, json_object_get_string(v));
		FUZZ_CHECK(json_object_object_get_ex(b, "name", &v) &&
		    json_object_is_type(v, json_type_string));
		FUZZ_CHECK(json_object_object_get_ex(b, "input", &v) &&
		    json_object_is_type(v, json_type_object));
		FUZZ_CHECK(buf_printf(&o->result, "%s",
		    json_object_to_json_string_ext(v,
		    JSON_C_TO_STRING_PLAIN)) == 0);
	}
}

/* Record the codes and getters of a finished stream. */
static void
record(struct outcome *o, struct provider_stream *s, enum provider_kind kind,
    int feed_rc, int finish_rc)
{
	const char *stop = provider_stream_stop_reason(s), *msg = NULL;
	const char *type = provider_stream_error(s, &msg);
	long in = -1, out = -1;
	json_object *m;

	FUZZ_CHECK(feed_rc == 0 || feed_rc == -EPROTO ||
	    feed_rc == -EBADMSG || feed_rc == -ENOMEM);
	FUZZ_CHECK(finish_rc == 0 || finish_rc == -EPIPE ||
	    finish_rc == feed_rc || feed_rc == 0);
	if (feed_rc || finish_rc)
		FUZZ_CHECK(type && *type && msg);
	if (kind == PROVIDER_OPENAI && stop)
		FUZZ_CHECK(!strcmp(stop, "end_turn") ||
		    !strcmp(stop, "max_tokens") || !strcmp(stop, "tool_use") ||
		    !strcmp(stop, "refusal"));
	provider_stream_usage(s, &in, &out);
	FUZZ_CHECK(in >= 0 && in <= (1L << 40));	/* callers add these */
	FUZZ_CHECK(out >= 0 && out <= (1L << 40));
	FUZZ_CHECK(buf_printf(&o->result, "feed %d finish %d stop %s usage "
	    "%ld %ld error %s: %s\n", feed_rc, finish_rc, stop ? stop : "-",
	    in, out, type ? type : "-", msg ? msg : "-") == 0);
	m = provider_stream_message(s);
	check_message(o, m);
	json_object_put(m);
}

/* Parse the body as kind by one plan. */
static void
run(const uint8_t *p, size_t n, enum provider_kind kind, enum fuzz_plan plan,
    struct outcome *o)
{
	struct provider_sink sink = { .arg = o, .text = on_text,
	    .tool_call = on_tool };
	struct provider_stream *s = provider_stream_new(kind, &sink);
	struct fuzz_split sp;
	size_t off = 0;
	int feed_rc = 0, finish_rc, r;

	FUZZ_CHECK(s != NULL);
	fuzz_split_init(&sp, plan, p, n, 0);
	while (off < n) {
		size_t k = fuzz_split_next(&sp, n - off);

		r = provider_stream_feed(s, (const char *)p + off, k);
		if (feed_rc)
			FUZZ_CHECK(r == feed_rc);	/* errors stick */
		feed_rc = r;
		off += k;
	}
	finish_rc = provider_stream_finish(s);
	FUZZ_CHECK(provider_stream_finish(s) == finish_rc);
	if (finish_rc)
		FUZZ_CHECK(provider_stream_feed(s, "\n", 1) == finish_rc);
	record(o, s, kind, feed_rc, finish_rc);
	provider_stream_free(s);
}

/* Two outcomes are the same. */
static void
check_same(const struct outcome *a, const struct outcome *b)
{
	FUZZ_CHECK(a->sink.len == b->sink.len);
	FUZZ_CHECK(a->sink.len == 0 ||
	    memcmp(a->sink.data, b->sink.data, a->sink.len) == 0);
	if (a->result.len != b->result.len ||
	    memcmp(a->result.data, b->result.data, a->result.len) != 0)
		fprintf(stderr, "whole: %s\nsplit: %s\n", a->result.data,
		    b->result.data);
	FUZZ_CHECK(a->result.len == b->result.len);
	FUZZ_CHECK(memcmp(a->result.data, b->result.data, a->result.len) == 0);
}

/* libFuzzer's entry: One body: both kinds, every plan, all alike. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum provider_kind kinds[] =
	    { PROVIDER_ANTHROPIC, PROVIDER_OPENAI };

	for (size_t k = 0; k < 2; k++) {
		struct outcome o[FUZZ_NPLANS];

		for (int plan = 0; plan < FUZZ_NPLANS; plan++) {
			buf_init(&o[plan].sink, OUT_MAX);
			buf_init(&o[plan].result, OUT_MAX);
			run(data, size, kinds[k], (enum fuzz_plan)plan,
			    &o[plan]);
			if (plan > 0)
				check_same(&o[0], &o[plan]);
		}
		for (int plan = 0; plan < FUZZ_NPLANS; plan++) {
			buf_free(&o[plan].sink);
			buf_free(&o[plan].result);
		}
	}
	return 0;
}
