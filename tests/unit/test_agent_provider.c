/*
 * test_agent_provider.c: the providers' wire formats
 * (agent/provider/provider*.c).
 *
 * Streams shaped as the providers' documentation shows them are fed whole,
 * byte by byte and split at every position; each way must give the same
 * text, tool calls, stop reason, usage and neutral message.  Then error
 * events, cut streams, malformed tool input, the request bodies built from
 * a neutral transcript, error bodies, and retry decisions and delays.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "unit.h"
#include "../../agent/provider/provider.h"

/* --- a recording sink and a run summary ------------------------------- */

struct rec {
	char text[8192];
	size_t len;
	json_object *calls;	/* [{id, name, input|null, raw|null}] */
};

static void
rec_text(void *arg, const char *t, size_t n)
{
	struct rec *r = arg;

	CHECK(n > 0);
	if (r->len + n < sizeof(r->text)) {
		memcpy(r->text + r->len, t, n);
		r->len += n;
		r->text[r->len] = '\0';
	}
}

static void
rec_tool(void *arg, const char *id, const char *name, json_object *input,
    const char *raw)
{
	struct rec *r = arg;
	json_object *c = json_object_new_object();

	CHECK((input == NULL) == (raw != NULL));
	json_object_object_add(c, "id", json_object_new_string(id));
	json_object_object_add(c, "name", json_object_new_string(name));
	json_object_object_add(c, "input", json_object_get(input));
	json_object_object_add(c, "raw", raw ? json_object_new_string(raw) :
	    NULL);
	json_object_array_add(r->calls, c);
}

/* Run text through a stream cut at cut1 and cut2 (n for none, or 0 for
 * byte by byte when bytewise); a JSON summary of everything seen. */
static json_object *
run(enum provider_kind kind, const char *text, size_t cut1, size_t cut2,
    int bytewise)
{
	struct rec r = { .len = 0 };
	struct provider_sink sink = { &r, rec_text, rec_tool };
	struct provider_stream *s;
	json_object *sum = json_object_new_object();
	size_t n = strlen(text), at = 0, cuts[3] = { cut1, cut2, n };
	const char *et, *em = NULL;
	long in, out;
	int rc = 0, frc;

	r.text[0] = '\0';
	r.calls = json_object_new_array();
	s = provider_stream_new(kind, &sink);
	if (bytewise) {
		for (size_t i = 0; i < n && !rc; i++)
			rc = provider_stream_feed(s, text + i, 1);
	} else {
		for (int k = 0; k < 3 && !rc; k++) {
			rc = provider_stream_feed(s, text + at, cuts[k] - at);
			at = cuts[k];
		}
	}
	frc = provider_stream_finish(s);
	provider_stream_usage(s, &in, &out);
	et = provider_stream_error(s, &em);
	json_object_object_add(sum, "feed", json_object_new_int(rc));
	json_object_object_add(sum, "finish", json_object_new_int(frc));
	json_object_object_add(sum, "text", json_object_new_string(r.text));
	json_object_object_add(sum, "calls", r.calls);
	json_object_object_add(sum, "stop", provider_stream_stop_reason(s) ?
	    json_object_new_string(provider_stream_stop_reason(s)) : NULL);
	json_object_object_add(sum, "in", json_object_new_int64(in));
	json_object_object_add(sum, "out", json_object_new_int64(out));
	json_object_object_add(sum, "message", provider_stream_message(s));
	json_object_object_add(sum, "etype", et ? json_object_new_string(et) :
	    NULL);
	json_object_object_add(sum, "emsg", em ? json_object_new_string(em) :
	    NULL);
	provider_stream_free(s);
	return sum;
}

/* Made-up ids differ per stream: compare summaries without them. */
static const char *
summary_key(json_object *sum, char *out, size_t outlen)
{
	const char *js = json_object_to_json_string_ext(sum,
	    JSON_C_TO_STRING_PLAIN);
	size_t o = 0;

	for (size_t i = 0; js[i] && o + 1 < outlen; i++) {
		if (strncmp(js + i, "\"call_", 6) == 0 && js[i + 6] >= '0' &&
		    js[i + 6] <= 'f' && strlen(js + i) > 20 &&
		    strchr("0123456789abcdef", js[i + 6])) {
			/* "call_" + 14 hex digits: mask the random part. */
			size_t k = i + 6;

			while (strchr("0123456789abcdef", js[k]) && js[k])
				k++;
			if (k - (i + 6) == 14) {
				o += (size_t)snprintf(out + o, outlen - o,
				    "\"call_ID%c%c", js[k - 2], js[k - 1]);
				i = k - 1;
				continue;
			}
		}
		out[o++] = js[i];
	}
	out[o] = '\0';
	return out;
}

/* The summary of text fed whole, checked against every split and byte by
 * byte.  Caller puts the result. */
static json_object *
run_all(enum provider_kind kind, const char *text)
{
	static char want[65536], got[65536];
	json_object *whole = run(kind, text, 0, 0, 0), *o;
	size_t n = strlen(text);

	summary_key(whole, want, sizeof(want));
	o = run(kind, text, 0, 0, 1);
	CHECK_STR(summary_key(o, got, sizeof(got)), want);
	json_object_put(o);
	for (size_t i = 1; i < n; i++) {
		o = run(kind, text, i, i, 0);
		summary_key(o, got, sizeof(got));
		json_object_put(o);
		if (strcmp(got, want) != 0) {
			fprintf(stderr, "split at %zu differs\n", i);
			CHECK_STR(got, want);
			break;
		}
	}
	for (size_t i = 1; i < n; i += 7) {
		o = run(kind, text, i, i + (n - i) / 2, 0);
		summary_key(o, got, sizeof(got));
		json_object_put(o);
		if (strcmp(got, want) != 0) {
			fprintf(stderr, "splits at %zu,%zu differ\n", i,
			    i + (n - i) / 2);
			CHECK_STR(got, want);
			break;
		}
	}
	return whole;
}

static json_object *
get(json_object *o, const char *path)
{
	char key[64];
	const char *dot;

	while (o && *path) {
		dot = strchr(path, '.');
		snprintf(key, sizeof(key), "%.*s", dot ? (int)(dot - path) :
		    (int)strlen(path), path);
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(key));
		else if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path = dot ? dot + 1 : "";
	}
	return o;
}

static const char *
gets(json_object *o, const char *path)
{
	json_object *v = get(o, path);

	return v ? json_object_get_string(v) : "(absent)";
}

static long
geti(json_object *o, const char *path)
{
	json_object *v = get(o, path);

	return v ? (long)json_object_get_int64(v) : -999;
}

/* --- Anthropic streams ------------------------------------------------ */

#define EV(name, data) "event: " name "\ndata: " data "\n\n"

