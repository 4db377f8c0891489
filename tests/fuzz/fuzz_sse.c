/*
 * fuzz_sse.c: libFuzzer entry point for agent/provider/sse.c, the Server-Sent
 * Events framer in front of both model providers (bytes from the network).
 *
 * The input is one response body.  For several event caps and every split
 * plan of fuzz.h it is fed to sse_feed, then sse_finish; the events that
 * come out (type, data, id) and the results must equal those of a
 * reference framer that reads the whole body at once, written plainly from
 * the rules at the head of sse.c.  An event whose data is "STOP" makes the
 * callback return 5, to check that a callback's result stops the framer
 * and sticks.
 */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "sse.h"

#define FIELD_MAX 256	/* sse.c's SSE_MAX_FIELD */
#define LOG_MAX (1u << 20)

/* Events as "event\0data\0id\0" records, with data's length first. */
struct log {
	struct buf b;
	size_t count;
};

/* Record one event. */
static void
log_event(struct log *l, const char *event, const char *data, size_t dlen,
    const char *id)
{
	char len[32];
	int n = snprintf(len, sizeof(len), "%zu:", dlen);

	FUZZ_CHECK(buf_append(&l->b, len, (size_t)n) == 0);
	FUZZ_CHECK(buf_append(&l->b, event, strlen(event) + 1) == 0);
	FUZZ_CHECK(buf_append(&l->b, data, dlen) == 0);
	FUZZ_CHECK(buf_append(&l->b, id, strlen(id) + 1) == 0);
	l->count++;
}

/* 5 for an event that says STOP, else 0. */
static int
stop_result(const char *data, size_t dlen)
{
	return dlen == 4 && memcmp(data, "STOP", 4) == 0 ? 5 : 0;
}

/* The framer's callback. */
static int
on_event(void *arg, const struct sse_event *ev)
{
	FUZZ_CHECK(ev->event && ev->data && ev->id);
	FUZZ_CHECK(ev->data[ev->data_len] == '\0');
	log_event(arg, ev->event, ev->data, ev->data_len, ev->id);
	return stop_result(ev->data, ev->data_len);
}

/* --- the reference framer ------------------------------------------------ */

struct ref {
	size_t max;
	int started;
	char *data;			/* pending data lines, each + \n */
	size_t dlen;
	char event[FIELD_MAX + 1];	/* NUL-terminated, may hold NULs */
	size_t elen;
	char id[FIELD_MAX + 1];
	size_t ilen;
	struct log *log;
};

/* Dispatch the pending event; the callback's result. */
static int
ref_dispatch(struct ref *r)
{
	char ev[FIELD_MAX + 1], id[FIELD_MAX + 1];
	int rc;

	if (r->dlen == 0) {
		r->elen = 0;
		return 0;
	}
	r->dlen--;
	r->data[r->dlen] = '\0';
	memcpy(ev, r->event, r->elen);
	ev[r->elen] = '\0';
	memcpy(id, r->id, r->ilen);
	id[r->ilen] = '\0';
	log_event(r->log, r->elen ? ev : "message", r->data, r->dlen, id);
	rc = stop_result(r->data, r->dlen);
	r->dlen = 0;
	r->elen = 0;
	return rc;
}

