/*
 * provider.c: the provider-neutral half of provider.h, with no I/O.
 *
 * Called by the agent's model client: provider_build for each request,
 * provider_stream_* with the response body as libcurl delivers it,
 * provider_error_message / provider_should_retry / provider_retry_delay_ms
 * on failures.  Calls each wire format through its table of operations
 * (provider_impl.h: struct provider_ops; provider_anthropic.c,
 * provider_openai.c), chosen by kind in provider_format alone, and holds
 * what the formats share: the stream object (SSE framer, answer blocks,
 * stop reason, usage, error), the transcript normalisation both request
 * builders start from, the request body with its cache of settled
 * messages (provider.h: struct provider_cache), and the HTTP request
 * helpers.
 *
 * Invariants: a stream's err is sticky (the first failure is what every
 * later call reports); content only ever holds whole blocks in neutral form
 * ({"type":"text","text"} with non-empty text, {"type":"tool_use","id",
 * "name","input"} with an object input).  Sink callbacks get borrowed
 * pointers, valid only during the call (json_object_get to keep an input).
 *
 * Completeness, decided here for both formats: finish returns 0 only when
 * the format's terminal event came (Anthropic message_stop; OpenAI [DONE],
 * or a finish_reason followed by the end of the body).  The caller must
 * call finish only when the transfer itself ended cleanly: a transport
 * error is a cut stream whatever finish would say.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "buf.h"
#include "provider_impl.h"
#include "utf8.h"

#define PROVIDER_JSON_DEPTH 64
#define PROVIDER_RETRY_CAP_MS 60000L
#define PROVIDER_ERR_SAMPLE 200	/* bytes of a non-JSON error body shown */
#define PROVIDER_MAX_TOKENS (1L << 40)	/* usage reported, per request */

static void provider_sanitize(const char *text, size_t n, char *out,
    size_t outlen);

/* The wire formats by kind: a new kind is a new table here. */
static const struct provider_ops *const provider_formats[] = {
	[PROVIDER_ANTHROPIC] = &provider_anthropic_ops,
	[PROVIDER_OPENAI] = &provider_openai_ops,
};

/* kind's table of operations; NULL when kind is none of them. */
static const struct provider_ops *
provider_format(enum provider_kind kind)
{
	size_t n = sizeof(provider_formats) / sizeof(provider_formats[0]);

	return (size_t)kind < n ? provider_formats[kind] : NULL;
}

/* "anthropic" / "openai" (the tables' names) to a kind; -EINVAL for
 * anything else. */
