/*
 * text.c: UTF-8 repair and output capping (text.h).  Commands print any
 * bytes; events are JSON and must be UTF-8, so output is repaired on its way
 * into an event, and streams are cut only at character boundaries.
 *
 * outcap keeps a head buffer and a ring for the tail, so a command that
 * prints gigabytes costs a fixed amount of memory: the model gets the start
 * (where errors of a build usually begin) and the end (the summary).
 */
#include "text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of a UTF-8 sequence starting with byte c, or 0 when c cannot
 * start one. */
static int
text_seq_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return 2;
	if (c >= 0xe0 && c <= 0xef)
		return 3;
	if (c >= 0xf0 && c <= 0xf4)
		return 4;
	return 0;
}

/* Valid sequence length at p (n bytes available): >0 valid, 0 invalid,
 * -1 valid so far but incomplete. */
static int
text_seq_check(const unsigned char *p, size_t n)
{
	int len = text_seq_len(p[0]);

	if (len == 0)
		return 0;
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n)
			return -1;
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	}
	/* Overlong 3/4-byte forms, surrogates, and beyond U+10FFFF. */
	if (len == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) ||
	    (p[0] == 0xed && p[1] >= 0xa0)))
		return 0;
	if (len == 4 && ((p[0] == 0xf0 && p[1] < 0x90) ||
	    (p[0] == 0xf4 && p[1] >= 0x90)))
		return 0;
	return len;
}

size_t
text_utf8_complete(const char *p, size_t n)
{
	/* Only the last 3 bytes can start an unfinished sequence. */
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		const unsigned char *s = (const unsigned char *)p + n - back;
		int len = text_seq_len(*s);

		if ((*s & 0xc0) == 0x80)
			continue;
		if (len > (int)back && text_seq_check(s, back) == -1)
			return n - back;
		break;
	}
	return n;
}

int
text_utf8_append(struct buf *out, const char *p, size_t n)
{
	const unsigned char *s = (const unsigned char *)p;
	size_t i = 0, start = 0;
	int r;

	while (i < n) {
		int len = s[i] ? text_seq_check(s + i, n - i) : 0;

		if (len > 0) {
			i += (size_t)len;
			continue;
		}
		if ((r = buf_append(out, p + start, i - start)) < 0 ||
		    (r = buf_append(out, "\xef\xbf\xbd", 3)) < 0)
			return r;
		i++;
		start = i;
	}
	return buf_append(out, p + start, i - start);
}

int
outcap_init(struct outcap *o, size_t head, size_t tail)
{
	memset(o, 0, sizeof(*o));
	buf_init(&o->head, head);
	o->tail_max = tail;
	o->tail = malloc(tail ? tail : 1);
	return o->tail ? 0 : -ENOMEM;
}

void
outcap_free(struct outcap *o)
{
	buf_free(&o->head);
	free(o->tail);
	o->tail = NULL;
}

void
outcap_add(struct outcap *o, const char *p, size_t n)
{
	size_t room = buf_room(&o->head), take = n < room ? n : room;

	if (take && buf_append(&o->head, p, take) == 0) {
		p += take;
		n -= take;
		o->total += take;
	}
	o->total += n;
	if (n > o->tail_max) {
		p += n - o->tail_max;
		n = o->tail_max;
	}
	for (size_t i = 0; i < n; i++) {
		o->tail[o->tail_pos] = p[i];
		o->tail_pos = (o->tail_pos + 1) % o->tail_max;
	}
}

int
outcap_text(const struct outcap *o, char **out)
{
	size_t in_tail = o->total - o->head.len, cut = 0;
	struct buf b;
	char note[128];
	char *lin = NULL;
	int r;

	*out = NULL;
	if (in_tail > o->tail_max) {
		cut = in_tail - o->tail_max;
		in_tail = o->tail_max;
	}
	buf_init(&b, o->head.len * 3 + in_tail * 3 + sizeof(note));
	r = text_utf8_append(&b, o->head.data ? o->head.data : "", o->head.len);
	if (r == 0 && cut) {
		snprintf(note, sizeof(note), "\n[... %zu bytes of output cut "
		    "here: the first %zu and last %zu bytes are shown ...]\n",
		    cut, o->head.len, in_tail);
		r = buf_append(&b, note, strlen(note));
	}
	if (r == 0 && in_tail) {
		lin = malloc(in_tail);
		if (!lin) {
			r = -ENOMEM;
		} else {
			/* Oldest byte of the ring first. */
			size_t start = (o->tail_pos + o->tail_max - in_tail) %
			    o->tail_max;

			for (size_t i = 0; i < in_tail; i++)
				lin[i] = o->tail[(start + i) % o->tail_max];
			r = text_utf8_append(&b, lin, in_tail);
			free(lin);
		}
	}
	if (r < 0) {
		buf_free(&b);
		return r;
	}
	*out = b.data ? b.data : strdup("");
	return *out ? 0 : -ENOMEM;
}
