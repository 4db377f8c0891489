/*
 * test_http_wire.c: what atriumd-http reads from a room's home when it
 * relays a request there (sshd/http/http_wire.c): a response head, its
 * framing headers and what a relay never passes on; a chunked body
 * decoded whole, byte by byte, into a small buffer, with extensions and
 * trailers; and what is refused.
 */
#include <string.h>

#include "unit.h"
#include "../../sshd/http/http_wire.h"

static void
test_a_head_is_parsed(void)
{
	static const char in[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain"
	    "\r\nContent-Length:  12 \r\nX-A: b\r\n\r\nhello world!";
	struct http_wire_head h;
	ssize_t n = http_wire_head_parse(in, sizeof(in) - 1, &h);

	CHECK_INT(n, (long long)(strstr(in, "hello") - in));
	CHECK_INT(h.status, 200);
	CHECK_INT(h.length, 12);
	CHECK_INT(h.chunked, 0);
	CHECK_INT(h.nheaders, 3);
	CHECK_STR(h.h[0].name, "Content-Type");
	CHECK_STR(h.h[0].value, "text/plain");
	CHECK_STR(h.h[1].value, "12");
	/* Not all there yet: more is needed. */
	CHECK_INT(http_wire_head_parse(in, 20, &h), 0);
}

static void
test_bad_heads_are_refused(void)
{
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 999 No\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad name: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2"
		    "\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: "
		    "chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\x01" "b\r\n\r\n",
	};
	struct http_wire_head h;
	char big[HTTP_WIRE_MAX_HEAD + 10];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(http_wire_head_parse(bad[i], strlen(bad[i]), &h), -1);
	memset(big, 'a', sizeof(big));
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	CHECK_INT(http_wire_head_parse(big, sizeof(big), &h), -1);
}

static void
test_hop_by_hop_headers(void)
{
	CHECK(http_wire_hop_by_hop("connection"));
	CHECK(http_wire_hop_by_hop("Transfer-Encoding"));
	CHECK(http_wire_hop_by_hop("Proxy-Authorization"));
	CHECK(http_wire_hop_by_hop("Content-Length"));
	CHECK(!http_wire_hop_by_hop("Content-Type"));
	CHECK(!http_wire_hop_by_hop("Set-Cookie"));
}

/* Decode in whole, step bytes at a time, out cap bytes at a time.  The
 * body's length, or -1. */
static long
decode(const char *in, size_t n, size_t step, size_t cap, char *out,
    size_t outmax, size_t *used)
{
	struct http_wire_chunked c = { 0 };
	size_t o = 0, i = 0;

	while (i < n && !http_wire_chunked_done(&c)) {
		size_t take = n - i < step ? n - i : step, got;
		ssize_t k = http_wire_chunked_decode(&c, in + i, take, out + o,
		    cap < outmax - o ? cap : outmax - o, &got);

		if (k < 0)
			return -1;
		i += (size_t)k;
		o += got;
		if (k == 0 && got == 0)
			return -1;
	}
	*used = i;
	return http_wire_chunked_done(&c) ? (long)o : -2;
}

static void
test_chunked_bodies(void)
{
	static const char in[] = "5\r\nhello\r\n7;ext=1\r\n, world\r\n"
	    "A\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	char out[64];
	size_t used;

	for (size_t step = 1; step <= sizeof(in); step++)
		for (size_t cap = 1; cap <= 8; cap++) {
			memset(out, 0, sizeof(out));
			CHECK_INT(decode(in, sizeof(in) - 1, step, cap, out,
			    sizeof(out), &used), 22);
			CHECK(memcmp(out, "hello, world0123456789", 22) == 0);
			CHECK_INT(used, sizeof(in) - 1 - 4);
		}
	CHECK_INT(decode("0\r\n\r\n", 5, 5, 8, out, sizeof(out), &used), 0);
}

static void
test_bad_chunked_bodies(void)
{
	static const char *const bad[] = {
		"x\r\n", "5\nhello\r\n0\r\n\r\n", "5\r\nhelloX\r\n",
		"1000000000000000\r\n", "\r\n", "5\r\nhello\r\n0\r\nbad\nx",
	};
	char out[64];
	size_t used;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_INT(decode(bad[i], strlen(bad[i]), 3, 8, out,
		    sizeof(out), &used), -1);
	/* Cut short: not over, not wrong. */
	CHECK_INT(decode("5\r\nhel", 6, 6, 8, out, sizeof(out), &used), -2);
}

static void
test_chunk_lines(void)
{
	char line[20];

	CHECK_INT(http_wire_chunk_line(line, 255), 4);
	CHECK(memcmp(line, "ff\r\n", 4) == 0);
	CHECK_INT(http_wire_chunk_line(line, 0), 5);
	CHECK(memcmp(line, "0\r\n\r\n", 5) == 0);
}

int
main(void)
{
	TEST(test_a_head_is_parsed);
	TEST(test_bad_heads_are_refused);
	TEST(test_hop_by_hop_headers);
	TEST(test_chunked_bodies);
	TEST(test_bad_chunked_bodies);
	TEST(test_chunk_lines);
	return unit_done("test_http_wire");
}
