/*
 * tui_editor.c: the input line of tui_editor.h.  Called by chat.c.
 * Invariants: cursor <= len <= cap; bytes is the UTF-8 size of cps[0..len)
 * and never passes max_bytes; every code point passes tui_editor_allowed,
 * or is a newline put there by tui_editor_newline (a paste), so the line
 * is always valid UTF-8 without control characters but newlines.  The
 * cursor moves and deletes by grapheme cluster (tui_width.h): an emoji
 * with its selector or a letter with its accents is one step, as the
 * terminal draws it; the cursor is always between clusters (text put
 * before a combining mark takes the mark, and the cursor goes past it).
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
	free(e->kill);
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

/* Insert cp at the cursor, unchecked; -ENOBUFS past the limit,
 * -ENOMEM. */
static int
tui_editor_put(struct tui_editor *e, uint32_t cp)
{
	size_t n = tui_utf8_len(cp);

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

/* The start of the cluster that holds cps[at] (at itself when a cluster
 * starts there; len at the end): word moves and cuts go by code point,
 * and must land between clusters, as every other move does. */
static size_t
tui_editor_snap(const struct tui_editor *e, size_t at)
{
	size_t i = 0, next;

	while (i < at && (next = tui_width_cluster(e->cps, e->len, i, NULL))
	    <= at)
		i = next;
	return i;
}

/* A cursor inside a cluster (text went in before a combining mark, which
 * now belongs to it) moves on to the cluster's end. */
static void
tui_editor_snap_forward(struct tui_editor *e)
{
	size_t at;

	if (e->cursor < e->len && (at = tui_editor_snap(e, e->cursor)) !=
	    e->cursor)
		e->cursor = tui_width_cluster(e->cps, e->len, at, NULL);
}

/* Insert at the cursor; -EINVAL for a code point that is not allowed,
 * -ENOBUFS past the limit, -ENOMEM. */
int
tui_editor_insert(struct tui_editor *e, uint32_t cp)
{
	int r;

	if (!tui_editor_allowed(cp))
		return -EINVAL;
	if ((r = tui_editor_put(e, cp)) == 0)
		tui_editor_snap_forward(e);
	return r;
}

/* See tui_editor.h. */
int
tui_editor_newline(struct tui_editor *e)
{
	return tui_editor_put(e, '\n');
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

/* Keep cps[from..to) as the killed text, remove it, cursor at from.  When
 * the copy cannot be made the text still goes (the key did what it
 * says), and Ctrl-Y yanks nothing. */
static void
tui_editor_kill(struct tui_editor *e, size_t from, size_t to)
{
	size_t n = to - from;

	if (n == 0)
		return;		/* nothing to kill; cps may still be NULL */
	if (n > e->kill_cap) {
		uint32_t *p = realloc(e->kill, n * sizeof(*p));

		if (p) {
			e->kill = p;
			e->kill_cap = n;
		}
	}
	e->kill_len = n <= e->kill_cap ? n : 0;
	if (e->kill_len)
		memcpy(e->kill, e->cps + from, n * sizeof(*e->cps));
	tui_editor_remove(e, from, to);
	e->cursor = from;
}

/* Delete from the start to the cursor (Ctrl-U). */
void
tui_editor_kill_start(struct tui_editor *e)
{
	tui_editor_kill(e, 0, e->cursor);
}

/* Delete from the cursor to the end (Ctrl-K). */
void
tui_editor_kill_end(struct tui_editor *e)
{
	tui_editor_kill(e, e->cursor, e->len);
}

/* 1 for a blank (space, tab, newline) between shell words. */
static int
tui_editor_blank(uint32_t cp)
{
	return cp == ' ' || cp == '\t' || cp == '\n';
}

/* The word before the cursor and the blanks after it (Ctrl-W). */
void
tui_editor_kill_word(struct tui_editor *e)
{
	size_t i = e->cursor;

	while (i > 0 && tui_editor_blank(e->cps[i - 1]))
		i--;
	while (i > 0 && !tui_editor_blank(e->cps[i - 1]))
		i--;
	tui_editor_kill(e, tui_editor_snap(e, i), e->cursor);
}

/* See tui_editor.h. */
int
tui_editor_yank(struct tui_editor *e)
{
	int r;

	for (size_t i = 0; i < e->kill_len; i++) {
		if ((r = tui_editor_put(e, e->kill[i])) < 0) {
			tui_editor_snap_forward(e);
			return r;
		}
	}
	tui_editor_snap_forward(e);
	return 0;
}

/* 1 for a letter or digit of a word (Alt-B/F): ASCII alphanumerics and
 * every code point past ASCII (letters of other scripts, CJK). */
static int
tui_editor_wordch(uint32_t cp)
{
	return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
	    (cp >= 'A' && cp <= 'Z') || cp >= 0x80;
}

/* Cursor to the start of this or the previous word (Alt-B). */
void
tui_editor_word_left(struct tui_editor *e)
{
	while (e->cursor > 0 && !tui_editor_wordch(e->cps[e->cursor - 1]))
		e->cursor--;
	while (e->cursor > 0 && tui_editor_wordch(e->cps[e->cursor - 1]))
		e->cursor--;
	e->cursor = tui_editor_snap(e, e->cursor);
}

/* Cursor past the end of this or the next word (Alt-F). */
void
tui_editor_word_right(struct tui_editor *e)
{
	while (e->cursor < e->len && !tui_editor_wordch(e->cps[e->cursor]))
		e->cursor++;
	while (e->cursor < e->len && tui_editor_wordch(e->cps[e->cursor]))
		e->cursor++;
	tui_editor_snap_forward(e);
}

/* Decode one UTF-8 code point at s (valid or not); its length in *n. */
static uint32_t
tui_editor_decode(const unsigned char *s, size_t *n)
{
	int need = s[0] < 0x80 ? 0 : (s[0] & 0xe0) == 0xc0 ? 1 :
	    (s[0] & 0xf0) == 0xe0 ? 2 : (s[0] & 0xf8) == 0xf0 ? 3 : -1;
	uint32_t cp = need == 0 ? s[0] : need == 1 ? s[0] & 0x1f :
	    need == 2 ? s[0] & 0x0f : s[0] & 0x07;

	*n = 1;
	if (need < 0)
		return 0xfffd;
	for (int i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0xfffd;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	*n = (size_t)need + 1;
	return cp;
}

/* See tui_editor.h. */
int
tui_editor_set(struct tui_editor *e, const char *text)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t n;
	int r;

	tui_editor_clear(e);
	while (*p) {
		uint32_t cp = tui_editor_decode(p, &n);

		p += n;
		if (cp == '\n')
			r = tui_editor_newline(e);
		else if (tui_editor_allowed(cp))
			r = tui_editor_insert(e, cp);
		else
			continue;
		if (r < 0)
			return r;
	}
	return 0;
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
size_t
tui_editor_show(const struct tui_editor *e, size_t from, size_t to,
    char *out, size_t outlen)
{
	static const char arrow[] = "\u21b5";
	size_t n = 0, k;

	if (outlen == 0)
		return 0;
	for (size_t i = from; i < to && i < e->len; i++) {
		k = e->cps[i] == '\n' ? sizeof(arrow) - 1 :
		    tui_utf8_len(e->cps[i]);
		if (n + k + 1 > outlen)
			break;
		if (e->cps[i] == '\n')
			memcpy(out + n, arrow, k);
		else
			tui_utf8_put(e->cps[i], out + n);
		n += k;
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
