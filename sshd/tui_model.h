/*
 * tui_model.h: the chat's recent screen lines, kept so the screen can be
 * drawn again from them (on resize, Ctrl-L, or after a slow client's
 * output was dropped) rather than from the bytes that went out.  Each line
 * is one logical line as tui_draw.c renders it (attributes included, reset
 * at its end, no newline); the newest are kept within a byte budget.
 * Pure: no I/O.
 */
#ifndef ATRIUMD_TUI_MODEL_H
#define ATRIUMD_TUI_MODEL_H

#include <stddef.h>

#include "buf.h"

#define TUI_MODEL_MAX		(32 * 1024)	/* bytes of lines kept */
#define TUI_MODEL_MAX_LINE	(4 * 1024)	/* a longer line is cut */

struct tui_model {
	struct buf lines;	/* lines, each ended by '\n', oldest first */
};

void tui_model_init(struct tui_model *m);
void tui_model_free(struct tui_model *m);

/* Keep a line (without its newline; a newline inside ends it there).  The
 * oldest lines go to make room; a line over TUI_MODEL_MAX_LINE keeps its
 * start, cut between whole units (tui_width.h), with a reset after it.
 * Cannot fail: when memory runs out the line is not kept. */
void tui_model_add(struct tui_model *m, const char *line, size_t len);

/* Walk from the newest line back: *pos starts at 0 (meaning the end);
 * each call gives the next older line in *line, *len and returns 1, or 0
 * when none is left. */
int tui_model_prev(const struct tui_model *m, size_t *pos, const char **line,
    size_t *len);

#endif
