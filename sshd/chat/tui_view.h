/*
 * tui_view.h: the chat's lines (tui_model.h) as the rows they fill on the
 * screen, for the view scrolled back through them (chat_scroll.c, drawn by
 * tui_draw_view).  A view is placed by how many rows lie below it: 0 is the
 * live view; rows, not lines, so that a view is always full and a line
 * that wraps over more rows than are left is shown in part (its last rows
 * at the top of the view, its first rows at the bottom) rather than left
 * out.
 *
 * A line fills the rows tui_wrap.h makes of it (words kept whole, later
 * rows hanging under the text).  Pure: no I/O.
 */
#ifndef ATRIUMD_TUI_VIEW_H
#define ATRIUMD_TUI_VIEW_H

#include <stddef.h>

#include "buf.h"
#include "tui_model.h"

/* Rows all of m's lines fill at cols columns. */
size_t tui_view_rows(const struct tui_model *m, int cols);

/* Rows m's newest n lines fill at cols columns (all of them when it holds
 * fewer). */
size_t tui_view_newest_rows(const struct tui_model *m, int cols, size_t n);

/* Of m's newest n lines, how many have a row among the lowest `below`
 * rows: the lines below a view placed `below` rows above the bottom (a
 * line shown in part counts). */
size_t tui_view_lines_below(const struct tui_model *m, int cols,
    size_t below, size_t n);

/* Append rows [from, from + count) of line (from 0, its first row) at
 * cols columns, each ended by an attribute reset and a line break; a
 * continuation row starts with its indent and the attributes in effect
 * there, so the rows shown look as they did in the whole line. */
void tui_view_emit_rows(struct buf *out, const char *line, size_t len,
    int cols, int from, int count);

#endif
