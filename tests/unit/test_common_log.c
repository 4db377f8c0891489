/*
 * test_common_log.c: what reaches the log from a peer's bytes
 * (common/log.c, common/utf8.c: utf8_escape).  A client's version banner
 * or a room's output may hold any byte: each line must stay one line of
 * printable UTF-8, with everything else shown as an escape.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "utf8.h"
#include "unit.h"

/* utf8_escape of the n bytes at p, into a static buffer. */
static const char *
esc(const char *p, size_t n)
{
	static char out[256];

	utf8_escape(out, sizeof(out), p, n);
	return out;
}

#define ESC(lit)	esc(lit, sizeof(lit) - 1)

static void
test_printable_utf8_is_kept(void)
{
	CHECK_STR(ESC("SSH-2.0-OpenSSH_9.2p1 Debian-2"),
	    "SSH-2.0-OpenSSH_9.2p1 Debian-2");
	CHECK_STR(ESC("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82"),
	    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x99\x82");
	/* U+00A0 is past the C1 range: printable. */
	CHECK_STR(ESC("a\xc2\xa0z"), "a\xc2\xa0z");
}

static void
test_controls_are_escaped(void)
{
	CHECK_STR(ESC("a\nb\rc\td"), "a\\x0ab\\x0dc\\x09d");
	CHECK_STR(ESC("\x1b[31mred"), "\\x1b[31mred");
	CHECK_STR(ESC("del\x7f"), "del\\x7f");
	CHECK_STR(ESC("nul\0x"), "nul\\x00x");
	/* C1 controls, as UTF-8: NEL (U+0085), CSI (U+009B), U+0080. */
	CHECK_STR(ESC("\xc2\x85\xc2\x9b\xc2\x80"),
	    "\\xc2\\x85\\xc2\\x9b\\xc2\\x80");
	/* Line separators and bidirectional overrides reorder or break what
	 * a reader sees. */
	CHECK_STR(ESC("x\xe2\x80\xa8y\xe2\x80\xaez\xe2\x81\xa6"),
	    "x\\xe2\\x80\\xa8y\\xe2\\x80\\xaez\\xe2\\x81\\xa6");
	CHECK_STR(ESC("\\x41"), "\\\\x41");
}

static void
test_invalid_utf8_is_escaped_byte_by_byte(void)
{
	CHECK_STR(ESC("\x80\xff\xfe"), "\\x80\\xff\\xfe");
	CHECK_STR(ESC("\xc0\xaf"), "\\xc0\\xaf");		/* overlong '/' */
	CHECK_STR(ESC("\xed\xa0\x80"), "\\xed\\xa0\\x80");	/* surrogate */
	CHECK_STR(ESC("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
	/* A bad byte does not swallow the valid text after it. */
	CHECK_STR(ESC("\xe6\x97ok"), "\\xe6\\x97ok");
	CHECK_STR(ESC("end\xe6\x97"), "end\\xe6\\x97");
	/* Latin-1 text, not UTF-8. */
	CHECK_STR(ESC("caf\xe9"), "caf\\xe9");
}

static void
test_cut_whole(void)
{
	char out[8];

	CHECK_INT(utf8_escape(out, 5, "ab\x7f", 3), 2);
	CHECK_STR(out, "ab");
	CHECK_INT(utf8_escape(out, 6, "ab\x7f", 3), 2);
	CHECK_INT(utf8_escape(out, 7, "ab\x7f", 3), 6);
	CHECK_STR(out, "ab\\x7f");
	CHECK_INT(utf8_escape(out, 4, "\xe6\x97\xa5", 3), 3);
	CHECK_INT(utf8_escape(out, 3, "\xe6\x97\xa5", 3), 0);
	CHECK_STR(out, "");
	CHECK_INT(utf8_escape(out, 2, "\\", 1), 0);
	CHECK_INT(utf8_escape(out, 0, "x", 1), 0);
}

/* The line log_msg writes for fmt and arg, read back from stderr. */
static size_t
logged(const char *fmt, const char *arg, char *out, size_t len)
{
	int p[2], saved = dup(STDERR_FILENO);
	ssize_t n = -1;

	if (saved < 0 || pipe(p) < 0)
		return 0;
	dup2(p[1], STDERR_FILENO);
	log_msg(LOG_INFO, "test", fmt, arg);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(p[1]);
	n = read(p[0], out, len - 1);
	close(p[0]);
	out[n > 0 ? n : 0] = '\0';
	return n > 0 ? (size_t)n : 0;
}

static void
test_a_hostile_banner_is_one_printable_line(void)
{
	static char line[8192];
	char big[6000];
	size_t n;

	log_init("atriumd", NULL);
	n = logged("session 1: %s", "SSH-2.0-x\x7f\x80\xc2\x85\xe2\x80\xae"
	    "\r\n2026-01-01T00:00:00Z atriumd ERROR forged", line,
	    sizeof(line));
	CHECK(n > 0 && line[n - 1] == '\n');
	CHECK(memchr(line, '\n', n) == line + n - 1);
	CHECK(strstr(line, " atriumd INFO test: session 1: SSH-2.0-x\\x7f\\x80"
	    "\\xc2\\x85\\xe2\\x80\\xae\\x0d\\x0a2026-01-01T00:00:00Z atriumd "
	    "ERROR forged\n") != NULL);
	CHECK(utf8_valid(line, n));
	for (size_t i = 0; i < n; i++)
		CHECK(((unsigned char)line[i] >= 0x20 &&
		    (unsigned char)line[i] < 0x7f) || i == n - 1);

	/* Too long even before escaping: cut, one line, within PIPE_BUF. */
	memset(big, 0x7f, sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = logged("%s", big, line, sizeof(line));
	CHECK(n > 1000 && n <= 4096 && line[n - 1] == '\n');
	CHECK(memchr(line, '\n', n) == line + n - 1);
	CHECK(strstr(line, "\\x7f\\x7f\n") != NULL);
}

int
main(void)
{
	TEST(test_printable_utf8_is_kept);
	TEST(test_controls_are_escaped);
	TEST(test_invalid_utf8_is_escaped_byte_by_byte);
	TEST(test_cut_whole);
	TEST(test_a_hostile_banner_is_one_printable_line);
	return unit_done("test_common_log");
}
