/*
 * tui_editor.h: the chat's input line as code points with a cursor.  Pure
 * functions, no I/O; tui_draw.c shows it, chat.c feeds it keys.  Moves and
 * deletes go by grapheme cluster and widths are terminal columns
 * (tui_width.h), so wide characters and emoji stay whole.
 */
#ifndef ATRIUMD_TUI_EDITOR_H
#define ATRIUMD_TUI_EDITOR_H

#include <stddef.h>
#include <stdint.h>

struct tui_editor {
	uint32_t *cps;		/* code points */
	size_t len;		/* in use */
	size_t cap;		/* allocated */
	size_t max_bytes;	/* UTF-8 size limit of the line */
	size_t bytes;		/* UTF-8 size now */
	size_t cursor;		/* 0..len */
	uint32_t *kill;		/* the text Ctrl-K/U/W took, for Ctrl-Y */
	size_t kill_len;	/* in use */
	size_t kill_cap;	/* allocated */
};

void tui_editor_init(struct tui_editor *e, size_t max_bytes);
void tui_editor_free(struct tui_editor *e);

/* 1 when cp may be part of a line: not a control character (C0, DEL,
 * C1), not a surrogate, at most U+10FFFF. */
int tui_editor_allowed(uint32_t cp);

/* Insert at the cursor.  0, -EINVAL for a code point tui_editor_allowed
 * refuses, -ENOBUFS past max_bytes, -ENOMEM. */
int tui_editor_insert(struct tui_editor *e, uint32_t cp);

/* Delete the cluster before / at the cursor (no-op at the ends). */
void tui_editor_backspace(struct tui_editor *e);
void tui_editor_delete(struct tui_editor *e);

/* Move the cursor. */
void tui_editor_left(struct tui_editor *e);
void tui_editor_right(struct tui_editor *e);
void tui_editor_home(struct tui_editor *e);
void tui_editor_end(struct tui_editor *e);

/* Delete from the start to the cursor (Ctrl-U), from the cursor to the
 * end (Ctrl-K), or the word before the cursor with the blanks after it
 * (Ctrl-W: a word is a run of non-blanks, as in a shell).  What went is
 * kept for tui_editor_yank (when memory allows). */
void tui_editor_kill_start(struct tui_editor *e);
void tui_editor_kill_end(struct tui_editor *e);
void tui_editor_kill_word(struct tui_editor *e);

/* Insert what was last killed at the cursor (Ctrl-Y).  0, or as
 * tui_editor_insert. */
int tui_editor_yank(struct tui_editor *e);

/* Cursor to the start of this or the previous word (Alt-B), or past the
 * end of this or the next word (Alt-F); a word is letters and digits. */
void tui_editor_word_left(struct tui_editor *e);
void tui_editor_word_right(struct tui_editor *e);

/* Insert a newline at the cursor (a pasted line break: the line is sent
 * as one message with its lines).  0, -ENOBUFS, -ENOMEM. */
int tui_editor_newline(struct tui_editor *e);

/* Replace the line with the UTF-8 text (its newlines kept, other control
 * characters dropped), cursor at the end.  0, or -ENOBUFS when it was cut
 * at max_bytes, -ENOMEM. */
int tui_editor_set(struct tui_editor *e, const char *text);

/* Empty the line. */
void tui_editor_clear(struct tui_editor *e);

/* The part of the line shown in cols columns: code points [*from, *to)
 * hold whole clusters, the cursor is in view (scrolled sideways as little
 * as needed, keeping its column under cols so it never reaches the
 * row's end), and *cursor_col is its column from the start of the view. */
void tui_editor_view(const struct tui_editor *e, int cols, size_t *from,
    size_t *to, int *cursor_col);

/* UTF-8 of code points [from, to) into out (NUL-terminated, truncated to
 * outlen).  Returns bytes written. */
size_t tui_editor_utf8(const struct tui_editor *e, size_t from, size_t to,
    char *out, size_t outlen);

/* The same for the screen: a newline is shown as U+21B5 (one column, as
 * tui_width_cluster counts it). */
size_t tui_editor_show(const struct tui_editor *e, size_t from, size_t to,
    char *out, size_t outlen);

/* Bytes of cp in UTF-8. */
size_t tui_utf8_len(uint32_t cp);

/* Encode cp; returns bytes (1-4) written to out (room for 4). */
size_t tui_utf8_put(uint32_t cp, char *out);

#endif