static const char anth_tools[] =
    EV("message_start", "{\"type\": \"message_start\", \"message\": {\"id\": "
	"\"msg_014p7gG3wDgGV9EUtLvnow3U\", \"type\": \"message\", \"role\": "
	"\"assistant\", \"model\": \"claude-sonnet-4-5\", \"stop_sequence\": "
	"null, \"usage\": {\"input_tokens\": 472, \"cache_read_input_tokens\": "
	"8, \"output_tokens\": 2}, \"content\": [], \"stop_reason\": null}}")
    EV("content_block_start", "{\"type\": \"content_block_start\", "
	"\"index\": 0, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}")
    EV("ping", "{\"type\": \"ping\"}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": "
	"\"Okay, let\\u2019s check\"}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": "
	"\" the weather:\\n\"}}")
    EV("content_block_stop", "{\"type\": \"content_block_stop\", \"index\": 0}")
    EV("content_block_start", "{\"type\": \"content_block_start\", "
	"\"index\": 1, \"content_block\": {\"type\": \"tool_use\", \"id\": "
	"\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\", \"name\": \"get_weather\", "
	"\"input\": {}}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 1, \"delta\": {\"type\": \"input_json_delta\", "
	"\"partial_json\": \"\"}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 1, \"delta\": {\"type\": \"input_json_delta\", "
	"\"partial_json\": \"{\\\"location\\\":\"}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 1, \"delta\": {\"type\": \"input_json_delta\", "
	"\"partial_json\": \" \\\"San Francisco, CA\\\", \\\"unit\\\": "
	"\\\"fahrenheit\\\"}\"}}")
    EV("content_block_stop", "{\"type\": \"content_block_stop\", \"index\": 1}")
    EV("content_block_start", "{\"type\": \"content_block_start\", "
	"\"index\": 2, \"content_block\": {\"type\": \"tool_use\", \"id\": "
	"\"toolu_02\", \"name\": \"get_time\", \"input\": {}}}")
    EV("content_block_stop", "{\"type\": \"content_block_stop\", \"index\": 2}")
    EV("message_delta", "{\"type\": \"message_delta\", \"delta\": "
	"{\"stop_reason\": \"tool_use\", \"stop_sequence\": null}, \"usage\": "
	"{\"output_tokens\": 89}}")
    EV("message_stop", "{\"type\": \"message_stop\"}");

static void
test_anthropic_tools(void)
{
	json_object *s = run_all(PROVIDER_ANTHROPIC, anth_tools);

	CHECK_INT(geti(s, "feed"), 0);
	CHECK_INT(geti(s, "finish"), 0);
	CHECK_STR(gets(s, "text"), "Okay, let\xe2\x80\x99s check the weather:\n");
	CHECK_INT(json_object_array_length(get(s, "calls")), 2);
	CHECK_STR(gets(s, "calls.0.id"), "toolu_01T1x1fJ34qAmk2tNTrN7Up6");
	CHECK_STR(gets(s, "calls.0.name"), "get_weather");
	CHECK_STR(gets(s, "calls.0.input.location"), "San Francisco, CA");
	CHECK_STR(gets(s, "calls.0.input.unit"), "fahrenheit");
	CHECK_STR(gets(s, "calls.1.name"), "get_time");
	CHECK(json_object_is_type(get(s, "calls.1.input"), json_type_object));
	CHECK_INT(json_object_object_length(get(s, "calls.1.input")), 0);
	CHECK_STR(gets(s, "stop"), "tool_use");
	CHECK_INT(geti(s, "in"), 480);
	CHECK_INT(geti(s, "out"), 89);
	CHECK_STR(json_object_to_json_string_ext(get(s, "message"),
	    JSON_C_TO_STRING_PLAIN),
	    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
	    "\"Okay, let\xe2\x80\x99s check the weather:\\n\"},{\"type\":"
	    "\"tool_use\",\"id\":\"toolu_01T1x1fJ34qAmk2tNTrN7Up6\",\"name\":"
	    "\"get_weather\",\"input\":{\"location\":\"San Francisco, CA\","
	    "\"unit\":\"fahrenheit\"}},{\"type\":\"tool_use\",\"id\":"
	    "\"toolu_02\",\"name\":\"get_time\",\"input\":{}}]}");
	json_object_put(s);
}

/* CRLF line ends, no space after data:, a thinking block and an event type
 * this code does not know: all read the same. */
static const char anth_odd[] =
    "event: message_start\r\ndata:{\"type\":\"message_start\",\"message\":"
    "{\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\r\n\r\n"
    ": keep-alive\r\n\r\n"
    "event: content_block_start\r\ndata:{\"type\":\"content_block_start\","
    "\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}"
    "\r\n\r\n"
    "event: content_block_delta\r\ndata:{\"type\":\"content_block_delta\","
    "\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}"
    "\r\n\r\n"
    "event: content_block_delta\r\ndata:{\"type\":\"content_block_delta\","
    "\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"x\"}}"
    "\r\n\r\n"
    "event: content_block_stop\r\ndata:{\"type\":\"content_block_stop\","
    "\"index\":0}\r\n\r\n"
    "event: brand_new_event\r\ndata:{\"type\":\"brand_new_event\",\"x\":1}"
    "\r\n\r\n"
    "event: content_block_start\r\ndata:{\"type\":\"content_block_start\","
    "\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n"
    "event: content_block_delta\r\ndata:{\"type\":\"content_block_delta\","
    "\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\r\n\r\n"
    "event: content_block_stop\r\ndata:{\"type\":\"content_block_stop\","
    "\"index\":1}\r\n\r\n"
    "event: message_delta\r\ndata:{\"type\":\"message_delta\",\"delta\":"
    "{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":7}}\r\n\r\n"
    "event: message_stop\r\ndata:{\"type\":\"message_stop\"}\r\n\r\n";

static void
test_anthropic_unknown_parts(void)
{
	json_object *s = run_all(PROVIDER_ANTHROPIC, anth_odd);

	CHECK_INT(geti(s, "finish"), 0);
	CHECK_STR(gets(s, "text"), "Hi");
	CHECK_INT(json_object_array_length(get(s, "calls")), 0);
	CHECK_STR(gets(s, "stop"), "max_tokens");
	CHECK_INT(geti(s, "in"), 10);
	CHECK_INT(geti(s, "out"), 7);
	CHECK_STR(json_object_to_json_string_ext(get(s, "message"),
	    JSON_C_TO_STRING_PLAIN), "{\"role\":\"assistant\",\"content\":"
	    "[{\"type\":\"text\",\"text\":\"Hi\"}]}");
	json_object_put(s);
}

static const char anth_error[] =
    EV("message_start", "{\"type\": \"message_start\", \"message\": "
	"{\"usage\": {\"input_tokens\": 5, \"output_tokens\": 1}}}")
    EV("content_block_start", "{\"type\": \"content_block_start\", "
	"\"index\": 0, \"content_block\": {\"type\": \"text\", \"text\": \"\"}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"Par\"}}")
    EV("error", "{\"type\": \"error\", \"error\": {\"type\": "
	"\"overloaded_error\", \"message\": \"Overloaded\"}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \"tial\"}}");

static void
test_anthropic_error_event(void)
{
	json_object *s = run_all(PROVIDER_ANTHROPIC, anth_error);

	CHECK_INT(geti(s, "feed"), -EPROTO);
	CHECK_INT(geti(s, "finish"), -EPROTO);
	CHECK_STR(gets(s, "text"), "Par");
	CHECK_STR(gets(s, "etype"), "overloaded_error");
	CHECK_STR(gets(s, "emsg"), "Overloaded");
	CHECK(provider_error_retryable("overloaded_error"));
	CHECK(provider_should_retry(200, "{\"type\": \"error\", \"error\": "
	    "{\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}", 80));
	json_object_put(s);
}

