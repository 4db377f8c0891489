/*
 * test_agent_sse.c: the SSE framer (agent/provider/sse.c) from raw bytes: line
 * endings, fields, comments, multi-line data, ids, the size cap, callback
 * errors, the end of the body, and every split of the input.
 */
#include <errno.h>
#include <stdlib.h>

#include "unit.h"
#include "../../agent/provider/sse.h"

/* Events rendered as "event|data|id;" one after another. */
struct rec {
	char out[4096];
	size_t len;
	int fail_at;		/* return -EPROTO at this event (1-based) */
	int count;
};

static int
rec_event(void *arg, const struct sse_event *ev)
{
	struct rec *r = arg;
	int n;

	r->count++;
	if (r->fail_at && r->count == r->fail_at)
		return -EPROTO;
	CHECK(strlen(ev->data) == ev->data_len);
	n = snprintf(r->out + r->len, sizeof(r->out) - r->len, "%s|%s|%s;",
	    ev->event, ev->data, ev->id);
	if (n > 0)
		r->len += (size_t)n;
	return 0;
}

/* Frame text cut at the given positions (ascending, -1 ends); the result
 * of feed and finish in *rc. */
static void
frame(const char *text, const size_t *cuts, struct rec *r, int *rc)
{
	struct sse *s = sse_new(0, rec_event, r);
	size_t n = strlen(text), at = 0;

	*rc = 0;
	for (; cuts && *cuts != (size_t)-1; cuts++) {
		if (!*rc)
			*rc = sse_feed(s, text + at, *cuts - at);
		at = *cuts;
	}
	if (!*rc)
		*rc = sse_feed(s, text + at, n - at);
	if (!*rc)
		*rc = sse_finish(s);
	sse_free(s);
}

/* Expect the events of text, whole, byte by byte and split anywhere. */
static void
expect(const char *text, const char *want)
{
	struct rec r;
	size_t n = strlen(text), cuts[3];
	int rc;

	memset(&r, 0, sizeof(r));
	frame(text, NULL, &r, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(r.out, want);
	for (size_t i = 0; i <= n; i++) {
		for (size_t j = i; j <= n; j += 3) {
			memset(&r, 0, sizeof(r));
			cuts[0] = i;
			cuts[1] = j;
			cuts[2] = (size_t)-1;
			frame(text, cuts, &r, &rc);
			if (rc != 0 || strcmp(r.out, want) != 0) {
				fprintf(stderr, "split at %zu,%zu:\n", i, j);
				CHECK_INT(rc, 0);
				CHECK_STR(r.out, want);
				return;
			}
		}
	}
	/* Byte by byte. */
	{
		struct sse *s;

		memset(&r, 0, sizeof(r));
		s = sse_new(0, rec_event, &r);
		for (size_t i = 0; i < n; i++)
			CHECK_INT(sse_feed(s, text + i, 1), 0);
		CHECK_INT(sse_finish(s), 0);
		CHECK_STR(r.out, want);
		sse_free(s);
	}
}

static void
test_sse_basic(void)
{
	expect("event: message_start\ndata: {\"a\":1}\n\n",
	    "message_start|{\"a\":1}|;");
	expect("data: x\n\n", "message|x|;");
	expect("data:x\n\ndata:  two\n\n", "message|x|;message| two|;");
}

static void
test_sse_line_endings(void)
{
	expect("event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n",
	    "a|1|;b|2|;message|3|;");
	/* A \r then \n is one terminator, not a blank line. */
	expect("data: a\r\ndata: b\r\n\r\n", "message|a\nb|;");
}

static void
test_sse_fields(void)
{
	expect(": comment\n:\ndata: a\ndata: b\ndata\n\n", "message|a\nb\n|;");
	expect("id: 7\ndata: a\n\ndata: b\n\n", "message|a|7;message|b|7;");
	expect("retry: 10\nfoo: bar\ndata: a\n\n", "message|a|;");
	/* A blank line without data dispatches nothing and forgets event. */
	expect("event: x\n\ndata: a\n\n", "message|a|;");
	expect("\n\n\ndata: a\n\n", "message|a|;");
	expect("\xEF\xBB\xBF" "data: bom\n\n", "message|bom|;");
	expect("data: a:b: c\n\n", "message|a:b: c|;");
}

/* llama-server's OpenAI-format streams send "error: {json}": read as an
 * error event, so its message reaches the room. */
static void
test_sse_error_field(void)
{
	expect("data: {\"a\":1}\n\nerror: {\"code\":500}\n\n",
	    "message|{\"a\":1}|;error|{\"code\":500}|;");
	expect("error: x\r\n\r\ndata: y\n\n", "error|x|;message|y|;");
}

static void
test_sse_finish(void)
{
	struct rec r;
	int rc;

	/* Terminated data lines without the closing blank line. */
	memset(&r, 0, sizeof(r));
	frame("data: [DONE]\n", NULL, &r, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(r.out, "message|[DONE]|;");
	/* A last line cut short is dropped with its event. */
	memset(&r, 0, sizeof(r));
	frame("data: a\n\ndata: b\ndata: {\"x\"", NULL, &r, &rc);
	CHECK_INT(rc, 0);
	CHECK_STR(r.out, "message|a|;");
}

static void
test_sse_cap(void)
{
	struct rec r;
	struct sse *s;
	char big[200];

	memset(&r, 0, sizeof(r));
	s = sse_new(64, rec_event, &r);
	memset(big, 'x', sizeof(big));
	CHECK_INT(sse_feed(s, "data: ", 6), 0);
	CHECK_INT(sse_feed(s, big, sizeof(big)), -EMSGSIZE);
	CHECK_INT(sse_feed(s, "\n\n", 2), -EMSGSIZE);	/* sticky */
	CHECK_INT(sse_finish(s), -EMSGSIZE);
	CHECK_INT(r.count, 0);
	sse_free(s);

	/* Many short data lines passing the cap together. */
	memset(&r, 0, sizeof(r));
	s = sse_new(64, rec_event, &r);
	for (int i = 0; i < 20; i++)
		if (sse_feed(s, "data: 0123456\n", 14) != 0)
			break;
	CHECK_INT(sse_feed(s, "\n", 1), -EMSGSIZE);
	CHECK_INT(r.count, 0);
	sse_free(s);

	/* Exactly at the cap is fine. */
	memset(&r, 0, sizeof(r));
	s = sse_new(64, rec_event, &r);
	memset(big, 'y', 58);
	CHECK_INT(sse_feed(s, "data: ", 6), 0);
	CHECK_INT(sse_feed(s, big, 58), 0);
	CHECK_INT(sse_feed(s, "\n\n", 2), 0);
	CHECK_INT(r.count, 1);
	sse_free(s);
}

static void
test_sse_callback_error(void)
{
	struct rec r;
	struct sse *s;

	memset(&r, 0, sizeof(r));
	r.fail_at = 2;
	s = sse_new(0, rec_event, &r);
	CHECK_INT(sse_feed(s, "data: 1\n\ndata: 2\n\ndata: 3\n\n", 27), -EPROTO);
	CHECK_INT(sse_feed(s, "data: 4\n\n", 9), -EPROTO);
	CHECK_STR(r.out, "message|1|;");
	sse_free(s);
}

int
main(void)
{
	TEST(test_sse_basic);
	TEST(test_sse_line_endings);
	TEST(test_sse_fields);
	TEST(test_sse_error_field);
	TEST(test_sse_finish);
	TEST(test_sse_cap);
	TEST(test_sse_callback_error);
	return unit_done("test_agent_sse");
}
