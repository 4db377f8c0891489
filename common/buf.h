/*
 * buf.h: a growable byte buffer with a hard maximum size.  All network, pipe
 * and file input is collected in one of these; nothing grows without bound.
 *
 * Invariants: len <= cap <= max (once allocated); data is NUL-terminated at
 * data[len] whenever data is non-NULL, so text can be read as a C string.
 */
#ifndef ATRIUM_BUF_H
#define ATRIUM_BUF_H

#include <stddef.h>

struct buf {
	char *data;	/* bytes, NUL after the last; NULL until first append */
	size_t len;	/* bytes in use */
	size_t cap;	/* bytes allocated, less the NUL */
	size_t max;	/* len may never exceed this */
};

/* Make an empty buffer that will hold at most max bytes. */
void buf_init(struct buf *b, size_t max);

/* Free the bytes; the buffer is empty again and may be reused. */
void buf_free(struct buf *b);

/* Append n bytes.  -ENOBUFS if that would pass max (nothing appended),
 * -ENOMEM if allocation failed. */
int buf_append(struct buf *b, const void *p, size_t n);

/* Append formatted text; same errors as buf_append. */
int buf_printf(struct buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Space for up to n more bytes at the end, to be filled (by read(), say)
 * and then counted with buf_added.  NULL with errno ENOBUFS when n would
 * pass max, ENOMEM when allocation failed. */
char *buf_tail(struct buf *b, size_t n);

/* Count n bytes written into the space buf_tail gave (n <= that n). */
void buf_added(struct buf *b, size_t n);

/* Drop the first n bytes (n > len drops all). */
void buf_consume(struct buf *b, size_t n);

/* Give memory back: an empty buffer holding more than keep bytes frees
 * them (the next append allocates again).  Long-lived connections call it
 * once a burst is out, so an idle one costs at most keep, not the largest
 * burst it ever queued. */
void buf_shrink(struct buf *b, size_t keep);

/* Forget the contents but keep the allocation. */
void buf_reset(struct buf *b);

/* Keep only the first n bytes (n >= len keeps all). */
void buf_truncate(struct buf *b, size_t n);

/* Bytes that may still be appended. */
size_t buf_room(const struct buf *b);

#endif
