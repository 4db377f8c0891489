/*
 * buf.c: the capped byte buffer of buf.h.  Growth doubles up to max, so a
 * stream of small appends costs amortised O(1) and memory never passes max
 * plus one byte for the NUL.
 */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

/* Make room for need bytes in all.  0, -ENOBUFS past max, -ENOMEM. */
static int
buf_reserve(struct buf *b, size_t need)
{
	size_t cap;
	char *p;

	if (need > b->max)
		return -ENOBUFS;
	if (b->data && need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > b->max / 2 ? b->max : cap * 2;
	p = realloc(b->data, cap + 1);
	if (!p)
		return -ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int
buf_append(struct buf *b, const void *p, size_t n)
{
	int r;

	if (n > b->max - b->len)
		return -ENOBUFS;
	r = buf_reserve(b, b->len + n);
	if (r < 0)
		return r;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

char *
buf_tail(struct buf *b, size_t n)
{
	int r;

	if (n > b->max - b->len) {
		errno = ENOBUFS;
		return NULL;
	}
	if ((r = buf_reserve(b, b->len + n)) < 0) {
		errno = -r;
		return NULL;
	}
	return b->data + b->len;
}

void
buf_added(struct buf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, r;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n > b->max - b->len)
		return -ENOBUFS;
	r = buf_reserve(b, b->len + (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void
buf_shrink(struct buf *b, size_t keep)
{
	if (b->len == 0 && b->cap > keep)
		buf_free(b);
}

void
buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

void
buf_truncate(struct buf *b, size_t n)
{
	if (n >= b->len)
		return;
	b->len = n;
	b->data[n] = '\0';
}

size_t
buf_room(const struct buf *b)
{
	return b->max - b->len;
}