static void
test_anthropic_cut(void)
{
	size_t n = strlen(anth_tools);
	char *half = strndup(anth_tools, n / 2);
	char *cut_line = strndup(anth_tools, n - 20);
	char *no_stop = strndup(anth_tools, (size_t)(strstr(anth_tools,
	    "event: message_stop") - anth_tools));
	json_object *s;

	s = run_all(PROVIDER_ANTHROPIC, half);
	CHECK_INT(geti(s, "feed"), 0);
	CHECK_INT(geti(s, "finish"), -EPIPE);
	CHECK_STR(gets(s, "etype"), "stream_cut");
	json_object_put(s);
	s = run_all(PROVIDER_ANTHROPIC, cut_line);
	CHECK_INT(geti(s, "finish"), -EPIPE);
	json_object_put(s);
	/* Everything but message_stop: still cut. */
	s = run_all(PROVIDER_ANTHROPIC, no_stop);
	CHECK_INT(geti(s, "finish"), -EPIPE);
	CHECK_STR(gets(s, "stop"), "tool_use");
	json_object_put(s);
	free(half);
	free(cut_line);
	free(no_stop);
}

static const char anth_bad_json[] =
    EV("message_start", "{\"type\": \"message_start\", \"message\": {}}")
    EV("content_block_start", "{\"type\": \"content_block_start\", "
	"\"index\": 0, \"content_block\": {\"type\": \"tool_use\", \"id\": "
	"\"toolu_9\", \"name\": \"bash\", \"input\": {}}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 0, \"delta\": {\"type\": \"input_json_delta\", "
	"\"partial_json\": \"{\\\"command\\\": \\\"ls\"}}")
    EV("content_block_stop", "{\"type\": \"content_block_stop\", \"index\": 0}")
    EV("content_block_start", "{\"type\": \"content_block_start\", "
	"\"index\": 1, \"content_block\": {\"type\": \"tool_use\", \"id\": "
	"\"toolu_10\", \"name\": \"bash\", \"input\": {}}}")
    EV("content_block_delta", "{\"type\": \"content_block_delta\", "
	"\"index\": 1, \"delta\": {\"type\": \"input_json_delta\", "
	"\"partial_json\": \"[1, 2]\"}}")
    EV("content_block_stop", "{\"type\": \"content_block_stop\", \"index\": 1}")
    EV("message_delta", "{\"type\": \"message_delta\", \"delta\": "
	"{\"stop_reason\": \"tool_use\"}, \"usage\": {\"output_tokens\": 9}}")
    EV("message_stop", "{\"type\": \"message_stop\"}");

static void
test_anthropic_malformed_tool(void)
{
	json_object *s = run_all(PROVIDER_ANTHROPIC, anth_bad_json);

	CHECK_INT(geti(s, "finish"), 0);
	CHECK_INT(json_object_array_length(get(s, "calls")), 2);
	CHECK(get(s, "calls.0.input") == NULL);
	CHECK_STR(gets(s, "calls.0.raw"), "{\"command\": \"ls");
	CHECK(get(s, "calls.1.input") == NULL);
	CHECK_STR(gets(s, "calls.1.raw"), "[1, 2]");
	/* The transcript keeps a valid tool_use (input {}). */
	CHECK(json_object_is_type(get(s, "message.content.0.input"),
	    json_type_object));
	CHECK_STR(gets(s, "message.content.0.id"), "toolu_9");
	json_object_put(s);
}

static void
test_anthropic_not_json(void)
{
	json_object *s = run(PROVIDER_ANTHROPIC,
	    "event: message_start\ndata: <html>oops</html>\n\n", 0, 0, 0);

	CHECK_INT(geti(s, "feed"), -EBADMSG);
	CHECK_STR(gets(s, "etype"), "invalid_stream");
	json_object_put(s);
}

/* --- OpenAI streams ---------------------------------------------------- */

#define CHUNK(choices) "data: {\"id\":\"chatcmpl-123\",\"object\":" \
	"\"chat.completion.chunk\",\"created\":1694268190,\"model\":" \
	"\"gpt-4o-mini\",\"system_fingerprint\":\"fp_44709d6fcb\"," \
	"\"choices\":[" choices "]}\n\n"
#define DELTA(d, f) "{\"index\":0,\"delta\":" d ",\"logprobs\":null," \
	"\"finish_reason\":" f "}"

static const char oai_tools[] =
    CHUNK(DELTA("{\"role\":\"assistant\",\"content\":\"\"}", "null"))
    CHUNK(DELTA("{\"content\":\"Let me \"}", "null"))
    CHUNK(DELTA("{\"content\":\"check.\"}", "null"))
    CHUNK(DELTA("{\"tool_calls\":[{\"index\":0,\"id\":\"call_abc\",\"type\":"
	"\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":"
	"\"\"}}]}", "null"))
    CHUNK(DELTA("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
	"\"{\\\"location\\\":\"}}]}", "null"))
    CHUNK(DELTA("{\"tool_calls\":[{\"index\":1,\"id\":\"call_def\",\"type\":"
	"\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":"
	"\"\"}}]}", "null"))
    CHUNK(DELTA("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
	"\" \\\"Paris\\\"}\"}}]}", "null"))
    CHUNK(DELTA("{}", "\"tool_calls\""))
    "data: {\"id\":\"chatcmpl-123\",\"object\":\"chat.completion.chunk\","
    "\"created\":1694268190,\"model\":\"gpt-4o-mini\",\"choices\":[],"
    "\"usage\":{\"prompt_tokens\":82,\"completion_tokens\":17,"
    "\"total_tokens\":99}}\n\n"
    "data: [DONE]\n\n";

static void
test_openai_tools(void)
{
	json_object *s = run_all(PROVIDER_OPENAI, oai_tools);

	CHECK_INT(geti(s, "feed"), 0);
	CHECK_INT(geti(s, "finish"), 0);
	CHECK_STR(gets(s, "text"), "Let me check.");
	CHECK_INT(json_object_array_length(get(s, "calls")), 2);
	CHECK_STR(gets(s, "calls.0.id"), "call_abc");
	CHECK_STR(gets(s, "calls.0.name"), "get_weather");
	CHECK_STR(gets(s, "calls.0.input.location"), "Paris");
	CHECK_STR(gets(s, "calls.1.id"), "call_def");
	CHECK_STR(gets(s, "calls.1.name"), "get_time");
	CHECK_INT(json_object_object_length(get(s, "calls.1.input")), 0);
	CHECK_STR(gets(s, "stop"), "tool_use");
	CHECK_INT(geti(s, "in"), 82);
	CHECK_INT(geti(s, "out"), 17);
	CHECK_STR(json_object_to_json_string_ext(get(s, "message"),
	    JSON_C_TO_STRING_PLAIN),
	    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
	    "\"Let me check.\"},{\"type\":\"tool_use\",\"id\":\"call_abc\","
	    "\"name\":\"get_weather\",\"input\":{\"location\":\"Paris\"}},"
	    "{\"type\":\"tool_use\",\"id\":\"call_def\",\"name\":\"get_time\","
	    "\"input\":{}}]}");
	json_object_put(s);
}

