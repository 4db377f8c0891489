/*
 * provider_impl.h: what provider.c shares with the two wire formats
 * (provider_anthropic.c, provider_openai.c).  Not for the rest of agent/:
 * that uses provider.h only.
 *
 * provider.c owns the stream object, the SSE framer in front of it and the
 * results (content blocks, stop reason, usage, error); each format parses
 * its events into those through the helpers below.
 */
#ifndef ATRIUM_PROVIDER_IMPL_H
#define ATRIUM_PROVIDER_IMPL_H

#include <stddef.h>
#include <json-c/json.h>

#include "buf.h"
#include "provider.h"
#include "sse.h"

/* The largest text or tool input kept for one content block. */
#define PROVIDER_MAX_BLOCK (8u << 20)
/* The most tool calls taken from one answer. */
#define PROVIDER_MAX_CALLS 64

struct provider_stream {
	enum provider_kind kind;
	const struct provider_ops *ops;	/* kind's format */
	struct provider_sink sink;	/* copied; members may be NULL */
	struct sse *sse;		/* frames the body into events */
	json_object *content;		/* the answer's neutral blocks so far */
	char stop_reason[32];		/* neutral; "" until known */
	long input_tokens;		/* prompt tokens, cache included */
	long output_tokens;
	int complete;			/* the format's terminal event seen */
	int ended;			/* provider_stream_finish was called */
	int err;			/* sticky: first error of feed/finish */
	char err_type[64];		/* after -EPROTO / -EBADMSG */
	char err_msg[512];
	void *wire;			/* the format's own parse state */
};

/* --- used by the formats, defined in provider.c --- */

/* Parse exactly n bytes of JSON (whitespace around allowed); NULL if they
 * are not one JSON value. */
json_object *provider_json_parse(const char *p, size_t n);

/* Member key of obj as a string / integer, or NULL / dflt when absent or of
 * another type. */
const char *provider_json_str(json_object *obj, const char *key);

/* One tool of the agent's list as {name, description, SCHEMA_KEY: schema},
 * the shape both wire formats use ("input_schema" for Anthropic,
 * "parameters" inside OpenAI's function); {"type":"object"} when the tool
 * has no schema.  A new object. */
json_object *provider_tool_object(json_object *tool, const char *schema_key);
long provider_json_long(json_object *obj, const char *key, long dflt);

/* Record an error (type, printf message) and return rc, which is -EPROTO
 * for an error the provider sent, -EBADMSG for bytes not in its format. */
int provider_stream_fail(struct provider_stream *s, int rc, const char *type,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* The message of a parsed error object in any server's shape (Anthropic,
 * OpenAI, Ollama, Cloudflare, vLLM), and its type or code in *type (may be
 * NULL); NULL when there is no message.  Pointers borrow from obj. */
const char *provider_error_fields(json_object *obj, const char **type);

/* A piece of text streamed: tell the sink. */
void provider_stream_text(struct provider_stream *s, const char *p, size_t n);

/* A whole text block: append it to the answer unless empty.  0 or -ENOMEM. */
int provider_stream_add_text(struct provider_stream *s, const char *p,
    size_t n);

/* A whole tool call whose arguments are raw (n bytes, NUL-terminated):
 * append the tool_use block (input {} when raw is not a JSON object) and
 * tell the sink (input NULL then).  0 or -ENOMEM. */
int provider_stream_add_tool(struct provider_stream *s, const char *id,
    const char *name, const char *raw, size_t n);

/* The neutral transcript from messages[from] on, fit to send: role and
 * content only, content always an array of blocks, empty text blocks and
 * empty messages dropped, consecutive messages of one role merged,
 * tool_result blocks first in each user message.  The arrays and messages
 * are new; the blocks in them are the caller's, shared: a builder replaces
 * a block it must change by a changed copy, never changes one in place.
 * *open_from is the index in messages of the first message merged into the
 * last one out (the one a later message may still merge into), or from
 * when nothing is out.  NULL when messages is not an array of messages
 * with a user or assistant role. */
json_object *provider_transcript_normalize(json_object *messages,
    size_t from, size_t *open_from);

/* Append "Name: value" to out->headers.  0, -ENOMEM, or -EINVAL when the
 * value holds a line break (a header could be smuggled in). */
int provider_http_header(struct provider_http *out, const char *name,
    const char *value);

/* out->url = base (trailing slashes dropped) + path.  0 or -ENOMEM. */
int provider_http_url(struct provider_http *out, const char *base,
    const char *path);

/* kind's wire form of the agent's tool list (a new array). */
typedef json_object *provider_tools_fn(json_object *tools);

/* out->body = the head object (every member of the request body but
 * messages and tools) serialised, with "messages": [first (may be NULL:
 * OpenAI's system message), the transcript's messages in kind's wire form]
 * and "tools": the agent's tools (NULL or empty: none) in the wire form
 * wire makes, added at its end.  The settled messages' text, and the
 * tools' text, come from and go to cache (provider.h; NULL: none kept).
 * 0, -EINVAL when messages is not a transcript, -ENOMEM, or -ENOBUFS past
 * PROVIDER_MAX_BODY. */
int provider_http_body(struct provider_http *out, enum provider_kind kind,
    json_object *head, json_object *first, json_object *messages,
    json_object *tools, provider_tools_fn *wire,
    struct provider_cache *cache);

/* The largest request body built. */
#define PROVIDER_MAX_BODY (1u << 30)

/* --- the formats --- */

/* What a wire format implements, one table each (as SQLite's
 * sqlite3_io_methods): provider.c picks the table by kind once and calls
 * through it, never asking which format it holds. */
struct provider_ops {
	const char *name;		/* as --provider names it */
	/* The streaming request for req (see provider.h: provider_build);
	 * base_url and req are checked, api_key is NULL or not empty. */
	int (*build)(const char *base_url, const char *api_key,
	    const struct provider_request *req, struct provider_http *out);
	/* One normalised message (provider_transcript_normalize; its blocks
	 * may be replaced) in the format's wire form, appended to out with
	 * a ',' after each wire message.  0 or -errno (buf_append's). */
	int (*message)(json_object *msg, struct buf *out);
	/* The format's own parse state of a stream (s->wire): a new one,
	 * NULL when out of memory; free accepts NULL. */
	void *(*state_new)(void);
	void (*state_free)(void *state);
	/* One SSE event of the response.  0 or -errno (provider_stream_fail
	 * for -EPROTO and -EBADMSG). */
	int (*event)(struct provider_stream *s, const struct sse_event *ev);
	/* The body ended: 0 when the terminal event came, -EPIPE when the
	 * answer was cut, or another -errno. */
	int (*finish)(struct provider_stream *s);
};

extern const struct provider_ops provider_anthropic_ops;	/* Messages API */
extern const struct provider_ops provider_openai_ops;	/* chat completions */

#endif
