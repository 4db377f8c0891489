/*
 * tui_model.h: the chat's recent screen lines, kept so the screen can be
 * drawn again from them (on resize, Ctrl-L, or after a slow client's
 * output was dropped) rather than from the bytes that went out.  Each line
 * is one logical line as tui_draw.c renders it (attributes included, reset
 * at its end, no newline, the wrap mark of tui_wrap.h in it), kept whole
 * and cut into rows when drawn; the newest are kept within a byte budget.
 * Each line is stored as "TAG\x1e" then the line (lines never hold
 * control characters but ESC and the wrap mark), so that the scrollback
 * knows which room event its oldest line came from.
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
	unsigned long dropped;	/* lines dropped to make room, ever */
	unsigned long added;	/* lines kept, ever */
	long long tag;		/* kept with each line added next: the seq
				 * of the room event it shows (0: none) */
};

void tui_model_init(struct tui_model *m);
/* The same with a byte budget of max (the scrollback loaded from the
 * room holds more than the recent lines). */
void tui_model_init_max(struct tui_model *m, size_t max);
void tui_model_free(struct tui_model *m);

/* Keep a line (without its newline; a newline inside ends it there).  The
 * oldest lines go to make room; a line over TUI_MODEL_MAX_LINE keeps its
 * start, cut between whole units (tui_width.h), with a reset after it.
 * Cannot fail: when memory runs out the line is not kept. */
void tui_model_add(struct tui_model *m, const char *line, size_t len);

/* Raise the byte budget to max (the screen's lines, once older ones were
 * loaded before them, are kept as long as those). */
void tui_model_set_max(struct tui_model *m, size_t max);

/* Put the lines of front (older ones) before m's.  0, or -ENOBUFS when
 * they do not all fit (m unchanged). */
int tui_model_prepend(struct tui_model *m, const struct tui_model *front);

/* Lines kept. */
size_t tui_model_count(const struct tui_model *m);

/* The tag of the oldest line with one (tag > 0), or 0. */
long long tui_model_first_tag(const struct tui_model *m);

/* The oldest line (without its tag) in *line, *len: 1, or 0 when none. */
int tui_model_first(const struct tui_model *m, const char **line,
    size_t *len);

/* Forget the oldest line without counting it as dropped: it repeated
 * what the lines put before it say (a date line). */
void tui_model_drop_first(struct tui_model *m);

/* The oldest line kept with tag whose text holds needle (the first line
 * of what an event drew, not a later one that quotes it): its text in
 * *line, *len, where it starts in *at (for tui_model_replace) and how many
 * lines are newer in *after.  1, or 0 when there is none. */
int tui_model_find(const struct tui_model *m, long long tag,
    const char *needle, size_t *at, const char **line, size_t *len,
    size_t *after);

/* Put line (len bytes, no newline) in place of the text of the line that
 * starts at at (tui_model_find), keeping its tag.  0, or -ENOBUFS when it
 * does not fit the budget (m unchanged). */
int tui_model_replace(struct tui_model *m, size_t at, const char *line,
    size_t len);

/* Walk from the newest line back: *pos starts at 0 (meaning the end);
 * each call gives the next older line in *line, *len and returns 1, or 0
 * when none is left. */
int tui_model_prev(const struct tui_model *m, size_t *pos, const char **line,
    size_t *len);

#endif
