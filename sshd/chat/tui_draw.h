/*
 * tui_draw.h: the chat's output as bytes for the client's terminal.  With
 * ansi on: lines printed above a bottom region that holds the agent's
 * blocks not yet closed (while it streams), the status line and the input
 * line "ROOM> ", which is cleared and redrawn around each print; each printed
 * text starts with its time (HH:MM, the server's time zone) and a date
 * line comes first when the date changed; command output is indented
 * under it; names in a stable colour (bold only with colour off:
 * NO_COLOR).  With ansi off: plain lines ending in
 * "\n" (CR LF on a pty), no escape sequence at all.
 *
 * Everything placed on the screen is measured with tui_width.h (wide
 * characters, grapheme clusters, escapes of no width), tabs are expanded
 * to spaces, and lines are cut into rows by tui_wrap.h (at words, later
 * rows hanging under the text); the bottom region never spans more rows
 * than it counts: the agent's streamed line wraps as it grows, but is
 * kept within the screen (past that, its first rows are printed above as
 * they fill), and the input line keeps to one row.  Messages (people's
 * and the agent's) are Markdown (tui_markdown.h); the agent's answer is
 * printed a block at a time, as each closes, and its blocks not yet
 * closed are rendered again from their text on each delta.
 * Printed lines are also kept in a model (tui_model.h), so the whole
 * screen can be drawn again (tui_draw_redraw) for a new size, on Ctrl-L,
 * or after output was dropped, and scrolled back by rows (tui_draw_view,
 * tui_view.h); a line of it can be put in place of another, on the
 * screen too while it is there (tui_draw_replace).
 *
 * Text from the room is sanitised here (control characters other than
 * newline and tab are dropped), so no user can send escape sequences to
 * another's terminal.
 *
 * Drawn once for all: every member of a room gets the same deltas, so
 * each would parse and draw the same unclosed blocks on each.  A draw
 * given a cache (struct tui_draw_cache, one per process: the network's
 * server) looks the blocks up first by all they are drawn from (their
 * text, the width, colours, the answer's head, the highlight) and copies
 * the lines kept there; what it misses it draws from the cache's parse
 * of the text (tui_markdown.h) and keeps.  So a delta's blocks are
 * parsed once for the room and drawn once per distinct width, and equal
 * inputs give equal lines with or without the cache.
 */
#ifndef ATRIUMD_TUI_DRAW_H
#define ATRIUMD_TUI_DRAW_H

#include "buf.h"
#include "tui_editor.h"
#include "tui_markdown.h"
#include "tui_model.h"

#define TUI_DRAW_MAX_STREAM	(64 * 1024)	/* agent text kept unprinted */
/* The status row as drawn: 10,000 columns at most (channel.c). */
#define TUI_DRAW_MAX_STATUS_ROW	(64 * 1024)
#define TUI_DRAW_MAX_LINE	2048	/* an agent's line longer than this
					 * (as sent) is ended at a space */
#define TUI_DRAW_MAX_BLOCK	8192	/* an agent's unclosed blocks longer
					 * than this (as sent) are drawn as
					 * they stand, a fence carried on */
#define TUI_DRAW_TAB		8		/* tab stops */
#define TUI_DRAW_AGENT		"agent"		/* the agent's name */
#define TUI_DRAW_AGENT_COLOR	35		/* its own colour: magenta */

#define TUI_DRAW_CACHE_SLOTS	16	/* drawings of unclosed blocks kept */

/* What the lines of unclosed blocks are drawn from, but their text. */
struct tui_draw_key {
	int cols;		/* the width */
	int color;		/* colours allowed */
	int flags;		/* TUI_MD_* of the text */
	int indent;		/* columns of the head */
	int first;		/* the first line follows the head */
	char head[128];		/* the answer's time and name */
	char highlight[128];	/* shown in reverse video */
};

/* Lines of unclosed blocks drawn lately, and the parses they were drawn
 * from; replaced oldest first; zeroed is empty. */
struct tui_draw_cache {
	struct tui_md_cache md;		/* the texts' trees */
	struct {
		unsigned long long hash;	/* of key and text */
		struct tui_draw_key key;
		char *text;			/* a copy; NULL: the slot is
						 * free */
		size_t len;
		char *lines;			/* drawn (tui_draw.stream) */
		size_t lines_len;
		int rows;			/* their rows at key.cols */
		unsigned long gen;		/* which drawing this is */
		char *shown;			/* its rows from shown_first on
						 * as the bottom region prints
						 * them; NULL: none yet */
		size_t shown_len;
		int shown_first, shown_rows;
	} slot[TUI_DRAW_CACHE_SLOTS];
	unsigned next;			/* the slot replaced next */
	unsigned long gens;		/* drawings kept, ever */
	unsigned long hits, draws;	/* drawings found, drawings made */
};

/* Drop everything kept; the cache is empty after it. */
void tui_draw_cache_free(struct tui_draw_cache *c);

enum tui_style {
	TUI_STYLE_MESSAGE,	/* "name: text" */
	TUI_STYLE_NOTICE,	/* "* text" */
	TUI_STYLE_ERROR,	/* "! text" */
	TUI_STYLE_TOOL,		/* "> text", a tool call or command */
	TUI_STYLE_OUTPUT,	/* text as is (command output) */
};