/* One whole line; 0 or an error. */
static int
ref_line(struct ref *r, const char *l, size_t n)
{
	size_t nlen;
	const char *v;
	size_t vlen;

	if (!r->started) {
		r->started = 1;
		if (n >= 3 && memcmp(l, "\xEF\xBB\xBF", 3) == 0)
			l += 3, n -= 3;
	}
	if (n == 0)
		return ref_dispatch(r);
	if (l[0] == ':')
		return 0;
	nlen = 0;
	while (nlen < n && l[nlen] != ':')
		nlen++;
	v = nlen < n ? l + nlen + 1 : l + n;
	vlen = nlen < n ? n - nlen - 1 : 0;
	if (vlen > 0 && v[0] == ' ')
		v++, vlen--;
	if (nlen == 5 && memcmp(l, "error", 5) == 0) {
		/* llama-server's "error:" line: event "error" plus data. */
		memcpy(r->event, "error", 5);
		r->elen = 5;
		nlen = 4;
		l = "data";
	}
	if (nlen == 4 && memcmp(l, "data", 4) == 0) {
		if (r->dlen + vlen + 1 > r->max + 1)
			return -EMSGSIZE;
		memcpy(r->data + r->dlen, v, vlen);
		r->dlen += vlen;
		r->data[r->dlen++] = '\n';
	} else if (nlen == 5 && memcmp(l, "event", 5) == 0) {
		if (vlen > FIELD_MAX)
			return -EMSGSIZE;
		memcpy(r->event, v, vlen);
		r->elen = vlen;
	} else if (nlen == 2 && memcmp(l, "id", 2) == 0 &&
	    !memchr(v, '\0', vlen)) {
		if (vlen > FIELD_MAX)
			return -EMSGSIZE;
		memcpy(r->id, v, vlen);
		r->ilen = vlen;
	}
	return 0;
}

/* Frame the whole body: the result of feeding it, and of finishing. */
static void
ref_run(const uint8_t *p, size_t n, size_t max, struct log *log,
    int *feed_rc, int *finish_rc)
{
	struct ref r = { .max = max, .log = log };
	size_t i = 0;
	int rc = 0;

	r.data = malloc(max + 2);
	FUZZ_CHECK(r.data != NULL);
	while (i < n) {
		size_t j = i;

		while (j < n && p[j] != '\n' && p[j] != '\r')
			j++;
		if (j - i > max) {
			rc = -EMSGSIZE;
			break;
		}
		if (j == n)
			break;		/* an unterminated last line */
		if ((rc = ref_line(&r, (const char *)p + i, j - i)) != 0)
			break;
		i = j + 1;
		if (p[j] == '\r' && i < n && p[i] == '\n')
			i++;
	}
	*feed_rc = rc;
	if (rc == 0)
		rc = i < n ? 0 : ref_dispatch(&r);	/* a cut line: dropped */
	*finish_rc = rc;
	free(r.data);
}

/* --- the framer under test ----------------------------------------------- */

/* Feed by one plan; the log and results must match the reference's. */
static void
run(const uint8_t *p, size_t n, size_t max, enum fuzz_plan plan,
    const struct log *want, int want_feed, int want_finish)
{
	struct log got = { .count = 0 };
	struct fuzz_split sp;
	struct sse *s;
	size_t off = 0;
	int rc = 0, r;

	buf_init(&got.b, LOG_MAX);
	s = sse_new(max, on_event, &got);
	FUZZ_CHECK(s != NULL);
	fuzz_split_init(&sp, plan, p, n, 0);
	while (off < n) {
		size_t k = fuzz_split_next(&sp, n - off);

		r = sse_feed(s, (const char *)p + off, k);
		if (rc)
			FUZZ_CHECK(r == rc);	/* errors stick */
		rc = r;
		off += k;
	}
	FUZZ_CHECK(rc == want_feed);
	r = sse_finish(s);
	FUZZ_CHECK(r == want_finish);
	if (r)
		FUZZ_CHECK(sse_feed(s, "data: x\n\n", 9) == r);
	sse_free(s);
	FUZZ_CHECK(got.count == want->count);
	FUZZ_CHECK(got.b.len == want->b.len);
	FUZZ_CHECK(got.b.len == 0 ||
	    memcmp(got.b.data, want->b.data, got.b.len) == 0);
	buf_free(&got.b);
}

/* libFuzzer's entry: One body: every cap, every plan, against the reference. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 1, 16, 300, 0 };

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		size_t max = caps[c] ? caps[c] : SSE_MAX_EVENT;
		struct log want = { .count = 0 };
		int feed_rc, finish_rc;

		buf_init(&want.b, LOG_MAX);
		ref_run(data, size, max, &want, &feed_rc, &finish_rc);
		for (int plan = 0; plan < FUZZ_NPLANS; plan++)
			run(data, size, caps[c], (enum fuzz_plan)plan, &want,
			    feed_rc, finish_rc);
		buf_free(&want.b);
	}
	return 0;
}
