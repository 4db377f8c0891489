/*
 * tui_width.h: how many terminal columns text takes.  The one measure the
 * chat uses everywhere it places text or the cursor (tui_draw.c, the input
 * line), so what it counts and what the terminal does agree:
 *
 *   - a grapheme cluster (a base character with its combining marks,
 *     variation selectors and zero-width-joined parts, e.g. an emoji ZWJ
 *     sequence) is drawn as one unit and never split across rows;
 *   - its width is that of its widest code point (wcwidth-style, from
 *     utf8proc: East Asian Wide and Fullwidth, and emoji, are 2; combining
 *     marks, ZWJ, variation selectors and other format characters are 0),
 *     and 2 when an emoji variation selector (U+FE0F) asks for emoji
 *     presentation;
 *   - escape sequences (ESC [ ... final, ESC ] ... BEL or ST, ESC x) and
 *     other control characters take no columns (tui_draw.c expands tabs to
 *     spaces before measuring);
 *   - a cluster two columns wide that does not fit in the last column of a
 *     row goes whole to the next row, as terminals do.
 *
 * Invalid UTF-8 counts one column per bad byte (it is drawn as U+FFFD).
 * Pure functions, no I/O, no allocation.
 */
#ifndef ATRIUMD_TUI_WIDTH_H
#define ATRIUMD_TUI_WIDTH_H

#include <stddef.h>
#include <stdint.h>

/* Columns of one code point: 0, 1 or 2. */
int tui_width_cp(uint32_t cp);

/* The unit at s[0..n) (n > 0): a grapheme cluster or a whole escape
 * sequence.  Returns its length in bytes (at least 1) and its columns in
 * *width (0 for an escape sequence or a control character). */
size_t tui_width_next(const char *s, size_t n, int *width);

/* Columns of s[0..n) on one endless row. */
int tui_width_str(const char *s, size_t n);

/* Bytes of the longest prefix of s[0..n) made of whole units that fits in
 * cols columns; its columns in *used (may be NULL). */
size_t tui_width_fit(const char *s, size_t n, int cols, int *used);

/* The grapheme cluster of cps[from..n) starting at from (from < n): the
 * index just past it, its columns in *width (may be NULL).  A newline is a
 * cluster of its own, one column wide (the input line shows a pasted line
 * break as an arrow, tui_editor_show). */
size_t tui_width_cluster(const uint32_t *cps, size_t n, size_t from,
    int *width);

/* The start of the cluster that ends at or contains index at - 1 in
 * cps[0..n) (at > 0): where the cursor lands after one step left. */
size_t tui_width_cluster_before(const uint32_t *cps, size_t n, size_t at);

/* Columns of cps[from..to), counted cluster by cluster. */
int tui_width_cps(const uint32_t *cps, size_t from, size_t to);

#endif
