/*
 * term_encode.h: rows of the room terminal's screen (libvterm's cells) as
 * the JSON that a term_screen event carries (term_encode.c).  What reaches
 * a member's terminal is drawn by atriumd from these cells alone, never
 * from the shell's bytes: the emulator has already eaten every escape
 * sequence (titles, queries, mode changes), so none can reach another
 * member's terminal.
 *
 * One row:  [y, [RUN, ...]]
 * One run:  [x, w, attrs, fg, bg, "text"]
 *   x       first column of the run (0-based)
 *   w       columns of each character: 1, or 2 for a run of wide ones
 *   attrs   TERM_ATTR_* bits
 *   fg, bg  -1 the terminal's default; 0-255 a palette index;
 *           TERM_COLOR_RGB | 0xRRGGBB a 24-bit colour
 *   text    one character (with its combining marks) per cell, blank
 *           cells as spaces; never a control character
 * A row's trailing blank cells of default colour are left out.
 */
#ifndef ATRIUM_AGENT_TERM_ENCODE_H
#define ATRIUM_AGENT_TERM_ENCODE_H

#include <vterm.h>

#include "buf.h"

#define TERM_ATTR_BOLD		1
#define TERM_ATTR_UNDERLINE	2
#define TERM_ATTR_ITALIC	4
#define TERM_ATTR_BLINK		8
#define TERM_ATTR_REVERSE	16
#define TERM_ATTR_STRIKE	32

#define TERM_COLOR_DEFAULT	(-1)
#define TERM_COLOR_RGB		0x1000000

/* Append row y of screen (cols wide) to out as above.  0, or -ENOBUFS /
 * -ENOMEM from the buffer. */
int term_encode_row(VTermScreen *vs, int y, int cols, struct buf *out);

#endif