static const char oai_text[] =
    CHUNK(DELTA("{\"role\":\"assistant\",\"content\":\"\"}", "null"))
    CHUNK(DELTA("{\"content\":\"Hello\"}", "null"))
    CHUNK(DELTA("{\"content\":\" world\"}", "null"))
    CHUNK(DELTA("{}", "\"length\""))
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,"
    "\"completion_tokens\":2}}\n\n"
    "data: [DONE]\n\n";

static void
test_openai_text(void)
{
	json_object *s = run_all(PROVIDER_OPENAI, oai_text);

	CHECK_INT(geti(s, "finish"), 0);
	CHECK_STR(gets(s, "text"), "Hello world");
	CHECK_STR(gets(s, "stop"), "max_tokens");
	CHECK_STR(gets(s, "message.content.0.text"), "Hello world");
	json_object_put(s);
}

/* Ollama: each call whole in one chunk, several in one array, no ids and no
 * index, finish_reason "stop" although it called tools. */
static const char oai_ollama[] =
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
    "\"created\":1,\"model\":\"llama3.2\",\"system_fingerprint\":"
    "\"fp_ollama\",\"choices\":[{\"index\":0,\"delta\":{\"role\":"
    "\"assistant\",\"content\":\"\",\"tool_calls\":[{\"type\":\"function\","
    "\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":"
    "\\\"ls\\\"}\"}},{\"type\":\"function\",\"function\":{\"name\":\"bash\","
    "\"arguments\":\"{\\\"command\\\":\\\"pwd\\\"}\"}}]},\"finish_reason\":"
    "null}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\","
    "\"created\":1,\"model\":\"llama3.2\",\"choices\":[{\"index\":0,"
    "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":"
    "\"stop\"}]}\n\n"
    "data: {\"id\":\"chatcmpl-1\",\"choices\":[],\"usage\":{"
    "\"prompt_tokens\":120,\"completion_tokens\":30}}\n\n"
    "data: [DONE]\n\n";

/* Ollama's newer shape: index 0 on every whole call, distinct ids. */
static const char oai_ollama_idx[] =
    CHUNK(DELTA("{\"tool_calls\":[{\"id\":\"call_a1\",\"index\":0,\"type\":"
	"\"function\",\"function\":{\"name\":\"read\",\"arguments\":"
	"\"{\\\"path\\\":\\\"a\\\"}\"}}]}", "null"))
    CHUNK(DELTA("{\"tool_calls\":[{\"id\":\"call_b2\",\"index\":0,\"type\":"
	"\"function\",\"function\":{\"name\":\"read\",\"arguments\":"
	"\"{\\\"path\\\":\\\"b\\\"}\"}}]}", "null"))
    CHUNK(DELTA("{}", "\"tool_calls\""))
    "data: [DONE]\n\n";

static void
test_openai_ollama(void)
{
	json_object *s = run_all(PROVIDER_OPENAI, oai_ollama);
	const char *id0, *id1;

	CHECK_INT(geti(s, "finish"), 0);
	CHECK_INT(json_object_array_length(get(s, "calls")), 2);
	CHECK_STR(gets(s, "calls.0.input.command"), "ls");
	CHECK_STR(gets(s, "calls.1.input.command"), "pwd");
	id0 = gets(s, "calls.0.id");
	id1 = gets(s, "calls.1.id");
	CHECK(strncmp(id0, "call_", 5) == 0 && strlen(id0) > 8);
	CHECK(strcmp(id0, id1) != 0);
	CHECK_STR(gets(s, "message.content.0.id"), id0);
	CHECK_STR(gets(s, "stop"), "tool_use");
	CHECK_INT(geti(s, "in"), 120);
	json_object_put(s);

	s = run_all(PROVIDER_OPENAI, oai_ollama_idx);
	CHECK_INT(json_object_array_length(get(s, "calls")), 2);
	CHECK_STR(gets(s, "calls.0.id"), "call_a1");
	CHECK_STR(gets(s, "calls.0.input.path"), "a");
	CHECK_STR(gets(s, "calls.1.id"), "call_b2");
	CHECK_STR(gets(s, "calls.1.input.path"), "b");
	json_object_put(s);
}

/* Workers AI: finish_reason only on the usage chunk; or none at all. */
static const char oai_workers[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},"
    "\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},"
    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":4,"
    "\"completion_tokens\":1,\"total_tokens\":5}}\n\n"
    "data: [DONE]\n\n";
static const char oai_workers_bare[] =
    "data: {\"response\":\"\",\"choices\":[{\"index\":0,\"delta\":"
    "{\"content\":\"Hi\"}}]}\n\n"
    "data: [DONE]\n\n";
static const char oai_no_done[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},"
    "\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
    "\"stop\"}]}\n\n";
static const char oai_cut[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},"
    "\"finish_reason\":null}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":"
    "0,\"id\":\"call_1\",\"function\":{\"name\":\"bash\",\"arguments\":"
    "\"{\\\"co\"}}]},\"finish_reason\":null}]}\n\n";

static void
test_openai_endings(void)
{
	json_object *s = run_all(PROVIDER_OPENAI, oai_workers);

	CHECK_INT(geti(s, "finish"), 0);
	CHECK_STR(gets(s, "text"), "Hi");
	CHECK_STR(gets(s, "stop"), "end_turn");
	CHECK_INT(geti(s, "in"), 4);
	CHECK_INT(geti(s, "out"), 1);
	json_object_put(s);

	s = run_all(PROVIDER_OPENAI, oai_workers_bare);
	CHECK_INT(geti(s, "finish"), 0);
	CHECK_STR(gets(s, "stop"), "end_turn");
	CHECK_STR(gets(s, "message.content.0.text"), "Hi");
	json_object_put(s);

	/* A finish_reason and a clean end without [DONE]: complete. */
	s = run_all(PROVIDER_OPENAI, oai_no_done);
	CHECK_INT(geti(s, "finish"), 0);
	CHECK_STR(gets(s, "stop"), "end_turn");
	json_object_put(s);

	/* Neither: cut, and the half call never reaches the sink. */
	s = run_all(PROVIDER_OPENAI, oai_cut);
	CHECK_INT(geti(s, "finish"), -EPIPE);
	CHECK_STR(gets(s, "etype"), "stream_cut");
	CHECK_INT(json_object_array_length(get(s, "calls")), 0);
	json_object_put(s);
}

static const char oai_error[] =
    CHUNK(DELTA("{\"content\":\"Hel\"}", "null"))
    "data: {\"error\":{\"message\":\"The server had an error while "
    "processing your request.\",\"type\":\"server_error\",\"param\":null,"
    "\"code\":null}}\n\n";
static const char oai_error_vllm[] =
    "data: {\"object\":\"error\",\"message\":\"max_tokens is too large\","
    "\"type\":\"BadRequestError\",\"param\":null,\"code\":400}\n\n";

static void
test_openai_error(void)
{
	json_object *s = run_all(PROVIDER_OPENAI, oai_error);

	CHECK_INT(geti(s, "feed"), -EPROTO);
	CHECK_STR(gets(s, "etype"), "server_error");
	CHECK_STR(gets(s, "emsg"), "The server had an error while processing "
	    "your request.");
	CHECK(provider_error_retryable(gets(s, "etype")));
	json_object_put(s);

	s = run_all(PROVIDER_OPENAI, oai_error_vllm);
	CHECK_INT(geti(s, "feed"), -EPROTO);
	CHECK_STR(gets(s, "etype"), "BadRequestError");
	CHECK(!provider_error_retryable(gets(s, "etype")));
	json_object_put(s);
}

