/*
 * tui_view.c: the chat's lines as screen rows (tui_view.h).  Called by
 * chat_scroll.c to place the view scrolled back and by tui_draw.c to draw
 * it.  Rows are tui_wrap.h's, the rows the rest of the chat draws, so a
 * row drawn here is the row shown when the line was printed whole.
 */
#include "tui_view.h"

#include "tui_wrap.h"

/* See tui_view.h. */
size_t
tui_view_newest_rows(const struct tui_model *m, int cols, size_t n)
{
	size_t pos = 0, len, rows = 0;
	const char *line;

	while (n-- > 0 && tui_model_prev(m, &pos, &line, &len))
		rows += (size_t)tui_wrap_rows(line, len, cols);
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
		rows += (size_t)tui_wrap_rows(line, len, cols);
		lines++;
	}
	return lines;
}

/* See tui_view.h. */
void
tui_view_emit_rows(struct buf *out, const char *line, size_t len, int cols,
    int from, int count)
{
	struct tui_wrap w;
	size_t start, end;

	tui_wrap_init(&w, line, len, cols);
	for (int r = 0; r < from + count && tui_wrap_next(&w, &start, &end);
	    r++) {
		if (r < from)
			continue;
		tui_wrap_put(&w, out, start, end);
		buf_append(out, "\x1b[0m\r\n", 6);
	}
}
