/*
 * sse.h: a Server-Sent Events framer (text/event-stream), with no I/O.
 *
 * Bytes go in at any boundary; whole events come out through a callback.
 * Used by the providers (provider_anthropic.c, provider_openai.c) to frame
 * a model's streamed response before they look at the JSON inside.
 */
#ifndef ATRIUM_SSE_H
#define ATRIUM_SSE_H

#include <stddef.h>

/* The largest event (data lines joined, or one line) accepted by default. */
#define SSE_MAX_EVENT (4u << 20)

/* One dispatched event.  Every pointer is valid only during the callback;
 * data is NUL-terminated at data[data_len]. */
struct sse_event {
	const char *event;	/* the event: field, "message" when absent */
	const char *data;	/* data: lines joined with \n */
	size_t data_len;
	const char *id;		/* the last id: seen in the stream, or "" */
};

/* Called once per event.  A non-zero result stops the framer: sse_feed
 * returns it, now and on every later call. */
typedef int (*sse_event_fn)(void *arg, const struct sse_event *ev);

struct sse;

/* A framer that accepts events of at most max_event bytes (0: the default).
 * NULL when out of memory. */
struct sse *sse_new(size_t max_event, sse_event_fn fn, void *arg);
void sse_free(struct sse *s);

/* Frame n bytes.  0; -EMSGSIZE when a line or an event passes the maximum;
 * -ENOMEM; or the callback's non-zero result.  Errors are sticky. */
int sse_feed(struct sse *s, const char *p, size_t n);

/* The body ended.  An event whose data lines were all terminated but which
 * lacks its closing blank line is still dispatched (some servers end that
 * way); an unterminated last line is dropped, as the standard says.
 * 0 or an error as for sse_feed. */
int sse_finish(struct sse *s);

#endif
