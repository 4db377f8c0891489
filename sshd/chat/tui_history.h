/*
 * tui_history.h: the input line's history, walked with Up and Down.  It
 * holds the user's own lines in this room: those the room stored from
 * earlier sessions (their messages, prompts and !commands, which chat.c
 * asks the room for on joining: room.db is where they persist, so a
 * restart or another atriumd keeps them) followed by what was entered in
 * this session (commands such as /who included, for this session only).
 * Pure: no I/O.
 */
#ifndef ATRIUMD_TUI_HISTORY_H
#define ATRIUMD_TUI_HISTORY_H

#include <stddef.h>

#define TUI_HISTORY_MAX		200		/* lines kept, newest */
#define TUI_HISTORY_MAX_LINE	(16 * 1024)	/* a longer one is not kept */

struct tui_history {
	char *lines[TUI_HISTORY_MAX];	/* oldest first, malloc'd */
	int n;				/* lines kept */
	int nloaded;			/* of them, the first ones from the room */
	int pos;			/* being shown: 0..n-1, or n for the
					 * line being written */
	char *draft;			/* the line being written, kept while
					 * Up shows older ones (malloc'd) */
};

void tui_history_init(struct tui_history *h);
void tui_history_free(struct tui_history *h);

/* A line entered now (after every other), or one loaded from the room
 * (loaded: after the loaded ones, before this session's, oldest first).
 * Empty lines and a repeat of its neighbour are not kept; when full the
 * oldest goes.  Browsing starts again from the end.  0 or -ENOMEM. */
int tui_history_add(struct tui_history *h, const char *line, int loaded);

/* Up: the line before the one shown, from the end (current is the line
 * being written, kept as the draft); NULL when there is none older.
 * Down: the next newer line, then the draft; NULL at the end. */
const char *tui_history_up(struct tui_history *h, const char *current);
const char *tui_history_down(struct tui_history *h);

/* Browsing starts again from the end (the line was edited or sent). */
void tui_history_reset(struct tui_history *h);

#endif
