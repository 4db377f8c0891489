/*
 * http_wire.h: the bytes of HTTP/1.1 that atriumd-http reads from another
 * host when it relays a request to a room's home (http_proxy.h): the
 * response's head, and a chunked body.  Both parse bytes from another
 * host (a node, but a node may be wrong or compromised): every length is
 * bounded, every number checked for overflow, and anything not of its
 * form is an error, never a guess.  Pure functions: tested whole by
 * tests/unit/test_http_wire.c and tests/fuzz/fuzz_http_wire.c.
 */
#ifndef ATRIUMD_HTTP_WIRE_H
#define ATRIUMD_HTTP_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HTTP_WIRE_MAX_HEAD	(16 * 1024)	/* a response's head */
#define HTTP_WIRE_MAX_HEADERS	48		/* headers kept of it */

struct http_wire_header {
	const char *name, *value;	/* in the head's own copy */
};

/* A response's head, parsed. */
struct http_wire_head {
	unsigned status;		/* 100..599 */
	long long length;		/* Content-Length, or -1 */
	int chunked;			/* Transfer-Encoding: chunked */
	int nheaders;
	struct http_wire_header h[HTTP_WIRE_MAX_HEADERS];
	char copy[HTTP_WIRE_MAX_HEAD];	/* the head, NULs in place of ": "
					 * and CR LF */
};

/* Parse the head at the start of buf[0..len): its size in bytes (the
 * body begins there) with *h filled; 0 when more bytes are needed; -1
 * when it is not a response head (or longer than HTTP_WIRE_MAX_HEAD, or
 * has more than HTTP_WIRE_MAX_HEADERS headers, or a Content-Length that
 * is not one number, or both a length and chunked). */
ssize_t http_wire_head_parse(const char *buf, size_t len,
    struct http_wire_head *h);

/* 1 when a header of this name is the connection's own, never passed on
 * by a relay (Connection, Keep-Alive, Transfer-Encoding, TE, Trailer,
 * Upgrade, Proxy-*), or one the relay writes itself (Content-Length,
 * Date). */
int http_wire_hop_by_hop(const char *name);

/* A chunked body being decoded. */
struct http_wire_chunked {
	int state;			/* http_wire.c's */
	uint64_t left;			/* of the chunk being read */
	int digits;			/* of its size, so far */
	int line;			/* bytes of an extension or trailer
					 * line, bounded */
};

/* Decode what in[0..n) holds of a chunked body into out (cap bytes at
 * most): the input bytes taken (*out_len the bytes written); -1 when it
 * is not chunked encoding.  The body is over when
 * http_wire_chunked_done says so (what follows is not its). */
ssize_t http_wire_chunked_decode(struct http_wire_chunked *c,
    const char *in, size_t n, char *out, size_t cap, size_t *out_len);
int http_wire_chunked_done(const struct http_wire_chunked *c);

/* Write a chunk's size line for n bytes into out (at least 20 bytes;
 * the chunk is that line, the n bytes, then CR LF):
 * its length.  n 0 writes the last chunk and the body's end. */
size_t http_wire_chunk_line(char *out, size_t n);

#endif
