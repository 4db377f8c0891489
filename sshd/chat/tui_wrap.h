/*
 * tui_wrap.h: how one styled chat line becomes screen rows.  A styled line
 * is what tui_draw.c prints and keeps in its model: text with SGR escapes
 * (tabs already expanded), and a hanging-indent mark (TUI_WRAP_MARK, never
 * printed) where its text starts.  Rows break at spaces after the mark
 * (and around wide characters, which CJK text breaks between); a word is
 * cut only when it is longer than a whole row.  Every row after the first
 * starts with spaces as wide as what precedes the last mark (the speaker's
 * time and name, a list item's bullet), then the attributes in effect, so
 * the text hangs under itself and never continues at column 0.
 *
 * The model keeps lines whole and rows are made when drawn, so a resize
 * wraps the same lines anew.  Widths are tui_width.h's: a cluster two
 * columns wide never straddles a row's edge.  Pure: no I/O, no allocation
 * but the caller's buffer.
 */
#ifndef ATRIUMD_TUI_WRAP_H
#define ATRIUMD_TUI_WRAP_H

#include <stddef.h>

#include "buf.h"

#define TUI_WRAP_MARK		'\x1f'	/* continuation rows start under here */
#define TUI_WRAP_MARK_STR	"\x1f"
#define TUI_WRAP_MIN_TEXT	16	/* columns of text a continuation row
					 * keeps; a deeper indent is dropped */

struct tui_wrap {
	const char *s;		/* the line */
	size_t n;		/* its length */
	int cols;		/* the row's width */
	int indent;		/* columns of continuation rows' indent */
	size_t mark;		/* offset just past the last mark (0: none);
				 * no break before it */
	size_t pos;		/* where the next row starts */
	int row;		/* rows given so far */
	size_t attr, attr_end;	/* the attribute escapes in effect at the
				 * row given last lie in s[attr, attr_end)
				 * (from its last full reset) */
	size_t next_attr, next_attr_end;	/* the same at pos */
};

/* Start walking s[0..n) in rows of cols columns. */
void tui_wrap_init(struct tui_wrap *w, const char *s, size_t n, int cols);

/* The next row: 1 with its bytes s[*start, *end), or 0 when every row was
 * given.  A line (also an empty one) has at least one row. */
int tui_wrap_next(struct tui_wrap *w, size_t *start, size_t *end);

/* Append the row s[start, end) that tui_wrap_next gave last, as printed:
 * a continuation row (start > 0) gets the indent and the attributes in
 * effect at start; marks are left out.  Nothing ends the row (the caller
 * resets and moves on). */
void tui_wrap_put(const struct tui_wrap *w, struct buf *out, size_t start,
    size_t end);

/* Rows s[0..n) fills at cols columns. */
int tui_wrap_rows(const char *s, size_t n, int cols);

#endif