struct tui_draw {
	int ansi;		/* escape sequences allowed */
	int color;		/* colours allowed (ansi without NO_COLOR) */
	int crlf;		/* lines end in CR LF (any pty), else LF */
	int cols, rows;		/* terminal size */
	int bottom_rows;	/* rows above the prompt row we drew */
	int streaming;		/* an agent line is open */
	struct buf stream;	/* ansi: its unclosed blocks as drawn
				 * (rendered from raw): lines apart by
				 * '\n'; plain: its prefix until the
				 * first text */
	struct buf raw;		/* ansi: those blocks as sent, cleaned
				 * (complete lines, then the unfinished
				 * one) */
	int md_flags;		/* ansi: how raw follows what was printed
				 * (TUI_MD_GAP, TUI_MD_CONT) */
	char head[128];		/* ansi: the answer's time and name */
	int indent;		/* ansi: columns of head: the answer's later
				 * lines start under its text */
	int stream_lines;	/* ansi: lines of the answer printed */
	int stream_rows;	/* ansi: rows stream fills at stream_cols
				 * columns (counted once per render) */
	int stream_cols;
	int stream_shown;	/* ansi: rows of the unclosed blocks printed
				 * above already (they are taller than the
				 * screen allows the bottom region) */
	struct tui_model model;	/* ansi: printed lines, for redraws */
	char status[512];	/* ansi: the status line's text ("" none) */
	struct buf status_row;	/* ansi: that line as drawn, for
				 * status_cols columns: every frame ends
				 * with it, and a thousand members' frames
				 * would each clean and measure it again */
	int status_cols;	/* 0: status_row is not drawn yet */
	long long time_ms;	/* ansi: the time of the event being drawn
				 * (0: none), shown as HH:MM before it */
	int day;		/* ansi: the date of the last time shown
				 * (tui_time_day), for the date line */
	char highlight[128];	/* ansi: text shown in reverse video in the
				 * lines drawn (a /history search), "" none */
	struct tui_draw_cache *cache;	/* drawings shared with other
					 * members; NULL: drawn here */
	unsigned long cache_gen;	/* the cache's drawing that stream is
					 * (0: none) ... */
	int cache_slot;			/* ... in this slot, unless replaced */
};

/* ansi: the line UI; color: colours in it; crlf: a pty without ansi
 * (TERM=dumb) also wants CR LF. */
void tui_draw_init(struct tui_draw *d, int ansi, int color, int crlf,
    int cols, int rows);
void tui_draw_free(struct tui_draw *d);

/* ANSI colour for a name, the same every time: the agent's own, and for
 * people one of the others but red (errors are red). */
int tui_draw_color(const char *name);

/* Remove the bottom region (ansi) before printing above it. */
void tui_draw_clear_bottom(struct tui_draw *d, struct buf *out);

/* Print a finished line (text may hold newlines).  name is used by
 * TUI_STYLE_MESSAGE. */
void tui_draw_line(struct tui_draw *d, struct buf *out, enum tui_style style,
    const char *name, const char *text);

/* Streamed agent text: closed blocks (and, with ansi, rows that would
 * not fit on the screen) are printed, the rest kept. */
void tui_draw_stream(struct tui_draw *d, struct buf *out, const char *text);

/* The stream is over: print what is kept. */
void tui_draw_stream_end(struct tui_draw *d, struct buf *out);

/* The stream's answer was cut short: drop what is kept of it (ansi) or
 * end its line (plain). */
void tui_draw_stream_drop(struct tui_draw *d, struct buf *out);

/* The status line's text (plain text, cut to the row when drawn) and the
 * time of what is drawn next (0: none).  The next tui_draw_bottom shows
 * them. */
void tui_draw_set_status(struct tui_draw *d, const char *text);
void tui_draw_set_time(struct tui_draw *d, long long ms);

/* Draw the bottom region: the kept stream row, the status line (reverse
 * video, one row) and "ROOM> " input. */
void tui_draw_bottom(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e);

/* ansi: clear the screen and draw it again from the model, as many recent
 * lines as fit above the bottom region, for cols x rows. */
void tui_draw_redraw(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e, int cols, int rows);

/* The date line drawn before the first line of the date of ms, as the
 * model keeps it. */
void tui_draw_date_row(long long ms, char *row, size_t len);

/* Rows above the bottom region (its status line, the agent's kept
 * stream and the input line): the height of a view. */
int tui_draw_view_height(const struct tui_draw *d);

/* ansi: clear the screen and draw the lines of older (oldest first; may
 * be NULL) followed by the model's as rows (tui_view.h): the view that
 * has offset rows below it (0: the newest at the bottom), as many rows as
 * fit above the bottom region, then the bottom region. */
void tui_draw_view(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e, const struct tui_model *older,
    size_t offset);

/* ansi: put a line of style with text (one line; its time d->time_ms)
 * in place of the model's line that starts at at (tui_model_find), which
 * has `after` lines below it, and when its rows are still on the screen
 * (the live view), draw it there again with the lines below it; the
 * bottom region is left cleared, for tui_draw_bottom.  So a line that
 * said what was asked can say how it was answered (an approval request),
 * where it was.  0, or -1 when the model could not take it (nothing
 * changed). */
int tui_draw_replace(struct tui_draw *d, struct buf *out, size_t at,
    size_t after, enum tui_style style, const char *text);

/* Append text without control characters (newline kept as nl). */
void tui_draw_sanitize(struct buf *out, const char *text, size_t len,
    const char *nl);

#endif
