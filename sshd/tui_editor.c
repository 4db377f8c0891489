/*
 * tui_editor.c: the input line of tui_editor.h.  Called by chat.c.
 * Invariants: cursor <= len <= cap; bytes is the UTF-8 size of cps[0..len)
 * and never passes max_bytes; every code point passes tui_editor_allowed,
 * so the line is always valid UTF-8 without control characters.  The
 * cursor moves and deletes by grapheme cluster (tui_width.h): an emoji
 * with its selector or a letter with its accents is one step, as the
 * terminal draws it.
 */
#include "tui_editor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui_width.h"

/* Empty line of at most max_bytes of UTF-8; cannot fail. */
void
tui_editor_init(struct tui_editor *e, size_t max_bytes)
{
	memset(e, 0, sizeof(*e));
	e->max_bytes = max_bytes;
}

/* Free the code points. */
void
tui_editor_free(struct tui_editor *e)
{
	free(e->cps);
	memset(e, 0, sizeof(*e));
}

/* Bytes of cp in UTF-8 (1-4). */
size_t
tui_utf8_len(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* Encode cp into out (room for 4); bytes written. */
size_t
tui_utf8_put(uint32_t cp, char *out)
{
	unsigned char *o = (unsigned char *)out;

	if (cp < 0x80) {
		o[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (unsigned char)(0xc0 | (cp >> 6));
		o[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (unsigned char)(0xe0 | (cp >> 12));
		o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (unsigned char)(0xf0 | (cp >> 18));
	o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* 1 when cp may stand in a line people read: not a C0 control, DEL or a
 * C1 control (terminals obey those), not a surrogate and not past U+10FFFF
 * (neither encodes as valid UTF-8). */
int
tui_editor_allowed(uint32_t cp)
{
	return cp >= 0x20 && !(cp >= 0x7f && cp <= 0x9f) &&
	    !(cp >= 0xd800 && cp <= 0xdfff) && cp <= 0x10ffff;
}

/* Insert at the cursor; -EINVAL for a code point that is not allowed,
 * -ENOBUFS past the limit, -ENOMEM. */
int
tui_editor_insert(struct tui_editor *e, uint32_t cp)
{
	size_t n = tui_utf8_len(cp);

	if (!tui_editor_allowed(cp))
		return -EINVAL;
	if (e->bytes + n > e->max_bytes)
		return -ENOBUFS;
	if (e->len == e->cap) {
		size_t ncap = e->cap ? e->cap * 2 : 64;
		uint32_t *p = realloc(e->cps, ncap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		e->cps = p;
		e->cap = ncap;
	}
	memmove(e->cps + e->cursor + 1, e->cps + e->cursor,
	    (e->len - e->cursor) * sizeof(*e->cps));
	e->cps[e->cursor++] = cp;
	e->len++;
	e->bytes += n;
	return 0;
}

/* Remove cps[from..to). */
static void
tui_editor_remove(struct tui_editor *e, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		e->bytes -= tui_utf8_len(e->cps[i]);
	memmove(e->cps + from, e->cps + to, (e->len - to) * sizeof(*e->cps));
	e->len -= to - from;
}

/* Delete the cluster before the cursor. */
void
tui_editor_backspace(struct tui_editor *e)
{
	size_t start;

	if (e->cursor == 0)
		return;
	start = tui_width_cluster_before(e->cps, e->len, e->cursor);
	tui_editor_remove(e, start, e->cursor);
	e->cursor = start;
}

/* Delete the cluster at the cursor. */
void
tui_editor_delete(struct tui_editor *e)
{
	if (e->cursor < e->len)
		tui_editor_remove(e, e->cursor,
		    tui_width_cluster(e->cps, e->len, e->cursor, NULL));
}

/* Cursor one cluster left (stops at the start). */
void
tui_editor_left(struct tui_editor *e)
{
	if (e->cursor > 0)
		e->cursor = tui_width_cluster_before(e->cps, e->len, e->cursor);
}

/* Cursor one cluster right (stops at the end). */
void
tui_editor_right(struct tui_editor *e)
{
	if (e->cursor < e->len)
		e->cursor = tui_width_cluster(e->cps, e->len, e->cursor, NULL);
}

/* Cursor to the start. */
void
tui_editor_home(struct tui_editor *e)
{
	e->cursor = 0;
}

/* Cursor to the end. */
void
tui_editor_end(struct tui_editor *e)
{
	e->cursor = e->len;
}

/* Delete from the start to the cursor (Ctrl-U). */
void
tui_editor_kill_start(struct tui_editor *e)
{
	if (e->cursor == 0)
		return;		/* nothing to kill; cps may still be NULL */
	tui_editor_remove(e, 0, e->cursor);
	e->cursor = 0;
}

/* Empty the line, keeping its memory. */
void
tui_editor_clear(struct tui_editor *e)
{
	e->len = e->cursor = e->bytes = 0;
}

/* UTF-8 of [from, to) into out, truncated to whole characters. */
size_t
tui_editor_utf8(const struct tui_editor *e, size_t from, size_t to,
    char *out, size_t outlen)
{
	size_t n = 0;

	if (outlen == 0)
		return 0;
	for (size_t i = from; i < to && i < e->len; i++) {
		if (n + tui_utf8_len(e->cps[i]) + 1 > outlen)
			break;
		n += tui_utf8_put(e->cps[i], out + n);
	}
	out[n] = '\0';
	return n;
}

/* See tui_editor.h. */
void
tui_editor_view(const struct tui_editor *e, int cols, size_t *from,
    size_t *to, int *cursor_col)
{
	size_t i = 0, end;
	int w, col = tui_width_cps(e->cps, 0, e->cursor);

	/* Start at the first cluster from which the cursor is in view. */
	while (i < e->cursor && col >= cols) {
		i = tui_width_cluster(e->cps, e->len, i, &w);
		col -= w;
	}
	*from = i;
	*cursor_col = col;
	for (col = 0; i < e->len; i = end, col += w) {
		end = tui_width_cluster(e->cps, e->len, i, &w);
		if (col + w > cols)
			break;
	}
	*to = i;
}