/* llama-server: Anthropic-format error event with its own data shape, and
 * the OpenAI-format "error:" line (not an SSE field the standard knows). */
static const char llama_anth_error[] =
    EV("message_start", "{\"type\":\"message_start\",\"message\":"
	"{\"usage\":{\"input_tokens\":5,\"output_tokens\":0}}}")
    EV("content_block_start", "{\"type\":\"content_block_start\","
	"\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}")
    EV("content_block_delta", "{\"type\":\"content_block_delta\","
	"\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Ok.\"}}")
    EV("error", "{\"code\":500,\"message\":\"Failed to parse tool call "
	"arguments\\n\\u0007\\u001b[31mbad\",\"type\":\"server_error\"}");
static const char llama_oai_error[] =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Ok.\"}}]}"
    "\n\n"
    "error: {\"code\":500,\"message\":\"the request exceeds the available "
    "context size\",\"type\":\"server_error\"}\n\n";

static void
test_llama_error_shapes(void)
{
	json_object *s = run_all(PROVIDER_ANTHROPIC, llama_anth_error);

	CHECK_INT(geti(s, "feed"), -EPROTO);
	CHECK_STR(gets(s, "text"), "Ok.");
	CHECK_STR(gets(s, "etype"), "server_error");
	/* The server's words, made one printable line. */
	CHECK_STR(gets(s, "emsg"), "Failed to parse tool call arguments "
	    "[31mbad");
	CHECK(provider_error_retryable(gets(s, "etype")));
	json_object_put(s);

	s = run_all(PROVIDER_OPENAI, llama_oai_error);
	CHECK_INT(geti(s, "feed"), -EPROTO);
	CHECK_STR(gets(s, "etype"), "server_error");
	CHECK_STR(gets(s, "emsg"), "the request exceeds the available context "
	    "size");
	json_object_put(s);
}

static void
test_openai_malformed_tool(void)
{
	json_object *s = run(PROVIDER_OPENAI,
	    CHUNK(DELTA("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\","
	    "\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":"
	    " ls}\"}}]}", "\"tool_calls\"")) "data: [DONE]\n\n", 0, 0, 0);

	CHECK_INT(geti(s, "finish"), 0);
	CHECK(get(s, "calls.0.input") == NULL);
	CHECK_STR(gets(s, "calls.0.raw"), "{\"command\": ls}");
	CHECK_INT(json_object_object_length(get(s, "message.content.0.input")),
	    0);
	json_object_put(s);
}

/* --- requests ---------------------------------------------------------- */

static const char transcript_json[] =
    "[{\"role\":\"user\",\"content\":\"List files\"},"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":"
    "\"Sure.\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"bash\","
    "\"input\":{\"command\":\"ls\"}},{\"type\":\"tool_use\",\"id\":"
    "\"call.bad:id\",\"name\":\"bash\",\"input\":{\"command\":\"pwd\"}}]},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
    "\"tool_use_id\":\"toolu_1\",\"content\":\"a\\nb\",\"is_error\":false},"
    "{\"type\":\"tool_result\",\"tool_use_id\":\"call.bad:id\",\"content\":"
    "[{\"type\":\"text\",\"text\":\"exit 1\"}],\"is_error\":true}]},"
    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
    "\"and again\"}],\"ts\":\"2026-01-01\"},"
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"\"}]},"
    "{\"role\":\"user\",\"content\":\"continue\"}]";
static const char tools_json[] =
    "[{\"name\":\"bash\",\"description\":\"Run a command\",\"input_schema\":"
    "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"}},"
    "\"required\":[\"command\"]}}]";

static int
has_header(struct provider_http *h, const char *line)
{
	for (size_t i = 0; h->headers && h->headers[i]; i++)
		if (strcasecmp(h->headers[i], line) == 0)
			return 1;
	return 0;
}

static int
has_header_named(struct provider_http *h, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; h->headers && h->headers[i]; i++)
		if (strncasecmp(h->headers[i], name, n) == 0 &&
		    h->headers[i][n] == ':')
			return 1;
	return 0;
}

static void
test_request_anthropic(void)
{
	json_object *msgs = json_tokener_parse(transcript_json);
	json_object *tools = json_tokener_parse(tools_json), *b;
	struct provider_request req = { "claude-sonnet-4-5", "Be brief.", msgs,
	    tools, 1024, NULL };
	struct provider_http h;

	CHECK_INT(provider_build(PROVIDER_ANTHROPIC, "http://127.0.0.1:9/",
	    "sk-ant-test", &req, &h), 0);
	CHECK_STR(h.url, "http://127.0.0.1:9/v1/messages");
	CHECK(has_header(&h, "content-type: application/json"));
	CHECK(has_header(&h, "anthropic-version: 2023-06-01"));
	CHECK(has_header(&h, "x-api-key: sk-ant-test"));
	b = json_tokener_parse(h.body);
	CHECK_STR(gets(b, "model"), "claude-sonnet-4-5");
	CHECK_INT(geti(b, "max_tokens"), 1024);
	CHECK(json_object_get_boolean(get(b, "stream")));
	CHECK_STR(gets(b, "system"), "Be brief.");
	CHECK_STR(gets(b, "tools.0.name"), "bash");
	CHECK_STR(gets(b, "tools.0.description"), "Run a command");
	CHECK_STR(gets(b, "tools.0.input_schema.required.0"), "command");
	/* user, assistant, user (results + two texts merged). */
	CHECK_INT(json_object_array_length(get(b, "messages")), 3);
	CHECK_STR(gets(b, "messages.0.content.0.text"), "List files");
	CHECK_STR(gets(b, "messages.1.content.1.input.command"), "ls");
	CHECK_STR(gets(b, "messages.1.content.2.id"), "call_bad_id");
	CHECK_STR(gets(b, "messages.2.content.0.type"), "tool_result");
	CHECK_STR(gets(b, "messages.2.content.1.tool_use_id"), "call_bad_id");
	CHECK_STR(gets(b, "messages.2.content.2.text"), "and again");
	CHECK_STR(gets(b, "messages.2.content.3.text"), "continue");
	CHECK(get(b, "messages.2.ts") == NULL);
	json_object_put(b);
	provider_http_free(&h);
	/* The caller's transcript is left as it was. */
	CHECK_STR(gets(msgs, "1.content.2.id"), "call.bad:id");

	/* No key, a base already ending in /v1, no tools, no system. */
	req.system = NULL;
	req.tools = NULL;
	CHECK_INT(provider_build(PROVIDER_ANTHROPIC, "https://api.example/v1",
	    NULL, &req, &h), 0);
	CHECK_STR(h.url, "https://api.example/v1/messages");
	CHECK(!has_header_named(&h, "x-api-key"));
	b = json_tokener_parse(h.body);
	CHECK(get(b, "tools") == NULL && get(b, "system") == NULL);
	json_object_put(b);
	provider_http_free(&h);

	/* A key that would smuggle a header; no model. */
	CHECK_INT(provider_build(PROVIDER_ANTHROPIC, "http://x", "k\r\nX: y",
	    &req, &h), -EINVAL);
	CHECK(h.url == NULL && h.headers == NULL && h.body == NULL);
	req.model = NULL;
	CHECK_INT(provider_build(PROVIDER_ANTHROPIC, "http://x", NULL, &req,
	    &h), -EINVAL);
	json_object_put(msgs);
	json_object_put(tools);
}

