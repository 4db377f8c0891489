/*
 * sse.c: the Server-Sent Events framer behind both providers.
 *
 * Called by provider.c with the body bytes of a streamed model response, in
 * whatever pieces libcurl hands over.  It follows the WHATWG "event stream
 * interpretation" rules:
 *
 *   line      ends in \n, \r\n or \r (a \r\n split across two feeds is one
 *             terminator: the AFTER_CR state remembers the \r)
 *   ""        blank line: dispatch the pending event if it has data
 *   ":..."    comment (keep-alives), ignored
 *   "f:v"     field f, value v less one leading space; "f" alone: value ""
 *   event     the event's type (default "message")
 *   data      appended to the data, lines joined with \n
 *   id        the last event id (kept across events; ignored if it has NUL)
 *   error     not in the standard: llama-server's "error: {json}" line,
 *             read as "event: error" with that data
 *   other     (retry, unknown) ignored
 *
 * Invariants: line holds the current line without its terminator; data
 * holds the pending event's data lines, each followed by \n; neither passes
 * max (then the framer fails with -EMSGSIZE, for good).  A leading UTF-8 BOM
 * is skipped.  The workload is a few hundred small events per response, so
 * each feed scans for terminators and appends whole spans, not bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "sse.h"

#define SSE_MAX_FIELD 256	/* event names and ids are short */

enum sse_state {
	SSE_LINE,		/* inside a line (or at its start) */
	SSE_AFTER_CR,		/* a \r ended the last line; skip one \n */
};

struct sse {
	enum sse_state state;
	int err;		/* sticky: the first error or callback result */
	int started;		/* the first line was seen (BOM handled) */
	size_t max;		/* largest line or event, in bytes */
	struct buf line;	/* current line, no terminator */
	struct buf data;	/* pending data lines, each + \n */
	struct buf event;	/* pending event type, empty: "message" */
	struct buf id;		/* last event id */
	sse_event_fn fn;	/* where events go */
	void *arg;
};

/* A new framer; NULL when out of memory. */
struct sse *
sse_new(size_t max_event, sse_event_fn fn, void *arg)
{
	struct sse *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->max = max_event ? max_event : SSE_MAX_EVENT;
	buf_init(&s->line, s->max);
	buf_init(&s->data, s->max + 1);
	buf_init(&s->event, SSE_MAX_FIELD);
	buf_init(&s->id, SSE_MAX_FIELD);
	s->fn = fn;
	s->arg = arg;
	return s;
}

/* Free the framer and what it buffered; NULL is fine. */
void
sse_free(struct sse *s)
{
	if (!s)
		return;
	buf_free(&s->line);
	buf_free(&s->data);
	buf_free(&s->event);
	buf_free(&s->id);
	free(s);
}

/* Hand the pending event to the callback (if it has data) and clear it.
 * 0 or the callback's result. */
static int
sse_dispatch(struct sse *s)
{
	struct sse_event ev;
	int rc;

	if (s->data.len == 0) {
		buf_reset(&s->event);
		return 0;
	}
	/* Drop the \n that follows the last data line. */
	s->data.data[--s->data.len] = '\0';
	ev.event = s->event.len ? s->event.data : "message";
	ev.data = s->data.data;
	ev.data_len = s->data.len;
	ev.id = s->id.len ? s->id.data : "";
	rc = s->fn(s->arg, &ev);
	buf_reset(&s->data);
	buf_reset(&s->event);
	return rc;
}

/* Replace a short field's value.  0 or -EMSGSIZE. */
static int
sse_set_field(struct buf *b, const char *v, size_t n)
{
	buf_reset(b);
	if (n == 0)
		return 0;
	return buf_append(b, v, n) == 0 ? 0 : -EMSGSIZE;
}

/* Apply one field line.  0, -EMSGSIZE or -ENOMEM. */
static int
sse_field(struct sse *s, const char *name, size_t nlen, const char *v,
    size_t vlen)
{
	if (nlen == 4 && memcmp(name, "data", 4) == 0) {
		if (vlen + 1 > buf_room(&s->data))
			return -EMSGSIZE;
		if (buf_append(&s->data, v, vlen) < 0 ||
		    buf_append(&s->data, "\n", 1) < 0)
			return -ENOMEM;
		return 0;
	}
	if (nlen == 5 && memcmp(name, "event", 5) == 0)
		return sse_set_field(&s->event, v, vlen);
	if (nlen == 5 && memcmp(name, "error", 5) == 0) {
		/* llama-server's OpenAI-format streams report a failure as an
		 * "error: {json}" line, a field the standard would ignore:
		 * read it as "event: error" + "data: {json}", so the
		 * server's message is not lost. */
		int rc = sse_set_field(&s->event, "error", 5);

		return rc ? rc : sse_field(s, "data", 4, v, vlen);
	}
	if (nlen == 2 && memcmp(name, "id", 2) == 0) {
		if (memchr(v, '\0', vlen))
			return 0;	/* the standard ignores such ids */
		return sse_set_field(&s->id, v, vlen);
	}
	return 0;		/* retry and unknown fields */
}

/* Interpret one whole line (no terminator).  0 or an error. */
static int
sse_line(struct sse *s, const char *l, size_t n)
{
	const char *colon;
	size_t nlen;

	if (!s->started) {
		s->started = 1;
		if (n >= 3 && memcmp(l, "\xEF\xBB\xBF", 3) == 0) {
			l += 3;
			n -= 3;
		}
	}
	if (n == 0)
		return sse_dispatch(s);
	if (l[0] == ':')
		return 0;
	colon = memchr(l, ':', n);
	if (!colon)
		return sse_field(s, l, n, "", 0);
	nlen = (size_t)(colon - l);
	l = colon + 1;
	n -= nlen + 1;
	if (n > 0 && l[0] == ' ') {
		l++;
		n--;
	}
	return sse_field(s, colon - nlen, nlen, l, n);
}

/* Append a span of the current line.  0 or -EMSGSIZE / -ENOMEM. */
static int
sse_line_append(struct sse *s, const char *p, size_t n)
{
	if (n > buf_room(&s->line))
		return -EMSGSIZE;
	return buf_append(&s->line, p, n) == 0 ? 0 : -ENOMEM;
}

/* Frame n bytes; see sse.h. */
int
sse_feed(struct sse *s, const char *p, size_t n)
{
	size_t i = 0, j;
	int rc;

	if (s->err)
		return s->err;
	while (i < n) {
		if (s->state == SSE_AFTER_CR) {
			s->state = SSE_LINE;
			if (p[i] == '\n') {
				i++;
				continue;
			}
		}
		for (j = i; j < n && p[j] != '\n' && p[j] != '\r'; j++)
			;
		if (j > i && (rc = sse_line_append(s, p + i, j - i)) < 0)
			return s->err = rc;
		if (j == n)
			break;
		if (p[j] == '\r')
			s->state = SSE_AFTER_CR;
		rc = sse_line(s, s->line.len ? s->line.data : "", s->line.len);
		buf_reset(&s->line);
		if (rc)
			return s->err = rc;
		i = j + 1;
	}
	return 0;
}

/* The body ended; see sse.h. */
int
sse_finish(struct sse *s)
{
	int rc;

	if (s->err)
		return s->err;
	if (s->line.len > 0) {
		/* Cut inside a line: the pending event is incomplete. */
		buf_reset(&s->line);
		buf_reset(&s->data);
		buf_reset(&s->event);
		return 0;
	}
	rc = sse_dispatch(s);
	if (rc)
		s->err = rc;
	return rc;
}
