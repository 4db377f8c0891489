/*
 * term_encode.c: screen rows to term_screen JSON (term_encode.h).
 *
 * A run is a stretch of cells with the same attributes, colours and
 * width; wide characters get runs of their own width so that atriumd can
 * place every run at its exact column whatever its own idea of a
 * character's width.  The JSON is written by hand (into a capped buf):
 * the text holds no control character, so only '"' and '\\' need escapes.
 * Workload: a few rows per screen update, a whole screen (at most
 * TERM_MAX_ROWS x TERM_MAX_COLS cells) when a member attaches or falls
 * behind.
 */
#include "term_encode.h"

#include <errno.h>
#include <string.h>

/* A cell's look: what must be equal for two cells to share a run. */
struct term_look {
	int attrs, fg, bg, w;
};

/* A colour as the wire carries it. */
static int
term_color(const VTermColor *c, int fg)
{
	if (fg ? VTERM_COLOR_IS_DEFAULT_FG(c) : VTERM_COLOR_IS_DEFAULT_BG(c))
		return TERM_COLOR_DEFAULT;
	if (VTERM_COLOR_IS_INDEXED(c))
		return c->indexed.idx;
	return TERM_COLOR_RGB | (c->rgb.red << 16) | (c->rgb.green << 8) |
	    c->rgb.blue;
}

static struct term_look
term_look(const VTermScreenCell *cell)
{
	struct term_look l;

	l.attrs = (cell->attrs.bold ? TERM_ATTR_BOLD : 0) |
	    (cell->attrs.underline ? TERM_ATTR_UNDERLINE : 0) |
	    (cell->attrs.italic ? TERM_ATTR_ITALIC : 0) |
	    (cell->attrs.blink ? TERM_ATTR_BLINK : 0) |
	    (cell->attrs.reverse ? TERM_ATTR_REVERSE : 0) |
	    (cell->attrs.strike ? TERM_ATTR_STRIKE : 0);
	l.fg = term_color(&cell->fg, 1);
	l.bg = term_color(&cell->bg, 0);
	l.w = cell->width == 2 ? 2 : 1;
	return l;
}

/* 1 when the cell shows nothing: blank, default background, no reverse
 * or underline. */
static int
term_cell_blank(const VTermScreenCell *cell)
{
	struct term_look l = term_look(cell);

	return (cell->chars[0] == 0 || cell->chars[0] == ' ') &&
	    l.bg == TERM_COLOR_DEFAULT &&
	    !(l.attrs & (TERM_ATTR_REVERSE | TERM_ATTR_UNDERLINE |
	    TERM_ATTR_STRIKE));
}

/* 1 for a code point that may be drawn: no C0, DEL, C1, surrogate. */
static int
term_cp_printable(uint32_t cp)
{
	return cp >= 0x20 && !(cp >= 0x7f && cp < 0xa0) &&
	    !(cp >= 0xd800 && cp < 0xe000) && cp <= 0x10ffff;
}

/* Append cp as UTF-8 (JSON-escaped when it is '"' or '\\'). */
static int
term_put_cp(struct buf *out, uint32_t cp)
{
	char u[4];
	size_t n;

	if (cp == '"' || cp == '\\') {
		u[0] = '\\';
		u[1] = (char)cp;
		n = 2;
	} else if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return buf_append(out, u, n);
}

/* Append the cell's character (a space when blank; a base that cannot be
 * drawn becomes '?', marks that cannot are dropped). */
static int
term_put_cell(struct buf *out, const VTermScreenCell *cell)
{
	int r = 0;

	if (cell->chars[0] == 0)
		return buf_append(out, " ", 1);
	r = term_put_cp(out, term_cp_printable(cell->chars[0]) ?
	    cell->chars[0] : '?');
	for (int i = 1; r == 0 && i < VTERM_MAX_CHARS_PER_CELL &&
	    cell->chars[i]; i++)
		if (term_cp_printable(cell->chars[i]))
			r = term_put_cp(out, cell->chars[i]);
	return r;
}

/* Columns of row y up to its last cell that shows something. */
static int
term_row_used(VTermScreen *vs, int y, int cols)
{
	VTermScreenCell cell;

	for (int x = cols - 1; x >= 0; x--) {
		if (!vterm_screen_get_cell(vs, (VTermPos){ .row = y, .col = x },
		    &cell))
			continue;
		if (cell.chars[0] != (uint32_t)-1 && !term_cell_blank(&cell))
			return x + (cell.width == 2 ? 2 : 1);
	}
	return 0;
}

/* Open a run at column x with look l (a ',' first unless it is the
 * row's first). */
static int
term_open_run(struct buf *out, int first, int x, const struct term_look *l)
{
	return buf_printf(out, "%s[%d,%d,%d,%d,%d,\"", first ? "" : ",", x,
	    l->w, l->attrs, l->fg, l->bg);
}

int
term_encode_row(VTermScreen *vs, int y, int cols, struct buf *out)
{
	int used = term_row_used(vs, y, cols), open = 0, r;
	struct term_look cur = { 0 }, l;
	VTermScreenCell cell;

	r = buf_printf(out, "[%d,[", y);
	for (int x = 0; r == 0 && x < used; x++) {
		if (!vterm_screen_get_cell(vs, (VTermPos){ .row = y, .col = x },
		    &cell) || cell.chars[0] == (uint32_t)-1)
			continue;	/* the right half of a wide character */
		l = term_look(&cell);
		if (!open || memcmp(&l, &cur, sizeof(l)) != 0) {
			if (open)
				r = buf_append(out, "\"]", 2);
			if (r == 0)
				r = term_open_run(out, !open, x, &l);
			cur = l;
			open = 1;
		}
		if (r == 0)
			r = term_put_cell(out, &cell);
	}
	if (r == 0 && open)
		r = buf_append(out, "\"]", 2);
	if (r == 0)
		r = buf_append(out, "]]", 2);
	return r;
}