/* The first n messages of all, as a new array of the very same objects
 * (as context.c hands a turn's kept rows to each request). */
static json_object *
prefix_of(json_object *all, size_t n)
{
	json_object *out = json_object_new_array();

	for (size_t i = 0; i < n; i++)
		json_object_array_add(out, json_object_get(
		    json_object_array_get_idx(all, i)));
	return out;
}

/* The body of a request for msgs built with cache (NULL: whole). */
static char *
body_of(enum provider_kind kind, json_object *msgs, json_object *tools,
    struct provider_cache *cache)
{
	struct provider_request req = { "m", "Be brief.", msgs, tools, 100,
	    cache };
	struct provider_http h;
	char *body;

	if (provider_build(kind, "http://127.0.0.1:9/v1", NULL, &req, &h) < 0)
		return NULL;
	body = strdup(h.body);
	provider_http_free(&h);
	return body;
}

/* Does a body built with the turn's cache equal one built whole, step
 * after step of a growing transcript? */
static void
check_cached_steps(enum provider_kind kind, json_object *all,
    json_object *tools, struct provider_cache *cache)
{
	for (size_t n = 0; n <= json_object_array_length(all); n++) {
		json_object *msgs = prefix_of(all, n);
		char *cached = body_of(kind, msgs, tools, cache);
		char *whole = body_of(kind, msgs, tools, NULL);

		CHECK(cached != NULL && whole != NULL);
		if (cached && whole && strcmp(cached, whole) != 0) {
			fprintf(stderr, "kind %d, %zu messages:\n  cached %s\n"
			    "  whole  %s\n", (int)kind, n, cached, whole);
			CHECK(0);
		}
		free(cached);
		free(whole);
		json_object_put(msgs);
	}
}

/* A transcript whose every merge and drop case comes up as it grows: the
 * fixture's, then more steps (an assistant answer and its results). */
static json_object *
growing_transcript(void)
{
	json_object *all = json_tokener_parse(transcript_json);
	char step[300];

	for (int i = 0; i < 6; i++) {
		snprintf(step, sizeof(step), "{\"role\":\"assistant\","
		    "\"content\":[{\"type\":\"tool_use\",\"id\":\"t.%d\","
		    "\"name\":\"read\",\"input\":{\"path\":\"f%d\"}}]}", i, i);
		json_object_array_add(all, json_tokener_parse(step));
		snprintf(step, sizeof(step), "{\"role\":\"user\",\"content\":"
		    "[{\"type\":\"tool_result\",\"tool_use_id\":\"t.%d\","
		    "\"content\":\"line %d/\"}]}", i, i);
		json_object_array_add(all, json_tokener_parse(step));
		if (i % 2)	/* a note of the user's, merged */
			json_object_array_add(all, json_tokener_parse(
			    "{\"role\":\"user\",\"content\":\"go on\"}"));
	}
	return all;
}

/* The tools' wire text is kept for the very list object it was made of:
 * not printed again for it, made again for another list or format. */
static void
test_request_cache_tools(void)
{
	json_object *msgs = json_tokener_parse("[{\"role\":\"user\","
	    "\"content\":\"hi\"}]");
	json_object *tools = json_tokener_parse(tools_json);
	json_object *other = json_tokener_parse(tools_json);
	struct provider_cache *cache = provider_cache_new();
	char *first, *again, *whole;

	CHECK(cache != NULL);
	first = body_of(PROVIDER_ANTHROPIC, msgs, tools, cache);
	CHECK(first && strstr(first, "\"description\":\"Run a command\""));
	json_object_object_add(json_object_array_get_idx(tools, 0),
	    "description", json_object_new_string("Changed in place"));
	again = body_of(PROVIDER_ANTHROPIC, msgs, tools, cache);
	CHECK(first && again && strcmp(first, again) == 0);
	free(again);

	json_object_object_add(json_object_array_get_idx(other, 0),
	    "description", json_object_new_string("Another list"));
	again = body_of(PROVIDER_ANTHROPIC, msgs, other, cache);
	whole = body_of(PROVIDER_ANTHROPIC, msgs, other, NULL);
	CHECK(again && strstr(again, "Another list"));
	CHECK(again && whole && strcmp(again, whole) == 0);
	free(again);
	free(whole);

	again = body_of(PROVIDER_OPENAI, msgs, other, cache);
	whole = body_of(PROVIDER_OPENAI, msgs, other, NULL);
	CHECK(again && strstr(again, "\"type\":\"function\""));
	CHECK(again && whole && strcmp(again, whole) == 0);
	free(again);
	free(whole);

	free(first);
	provider_cache_free(cache);
	json_object_put(tools);
	json_object_put(other);
	json_object_put(msgs);
}

static void
test_request_cache(void)
{
	json_object *all = growing_transcript();
	json_object *tools = json_tokener_parse(tools_json), *msgs, *other;
	struct provider_cache *cache = provider_cache_new();
	size_t n = json_object_array_length(all);
	char *before, *after;

	CHECK(cache != NULL);
	check_cached_steps(PROVIDER_ANTHROPIC, all, tools, cache);
	/* Another format with the same cache, then back. */
	check_cached_steps(PROVIDER_OPENAI, all, tools, cache);
	check_cached_steps(PROVIDER_ANTHROPIC, all, NULL, cache);

	/* A settled message replaced by another object (a summary made, a
	 * row rewritten): the text is made again from the new one. */
	other = json_tokener_parse("{\"role\":\"user\",\"content\":"
	    "\"Summary: files listed\"}");
	msgs = prefix_of(all, n);
	json_object_array_put_idx(msgs, 0, other);
	before = body_of(PROVIDER_OPENAI, msgs, tools, cache);
	after = body_of(PROVIDER_OPENAI, msgs, tools, NULL);
	CHECK(before && after && strcmp(before, after) == 0);
	CHECK(before && strstr(before, "Summary: files listed") != NULL);
	free(before);
	free(after);
	json_object_put(msgs);

	/* The cache is used: a settled message is taken from it, not
	 * printed again (which is why messages are never changed in place
	 * once in a transcript). */
	msgs = prefix_of(all, n);
	before = body_of(PROVIDER_ANTHROPIC, msgs, tools, cache);
	json_object_object_add(json_object_array_get_idx(all, 0), "content",
	    json_object_new_string("Changed in place"));
	after = body_of(PROVIDER_ANTHROPIC, msgs, tools, cache);
	CHECK(before && after && strcmp(before, after) == 0);
	CHECK(after && strstr(after, "Changed in place") == NULL);
	free(after);
	after = body_of(PROVIDER_ANTHROPIC, msgs, tools, NULL);
	CHECK(after && strstr(after, "Changed in place") != NULL);
	free(before);
	free(after);
	json_object_put(msgs);

	/* Not a transcript: refused, with the cache or without. */
	msgs = json_tokener_parse("[{\"role\":\"system\",\"content\":\"x\"}]");
	CHECK(body_of(PROVIDER_ANTHROPIC, msgs, tools, cache) == NULL);
	CHECK(body_of(PROVIDER_OPENAI, msgs, tools, NULL) == NULL);
	json_object_put(msgs);
	provider_cache_free(cache);
	provider_cache_free(NULL);
	json_object_put(all);
	json_object_put(tools);
}

