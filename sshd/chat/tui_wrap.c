/*
 * tui_wrap.c: a styled line as rows (tui_wrap.h).  Called by tui_draw.c to
 * print a line, to draw the bottom region and to count the rows a view
 * fills, so what is counted and what is printed are one walk.
 *
 * Workload: lines are at most TUI_MODEL_MAX_LINE bytes; a redraw walks a
 * screenful of them, and a streamed answer's unfinished line is walked on
 * each delta, so each walk is linear in the line.
 */
#include "tui_wrap.h"

#include <string.h>

#include "tui_width.h"

#define ESC		0x1b
#define WIDE		2	/* columns of a CJK character or an emoji */

/* The columns of s[0..n) that continuation rows are indented by: what
 * precedes the last mark, unless that leaves too little of the row. */
static int
tui_wrap_indent(const char *s, size_t mark, int cols)
{
	int indent = mark ? tui_width_str(s, mark) : 0;

	return cols - indent < TUI_WRAP_MIN_TEXT ? 0 : indent;
}

/* See tui_wrap.h. */
void
tui_wrap_init(struct tui_wrap *w, const char *s, size_t n, int cols)
{
	const char *m;

	w->s = s;
	w->n = n;
	w->cols = cols > 0 ? cols : 1;
	w->mark = 0;
	for (m = memchr(s, TUI_WRAP_MARK, n); m; m = memchr(m + 1,
	    TUI_WRAP_MARK, n - (size_t)(m + 1 - s)))
		w->mark = (size_t)(m + 1 - s);
	w->indent = tui_wrap_indent(s, w->mark, w->cols);
	w->pos = 0;
	w->row = 0;
	w->attr = w->attr_end = w->next_attr = w->next_attr_end = 0;
}

/* Past the spaces at s[i..n): a row never starts with the space it broke
 * at. */
static size_t
tui_wrap_skip_spaces(const struct tui_wrap *w, size_t i)
{
	while (i < w->n && w->s[i] == ' ')
		i++;
	return i;
}

/* Whether the unit s[0..len) is an SGR escape (1), and one that resets
 * all attributes first (2: "ESC [ m", "ESC [ 0 m", "ESC [ 0 ; ... m"). */
static int
tui_wrap_sgr(const char *s, size_t len)
{
	if (s[0] != ESC || len < 3 || s[1] != '[' || s[len - 1] != 'm')
		return 0;
	return len == 3 || s[2] == '0' ? 2 : 1;
}

/* The attribute escapes in effect at a point of a line: s[attr, attr_end)
 * (from the last full reset before it). */
struct tui_wrap_attrs {
	size_t attr, attr_end;
};

/* Note the unit s[i..i+len) in a: a reset starts the attributes over. */
static void
tui_wrap_note(struct tui_wrap_attrs *a, const char *s, size_t i, size_t len)
{
	int sgr = tui_wrap_sgr(s + i, len);

	if (sgr == 2)
		a->attr = i;
	if (sgr)
		a->attr_end = i + len;
}

/* See tui_wrap.h.  The row takes whole units until the next does not fit;
 * it then ends at the last break (a space, or either side of a wide
 * character) after the mark, or right there when the row has none (a
 * word longer than the row).  The attributes in effect where the next row
 * starts are noted on the way, so no row is walked twice. */
int
tui_wrap_next(struct tui_wrap *w, size_t *start, size_t *end)
{
	size_t i = w->pos, brk_end = 0, brk_next = 0, len;
	int avail = w->row ? w->cols - w->indent : w->cols, col = 0, width;
	struct tui_wrap_attrs now = { w->next_attr, w->next_attr_end };
	struct tui_wrap_attrs at_brk = now;

	if (w->row && w->pos >= w->n)
		return 0;
	*start = w->pos;
	w->attr = w->next_attr;
	w->attr_end = w->next_attr_end;
	while (i < w->n) {
		len = tui_width_next(w->s + i, w->n - i, &width);
		if (i > *start && i >= w->mark && (w->s[i] == ' ' ||
		    width == WIDE)) {
			brk_end = i;
			brk_next = w->s[i] == ' ' ? i + 1 : i;
			at_brk = now;
		}
		if (col + width > avail && col > 0) {
			if (!brk_end) {
				brk_end = brk_next = i;
				at_brk = now;
			}
			break;
		}
		if (!width)
			tui_wrap_note(&now, w->s, i, len);
		col += width;
		i += len;
		if (width == WIDE && i >= w->mark) {
			brk_end = brk_next = i;
			at_brk = now;
		}
	}
	if (i >= w->n) {
		brk_end = brk_next = w->n;
		at_brk = now;
	}
	*end = brk_end;
	w->pos = tui_wrap_skip_spaces(w, brk_next);
	w->next_attr = at_brk.attr;
	w->next_attr_end = at_brk.attr_end;
	w->row++;
	return 1;
}

/* Append the SGR escapes of s[from..at): the attributes a continuation
 * row starts with. */
static void
tui_wrap_put_attrs(struct buf *out, const char *s, size_t from, size_t at)
{
	size_t len;
	int width;

	for (size_t i = from; i < at; i += len) {
		len = tui_width_next(s + i, at - i, &width);
		if (tui_wrap_sgr(s + i, len))
			buf_append(out, s + i, len);
	}
}

/* Append s[0..n) without its marks. */
static void
tui_wrap_strip(struct buf *out, const char *s, size_t n)
{
	const char *m;

	while (n && (m = memchr(s, TUI_WRAP_MARK, n))) {
		buf_append(out, s, (size_t)(m - s));
		n -= (size_t)(m + 1 - s);
		s = m + 1;
	}
	if (n)
		buf_append(out, s, n);
}

/* See tui_wrap.h. */
void
tui_wrap_put(const struct tui_wrap *w, struct buf *out, size_t start,
    size_t end)
{
	static const char spaces[] = "                                ";

	if (start > 0) {
		for (int left = w->indent; left > 0; left -= 32)
			buf_append(out, spaces, left < 32 ? (size_t)left : 32);
		tui_wrap_put_attrs(out, w->s, w->attr, w->attr_end);
	}
	tui_wrap_strip(out, w->s + start, end - start);
}

/* See tui_wrap.h. */
int
tui_wrap_rows(const char *s, size_t n, int cols)
{
	struct tui_wrap w;
	size_t start, end;
	int rows = 0;

	tui_wrap_init(&w, s, n, cols);
	while (tui_wrap_next(&w, &start, &end))
		rows++;
	return rows;
}
