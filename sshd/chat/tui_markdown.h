/*
 * tui_markdown.h: light Markdown in chat lines, one line at a time, as
 * styled text for tui_draw.c (SGR escapes and a tui_wrap.h mark), markers
 * left out:
 *
 *   **bold** __bold__        bold            *italic* _italic_   italic
 *   `code`                   cyan (with NO_COLOR: shown with its backquotes)
 *   # heading (1-6 #)        bold (level 1 also underlined)
 *   - item, * item, + item   "• item", continuation rows under the item
 *   1. item, 1) item         "1. item", likewise
 *   > quote                  "│ quote", dim bar
 *   ---, ***, ___            a dim rule
 *   ```lang ... ```          each code line indented 4 and dim; the opening
 *                            fence shows the language ("── lang"), the
 *                            closing fence no row at all
 *   \*                       a literal *
 *
 * Emphasis and code spans pair within one line: a marker without its
 * partner on the line is shown as typed.  A line is rendered from its raw
 * text each time, so an answer still streaming shows "**bol" raw until
 * its closing "**" arrives, then the line is drawn again bold.  Block state
 * (inside a fence or not) carries from line to line in struct tui_md and
 * changes only when a line is complete (tui_md_end_line).
 *
 * The input is text already cleaned of control characters
 * (tui_draw_sanitize): the only escapes in the output are the ones this
 * file writes.  Pure: no I/O.
 */
#ifndef ATRIUMD_TUI_MARKDOWN_H
#define ATRIUMD_TUI_MARKDOWN_H

#include <stddef.h>

#include "buf.h"

struct tui_md {
	int fence;		/* inside a fenced code block */
	char fence_ch;		/* its marker: '`' or '~' */
	int fence_len;		/* its marker's length (a closing fence is
				 * at least as long) */
};

void tui_md_init(struct tui_md *md);

/* Append line s[0..n) (no newline) as styled text, in the block state
 * *md (not changed).  color: colours allowed, else attributes only.
 * Returns 0, or 1 when the line shows no row (a closing fence). */
int tui_md_render(const struct tui_md *md, struct buf *out, const char *s,
    size_t n, int color);

/* The line s[0..n) is complete: move the block state past it. */
void tui_md_end_line(struct tui_md *md, const char *s, size_t n);

#endif
