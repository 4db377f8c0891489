/*
 * provider.h: the model providers' wire formats, with no I/O.
 *
 * The agent keeps its transcript in one neutral form, the Anthropic Messages
 * form, whatever the provider:
 *
 *   [ {"role":"user","content":[{"type":"text","text":"..."}]},
 *     {"role":"assistant","content":[{"type":"text","text":"..."},
 *         {"type":"tool_use","id":"toolu_1","name":"bash","input":{...}}]},
 *     {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1",
 *         "content":"...","is_error":false}]} ]
 *
 * A provider turns a request in that form into an HTTP request (URL, headers,
 * JSON body), and the bytes of a streamed response (SSE) back into text
 * deltas, whole tool calls and the assistant message in neutral form.
 *
 *   anthropic  POST BASE/v1/messages      x-api-key, anthropic-version
 *   openai     POST BASE/chat/completions Authorization: Bearer (BASE ends
 *              in /v1 for OpenAI, Ollama, vLLM, llama.cpp, Workers AI)
 */
#ifndef ATRIUM_PROVIDER_H
#define ATRIUM_PROVIDER_H

#include <stddef.h>
#include <json-c/json.h>

enum provider_kind { PROVIDER_ANTHROPIC, PROVIDER_OPENAI };

/* "anthropic" / "openai" to a kind; -EINVAL for anything else. */
int provider_kind_parse(const char *name, enum provider_kind *out);

/* The wire form of a transcript's settled messages, kept between the
 * requests of one turn so that a step serialises only what changed since
 * the last: a turn's transcript only grows, and rebuilding and printing
 * the whole of it was the biggest part of a step's own time.
 *
 * A message is settled once a message of the other role follows it (the
 * wire merges consecutive messages of one role, so the last may still
 * grow).  The cache holds a reference to every transcript message its
 * text covers and is used only when the request's messages begin with
 * those very objects (so none of them was freed and its address reused);
 * anything else, a change of format included, empties it and the text is
 * made whole again.  Messages are never changed in place once they are in
 * a transcript (provider_impl.h: provider_transcript_normalize), so the
 * same object means the same text.  A request built with a cache is byte
 * for byte the one built without.
 *
 * The tool list's wire text is kept the same way, for the very list
 * object it was made from (context.c offers one list object for as long
 * as the tools stay the same, and never changes a list in place). */
struct provider_cache;

/* An empty cache; NULL when out of memory.  Free with provider_cache_free
 * (NULL is fine). */
struct provider_cache *provider_cache_new(void);
void provider_cache_free(struct provider_cache *c);

struct provider_request {
	const char *model;
	const char *system;		/* system prompt, may be NULL */
	json_object *messages;		/* neutral transcript (borrowed) */
	json_object *tools;		/* [{name, description, input_schema}],
					 * never changed once sent with a
					 * cache (provider_cache) */
	int max_tokens;
	struct provider_cache *cache;	/* the turn's, or NULL: build whole */
};

/* An HTTP request ready for libcurl.  Free with provider_http_free. */
struct provider_http {
	char *url;
	char **headers;			/* NULL-terminated "Name: value" */
	char *body;			/* JSON */
	size_t body_len;		/* its bytes */
};

/* Build the streaming request.  api_key may be NULL or "" (local servers).
 * 0 or -errno. */
int provider_build(enum provider_kind kind, const char *base_url,
    const char *api_key, const struct provider_request *req,
    struct provider_http *out);
void provider_http_free(struct provider_http *h);

/* What a stream reports as it is parsed. */
struct provider_sink {
	void *arg;
	/* A piece of the assistant's text. */
	void (*text)(void *arg, const char *text, size_t len);
	/* A whole tool call; input is the parsed arguments object, or NULL
	 * when the model sent arguments that are not a JSON object (raw then
	 * holds them, for the error the model is told). */
	void (*tool_call)(void *arg, const char *id, const char *name,
	    json_object *input, const char *raw);
};

struct provider_stream;

struct provider_stream *provider_stream_new(enum provider_kind kind,
    const struct provider_sink *sink);
void provider_stream_free(struct provider_stream *s);

/* Feed bytes of the response body, at any boundary.  0, or -EPROTO when the
 * stream carried an error event (provider_stream_error tells it), or
 * -EBADMSG on bytes that are not the provider's format. */
int provider_stream_feed(struct provider_stream *s, const char *p, size_t n);

/* The body ended.  0 when the stream was complete (message_stop / [DONE] /
 * a finish reason); -EPIPE when it was cut short. */
int provider_stream_finish(struct provider_stream *s);

/* After a complete stream: the assistant message in neutral form (caller
 * owns the reference), the stop reason in neutral terms (end_turn,
 * tool_use, max_tokens, stop_sequence), and token usage. */
json_object *provider_stream_message(struct provider_stream *s);
const char *provider_stream_stop_reason(struct provider_stream *s);
void provider_stream_usage(struct provider_stream *s, long *input_tokens,
    long *output_tokens);

/* After -EPROTO: the provider's error type and message ("overloaded_error",
 * "Overloaded"). */
const char *provider_stream_error(struct provider_stream *s,
    const char **message);

/* A non-2xx response: the provider's own message from its JSON error body,
 * or from the first error event when the body is an event stream (or the
 * start of the body, sanitised) into out. */
void provider_error_message(enum provider_kind kind, int status,
    const char *body, size_t len, char *out, size_t outlen);

/* The same message alone, without its type: a refusal the room is shown
 * in the server's own words. */
void provider_error_words(int status, const char *body, size_t len,
    char *out, size_t outlen);

/* Should a failed request be retried?  Yes on 408, 409, 429, 5xx and 529,
 * and on a cut stream or an overloaded/api error event; no on 400, 401,
 * 403, 404 and a 429 whose body says a spending limit or quota is reached.
 * status 0 means the transport failed (connection refused, reset). */
int provider_should_retry(int status, const char *body, size_t len);

/* Delay before retry number attempt (1, 2, ...): retry-after (seconds) or
 * retry-after-ms header value when given (NULL otherwise), else exponential
 * backoff from base_ms with jitter, capped at 60 s. */
long provider_retry_delay_ms(int attempt, const char *retry_after,
    const char *retry_after_ms, long base_ms);

/* Added with the wire formats: is an error type (a stream's error event,
 * or an error body's type) worth a retry?  Yes for overloaded_error,
 * api_error, rate_limit_error, server_error and unknown types; no for types
 * naming a bad request, credentials, permissions, a missing model or a
 * quota (invalid_request_error, authentication_error, insufficient_quota).
 * provider_should_retry(200, data, len) applies it to an error event's
 * data, e.g. after provider_stream_feed returned -EPROTO. */
int provider_error_retryable(const char *type);

#endif