static void
test_request_openai(void)
{
	json_object *msgs = json_tokener_parse(transcript_json);
	json_object *tools = json_tokener_parse(tools_json), *b, *m;
	struct provider_request req = { "llama3.2", "Be brief.", msgs, tools,
	    512, NULL };
	struct provider_http h;

	CHECK_INT(provider_build(PROVIDER_OPENAI, "http://127.0.0.1:11434/v1",
	    "", &req, &h), 0);
	CHECK_STR(h.url, "http://127.0.0.1:11434/v1/chat/completions");
	CHECK(has_header(&h, "content-type: application/json"));
	CHECK(!has_header_named(&h, "authorization"));
	b = json_tokener_parse(h.body);
	CHECK_STR(gets(b, "model"), "llama3.2");
	CHECK(json_object_get_boolean(get(b, "stream")));
	CHECK(json_object_get_boolean(get(b, "stream_options.include_usage")));
	CHECK_INT(geti(b, "max_tokens"), 512);
	CHECK(get(b, "max_completion_tokens") == NULL);
	CHECK_STR(gets(b, "tools.0.type"), "function");
	CHECK_STR(gets(b, "tools.0.function.name"), "bash");
	CHECK_STR(gets(b, "tools.0.function.description"), "Run a command");
	CHECK_STR(gets(b, "tools.0.function.parameters.type"), "object");
	m = get(b, "messages");
	CHECK_INT(json_object_array_length(m), 6);
	CHECK_STR(gets(m, "0.role"), "system");
	CHECK_STR(gets(m, "0.content"), "Be brief.");
	CHECK_STR(gets(m, "1.role"), "user");
	CHECK_STR(gets(m, "1.content"), "List files");
	CHECK_STR(gets(m, "2.role"), "assistant");
	CHECK_STR(gets(m, "2.content"), "Sure.");
	CHECK_STR(gets(m, "2.tool_calls.0.id"), "toolu_1");
	CHECK_STR(gets(m, "2.tool_calls.0.type"), "function");
	CHECK_STR(gets(m, "2.tool_calls.0.function.name"), "bash");
	CHECK_STR(gets(m, "2.tool_calls.0.function.arguments"),
	    "{\"command\":\"ls\"}");
	CHECK_STR(gets(m, "2.tool_calls.1.id"), "call.bad:id");
	CHECK_STR(gets(m, "3.role"), "tool");
	CHECK_STR(gets(m, "3.tool_call_id"), "toolu_1");
	CHECK_STR(gets(m, "3.content"), "a\nb");
	CHECK_STR(gets(m, "4.role"), "tool");
	CHECK_STR(gets(m, "4.tool_call_id"), "call.bad:id");
	CHECK_STR(gets(m, "4.content"), "Error: exit 1");
	CHECK_STR(gets(m, "5.role"), "user");
	CHECK_STR(gets(m, "5.content"), "and again\n\ncontinue");
	json_object_put(b);
	provider_http_free(&h);

	/* OpenAI itself: a key, and max_completion_tokens. */
	CHECK_INT(provider_build(PROVIDER_OPENAI, "https://api.openai.com/v1/",
	    "sk-test", &req, &h), 0);
	CHECK_STR(h.url, "https://api.openai.com/v1/chat/completions");
	CHECK(has_header(&h, "authorization: Bearer sk-test"));
	b = json_tokener_parse(h.body);
	CHECK_INT(geti(b, "max_completion_tokens"), 512);
	CHECK(get(b, "max_tokens") == NULL);
	json_object_put(b);
	provider_http_free(&h);
	provider_http_free(&h);		/* twice is harmless */
	json_object_put(msgs);
	json_object_put(tools);
}

static void
test_kind_parse(void)
{
	enum provider_kind k;

	CHECK_INT(provider_kind_parse("anthropic", &k), 0);
	CHECK_INT(k, PROVIDER_ANTHROPIC);
	CHECK_INT(provider_kind_parse("openai", &k), 0);
	CHECK_INT(k, PROVIDER_OPENAI);
	CHECK_INT(provider_kind_parse("gemini", &k), -EINVAL);
	CHECK_INT(provider_kind_parse(NULL, &k), -EINVAL);
}

/* --- errors and retries ------------------------------------------------ */

static void
test_error_message(void)
{
	char out[256];
	const char *a = "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"rate_limit_error\",\"message\":\"Number of request tokens has "
	    "exceeded your per-minute rate limit\"}}";
	const char *o = "{\"error\":{\"message\":\"Incorrect API key provided: "
	    "sk-xx.\",\"type\":\"invalid_request_error\",\"param\":null,"
	    "\"code\":\"invalid_api_key\"}}";
	const char *e;
	char junk[400];

	provider_error_message(PROVIDER_ANTHROPIC, 429, a, strlen(a), out,
	    sizeof(out));
	CHECK_STR(out, "rate_limit_error: Number of request tokens has "
	    "exceeded your per-minute rate limit");
	provider_error_message(PROVIDER_OPENAI, 401, o, strlen(o), out,
	    sizeof(out));
	CHECK_STR(out, "invalid_request_error: Incorrect API key provided: "
	    "sk-xx.");
	e = "{\"error\":\"model 'x' not found\"}";
	provider_error_message(PROVIDER_OPENAI, 404, e, strlen(e), out,
	    sizeof(out));
	CHECK_STR(out, "model 'x' not found");
	e = "{\"errors\":[{\"code\":5006,\"message\":\"bad input\"}],"
	    "\"success\":false}";
	provider_error_message(PROVIDER_OPENAI, 400, e, strlen(e), out,
	    sizeof(out));
	CHECK_STR(out, "5006: bad input");
	provider_error_message(PROVIDER_OPENAI, 502,
	    "<html>\r\n<b>Bad\tgateway</b>\x01</html>", 34, out, sizeof(out));
	CHECK_STR(out, "Bad gateway");
	e = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>"
	    "<center><h1>502 Bad Gateway</h1></center><hr><center>nginx"
	    "</center></body></html>\r\n";
	provider_error_message(PROVIDER_OPENAI, 502, e, strlen(e), out,
	    sizeof(out));
	CHECK_STR(out, "502 Bad Gateway 502 Bad Gateway nginx");
	/* Plain text with invalid UTF-8 and a cut inside a character. */
	provider_error_message(PROVIDER_OPENAI, 503, "upstream \xff\x1b[2J"
	    "down \xc3\xa9t\xc3\xa9", 24, out, sizeof(out));
	CHECK_STR(out, "upstream \xef\xbf\xbd[2Jdown \xc3\xa9t\xc3\xa9");
	provider_error_message(PROVIDER_OPENAI, 503, "\xc3\xa9\xc3\xa9", 4,
	    out, 4);
	CHECK_STR(out, "\xc3\xa9");
	memset(junk, 'z', sizeof(junk));
	provider_error_message(PROVIDER_ANTHROPIC, 500, junk, sizeof(junk),
	    out, sizeof(out));
	CHECK_INT(strlen(out), 200);
	provider_error_message(PROVIDER_ANTHROPIC, 503, "", 0, out, sizeof(out));
	CHECK_STR(out, "HTTP status 503 with an empty body");
	provider_error_message(PROVIDER_ANTHROPIC, 429, a, strlen(a), out, 10);
	CHECK_STR(out, "rate_limi");
	/* Error bodies sent as a stream: the first error event's message,
	 * not the raw bytes; other events before it are passed over. */
	e = "event: ping\ndata: {\"type\":\"ping\"}\n\nevent: error\r\n"
	    "data: {\"type\":\"error\",\"error\":{\"type\":"
	    "\"overloaded_error\",\"message\":\"Overloaded\"}}\r\n\r\n";
	provider_error_message(PROVIDER_ANTHROPIC, 529, e, strlen(e), out,
	    sizeof(out));
	CHECK_STR(out, "overloaded_error: Overloaded");
	e = "data: {\"message\":\"not an error\"}\n\ndata: {\"error\":"
	    "{\"message\":\"no such model\",\"code\":404}}\n\n";
	provider_error_message(PROVIDER_OPENAI, 404, e, strlen(e), out,
	    sizeof(out));
	CHECK_STR(out, "404: no such model");
	/* A stream with no error event in it is shown as any other body. */
	e = "data: {\"message\":\"hi\"}\n\n";
	provider_error_message(PROVIDER_OPENAI, 500, e, strlen(e), out,
	    sizeof(out));
	CHECK_STR(out, "data: {\"message\":\"hi\"}");
}

