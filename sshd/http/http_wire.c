/*
 * http_wire.c: a relayed response's head and chunked bodies
 * (http_wire.h).  Used by http_proxy.c.
 */
#include "http_wire.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

enum {
	CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF,
	CH_TRAILER, CH_TRAILER_LF, CH_DONE, CH_BAD
};

#define HTTP_WIRE_MAX_LINE	4096	/* an extension or trailer line */

/* See http_wire.h. */
int
http_wire_hop_by_hop(const char *name)
{
	static const char *const names[] = {
		"Connection", "Keep-Alive", "Transfer-Encoding", "TE",
		"Trailer", "Upgrade", "Content-Length", "Date",
	};

	if (strncasecmp(name, "Proxy-", 6) == 0)
		return 1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcasecmp(name, names[i]) == 0)
			return 1;
	return 0;
}

/* The status line "HTTP/1.x NNN reason": 0 with h->status, or -1. */
static int
http_wire_status(const char *line, struct http_wire_head *h)
{
	if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' &&
	    line[7] != '1') || line[8] != ' ')
		return -1;
	for (int i = 9; i < 12; i++)
		if (line[i] < '0' || line[i] > '9')
			return -1;
	if (line[12] != ' ' && line[12] != '\0')
		return -1;
	h->status = (unsigned)((line[9] - '0') * 100 + (line[10] - '0') * 10 +
	    (line[11] - '0'));
	return h->status >= 100 && h->status <= 599 ? 0 : -1;
}

/* Content-Length's value: 0 with *out, or -1 (not digits, too large). */
static int
http_wire_length(const char *v, long long *out)
{
	long long n = 0;

	if (!*v)
		return -1;
	for (; *v; v++) {
		if (*v < '0' || *v > '9' || n > (1LL << 50))
			return -1;
		n = n * 10 + (*v - '0');
	}
	*out = n;
	return 0;
}

/* One "Name: value" line (NUL-terminated, in h->copy): kept, and the
 * framing headers read.  0 or -1. */
static int
http_wire_header(char *line, struct http_wire_head *h)
{
	char *colon = strchr(line, ':'), *v, *end;
	long long n;

	if (!colon || colon == line || h->nheaders >= HTTP_WIRE_MAX_HEADERS)
		return -1;
	for (char *p = line; p < colon; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return -1;	/* no space before the colon */
	*colon = '\0';
	v = colon + 1 + strspn(colon + 1, " \t");
	end = v + strlen(v);
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		*--end = '\0';
	for (char *p = v; *p; p++)
		if ((unsigned char)*p < ' ' && *p != '\t')
			return -1;
	if (strcasecmp(line, "Content-Length") == 0) {
		if (http_wire_length(v, &n) < 0 ||
		    (h->length >= 0 && h->length != n))
			return -1;
		h->length = n;
	} else if (strcasecmp(line, "Transfer-Encoding") == 0) {
		if (strcasecmp(v, "chunked") != 0)
			return -1;	/* no other coding is sent to us */
		h->chunked = 1;
	}
	h->h[h->nheaders].name = line;
	h->h[h->nheaders].value = v;
	h->nheaders++;
	return 0;
}

/* See http_wire.h. */
ssize_t
http_wire_head_parse(const char *buf, size_t len, struct http_wire_head *h)
{
	const char *end = NULL;
	size_t n;
	char *line, *next;

	for (size_t i = 0; i + 3 < len && i + 4 <= HTTP_WIRE_MAX_HEAD; i++)
		if (memcmp(buf + i, "\r\n\r\n", 4) == 0) {
			end = buf + i;
			break;
		}
	if (!end)
		return len >= HTTP_WIRE_MAX_HEAD ? -1 : 0;
	n = (size_t)(end - buf);
	if (memchr(buf, '\0', n))
		return -1;
	memset(h, 0, offsetof(struct http_wire_head, copy));
	h->length = -1;
	memcpy(h->copy, buf, n);
	h->copy[n] = '\0';
	line = h->copy;
	next = strstr(line, "\r\n");
	if (next)
		*next = '\0';
	if (http_wire_status(line, h) < 0)
		return -1;
	while (next) {
		line = next + 2;
		if ((next = strstr(line, "\r\n")))
			*next = '\0';
		if (http_wire_header(line, h) < 0)
			return -1;
	}
	if (h->chunked && h->length >= 0)
		return -1;
	return (ssize_t)(n + 4);
}

/* One byte of framing (not data): the state after it. */
static int
http_wire_chunked_byte(struct http_wire_chunked *c, char b)
{
	int d;

	switch (c->state) {
	case CH_SIZE:
		if ((d = hex_value(b)) >= 0) {
			if (++c->digits > 15)
				return CH_BAD;	/* past 2^60: no body is */
			c->left = c->left * 16 + (uint64_t)d;
			return CH_SIZE;
		}
		if (c->digits == 0)
			return CH_BAD;
		c->line = 0;
		return b == '\r' ? CH_SIZE_LF : b == ';' || b == ' ' ||
		    b == '\t' ? CH_EXT : CH_BAD;
	case CH_EXT:
		if (++c->line > HTTP_WIRE_MAX_LINE)
			return CH_BAD;
		return b == '\r' ? CH_SIZE_LF : b == '\n' ? CH_BAD : CH_EXT;
	case CH_SIZE_LF:
		if (b != '\n')
			return CH_BAD;
		c->line = 0;
		return c->left ? CH_DATA : CH_TRAILER;
	case CH_DATA_CR:
		return b == '\r' ? CH_DATA_LF : CH_BAD;
	case CH_DATA_LF:
		c->digits = 0;
		c->left = 0;
		return b == '\n' ? CH_SIZE : CH_BAD;
	case CH_TRAILER:
		if (b == '\r')
			return CH_TRAILER_LF;
		if (++c->line > HTTP_WIRE_MAX_LINE || b == '\n')
			return CH_BAD;
		return CH_TRAILER;
	case CH_TRAILER_LF:
		if (b != '\n')
			return CH_BAD;
		if (c->line == 0)
			return CH_DONE;
		c->line = 0;
		return CH_TRAILER;
	default:
		return CH_BAD;
	}
}

/* See http_wire.h. */
ssize_t
http_wire_chunked_decode(struct http_wire_chunked *c, const char *in,
    size_t n, char *out, size_t cap, size_t *out_len)
{
	size_t i = 0;

	*out_len = 0;
	while (i < n && c->state != CH_DONE) {
		if (c->state == CH_BAD)
			return -1;
		if (c->state == CH_DATA) {
			size_t k = n - i;

			if (k > c->left)
				k = (size_t)c->left;
			if (k > cap - *out_len)
				k = cap - *out_len;
			if (k == 0)
				break;	/* out is full */
			memcpy(out + *out_len, in + i, k);
			*out_len += k;
			i += k;
			if ((c->left -= k) == 0)
				c->state = CH_DATA_CR;
			continue;
		}
		c->state = http_wire_chunked_byte(c, in[i++]);
	}
	return c->state == CH_BAD ? -1 : (ssize_t)i;
}

/* See http_wire.h. */
int
http_wire_chunked_done(const struct http_wire_chunked *c)
{
	return c->state == CH_DONE;
}

/* See http_wire.h. */
size_t
http_wire_chunk_line(char *out, size_t n)
{
	int k = n ? snprintf(out, 20, "%zx\r\n", n) :
	    snprintf(out, 20, "0\r\n\r\n");

	return k > 0 ? (size_t)k : 0;
}
