/*
 * tui_view.c: the chat's lines as screen rows (tui_view.h).  Called by
 * chat_scroll.c to place the view scrolled back and by tui_draw.c to draw
 * it.  Rows are counted with tui_width_rows and cut with tui_width_fit,
 * the two measures the rest of the chat draws with, so a row drawn here
 * is the row the terminal showed when the line was printed whole.
 */
#include "tui_view.h"

#include "tui_width.h"

/* See tui_view.h. */
size_t
tui_view_newest_rows(const struct tui_model *m, int cols, size_t n)
{
	size_t pos = 0, len, rows = 0;
	const char *line;

	while (n-- > 0 && tui_model_prev(m, &pos, &line, &len))
		rows += (size_t)tui_width_rows(line, len, cols);
	return rows;
}

/* See tui_view.h. */
size_t
tui_view_rows(const struct tui_model *m, int cols)
{
	return tui_view_newest_rows(m, cols, (size_t)-1);
}

/* See tui_view.h. */
size_t
tui_view_lines_below(const struct tui_model *m, int cols, size_t below,
    size_t n)
{
	size_t pos = 0, len, rows = 0, lines = 0;
	const char *line;

	/* rows: those of the lines newer than the one looked at. */
	while (rows < below && n-- > 0 &&
	    tui_model_prev(m, &pos, &line, &len)) {
		rows += (size_t)tui_width_rows(line, len, cols);
		lines++;
	}
	return lines;
}

/* Bytes of the row that starts at s[0..n): whole units that fit in cols,
 * at least one (a cluster wider than the row takes a row of its own). */
static size_t
tui_view_row_len(const char *s, size_t n, int cols)
{
	size_t len = tui_width_fit(s, n, cols, NULL);
	int w;

	return len || !n ? len : tui_width_next(s, n, &w);
}

/* Append the escape sequences of s[0..n): the attributes in force after
 * it, without its text. */
static void
tui_view_escapes(struct buf *out, const char *s, size_t n)
{
	size_t i = 0, len;
	int w;

	while (i < n) {
		len = tui_width_next(s + i, n - i, &w);
		if (s[i] == '\x1b')
			buf_append(out, s + i, len);
		i += len;
	}
}

/* See tui_view.h. */
void
tui_view_emit_rows(struct buf *out, const char *line, size_t len, int cols,
    int from, int count)
{
	int rows = tui_width_rows(line, len, cols);
	size_t i = 0, n;

	if (cols < 1)
		cols = 1;
	for (int r = 0; r < rows && r < from + count && i < len; r++) {
		/* The last row also takes what follows the last column's
		 * text (an attribute reset: no width, no row of its own). */
		n = r == rows - 1 ? len - i :
		    tui_view_row_len(line + i, len - i, cols);
		if (r < from)
			tui_view_escapes(out, line + i, n);
		else
			buf_append(out, line + i, n);
		i += n;
	}
}
