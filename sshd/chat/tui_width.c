/*
 * tui_width.c: terminal columns of text (tui_width.h).  Widths and grapheme
 * cluster boundaries come from utf8proc (Unicode 15 tables in Debian 12's
 * 2.8), so they follow the Unicode data rather than a table kept here.
 *
 * Workload: every line the chat prints is measured once or twice, and the
 * input line on each key; lines are at most a few KiB, so the linear scans
 * (tui_width_cluster_before walks from the start) cost nothing that shows.
 */
#include "tui_width.h"

#include <utf8proc.h>

#define ESC		0x1b
#define CP_VS16		0xfe0f	/* emoji presentation selector */

/* See tui_width.h. */
int
tui_width_cp(uint32_t cp)
{
	int w;

	if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0))
		return 0;
	if (cp > 0x10ffff)
		return 1;
	w = utf8proc_charwidth((utf8proc_int32_t)cp);
	return w < 0 ? 0 : w > 2 ? 2 : w;
}

/* Length of the escape sequence at s[0] == ESC: CSI to its final byte,
 * OSC, DCS, APC and PM to BEL or ST, else ESC and one byte.  An unfinished
 * sequence takes the rest of the text. */
static size_t
tui_width_escape(const unsigned char *s, size_t n)
{
	size_t i;

	if (n < 2)
		return n;
	if (s[1] == '[') {
		for (i = 2; i < n; i++)
			if (s[i] >= 0x40 && s[i] <= 0x7e)
				return i + 1;
		return n;
	}
	if (s[1] == ']' || s[1] == 'P' || s[1] == '_' || s[1] == '^') {
		for (i = 2; i < n; i++) {
			if (s[i] == 0x07)
				return i + 1;
			if (s[i] == ESC && i + 1 < n && s[i + 1] == '\\')
				return i + 2;
		}
		return n;
	}
	return 2;
}

/* Decode one code point at s[0..n): its length, or 0 when invalid. */
static size_t
tui_width_decode(const char *s, size_t n, uint32_t *cp)
{
	utf8proc_int32_t c;
	utf8proc_ssize_t r = utf8proc_iterate((const utf8proc_uint8_t *)s,
	    (utf8proc_ssize_t)n, &c);

	if (r <= 0 || c < 0)
		return 0;
	*cp = (uint32_t)c;
	return (size_t)r;
}

/* A cluster's width: its widest code point, 2 with an emoji selector. */
static int
tui_width_merge(int width, uint32_t cp)
{
	int w = tui_width_cp(cp);

	if (cp == CP_VS16 && width == 1)
		return 2;
	return w > width ? w : width;
}

/* See tui_width.h. */
size_t
tui_width_next(const char *s, size_t n, int *width)
{
	const unsigned char *u = (const unsigned char *)s;
	utf8proc_int32_t state = 0;
	uint32_t cp, next;
	size_t len, more;

	*width = 0;
	if (u[0] == ESC)
		return tui_width_escape(u, n);
	if (u[0] < 0x20 || u[0] == 0x7f)
		return 1;
	if (!(len = tui_width_decode(s, n, &cp))) {
		*width = 1;
		return 1;
	}
	*width = tui_width_cp(cp);
	while (len < n && u[len] >= 0x20 && u[len] != 0x7f &&
	    (more = tui_width_decode(s + len, n - len, &next)) &&
	    !utf8proc_grapheme_break_stateful((utf8proc_int32_t)cp,
	    (utf8proc_int32_t)next, &state)) {
		*width = tui_width_merge(*width, next);
		cp = next;
		len += more;
	}
	return len;
}

/* See tui_width.h. */
int
tui_width_str(const char *s, size_t n)
{
	int total = 0, w;

	for (size_t i = 0; i < n;) {
		i += tui_width_next(s + i, n - i, &w);
		total += w;
	}
	return total;
}

/* See tui_width.h. */
size_t
tui_width_fit(const char *s, size_t n, int cols, int *used)
{
	size_t i = 0, len;
	int col = 0, w;

	while (i < n) {
		len = tui_width_next(s + i, n - i, &w);
		if (col + w > cols)
			break;
		col += w;
		i += len;
	}
	if (used)
		*used = col;
	return i;
}

/* See tui_width.h. */
size_t
tui_width_cluster(const uint32_t *cps, size_t n, size_t from, int *width)
{
	utf8proc_int32_t state = 0;
	size_t i = from + 1;
	int w = tui_width_cp(cps[from]);

	if (cps[from] == '\n') {
		/* A pasted line break in the input line: drawn as one arrow. */
		if (width)
			*width = 1;
		return from + 1;
	}

	while (i < n && !utf8proc_grapheme_break_stateful(
	    (utf8proc_int32_t)cps[i - 1], (utf8proc_int32_t)cps[i], &state)) {
		w = tui_width_merge(w, cps[i]);
		i++;
	}
	if (width)
		*width = w;
	return i;
}

/* See tui_width.h. */
size_t
tui_width_cluster_before(const uint32_t *cps, size_t n, size_t at)
{
	size_t i = 0, start = 0;

	while (i < at && i < n) {
		start = i;
		i = tui_width_cluster(cps, n, i, NULL);
	}
	return start;
}

/* See tui_width.h. */
int
tui_width_cps(const uint32_t *cps, size_t from, size_t to)
{
	int total = 0, w;

	for (size_t i = from; i < to; total += w)
		i = tui_width_cluster(cps, to, i, &w);
	return total;
}
