/*
 * fuzz_http_wire.c: libFuzzer entry point for what atriumd-http reads
 * from a room's home when it relays a request (sshd/http/http_wire.c):
 * the response head and a chunked body, bytes from another host.
 *
 * The input is tried as a head (whatever it is, a head it accepts ends
 * within the input and its headers lie within its copy, status in
 * 100..599, not both framings) and as a chunked body decoded in pieces
 * of a size taken from its hash into a small buffer: the decoder never
 * writes past the room it is given, never takes more than it is given,
 * and decoding in other pieces gives the same bytes and the same end.
 */
#include <string.h>

#include "fuzz.h"
#include "http_wire.h"

static struct http_wire_head head;

/* Decode the input in pieces of step bytes into out (cap a call): the
 * bytes decoded, or -1 (refused); *done when the body ended. */
static long
decode(const uint8_t *data, size_t size, size_t step, size_t cap, char *out,
    size_t outmax, int *done)
{
	struct http_wire_chunked c = { 0 };
	size_t i = 0, o = 0;

	while (i < size && !http_wire_chunked_done(&c) && o < outmax) {
		size_t take = size - i < step ? size - i : step, got;
		size_t room = outmax - o < cap ? outmax - o : cap;
		ssize_t k = http_wire_chunked_decode(&c, (const char *)data +
		    i, take, out + o, room, &got);

		if (k < 0)
			return -1;
		FUZZ_CHECK((size_t)k <= take && got <= room);
		if (k == 0 && got == 0)
			break;
		i += (size_t)k;
		o += got;
	}
	*done = http_wire_chunked_done(&c);
	return (long)o;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char a[1 << 16], b[1 << 16];
	ssize_t n = http_wire_head_parse((const char *)data, size, &head);
	size_t step = (size_t)(fuzz_hash(data, size) % 17) + 1;
	long la, lb;
	int da, db;

	FUZZ_CHECK(n >= -1 && (n <= 0 || (size_t)n <= size));
	if (n > 0) {
		FUZZ_CHECK(head.status >= 100 && head.status <= 599);
		FUZZ_CHECK(!(head.chunked && head.length >= 0));
		for (int i = 0; i < head.nheaders; i++)
			FUZZ_CHECK(head.h[i].name >= head.copy &&
			    head.h[i].value < head.copy + sizeof(head.copy));
	}
	la = decode(data, size, size ? size : 1, sizeof(a), a, sizeof(a), &da);
	lb = decode(data, size, step, 3, b, sizeof(b), &db);
	if (la >= 0 && lb >= 0 && la < (long)sizeof(a) && lb < (long)sizeof(b)) {
		FUZZ_CHECK(da == db);
		if (da)
			FUZZ_CHECK(la == lb && memcmp(a, b, (size_t)la) == 0);
	}
	return 0;
}
