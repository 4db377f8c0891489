/*
 * fuzz_utf8.c: libFuzzer entry point for common/utf8.c, the repair and
 * cleaning of text from clients and commands.
 *
 * Whatever the input: utf8_repair's output is valid UTF-8, and is the input
 * itself when that was valid; utf8_clean's output is valid UTF-8 with no C0
 * control but tab and newline, no DEL and no C1 (C2 80..9F), and cleaning
 * it again changes nothing; utf8_complete never cuts more than 3 bytes and
 * what it keeps never ends in an unfinished sequence of valid input.
 */
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
	return 0;
}
