/*
 * term_view.h: one member's view of the room's shared terminal (`/term`
 * in the chat; term_view.c).  The agent owns the pty and its emulator
 * (agent/term/term.h) and sends the screen as cells (term_screen events); this
 * keeps them as a model and draws it for this member's window:
 *
 *   rows 1..R      the terminal's rows (R is the pty's, the smallest
 *                  attached member's area), each drawn from its cells at
 *                  their columns, the rest of the row cleared
 *   below them     cleared, when this window is taller than the pty
 *   the last row   a status line: Ctrl-] back, the room's news (who
 *                  spoke, an approval waiting: term_view_news), room,
 *                  size, who is in it
 *
 * Every byte written is made here: SGR for the cells' attributes and
 * colours (none with NO_COLOR; bold and reverse stay), cursor moves and
 * erases.  Cell text is checked (valid UTF-8, no control character), so
 * nothing the shell printed reaches the client as an escape sequence.
 * The model, not the wire, is the truth: a frame dropped for a slow client
 * is made good by term_view_redraw.  No I/O.
 */
#ifndef ATRIUMD_TERM_VIEW_H
#define ATRIUMD_TERM_VIEW_H

#include <json-c/json.h>

#include "buf.h"

#define TERM_VIEW_ESCAPE	0x1d	/* Ctrl-]: back to the chat */
#define TERM_VIEW_MAX_RUNS	1024	/* runs kept per row */
#define TERM_VIEW_MAX_NAMES	512	/* bytes of the members' names shown */
#define TERM_VIEW_INPUT_CHUNK	1024	/* client bytes in one term_input */
#define TERM_VIEW_MAX_NEWS	256	/* bytes of the news shown */

struct term_view;

/* A new view; color: colours allowed (NO_COLOR not sent).  NULL when out
 * of memory. */
struct term_view *term_view_new(int color);
void term_view_free(struct term_view *tv);

/* The area a window of cols x rows gives the terminal (the status line
 * taken off). */
void term_view_area(int cols, int rows, int *tcols, int *trows);

/* Apply a term_screen event to the model and draw what changed into out
 * for a window of cols x rows (all of it when the event starts a full
 * screen).  0, or -EINVAL when the event is malformed (nothing drawn). */
int term_view_apply(struct term_view *tv, json_object *ev, struct buf *out,
    int cols, int rows, const char *room);

/* Show news (plain text: cleaned and cut to one row here; "" none) on
 * the status line, drawn into out for a window of cols x rows with the
 * cursor put back. */
void term_view_news(struct term_view *tv, const char *news, struct buf *out,
    int cols, int rows, const char *room);

/* Draw everything again for a window of cols x rows. */
void term_view_redraw(struct term_view *tv, struct buf *out, int cols,
    int rows, const char *room);

/* Take client bytes p[0..n) for the shell into out (cap it at least
 * 3 * TERM_VIEW_INPUT_CHUNK + 16): at most TERM_VIEW_INPUT_CHUNK of them,
 * up to Ctrl-], as valid UTF-8 (an unfinished character waits in the view
 * for the rest, a bad byte becomes U+FFFD, NUL is dropped).  Returns the
 * bytes of p taken; *leave is set when Ctrl-] was among them. */
size_t term_view_input(struct term_view *tv, const char *p, size_t n,
    struct buf *out, int *leave);

/* What to leave on the client's terminal before the chat draws itself
 * again: attributes reset, cursor shown, screen cleared. */
void term_view_leave(struct buf *out);

#endif
