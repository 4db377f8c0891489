/*
 * fuzz_jsonl.c: libFuzzer entry point for common/jsonl.c, the framing of
 * the room protocol (bytes from any client of a room's socket).
 *
 * The input is one stream.  For several line caps and every split plan of
 * fuzz.h it is fed to jsonl_feed, taking lines after each feed as callers
 * must; the lines taken must be exactly those of a reference split of the
 * whole input (lines ended by \n, one trailing \r dropped, empty ones
 * skipped, those over the cap reported once each as -EMSGSIZE), whatever
 * the split.  Each line is also parsed with jsonl_parse_object and an
 * object found is formatted back with jsonl_format and parsed again.
 *
 * Pieces are at most 7 lines' worth long: jsonl.h allows -ENOBUFS when more
 * than 8 lines' worth wait, and a caller holds at most one partial line
 * before it feeds.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "jsonl.h"

#define FUZZ_MAX_LINES 8192

/* The lines of a stream: offsets and lengths into the input. */
struct lines {
	size_t off[FUZZ_MAX_LINES];
	size_t len[FUZZ_MAX_LINES];
	size_t n;
	size_t overlong;
};

/* The reference: split the whole input by hand. */
static void
reference(const uint8_t *p, size_t n, size_t cap, struct lines *out)
{
	size_t start = 0;

	out->n = 0;
	out->overlong = 0;
	for (size_t i = 0; i <= n; i++) {
		size_t len = i - start;

		if (i == n) {
			/* An unterminated tail counts only once over the cap. */
			if (len > cap)
				out->overlong++;
			break;
		}
		if (p[i] != '\n')
			continue;
		if (len > cap) {
			out->overlong++;
		} else {
			if (len > 0 && p[start + len - 1] == '\r')
				len--;
			if (len > 0 && out->n < FUZZ_MAX_LINES) {
				out->off[out->n] = start;
				out->len[out->n++] = len;
			}
		}
		start = i + 1;
	}
}

/* Parse a line; an object must survive jsonl_format and a second parse. */
static void
check_parse(const char *line, size_t len)
{
	const char *err = NULL;
	json_object *obj = jsonl_parse_object(line, len, &err), *again;
	struct buf out;

	if (!obj) {
		FUZZ_CHECK(err != NULL && *err);
		return;
	}
	FUZZ_CHECK(err == NULL);
	buf_init(&out, 4 * len + 64);
	if (jsonl_format(&out, obj) == 0) {
		FUZZ_CHECK(out.len > 0 && out.data[out.len - 1] == '\n');
		FUZZ_CHECK(memchr(out.data, '\n', out.len - 1) == NULL);
		again = jsonl_parse_object(out.data, out.len - 1, &err);
		FUZZ_CHECK(again != NULL);
		json_object_put(again);
	}
	buf_free(&out);
	(void)json_get_string(obj, "type");
	(void)json_get_int(obj, "seq", 0);
	(void)json_get_bool(obj, "approve", 0);
	json_object_put(obj);
}

/* Take every whole line; compare with the reference as they come. */
static void
take_lines(struct jsonl *j, const uint8_t *p, const struct lines *ref,
    size_t *got, size_t *overlong, int parse)
{
	char *line;
	size_t len;
	int r;

	while ((r = jsonl_next(j, &line, &len)) != 0) {
		if (r == -EMSGSIZE) {
			(*overlong)++;
			continue;
		}
		FUZZ_CHECK(r == 1);
		FUZZ_CHECK(line != NULL && len > 0 && line[len] == '\0');
		FUZZ_CHECK(*got < ref->n || *got >= FUZZ_MAX_LINES);
		if (*got < FUZZ_MAX_LINES) {
			FUZZ_CHECK(len == ref->len[*got]);
			FUZZ_CHECK(memcmp(line, p + ref->off[*got], len) == 0);
		}
		(*got)++;
		if (parse)
			check_parse(line, len);
	}
	FUZZ_CHECK(line == NULL && len == 0);
}

/* Feed the input by one plan with line cap cap. */
static void
run(const uint8_t *p, size_t n, size_t cap, enum fuzz_plan plan,
    const struct lines *ref)
{
	struct jsonl j;
	struct fuzz_split sp;
	size_t off = 0, got = 0, overlong = 0;

	jsonl_init(&j, cap);
	fuzz_split_init(&sp, plan, p, n, 7 * (cap + 1));
	while (off < n) {
		size_t k = fuzz_split_next(&sp, n - off);

		FUZZ_CHECK(jsonl_feed(&j, p + off, k) == 0);
		off += k;
		take_lines(&j, p, ref, &got, &overlong, plan == FUZZ_WHOLE);
		FUZZ_CHECK(j.in.len <= cap);	/* one partial line at most */
	}
	FUZZ_CHECK(got == ref->n);
	FUZZ_CHECK(overlong == ref->overlong);
	jsonl_free(&j);
}

/* libFuzzer's entry: One stream: every cap, every plan. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 1, 7, 64, 100000 };
	static struct lines ref;

	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		reference(data, size, caps[c], &ref);
		for (int plan = 0; plan < FUZZ_NPLANS; plan++)
			run(data, size, caps[c], (enum fuzz_plan)plan, &ref);
	}
	return 0;
}