int
provider_kind_parse(const char *name, enum provider_kind *out)
{
	size_t n = sizeof(provider_formats) / sizeof(provider_formats[0]);

	for (size_t i = 0; name && i < n; i++) {
		if (provider_formats[i] &&
		    strcmp(name, provider_formats[i]->name) == 0) {
			*out = (enum provider_kind)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* --- JSON helpers ------------------------------------------------------ */

/* Parse exactly n bytes as one JSON value; NULL otherwise. */
json_object *
provider_json_parse(const char *p, size_t n)
{
	struct json_tokener *tok;
	json_object *obj;
	size_t used;

	if (n > (size_t)INT32_MAX)
		return NULL;
	tok = json_tokener_new_ex(PROVIDER_JSON_DEPTH);
	if (!tok)
		return NULL;
	obj = json_tokener_parse_ex(tok, p, (int)n);
	if (!obj && json_tokener_get_error(tok) == json_tokener_continue) {
		/* A bare number needs to see its end. */
		obj = json_tokener_parse_ex(tok, "", 1);
		used = n;
	} else {
		used = json_tokener_get_parse_end(tok);
	}
	json_tokener_free(tok);
	if (!obj)
		return NULL;
	while (used < n && isspace((unsigned char)p[used]))
		used++;
	if (used != n) {
		json_object_put(obj);
		return NULL;
	}
	return obj;
}

/* obj[key] as a string, or NULL. */
const char *
provider_json_str(json_object *obj, const char *key)
{
	json_object *v;

	if (!obj || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* obj[key] as an integer, or dflt (also for a number a long cannot
 * hold). */
long
provider_json_long(json_object *obj, const char *key, long dflt)
{
	json_object *v;

	if (!obj || !json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, key, &v))
		return dflt;
	if (json_object_is_type(v, json_type_int))
		return (long)json_object_get_int64(v);
	if (json_object_is_type(v, json_type_double)) {
		double d = json_object_get_double(v);

		/* 1e300 or NaN would make the cast undefined. */
		return d >= (double)LONG_MIN && d < (double)LONG_MAX ?
		    (long)d : dflt;
	}
	return dflt;
}

json_object *
provider_tool_object(json_object *tool, const char *schema_key)
{
	json_object *o = json_object_new_object(), *schema;
	const char *desc = provider_json_str(tool, "description");

	json_object_object_add(o, "name", json_object_new_string(
	    provider_json_str(tool, "name") ?: ""));
	if (desc)
		json_object_object_add(o, "description",
		    json_object_new_string(desc));
	if (json_object_object_get_ex(tool, "input_schema", &schema))
		json_object_get(schema);
	else
		schema = json_tokener_parse("{\"type\":\"object\"}");
	json_object_object_add(o, schema_key, schema);
	return o;
}

/* --- HTTP request helpers --------------------------------------------- */

/* Append one header; see provider_impl.h. */
int
provider_http_header(struct provider_http *out, const char *name,
    const char *value)
{
	size_t n = 0;
	char **h, *line;

	if (strpbrk(value, "\r\n"))
		return -EINVAL;
	while (out->headers && out->headers[n])
		n++;
	h = realloc(out->headers, (n + 2) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	out->headers = h;
	h[n] = NULL;
	if (asprintf(&line, "%s: %s", name, value) < 0)
		return -ENOMEM;
	h[n] = line;
	h[n + 1] = NULL;
	return 0;
}

/* out->url = base + path; see provider_impl.h. */
int
provider_http_url(struct provider_http *out, const char *base,
    const char *path)
{
	size_t n = strlen(base);

	while (n > 0 && base[n - 1] == '/')
		n--;
	if (asprintf(&out->url, "%.*s%s", (int)n, base, path) < 0) {
		out->url = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Build the request for kind; see provider.h.  -EINVAL on a request
 * without model or messages, or a key or URL that cannot be sent. */
int
provider_build(enum provider_kind kind, const char *base_url,
    const char *api_key, const struct provider_request *req,
    struct provider_http *out)
{
	const struct provider_ops *ops = provider_format(kind);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!ops || !base_url || !*base_url || !req || !req->model ||
	    !*req->model || !req->messages || strpbrk(base_url, "\r\n"))
		return -EINVAL;
	if (api_key && !*api_key)
		api_key = NULL;
	rc = ops->build(base_url, api_key, req, out);
	if (rc < 0)
		provider_http_free(out);
	return rc;
}

/* Free a built request; the key in its headers is wiped first. */
void
provider_http_free(struct provider_http *h)
{
	if (!h)
		return;
	for (size_t i = 0; h->headers && h->headers[i]; i++) {
		explicit_bzero(h->headers[i], strlen(h->headers[i]));
		free(h->headers[i]);
	}
	free(h->headers);
	free(h->url);
	free(h->body);
	memset(h, 0, sizeof(*h));
}

/* --- transcript normalisation ------------------------------------------ */

/* msg's content as a fresh array of blocks (a string becomes one text
 * block); empty text blocks are left out.  NULL when out of memory. */
static json_object *
provider_content_blocks(json_object *msg)
{
	json_object *content, *arr = json_object_new_array();
	const char *text;

	if (!arr || !json_object_object_get_ex(msg, "content", &content))
		return arr;
	if (json_object_is_type(content, json_type_string)) {
		if (json_object_get_string_len(content) > 0) {
			json_object *b = json_object_new_object();

			json_object_object_add(b, "type",
			    json_object_new_string("text"));
			json_object_object_add(b, "text",
			    json_object_get(content));
			json_object_array_add(arr, b);
		}
		return arr;
	}
	if (!json_object_is_type(content, json_type_array))
		return arr;
	for (size_t i = 0; i < json_object_array_length(content); i++) {
		json_object *b = json_object_array_get_idx(content, i);
		const char *type = provider_json_str(b, "type");

		if (!type)
			continue;
		text = provider_json_str(b, "text");
		if (strcmp(type, "text") == 0 && (!text || !*text))
			continue;
		/* Shared with the caller (the transcript a turn keeps
		 * between steps): a builder that must change a block
		 * replaces it with a changed copy (anthropic_fix_blocks),
		 * never changes it in place.  Copying every block of the
		 * whole transcript at every step was the biggest part of
		 * building a request. */
		json_object_array_add(arr, json_object_get(b));
	}
	return arr;
}

/* Put tool_result blocks first in a user message's blocks, keeping the
 * order within each kind.  A new array; NULL when out of memory. */
static json_object *
provider_results_first(json_object *blocks)
{
	json_object *out = json_object_new_array();
	size_t n = json_object_array_length(blocks);

	for (int pass = 0; out && pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			json_object *b = json_object_array_get_idx(blocks, i);
			const char *t = provider_json_str(b, "type");
			int is_result = t && strcmp(t, "tool_result") == 0;

			if (is_result == (pass == 0))
				json_object_array_add(out, json_object_get(b));
		}
	}
	return out;
}

/* Append a message of role with blocks to out, or merge the blocks into
 * out's last message when it has the same role.  Takes blocks.  1 when a
 * new message was appended, 0 when merged. */
static int
provider_transcript_push(json_object *out, const char *role,
    json_object *blocks)
{
	size_t n = json_object_array_length(out);
	json_object *last = n ? json_object_array_get_idx(out, n - 1) : NULL;
	const char *lrole = provider_json_str(last, "role");
	json_object *lc, *msg;

	if (lrole && strcmp(lrole, role) == 0 &&
	    json_object_object_get_ex(last, "content", &lc)) {
		for (size_t i = 0; i < json_object_array_length(blocks); i++)
			json_object_array_add(lc, json_object_get(
			    json_object_array_get_idx(blocks, i)));
		json_object_put(blocks);
		return 0;
	}
	msg = json_object_new_object();
	json_object_object_add(msg, "role", json_object_new_string(role));
	json_object_object_add(msg, "content", blocks);
	json_object_array_add(out, msg);
	return 1;
}

/* The transcript from messages[from] on, fit to send; see
 * provider_impl.h. */
json_object *
provider_transcript_normalize(json_object *messages, size_t from,
    size_t *open_from)
{
	json_object *out;

	*open_from = from;
	if (!json_object_is_type(messages, json_type_array))
		return NULL;
	out = json_object_new_array();
	for (size_t i = from; out && i < json_object_array_length(messages);
	    i++) {
		json_object *m = json_object_array_get_idx(messages, i);
		const char *role = provider_json_str(m, "role");
		json_object *blocks;

		if (!role || (strcmp(role, "user") != 0 &&
		    strcmp(role, "assistant") != 0)) {
			json_object_put(out);
			return NULL;
		}
		blocks = provider_content_blocks(m);
		if (!blocks || json_object_array_length(blocks) == 0) {
			json_object_put(blocks);
			continue;
		}
		if (provider_transcript_push(out, role, blocks))
			*open_from = i;
	}
	for (size_t i = 0; out && i < json_object_array_length(out); i++) {
		json_object *m = json_object_array_get_idx(out, i), *c;

		if (strcmp(provider_json_str(m, "role"), "user") != 0 ||
		    !json_object_object_get_ex(m, "content", &c))
			continue;
		json_object_object_add(m, "content", provider_results_first(c));
	}
	return out;
}

/* --- the request body, and the cache of its settled messages ------------ */

struct provider_cache {
	enum provider_kind kind;	/* the wire form text is in */
	json_object **src;		/* the transcript messages text covers,
					 * oldest first, each referenced */
	size_t nsrc, cap;
	struct buf text;		/* their wire messages, each followed
					 * by ',' */
	/* The tool list's wire text, for the very list object tools_src
	 * (referenced, so no other list can have its address while it is
	 * kept; the caller never changes a list once it was sent) in
	 * tools_kind's form. */
	json_object *tools_src;
	enum provider_kind tools_kind;
	char *tools_text;
	size_t tools_len;
};

struct provider_cache *
provider_cache_new(void)
{
	struct provider_cache *c = calloc(1, sizeof(*c));

	if (c)
		buf_init(&c->text, PROVIDER_MAX_BODY);
	return c;
}

/* Empty c, for messages of kind. */
static void
provider_cache_reset(struct provider_cache *c, enum provider_kind kind)
{
	for (size_t i = 0; i < c->nsrc; i++)
		json_object_put(c->src[i]);
	c->nsrc = 0;
	buf_reset(&c->text);
	c->kind = kind;
}

void
provider_cache_free(struct provider_cache *c)
{
	if (!c)
		return;
	json_object_put(c->tools_src);
	free(c->tools_text);
	provider_cache_reset(c, c->kind);
	free(c->src);
	buf_free(&c->text);
	free(c);
}

/* How many of messages' first entries c's text covers: all that it
 * covers when they are the very objects it holds and in kind's form;
 * else none, and c is emptied. */
static size_t
provider_cache_match(struct provider_cache *c, enum provider_kind kind,
    json_object *messages)
{
	size_t i = 0;

	if (c->kind == kind && c->nsrc <= json_object_array_length(messages))
		while (i < c->nsrc &&
		    json_object_array_get_idx(messages, i) == c->src[i])
			i++;
	if (i == c->nsrc)
		return i;
	provider_cache_reset(c, kind);
	return 0;
}

/* Count messages[from, upto) as covered by c's text.  0 or -ENOMEM. */
static int
provider_cache_cover(struct provider_cache *c, json_object *messages,
    size_t from, size_t upto)
{
	size_t cap = c->cap ? c->cap : 64;
	json_object **grown;

	while (cap < c->nsrc + (upto - from))
		cap *= 2;
	if (cap != c->cap) {
		grown = realloc(c->src, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		c->src = grown;
		c->cap = cap;
	}
	for (size_t i = from; i < upto; i++)
		c->src[c->nsrc++] = json_object_get(
		    json_object_array_get_idx(messages, i));
	return 0;
}

/* Append obj as compact JSON, then sep when not 0.  0 or -errno. */
static int
provider_json_append(struct buf *out, json_object *obj, char sep)
{
	size_t n;
	const char *s = json_object_to_json_string_length(obj,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
	int r;

	if (!s)
		return -ENOMEM;
	r = buf_append(out, s, n);
	if (r == 0 && sep)
		r = buf_append(out, &sep, 1);
	return r;
}

/* One normalised message in kind's wire form, with a ',' after each. */
static int
provider_wire_message(enum provider_kind kind, json_object *msg,
    struct buf *out)
{
	const struct provider_ops *ops = provider_format(kind);

	return ops ? ops->message(msg, out) : -EINVAL;
}

/* Append the wire form of messages to out, each followed by ',': the
 * settled ones from c, as far as it covers them, the rest made now and
 * the newly settled ones kept in c.  0 or -errno (c emptied then). */
static int
provider_messages_wire(struct provider_cache *c, enum provider_kind kind,
    json_object *messages, struct buf *out)
{
	size_t from = provider_cache_match(c, kind, messages), open_from, m;
	json_object *norm = provider_transcript_normalize(messages, from,
	    &open_from);
	int r = norm ? 0 : -EINVAL;

	m = norm ? json_object_array_length(norm) : 0;
	for (size_t i = 0; r == 0 && i + 1 < m; i++)
		r = provider_wire_message(kind,
		    json_object_array_get_idx(norm, i), &c->text);
	if (r == 0)
		r = provider_cache_cover(c, messages, from, open_from);
	if (r == 0 && c->text.len)
		r = buf_append(out, c->text.data, c->text.len);
	if (r == 0 && m > 0)
		r = provider_wire_message(kind,
		    json_object_array_get_idx(norm, m - 1), out);
	json_object_put(norm);
	if (r < 0)
		provider_cache_reset(c, kind);
	return r;
}

/* The wire text of tools (a non-empty list) for kind: kept in c when it
 * was made for this very list, else made by wire and kept.  NULL on
 * ENOMEM. */
static const char *
provider_tools_text(struct provider_cache *c, enum provider_kind kind,
    json_object *tools, provider_tools_fn *wire, size_t *len)
{
	json_object *w;
	const char *s;
	char *copy = NULL;
	size_t n = 0;

	if (c->tools_src == tools && c->tools_kind == kind && c->tools_text) {
		*len = c->tools_len;
		return c->tools_text;
	}
	if ((w = wire(tools)) && (s = json_object_to_json_string_length(w,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n)))
		copy = strndup(s, n);
	json_object_put(w);
	if (!copy)
		return NULL;
	json_object_put(c->tools_src);
	free(c->tools_text);
	c->tools_src = json_object_get(tools);
	c->tools_kind = kind;
	c->tools_text = copy;
	c->tools_len = n;
	*len = n;
	return copy;
}

/* The body's text into b: head without its closing brace, then messages
 * and tools; see provider_http_body. */
static int
provider_body_text(struct buf *b, enum provider_kind kind, json_object *head,
    json_object *first, json_object *messages, json_object *tools,
    provider_tools_fn *wire, struct provider_cache *cache)
{
	int r = provider_json_append(b, head, 0);
	const char *text;
	size_t n;

	if (r == 0 && (b->len < 2 || b->data[b->len - 1] != '}'))
		r = -EINVAL;	/* not an object */
	if (r == 0) {
		buf_truncate(b, b->len - 1);
		r = buf_printf(b, "%s\"messages\":[", b->len > 1 ? "," : "");
	}
	if (r == 0 && first)
		r = provider_json_append(b, first, ',');
	if (r == 0)
		r = provider_messages_wire(cache, kind, messages, b);
	if (r == 0 && b->data[b->len - 1] == ',')
		buf_truncate(b, b->len - 1);
	if (r == 0)
		r = buf_append(b, "]", 1);
	if (r == 0 && json_object_is_type(tools, json_type_array) &&
	    json_object_array_length(tools) > 0) {
		text = provider_tools_text(cache, kind, tools, wire, &n);
		r = text ? buf_append(b, ",\"tools\":", 9) : -ENOMEM;
		if (r == 0)
			r = buf_append(b, text, n);
	}
	if (r == 0)
		r = buf_append(b, "}", 1);
	return r;
}

/* out->body; see provider_impl.h. */
int
provider_http_body(struct provider_http *out, enum provider_kind kind,
    json_object *head, json_object *first, json_object *messages,
    json_object *tools, provider_tools_fn *wire,
    struct provider_cache *cache)
{
	struct provider_cache *own = NULL;
	struct buf b;
	int r;

	if (!cache && !(cache = own = provider_cache_new()))
		return -ENOMEM;
	buf_init(&b, PROVIDER_MAX_BODY);
	r = provider_body_text(&b, kind, head, first, messages, tools, wire,
	    cache);
	provider_cache_free(own);
	if (r < 0) {
		buf_free(&b);
		return r;
	}
	out->body = b.data;	/* the buffer's own malloc'd bytes */
	out->body_len = b.len;
	return 0;
}

/* --- the stream -------------------------------------------------------- */

/* The SSE callback: one event to the stream's format. */
static int
provider_stream_event(void *arg, const struct sse_event *ev)
{
	struct provider_stream *s = arg;

	return s->ops->event(s, ev);
}

/* A stream parser for kind reporting to sink (copied); NULL when out of
 * memory or kind is unknown. */
struct provider_stream *
provider_stream_new(enum provider_kind kind, const struct provider_sink *sink)
{
	const struct provider_ops *ops = provider_format(kind);
	struct provider_stream *s;

	if (!ops)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->kind = kind;
	s->ops = ops;
	if (sink)
		s->sink = *sink;
	s->sse = sse_new(SSE_MAX_EVENT, provider_stream_event, s);
	s->content = json_object_new_array();
	s->wire = ops->state_new();
	if (!s->sse || !s->content || !s->wire) {
		provider_stream_free(s);
		return NULL;
	}
	return s;
}

/* Free a stream; NULL is fine. */
void
provider_stream_free(struct provider_stream *s)
{
	if (!s)
		return;
	s->ops->state_free(s->wire);
	sse_free(s->sse);
	json_object_put(s->content);
	free(s);
}

/* Record an error; see provider_impl.h. */
int
provider_stream_fail(struct provider_stream *s, int rc, const char *type,
    const char *fmt, ...)
{
	char raw[sizeof(s->err_msg) * 2];
	va_list ap;

	if (s->err_type[0])
		return rc;	/* the first error is the one to report */
	provider_sanitize(type, strlen(type), s->err_type, sizeof(s->err_type));
	if (!s->err_type[0])
		snprintf(s->err_type, sizeof(s->err_type), "api_error");
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* The message may be the server's own words: made one clean line. */
	provider_sanitize(raw, sizeof(raw), s->err_msg, sizeof(s->err_msg));
	return rc;
}

/* Map a framer or format failure to provider.h's codes, once. */
static int
provider_stream_error_code(struct provider_stream *s, int rc)
{
	if (rc == -EMSGSIZE)
		rc = provider_stream_fail(s, -EBADMSG, "invalid_stream",
		    "the model's stream sent an event over %u bytes",
		    SSE_MAX_EVENT);
	else if (rc == -ENOMEM)
		rc = provider_stream_fail(s, -ENOMEM, "out_of_memory",
		    "out of memory while reading the model's stream");
	if (!s->err)
		s->err = rc;
	return s->err;
}

/* Feed body bytes; see provider.h. */
int
provider_stream_feed(struct provider_stream *s, const char *p, size_t n)
{
	int rc;

	if (s->err)
		return s->err;
	rc = sse_feed(s->sse, p, n);
	return rc ? provider_stream_error_code(s, rc) : 0;
}

/* The body ended; see provider.h. */
int
provider_stream_finish(struct provider_stream *s)
{
	int rc;

	if (s->err || s->ended)
		return s->err;
	s->ended = 1;
	rc = sse_finish(s->sse);
	if (rc)
		return provider_stream_error_code(s, rc);
	rc = s->ops->finish(s);
	if (rc == -EPIPE)
		s->err = provider_stream_fail(s, -EPIPE, "stream_cut",
		    "the model's stream ended before the answer was complete");
	else if (rc)
		return provider_stream_error_code(s, rc);
	return rc;
}

/* Tell the sink a piece of text. */
void
provider_stream_text(struct provider_stream *s, const char *p, size_t n)
{
	if (n > 0 && s->sink.text)
		s->sink.text(s->sink.arg, p, n);
}

/* Append a whole text block; see provider_impl.h. */
int
provider_stream_add_text(struct provider_stream *s, const char *p, size_t n)
{
	json_object *b;

	if (n == 0)
		return 0;
	b = json_object_new_object();
	if (!b)
		return -ENOMEM;
	json_object_object_add(b, "type", json_object_new_string("text"));
	json_object_object_add(b, "text", json_object_new_string_len(p,
	    (int)n));
	json_object_array_add(s->content, b);
	return 0;
}

/* Append a whole tool call and tell the sink; see provider_impl.h. */
int
provider_stream_add_tool(struct provider_stream *s, const char *id,
    const char *name, const char *raw, size_t n)
{
	json_object *b, *input = NULL;
	size_t i;

	for (i = 0; i < n && isspace((unsigned char)raw[i]); i++)
		;
	if (i == n)
		input = json_object_new_object();	/* "": no arguments */
	else
		input = provider_json_parse(raw, n);
	if (input && !json_object_is_type(input, json_type_object)) {
		json_object_put(input);
		input = NULL;
	}
	b = json_object_new_object();
	if (!b) {
		json_object_put(input);
		return -ENOMEM;
	}
	json_object_object_add(b, "type", json_object_new_string("tool_use"));
	json_object_object_add(b, "id", json_object_new_string(id));
	json_object_object_add(b, "name", json_object_new_string(name));
	json_object_object_add(b, "input", input ? json_object_get(input) :
	    json_object_new_object());
	json_object_array_add(s->content, b);
	if (s->sink.tool_call)
		s->sink.tool_call(s->sink.arg, id, name, input, input ? NULL :
		    raw);
	json_object_put(input);
	return 0;
}

/* The answer in neutral form (a new reference), whatever was whole when the
 * stream ended; NULL only when out of memory. */
json_object *
provider_stream_message(struct provider_stream *s)
{
	json_object *m = json_object_new_object();

	if (!m)
		return NULL;
	json_object_object_add(m, "role", json_object_new_string("assistant"));
	json_object_object_add(m, "content", json_object_get(s->content));
	return m;
}

/* The neutral stop reason, or NULL while unknown. */
const char *
provider_stream_stop_reason(struct provider_stream *s)
{
	return s->stop_reason[0] ? s->stop_reason : NULL;
}

/* Token usage so far (0 when the provider did not say), each within
 * 0..PROVIDER_MAX_TOKENS: the server's numbers, which callers add up. */
void
provider_stream_usage(struct provider_stream *s, long *input_tokens,
    long *output_tokens)
{
	if (input_tokens)
		*input_tokens = s->input_tokens < 0 ? 0 :
		    s->input_tokens > PROVIDER_MAX_TOKENS ?
		    PROVIDER_MAX_TOKENS : s->input_tokens;
	if (output_tokens)
		*output_tokens = s->output_tokens < 0 ? 0 :
		    s->output_tokens > PROVIDER_MAX_TOKENS ?
		    PROVIDER_MAX_TOKENS : s->output_tokens;
}

/* The recorded error's type and message, or NULL when there was none. */
const char *
provider_stream_error(struct provider_stream *s, const char **message)
{
	if (message)
		*message = s->err_type[0] ? s->err_msg : NULL;
	return s->err_type[0] ? s->err_type : NULL;
}

/* --- errors and retries ------------------------------------------------ */

/* Copy text into out (outlen > 0) as one printable line: invalid UTF-8
 * repaired to U+FFFD, control characters dropped (tab and newline made
 * spaces), runs of spaces squeezed, stopping at n bytes of text or at
 * outlen - 1 bytes of out, never inside a UTF-8 sequence.  It may be a
 * server's own words, so it reaches the room only through here. */
static void
provider_sanitize(const char *text, size_t n, char *out, size_t outlen)
{
	struct buf clean;
	size_t o = 0, len;

	out[0] = '\0';
	len = strnlen(text, n);
	buf_init(&clean, len * 3 + 1);
	if (utf8_clean(&clean, text, len) < 0) {
		buf_free(&clean);
		return;
	}
	for (size_t i = 0; i < clean.len && o + 1 < outlen; i++) {
		char c = clean.data[i];

		if (c == '\t' || c == '\n')
			c = ' ';
		if (c == ' ' && (o == 0 || out[o - 1] == ' '))
			continue;
		out[o++] = c;
	}
	buf_free(&clean);
	o = utf8_complete(out, o);
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* A non-JSON error body (a proxy's plain text or HTML page) as one line in
 * out: an HTML page's tags dropped (what is left is its title and
 * headings: "502 Bad Gateway nginx"), then sanitised and cut to
 * PROVIDER_ERR_SAMPLE bytes. */
static void
provider_body_sample(const char *body, size_t len, char *out, size_t outlen)
{
	char text[PROVIDER_ERR_SAMPLE * 8];
	size_t i = 0, o = 0;
	int in_tag = 0;

	len = strnlen(body, len);	/* a NUL ends the text, as it would */
	while (i < len && isspace((unsigned char)body[i]))
		i++;
	if (i == len || body[i] != '<') {
		provider_sanitize(body, len, out, outlen < PROVIDER_ERR_SAMPLE + 1 ?
		    outlen : PROVIDER_ERR_SAMPLE + 1);
		return;
	}
	for (; i < len && o + 1 < sizeof(text); i++) {
		if (body[i] == '<')
			in_tag = 1;
		else if (body[i] == '>') {
			in_tag = 0;
			text[o++] = ' ';	/* "</h1><p>" parts words */
		} else if (!in_tag)
			text[o++] = body[i];
	}
	provider_sanitize(text, o, out, outlen < PROVIDER_ERR_SAMPLE + 1 ?
	    outlen : PROVIDER_ERR_SAMPLE + 1);
}

/* The error type and message in a parsed error body, in any of the shapes
 * servers use:
 *   {"type":"error","error":{"type","message"}}          Anthropic
 *   {"error":{"message","type","code"}}                  OpenAI, vLLM
 *   {"error":"message"}                                  Ollama
 *   {"errors":[{"code","message"}],"success":false}      Cloudflare
 *   {"object":"error","message","type"} / {"detail":""}  older vLLM, others
 * type may come back NULL; the result is NULL when no message is found. */
const char *
provider_error_fields(json_object *obj, const char **type)
{
	json_object *e, *code;
	const char *msg;

	*type = NULL;
	if (json_object_object_get_ex(obj, "errors", &e) &&
	    json_object_is_type(e, json_type_array) &&
	    json_object_array_length(e) > 0)
		obj = json_object_array_get_idx(e, 0);
	else if (json_object_object_get_ex(obj, "error", &e)) {
		if (json_object_is_type(e, json_type_string))
			return json_object_get_string(e);
		obj = e;
	}
	if (!json_object_is_type(obj, json_type_object))
		return NULL;
	*type = provider_json_str(obj, "type");
	if ((!*type || !**type) && json_object_object_get_ex(obj, "code",
	    &code) && !json_object_is_type(code, json_type_null))
		*type = json_object_get_string(code);
	msg = provider_json_str(obj, "message");
	if (!msg)
		msg = provider_json_str(obj, "detail");
	return msg;
}

/* An SSE event that carries an error: the event is named "error", or its
 * data has an "error" member (OpenAI's mid-stream shape).  Keeps the first
 * such event's parsed data in *arg and stops the framer. */
static int
provider_sse_error_event(void *arg, const struct sse_event *ev)
{
	json_object **found = arg;
	json_object *obj = provider_json_parse(ev->data, ev->data_len);
	const char *type;

	if (obj && (strcmp(ev->event, "error") == 0 ||
	    json_object_object_get_ex(obj, "error", NULL)) &&
	    provider_error_fields(obj, &type)) {
		*found = obj;
		return 1;
	}
	json_object_put(obj);
	return 0;
}

/* A non-2xx body as JSON: the body itself, or, when the server answered
 * with a stream (`data: {"error":{...}}`, or `event: error`), the data of
 * its first error event, read as the stream parsers read it.  NULL when
 * the body is neither. */
static json_object *
provider_error_body(const char *body, size_t len)
{
	json_object *obj = provider_json_parse(body, len), *found = NULL;
	struct sse *s;

	if (obj)
		return obj;
	s = sse_new(0, provider_sse_error_event, &found);
	if (!s)
		return NULL;
	if (sse_feed(s, body, len) == 0)
		sse_finish(s);
	sse_free(s);
	return found;
}

/* The provider's own message from a non-2xx body into out, after its
 * type ("TYPE: MESSAGE") when with_type and the body names one. */
static void
provider_error_text(int status, const char *body, size_t len, int with_type,
    char *out, size_t outlen)
{
	json_object *obj;
	const char *msg = NULL, *type = NULL;
	char tmp[1024];

	if (!out || outlen == 0)
		return;
	obj = body && len ? provider_error_body(body, len) : NULL;
	if (obj)
		msg = provider_error_fields(obj, &type);
	if (msg && *msg) {
		if (with_type && type && *type && strcmp(type, "error") != 0)
			snprintf(tmp, sizeof(tmp), "%s: %s", type, msg);
		else
			snprintf(tmp, sizeof(tmp), "%s", msg);
		provider_sanitize(tmp, sizeof(tmp), out, outlen);
	} else if (body && len) {
		provider_body_sample(body, len, out, outlen);
	} else {
		snprintf(out, outlen, "HTTP status %d with an empty body",
		    status);
	}
	if (!*out)
		snprintf(out, outlen, "HTTP status %d", status);
	json_object_put(obj);
}

/* See provider.h.  The result reads "TYPE: MESSAGE" when the body names a
 * type. */
void
provider_error_message(enum provider_kind kind, int status, const char *body,
    size_t len, char *out, size_t outlen)
{
	(void)kind;	/* the shapes do not clash, so one parser reads both */
	provider_error_text(status, body, len, 1, out, outlen);
}

void
provider_error_words(int status, const char *body, size_t len, char *out,
    size_t outlen)
{
	provider_error_text(status, body, len, 0, out, outlen);
}

/* Is an error of this type worth another try?  Yes unless it names a bad
 * request, credentials, permissions, a missing model or exhausted money;
 * unknown types are taken as passing trouble. */
int
provider_error_retryable(const char *type)
{
	static const char *const fatal[] = {
		"invalid", "auth", "permission", "not_found", "notfound",
		"quota", "billing", "badrequest", "too_large", "context_length",
		"unsupported",
	};
	char low[64];
	size_t i;

	if (!type || !*type)
		return 1;
	for (i = 0; type[i] && i + 1 < sizeof(low); i++)
		low[i] = (char)tolower((unsigned char)type[i]);
	low[i] = '\0';
	for (i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		if (strstr(low, fatal[i]))
			return 0;
	return 1;
}

/* Does a 429 body say money, not speed, is the limit? */
static int
provider_body_says_quota(const char *body, size_t len)
{
	static const char *const words[] = {
		"insufficient_quota", "spending limit", "spend limit",
		"billing", "credit balance", "exceeded your current quota",
	};
	char low[4096];
	size_t n = len < sizeof(low) - 1 ? len : sizeof(low) - 1;

	for (size_t i = 0; i < n; i++)
		low[i] = body[i] ? (char)tolower((unsigned char)body[i]) : ' ';
	low[n] = '\0';
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(low, words[i]))
			return 1;
	return 0;
}

/* Retry decision; see provider.h.  A 2xx status means the stream carried an
 * error event whose data (or its type alone) is the body. */
int
provider_should_retry(int status, const char *body, size_t len)
{
	if (status == 0)
		return 1;
	if (status >= 200 && status < 300) {
		json_object *obj = body && len ?
		    provider_json_parse(body, len) : NULL;
		const char *type = NULL;
		char word[64];
		int rc;

		if (obj) {
			provider_error_fields(obj, &type);
			rc = provider_error_retryable(type);
			json_object_put(obj);
			return rc;
		}
		provider_sanitize(body ? body : "", len, word, sizeof(word));
		return provider_error_retryable(word);
	}
	if (status == 429)
		return !(body && provider_body_says_quota(body, len));
	return status == 408 || status == 409 || status >= 500;
}

/* A Retry-After value in ms: delta-seconds (decimals allowed) or an
 * HTTP-date; -1 when unreadable. */
static long
provider_parse_retry_after(const char *v)
{
	struct tm tm;
	char *end;
	double secs;
	time_t at, now;

	while (isspace((unsigned char)*v))
		v++;
	secs = strtod(v, &end);
	if (end != v) {
		while (isspace((unsigned char)*end))
			end++;
		if (*end || !(secs >= 0))	/* also "nan": no cast */
			return -1;
		return secs > PROVIDER_RETRY_CAP_MS / 1000.0 ?
		    PROVIDER_RETRY_CAP_MS : (long)(secs * 1000.0);
	}
	memset(&tm, 0, sizeof(tm));
	end = strptime(v, "%a, %d %b %Y %H:%M:%S", &tm);
	if (!end)
		return -1;
	at = timegm(&tm);
	now = time(NULL);
	if (at <= now)
		return 0;
	return at - now > PROVIDER_RETRY_CAP_MS / 1000 ?
	    PROVIDER_RETRY_CAP_MS : (long)(at - now) * 1000;
}

/* A retry-after-ms value; -1 when unreadable. */
static long
provider_parse_retry_after_ms(const char *v)
{
	char *end;
	double ms = strtod(v, &end);

	while (isspace((unsigned char)*end))
		end++;
	if (end == v || *end || !(ms >= 0))	/* also "nan" */
		return -1;
	return ms > PROVIDER_RETRY_CAP_MS ? PROVIDER_RETRY_CAP_MS : (long)ms;
}

/* Delay before retry number attempt; see provider.h.  Server-given delays
 * are honoured as they are (capped at 60 s); backoff is base_ms (1000 when
 * not positive) * 2^(attempt-1), +-25% jitter, capped at 60 s. */
long
provider_retry_delay_ms(int attempt, const char *retry_after,
    const char *retry_after_ms, long base_ms)
{
	long ms = -1;
	double d;
	unsigned int r;

	if (retry_after_ms)
		ms = provider_parse_retry_after_ms(retry_after_ms);
	if (ms < 0 && retry_after)
		ms = provider_parse_retry_after(retry_after);
	if (ms >= 0)
		return ms;
	if (base_ms <= 0)
		base_ms = 1000;
	if (attempt < 1)
		attempt = 1;
	d = (double)base_ms * (double)(1u << (attempt > 20 ? 20 : attempt - 1));
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (unsigned int)time(NULL) * 2654435761u;
	d *= 0.75 + 0.5 * ((double)r / 4294967295.0);
	return d > PROVIDER_RETRY_CAP_MS ? PROVIDER_RETRY_CAP_MS : (long)d;
}