static void
test_should_retry(void)
{
	const char *quota = "{\"error\":{\"message\":\"You exceeded your current "
	    "quota, please check your plan and billing details.\",\"type\":"
	    "\"insufficient_quota\",\"code\":\"insufficient_quota\"}}";
	const char *rate = "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"rate_limit_error\",\"message\":\"rate limited\"}}";

	CHECK(provider_should_retry(0, NULL, 0));
	CHECK(provider_should_retry(408, NULL, 0));
	CHECK(provider_should_retry(409, NULL, 0));
	CHECK(provider_should_retry(429, rate, strlen(rate)));
	CHECK(!provider_should_retry(429, quota, strlen(quota)));
	CHECK(!provider_should_retry(429, "spending limit reached", 22));
	CHECK(provider_should_retry(500, NULL, 0));
	CHECK(provider_should_retry(502, "x", 1));
	CHECK(provider_should_retry(529, NULL, 0));
	CHECK(!provider_should_retry(400, NULL, 0));
	CHECK(!provider_should_retry(401, NULL, 0));
	CHECK(!provider_should_retry(403, NULL, 0));
	CHECK(!provider_should_retry(404, NULL, 0));
	CHECK(provider_should_retry(200, "api_error", 9));
	CHECK(!provider_should_retry(200, "invalid_request_error", 21));
	CHECK(!provider_error_retryable("authentication_error"));
	CHECK(!provider_error_retryable("permission_error"));
	CHECK(!provider_error_retryable("not_found_error"));
	CHECK(provider_error_retryable("rate_limit_error"));
	CHECK(provider_error_retryable("api_error"));
	CHECK(provider_error_retryable(NULL));
}

static void
test_retry_delay(void)
{
	char date[64];
	time_t t = time(NULL) + 10;
	struct tm tm;
	long d;

	CHECK_INT(provider_retry_delay_ms(1, "2", NULL, 1000), 2000);
	CHECK_INT(provider_retry_delay_ms(1, "0.5", NULL, 1000), 500);
	CHECK_INT(provider_retry_delay_ms(1, "2", "1500", 1000), 1500);
	CHECK_INT(provider_retry_delay_ms(1, NULL, "250.7", 1000), 250);
	CHECK_INT(provider_retry_delay_ms(1, "3600", NULL, 1000), 60000);
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	d = provider_retry_delay_ms(1, date, NULL, 1000);
	CHECK(d >= 8000 && d <= 10000);
	for (int i = 0; i < 50; i++) {
		d = provider_retry_delay_ms(1, NULL, NULL, 1000);
		CHECK(d >= 750 && d <= 1250);
		d = provider_retry_delay_ms(3, "soon", "x", 1000);
		CHECK(d >= 3000 && d <= 5000);
		d = provider_retry_delay_ms(4, NULL, NULL, 0);
		CHECK(d >= 6000 && d <= 10000);
	}
	CHECK_INT(provider_retry_delay_ms(10, NULL, NULL, 1000), 60000);
	CHECK_INT(provider_retry_delay_ms(400, NULL, NULL, 1000), 60000);
}

/* Found by tests/fuzz/fuzz_provider.c and fuzz_provider_error.c: numbers
 * from the server that a long cannot hold were cast or added regardless
 * (undefined behaviour), and "nan" passed as a Retry-After delay. */
static void
test_fuzzfound_numbers(void)
{
	static const char *huge_index =
	    "data: {\"choices\":[{\"index\":1e3000,\"delta\":"
	    "{\"content\":\"Hi\"},\"finish_reason\":\"length\"}]}\n\n";
	static const char *huge_usage =
	    "event: message_start\ndata: {\"type\":\"message_start\","
	    "\"message\":{\"usage\":{\"input_tokens\":9223372036854775807,"
	    "\"cache_read_input_tokens\":5,\"output_tokens\":-4}}}\n\n"
	    "event: content_block_delta\ndata: {\"type\":"
	    "\"content_block_delta\",\"index\":-1e300}\n\n";
	struct provider_stream *s;
	long in = -1, out = -1;

	s = provider_stream_new(PROVIDER_OPENAI, NULL);
	CHECK_INT(provider_stream_feed(s, huge_index, strlen(huge_index)), 0);
	provider_stream_free(s);
	s = provider_stream_new(PROVIDER_ANTHROPIC, NULL);
	CHECK_INT(provider_stream_feed(s, huge_usage, strlen(huge_usage)),
	    -EBADMSG);
	provider_stream_usage(s, &in, &out);
	CHECK_INT(in, 1L << 40);
	CHECK_INT(out, 0);
	provider_stream_free(s);
	CHECK(provider_retry_delay_ms(1, "nan", NULL, 1000) >= 750);
	CHECK(provider_retry_delay_ms(1, "nan", NULL, 1000) <= 1250);
	CHECK(provider_retry_delay_ms(1, NULL, "-nan", 1000) <= 1250);
	CHECK_INT(provider_retry_delay_ms(1, "inf", NULL, 1000), 60000);
}

int
main(void)
{
	TEST(test_anthropic_tools);
	TEST(test_anthropic_unknown_parts);
	TEST(test_anthropic_error_event);
	TEST(test_anthropic_cut);
	TEST(test_anthropic_malformed_tool);
	TEST(test_anthropic_not_json);
	TEST(test_openai_tools);
	TEST(test_openai_text);
	TEST(test_openai_ollama);
	TEST(test_openai_endings);
	TEST(test_openai_error);
	TEST(test_llama_error_shapes);
	TEST(test_openai_malformed_tool);
	TEST(test_request_anthropic);
	TEST(test_request_openai);
	TEST(test_request_cache);
	TEST(test_request_cache_tools);
	TEST(test_kind_parse);
	TEST(test_error_message);
	TEST(test_should_retry);
	TEST(test_retry_delay);
	TEST(test_fuzzfound_numbers);
	return unit_done("test_agent_provider");
}
