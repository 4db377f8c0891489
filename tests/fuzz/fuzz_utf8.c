/*
 * fuzz_utf8.c: libFuzzer entry point for common/utf8.c, the repair and
 * cleaning of text from clients and commands.
 *
 * Whatever the input: utf8_repair's output is valid UTF-8, and is the input
 * itself when that was valid; utf8_clean's output is valid UTF-8 with no C0
 * control but tab and newline, no DEL and no C1 (C2 80..9F), and cleaning
 * it again changes nothing; utf8_complete never cuts more than 3 bytes and
 * what it keeps never ends in an unfinished sequence of valid input;
 * utf8_escape's output (a log message) is valid UTF-8 with no control at
 * all, unescapes to the input when it had room, and with less room is a
 * prefix of that, never cut inside an escape.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fuzz.h"
#include "utf8.h"

/* No control character may be left in clean text. */
static void
check_no_controls(const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;

	for (size_t i = 0; i < n; i++) {
		FUZZ_CHECK(s[i] >= 0x20 || s[i] == '\t' || s[i] == '\n');
		FUZZ_CHECK(s[i] != 0x7f);
		FUZZ_CHECK(!(s[i] == 0xc2 && i + 1 < n && s[i + 1] <= 0x9f));
	}
}

/* Undo utf8_escape: \\ and \xHH.  The length written to out. */
static size_t
unescape(const char *p, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; o++) {
		if (p[i] != '\\') {
			out[o] = p[i++];
		} else if (p[i + 1] == '\\') {
			out[o] = '\\';
			i += 2;
		} else {
			char hex[3] = { p[i + 2], p[i + 3], 0 };

			FUZZ_CHECK(p[i + 1] == 'x' && i + 3 < n);
			out[o] = (char)strtoul(hex, NULL, 16);
			i += 4;
		}
	}
	return o;
}

/* utf8_escape with room for everything, and with less. */
static void
check_escape(const char *in, size_t size)
{
	size_t cap = size * 4 + 1, n, m, half = size ? size * 2 : 1;
	char *out = malloc(cap), *back = malloc(size + 1), *cut = malloc(half);

	FUZZ_CHECK(out && back && cut);
	n = utf8_escape(out, cap, in, size);
	FUZZ_CHECK(n < cap && out[n] == '\0');
	FUZZ_CHECK(utf8_valid(out, n));
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK((unsigned char)out[i] >= 0x20 &&
		    (unsigned char)out[i] != 0x7f);
	check_no_controls(out, n);
	FUZZ_CHECK(unescape(out, n, back) == size);
	FUZZ_CHECK(size == 0 || memcmp(back, in, size) == 0);
	m = utf8_escape(cut, half, in, size);
	FUZZ_CHECK(m < half && m <= n && memcmp(cut, out, m) == 0);
	FUZZ_CHECK(m == n || out[m] == '\\' || m + 4 >= half ||
	    (unsigned char)out[m] >= 0x80);
	free(out);
	free(back);
	free(cut);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct buf rep, cl, again;
	size_t keep = utf8_complete(in, size);

	FUZZ_CHECK(keep <= size && size - keep <= 3);
	if (utf8_valid(in, size))
		FUZZ_CHECK(keep == size);
	buf_init(&rep, size * 3 + 1);
	buf_init(&cl, size * 3 + 1);
	buf_init(&again, size * 3 + 1);
	FUZZ_CHECK(utf8_repair(&rep, in, size) == 0);
	FUZZ_CHECK(utf8_valid(rep.data ? rep.data : "", rep.len));
	if (utf8_valid(in, size))
		FUZZ_CHECK(rep.len == size && memcmp(rep.data, in, size) == 0);
	FUZZ_CHECK(utf8_clean(&cl, in, size) == 0);
	FUZZ_CHECK(utf8_valid(cl.data ? cl.data : "", cl.len));
	check_no_controls(cl.data ? cl.data : "", cl.len);
	FUZZ_CHECK(utf8_clean(&again, cl.data ? cl.data : "", cl.len) == 0);
	FUZZ_CHECK(again.len == cl.len &&
	    (cl.len == 0 || memcmp(again.data, cl.data, cl.len) == 0));
	buf_free(&rep);
	buf_free(&cl);
	buf_free(&again);
	check_escape(in, size);
	return 0;
}
