/*
 * tui_draw.h: the chat's output as bytes for the client's terminal.  With
 * ansi on: lines printed above a bottom region that holds the agent's
 * unfinished line (while it streams) and the input line "ROOM> ", which is
 * cleared and redrawn around each print; names in a stable colour.  With
 * ansi off: plain lines ending in "\n", no escape sequence at all.
 *
 * Text from the room is sanitised here (control characters other than
 * newline and tab are dropped), so no user can send escape sequences to
 * another's terminal.
 */
#ifndef ATRIUMD_TUI_DRAW_H
#define ATRIUMD_TUI_DRAW_H

#include "buf.h"
#include "tui_editor.h"

#define TUI_DRAW_MAX_STREAM	(64 * 1024)	/* unfinished agent line kept */

enum tui_style {
	TUI_STYLE_MESSAGE,	/* "name: text" */
	TUI_STYLE_NOTICE,	/* "* text" */
	TUI_STYLE_ERROR,	/* "! text" */
	TUI_STYLE_TOOL,		/* "> text", a tool call or command */
	TUI_STYLE_OUTPUT,	/* text as is (command output) */
};

struct tui_draw {
	int ansi;		/* escape sequences allowed */
	int crlf;		/* lines end in CR LF (any pty), else LF */
	int cols, rows;		/* terminal size */
	int bottom_rows;	/* rows above the prompt row we drew */
	int streaming;		/* an agent line is open */
	struct buf stream;	/* its unfinished last line */
};

/* ansi: the line UI; crlf: a pty without it (TERM=dumb) also wants CR LF. */
void tui_draw_init(struct tui_draw *d, int ansi, int crlf, int cols, int rows);
void tui_draw_free(struct tui_draw *d);

/* ANSI colour (31-36) for a name, the same every time. */
int tui_draw_color(const char *name);

/* Remove the bottom region (ansi) before printing above it. */
void tui_draw_clear_bottom(struct tui_draw *d, struct buf *out);

/* Print a finished line (text may hold newlines).  name is used by
 * TUI_STYLE_MESSAGE. */
void tui_draw_line(struct tui_draw *d, struct buf *out, enum tui_style style,
    const char *name, const char *text);

/* Streamed agent text: whole lines are printed, the rest kept. */
void tui_draw_stream(struct tui_draw *d, struct buf *out, const char *text);

/* The stream is over: print what is kept. */
void tui_draw_stream_end(struct tui_draw *d, struct buf *out);

/* Draw the bottom region: the kept stream line and "ROOM> " input. */
void tui_draw_bottom(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e);

/* Append text without control characters (newline kept as nl). */
void tui_draw_sanitize(struct buf *out, const char *text, size_t len,
    const char *nl);

#endif
