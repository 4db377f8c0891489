/*
 * tui_draw.c: rendering for the chat (tui_draw.h).  Called by chat.c with
 * the chat's output queue; when a slow client's queue is dropped, chat.c
 * redraws from the model (the lines kept, not the wire bytes, are the
 * truth).
 *
 * Invariants, with ansi: the cursor sits on the prompt row after
 * tui_draw_bottom, bottom_rows rows below the top of the region, and
 * bottom_rows is counted with tui_wrap_rows at the width drawn for; the
 * rows of the agent's unclosed blocks not yet printed above fit the
 * screen at d->cols x d->rows after each tui_draw_stream
 * (tui_draw_stream_fit); every row printed ends with an attribute reset;
 * the model holds each line whole, as tui_wrap.h cuts it into rows, so
 * what a redraw prints and counts is what was printed; a drawing taken
 * from the cache is the one this draw would make (its key holds every
 * input of tui_draw_stream_render but the fixed limits).
 */
#include "tui_draw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tui_time.h"
#include "tui_view.h"
#include "tui_width.h"
#include "tui_wrap.h"
#include "utf8.h"

#define TUI_PROMPT_SUFFIX	"> "
#define TUI_RESET		"\x1b[0m"
#define TUI_CLEAR		TUI_RESET "\x1b[H\x1b[2J"	/* home, erase all */
#define TUI_MAX_REDRAW		512	/* lines a redraw may show */
#define TUI_VIEW_BYTES		(64 * 1024 + 8)	/* the input line shown, at most
						 * (arrows for newlines) */
#define TUI_GUTTER		"      "	/* under "HH:MM " */
#define TUI_DIM			"\x1b[2m"
#define TUI_UNDIM		"\x1b[22m"
#define TUI_REVERSE		"\x1b[7m"
#define TUI_UNREVERSE		"\x1b[27m"
#define TUI_MAX_RENDER		(256 * 1024)	/* a message's lines as drawn,
						 * at most */

/* Rendering state for one client; cannot fail. */
void
tui_draw_init(struct tui_draw *d, int ansi, int color, int crlf, int cols,
    int rows)
{
	memset(d, 0, sizeof(*d));
	d->ansi = ansi;
	d->color = ansi && color;
	d->crlf = ansi || crlf;
	d->cols = cols > 0 ? cols : 80;
	d->rows = rows > 0 ? rows : 24;
	buf_init(&d->stream, TUI_DRAW_MAX_STREAM);
	buf_init(&d->raw, TUI_DRAW_MAX_STREAM);
	buf_init(&d->status_row, TUI_DRAW_MAX_STATUS_ROW);
	tui_model_init(&d->model);
}

/* Free the kept stream line. */
void
tui_draw_free(struct tui_draw *d)
{
	buf_free(&d->stream);
	buf_free(&d->raw);
	buf_free(&d->status_row);
	tui_model_free(&d->model);
}

/* The agent's colour, or FNV-1a of the name onto the people's colours:
 * green, yellow, blue, cyan and their bright forms (not red, the colour
 * of errors, nor the agent's magenta). */
int
tui_draw_color(const char *name)
{
	static const int people[] = { 32, 33, 34, 36, 92, 93, 94, 96 };
	unsigned h = 2166136261u;

	if (strcmp(name, TUI_DRAW_AGENT) == 0)
		return TUI_DRAW_AGENT_COLOR;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return people[h % (sizeof(people) / sizeof(people[0]))];
}

/* Clean text as utf8_clean does (invalid bytes become U+FFFD; C0 controls
 * but tab and newline, DEL and C1 go), with each newline written as nl.
 * The agent cleans what people send; this holds for every other field too
 * (names, commands, output), whatever the agent let through. */
void
tui_draw_sanitize(struct buf *out, const char *text, size_t len,
    const char *nl)
{
	struct buf clean;
	const char *p, *end, *e;

	buf_init(&clean, len * 3 + 1);
	if (utf8_clean(&clean, text, len) < 0 || !clean.data) {
		buf_free(&clean);
		return;
	}
	p = clean.data;
	end = p + clean.len;
	while (p < end) {
		e = memchr(p, '\n', (size_t)(end - p));
		buf_append(out, p, (size_t)((e ? e : end) - p));
		if (e)
			buf_append(out, nl, strlen(nl));
		p = e ? e + 1 : end;
	}
	buf_free(&clean);
}

/* Append s[0..n) (one line, sanitised) with each tab turned into spaces
 * up to the next tab stop; col is the column where s starts. */
static void
tui_draw_expand(struct buf *out, const char *s, size_t n, int col,
    const char *hl)
{
	static const char spaces[TUI_DRAW_TAB] = "        ";
	size_t i = 0, len, hl_len = hl ? strlen(hl) : 0, hl_end = 0;
	int w;

	if (!hl_len && !memchr(s, '\t', n)) {
		/* Nothing to expand or mark: no need to measure (a streamed
		 * answer's unclosed blocks come here on every delta). */
		buf_append(out, s, n);
		return;
	}
	while (i < n) {
		if (hl_len && i >= hl_end && i + hl_len <= n &&
		    strncasecmp(s + i, hl, hl_len) == 0) {
			/* A match of /history TEXT, in reverse video. */
			buf_append(out, TUI_REVERSE, strlen(TUI_REVERSE));
			hl_end = i + hl_len;
		}
		if (s[i] == '\t') {
			int pad = TUI_DRAW_TAB - col % TUI_DRAW_TAB;

			buf_append(out, spaces, (size_t)pad);
			col += pad;
			i++;
			continue;
		}
		len = tui_width_next(s + i, n - i, &w);
		buf_append(out, s + i, len);
		col += w;
		i += len;
		if (hl_end && i >= hl_end) {
			buf_append(out, TUI_UNREVERSE, strlen(TUI_UNREVERSE));
			hl_end = 0;
		}
	}
	if (hl_end)
		buf_append(out, TUI_UNREVERSE, strlen(TUI_UNREVERSE));
}

/* Move to the top of the bottom region and erase it (ansi only). */
void
tui_draw_clear_bottom(struct tui_draw *d, struct buf *out)
{
	if (!d->ansi)
		return;
	buf_append(out, "\r", 1);
	if (d->bottom_rows > 0)
		buf_printf(out, "\x1b[%dA", d->bottom_rows);
	buf_append(out, "\x1b[J", 3);
	d->bottom_rows = 0;
}

/* The attributes a style's text is drawn in ("" for none), also on the
 * continuation lines of a multi-line text. */
static const char *
tui_draw_attr(const struct tui_draw *d, enum tui_style style)
{
	if (!d->ansi)
		return "";
	switch (style) {
	case TUI_STYLE_NOTICE:
		return "\x1b[2m";
	case TUI_STYLE_ERROR:
		return d->color ? "\x1b[1;31m" : "\x1b[1m";
	case TUI_STYLE_TOOL:
		return d->color ? "\x1b[36m" : "";
	default:
		return "";
	}
}

/* The prefix of a line in each style. */
static void
tui_draw_prefix(struct tui_draw *d, struct buf *out, enum tui_style style,
    const char *name)
{
	const char *attr = tui_draw_attr(d, style);

	buf_append(out, attr, strlen(attr));
	switch (style) {
	case TUI_STYLE_MESSAGE:
		if (d->color)
			buf_printf(out, "\x1b[1;%dm", tui_draw_color(name));
		else if (d->ansi)
			buf_append(out, "\x1b[1m", 4);
		tui_draw_sanitize(out, name, strlen(name), "");
		buf_append(out, d->ansi ? ":" TUI_RESET " " : ": ",
		    d->ansi ? 6 : 2);
		break;
	case TUI_STYLE_NOTICE:
		buf_append(out, "* ", 2);
		break;
	case TUI_STYLE_ERROR:
		buf_append(out, "! ", 2);
		break;
	case TUI_STYLE_TOOL:
		buf_append(out, "> ", 2);
		break;
	case TUI_STYLE_OUTPUT:
		break;
	}
}

/* Print the rows of line from row first on (ansi), each ended by a
 * reset and a line break.  Returns the rows printed. */
static int
tui_draw_rows(const struct tui_draw *d, struct buf *out, const char *line,
    size_t len, int first)
{
	struct tui_wrap w;
	size_t start, end;
	int n = 0;

	tui_wrap_init(&w, line, len, d->cols);
	for (int row = 0; tui_wrap_next(&w, &start, &end); row++) {
		if (row < first)
			continue;
		tui_wrap_put(&w, out, start, end);
		buf_append(out, TUI_RESET "\r\n", 6);
		n++;
	}
	return n;
}

/* One finished line (ansi): its rows on out, the line in the model (the
 * model keeps it whole: a redraw wraps it for the width of then). */
static void
tui_draw_emit(struct tui_draw *d, struct buf *out, const char *row,
    size_t len)
{
	tui_draw_rows(d, out, row, len, 0);
	tui_model_add(&d->model, row, len);
}

/* See tui_draw.h. */
void
tui_draw_set_status(struct tui_draw *d, const char *text)
{
	snprintf(d->status, sizeof(d->status), "%s", text ? text : "");
	d->status_cols = 0;	/* drawn again when next shown */
}

/* See tui_draw.h. */
void
tui_draw_set_time(struct tui_draw *d, long long ms)
{
	d->time_ms = ms;
}

/* See tui_draw.h. */
void
tui_draw_date_row(long long ms, char *row, size_t len)
{
	char date[64];

	tui_time_date(ms, date, sizeof(date));
	snprintf(row, len, TUI_DIM "-- %s --", date);
}

/* The date line, before the first line of a new date (ansi, with a
 * time). */
static void
tui_draw_date(struct tui_draw *d, struct buf *out)
{
	char row[128];
	int day;

	if (!d->time_ms || (day = tui_time_day(d->time_ms)) == d->day)
		return;
	d->day = day;
	tui_draw_date_row(d->time_ms, row, sizeof(row));
	tui_draw_emit(d, out, row, strlen(row));
}

/* The start of a first row: the time, dim, or for command output (and
 * without a time) the gutter that keeps it under the text. */
static void
tui_draw_stamp(const struct tui_draw *d, struct buf *row, int first,
    enum tui_style style)
{
	char hhmm[16];

	if (!d->time_ms)
		return;
	if (!first || style == TUI_STYLE_OUTPUT) {
		buf_append(row, TUI_GUTTER, strlen(TUI_GUTTER));
		return;
	}
	tui_time_hhmm(d->time_ms, hhmm, sizeof(hhmm));
	buf_printf(row, TUI_DIM "%s" TUI_UNDIM " ", hhmm);
}

/* Append spaces for cols columns. */
static void
tui_draw_spaces(struct buf *out, int cols)
{
	static const char spaces[] = "                ";

	for (; cols > 0; cols -= 16)
		buf_append(out, spaces, cols < 16 ? (size_t)cols : 16);
}

/* Render the Markdown s[0..n) as a message's lines into dst, apart by
 * '\n': its first line (*nline 0) after head, later ones under its text
 * (indent columns), each with the mark its rows hang under, tabs
 * expanded.  *nline counts the lines; a line that would not fit in dst
 * is left out, with those after it.  Returns the lines added. */
static int
tui_draw_md(const struct tui_draw *d, struct buf *dst, const char *head,
    int indent, int *nline, const char *s, size_t n, int flags)
{
	struct buf styled;
	const char *p, *end, *e;
	int count = 0;

	buf_init(&styled, TUI_MAX_RENDER);
	tui_md_render_cached(d->cache ? &d->cache->md : NULL, &styled, s, n,
	    d->cols - indent, flags | (d->color ? TUI_MD_COLOR : 0));
	p = styled.data ? styled.data : "";
	end = p + styled.len;
	for (; p < end && (e = memchr(p, '\n', (size_t)(end - p))); p = e + 1) {
		size_t need = strlen(head) + (size_t)indent + 2 +
		    (size_t)(e - p) * TUI_DRAW_TAB;

		if (dst->len + need > dst->max)
			break;
		if (dst->len)
			buf_append(dst, "\n", 1);
		if ((*nline)++ == 0)
			buf_append(dst, head, strlen(head));
		else
			tui_draw_spaces(dst, indent);
		buf_append(dst, TUI_WRAP_MARK_STR, 1);
		tui_draw_expand(dst, p, (size_t)(e - p), indent,
		    d->highlight[0] ? d->highlight : NULL);
		count++;
	}
	buf_free(&styled);
	return count;
}

/* The next of the lines apart by '\n' in text[0..len) from *pos: 1 with
 * it in *line, *n; 0 past the last (an empty text has none). */
static int
tui_draw_next_line(const char *text, size_t len, size_t *pos,
    const char **line, size_t *n)
{
	const char *e;

	if (!text || !len || *pos > len)
		return 0;
	*line = text + *pos;
	e = memchr(*line, '\n', len - *pos);
	*n = e ? (size_t)(e - *line) : len - *pos;
	*pos += *n + 1;
	return 1;
}

/* The start of a styled line other than a message's: its first with
 * time and prefix, a later one under the time; then the mark its wrapped
 * rows hang under.  Returns the columns of what precedes the mark. */
static int
tui_draw_line_head(struct tui_draw *d, struct buf *row, int first,
    enum tui_style style, const char *name)
{
	const char *attr = tui_draw_attr(d, style);

	tui_draw_stamp(d, row, first, style);
	if (first)
		tui_draw_prefix(d, row, style, name);
	else
		buf_append(row, attr, strlen(attr));
	buf_append(row, TUI_WRAP_MARK_STR, 1);
	return row->len ? tui_width_str(row->data, row->len) : 0;
}

/* A message (ansi): its Markdown as lines, the first after the time
 * and the name, the others under its text. */
static void
tui_draw_message_ansi(struct tui_draw *d, struct buf *out, const char *name,
    const char *text, size_t len)
{
	struct buf clean, head, lines;
	size_t pos = 0, n;
	const char *line;
	int indent, nline = 0;

	buf_init(&clean, len * 3 + 1);
	buf_init(&head, 1024);
	buf_init(&lines, TUI_MAX_RENDER);
	tui_draw_sanitize(&clean, text, len, "\n");
	tui_draw_date(d, out);
	tui_draw_stamp(d, &head, 1, TUI_STYLE_MESSAGE);
	tui_draw_prefix(d, &head, TUI_STYLE_MESSAGE, name);
	buf_append(&head, "", 1);
	indent = tui_width_str(head.data, head.len - 1);
	tui_draw_md(d, &lines, head.data, indent, &nline, clean.data ?
	    clean.data : "", clean.len, 0);
	if (!nline) {
		buf_append(&lines, head.data, head.len - 1);
		buf_append(&lines, TUI_WRAP_MARK_STR, 1);
	}
	while (tui_draw_next_line(lines.data, lines.len, &pos, &line, &n))
		tui_draw_emit(d, out, line, n);
	buf_free(&lines);
	buf_free(&head);
	buf_free(&clean);
}

/* A styled text other than a message as lines with attributes, tabs
 * expanded (ansi). */
static void
tui_draw_line_ansi(struct tui_draw *d, struct buf *out, enum tui_style style,
    const char *name, const char *text, size_t len)
{
	struct buf clean, row;
	const char *p, *end, *e;
	int col;

	if (style == TUI_STYLE_MESSAGE) {
		tui_draw_message_ansi(d, out, name, text, len);
		return;
	}
	buf_init(&clean, len * 3 + 1);
	buf_init(&row, len * TUI_DRAW_TAB + TUI_DRAW_MAX_STREAM);
	tui_draw_sanitize(&clean, text, len, "\n");
	p = clean.data ? clean.data : "";
	end = p + clean.len;
	if (style != TUI_STYLE_OUTPUT)
		tui_draw_date(d, out);
	for (int first = 1; first || p < end; first = 0) {
		e = memchr(p, '\n', (size_t)(end - p));
		buf_reset(&row);
		col = tui_draw_line_head(d, &row, first, style, name);
		tui_draw_expand(&row, p, (size_t)((e ? e : end) - p), col,
		    d->highlight[0] ? d->highlight : NULL);
		tui_draw_emit(d, out, row.data, row.len);
		p = e ? e + 1 : end;
	}
	buf_free(&row);
	buf_free(&clean);
}

/* Finish an open stream, then print a styled line. */
void
tui_draw_line(struct tui_draw *d, struct buf *out, enum tui_style style,
    const char *name, const char *text)
{
	const char *nl = d->crlf ? "\r\n" : "\n";
	size_t len = strlen(text);

	tui_draw_stream_end(d, out);
	while (len && text[len - 1] == '\n')
		len--;
	if (d->ansi) {
		tui_draw_line_ansi(d, out, style, name ? name : "?", text, len);
		return;
	}
	tui_draw_prefix(d, out, style, name ? name : "?");
	tui_draw_sanitize(out, text, len, nl);
	buf_append(out, nl, strlen(nl));
}

/* Rows the kept stream may fill: all but the prompt row, the status
 * line's and one more, so
 * the bottom region always fits on the screen (moving up past the top
 * row is clamped by terminals, and would leave stale rows). */
static int
tui_draw_stream_max(const struct tui_draw *d)
{
	int fixed = 2 + (d->status[0] ? 1 : 0);

	return d->rows > fixed + 1 ? d->rows - fixed : 1;
}

/* Rows the lines of text[0..len) (apart by '\n') fill at d->cols. */
static int
tui_draw_text_rows(const struct tui_draw *d, const char *text, size_t len)
{
	size_t pos = 0, n;
	const char *line;
	int rows = 0;

	while (tui_draw_next_line(text, len, &pos, &line, &n))
		rows += tui_wrap_rows(line, n, d->cols);
	return rows;
}

/* Print the rows of the lines of text[0..len) from row first on, each
 * ended by a reset and a line break.  Returns the rows printed. */
static int
tui_draw_text_print(const struct tui_draw *d, struct buf *out,
    const char *text, size_t len, int first)
{
	size_t pos = 0, n;
	const char *line;
	int printed = 0, rows;

	while (tui_draw_next_line(text, len, &pos, &line, &n)) {
		rows = tui_wrap_rows(line, n, d->cols);
		printed += tui_draw_rows(d, out, line, n, first);
		first = first > rows ? first - rows : 0;
	}
	return printed;
}

/* See tui_draw.h. */
void
tui_draw_cache_free(struct tui_draw_cache *c)
{
	tui_md_cache_free(&c->md);
	for (int i = 0; i < TUI_DRAW_CACHE_SLOTS; i++) {
		free(c->slot[i].text);
		free(c->slot[i].lines);
		free(c->slot[i].shown);
	}
	memset(c, 0, sizeof(*c));
}

/* What d's unclosed blocks are drawn from, but their text, and the hash
 * of both. */
static unsigned long long
tui_draw_cache_key(const struct tui_draw *d, struct tui_draw_key *k)
{
	memset(k, 0, sizeof(*k));
	k->cols = d->cols;
	k->color = d->color;
	k->flags = d->md_flags;
	k->indent = d->indent;
	k->first = d->stream_lines == 0;
	snprintf(k->head, sizeof(k->head), "%s", d->head);
	snprintf(k->highlight, sizeof(k->highlight), "%s", d->highlight);
	return tui_md_hash((const char *)k, sizeof(*k)) * 31 ^
	    tui_md_hash(d->raw.data ? d->raw.data : "", d->raw.len);
}

/* The drawing of d's unclosed blocks kept in d's cache, into d->stream:
 * 1, or 0 when none is kept (*k and *h then say what to keep). */
static int
tui_draw_cache_get(struct tui_draw *d, struct tui_draw_key *k,
    unsigned long long *h)
{
	struct tui_draw_cache *c = d->cache;

	*h = tui_draw_cache_key(d, k);
	for (int i = 0; i < TUI_DRAW_CACHE_SLOTS; i++) {
		if (!c->slot[i].text || c->slot[i].hash != *h ||
		    c->slot[i].len != d->raw.len ||
		    memcmp(&c->slot[i].key, k, sizeof(*k)) != 0 ||
		    memcmp(c->slot[i].text, d->raw.data ? d->raw.data : "",
		    d->raw.len) != 0)
			continue;
		buf_reset(&d->stream);
		if (buf_append(&d->stream, c->slot[i].lines,
		    c->slot[i].lines_len) < 0)
			return 0;
		d->stream_rows = c->slot[i].rows;
		d->cache_gen = c->slot[i].gen;
		d->cache_slot = i;
		c->hits++;
		return 1;
	}
	return 0;
}

/* Keep d's drawing of its unclosed blocks (key k, hash h) in place of
 * the oldest slot; a text longer than TUI_MD_CACHE_TEXT, or copies that
 * cannot be made, are simply not kept. */
static void
tui_draw_cache_put(struct tui_draw *d, const struct tui_draw_key *k,
    unsigned long long h)
{
	struct tui_draw_cache *c = d->cache;
	unsigned i = c->next;
	char *text, *lines;

	if (d->raw.len > TUI_MD_CACHE_TEXT)
		return;		/* past what a delta holds: not kept */
	text = malloc(d->raw.len + 1);
	lines = malloc(d->stream.len + 1);
	if (!text || !lines) {
		free(text);
		free(lines);
		return;
	}
	memcpy(text, d->raw.data ? d->raw.data : "", d->raw.len);
	memcpy(lines, d->stream.data ? d->stream.data : "", d->stream.len);
	free(c->slot[i].text);
	free(c->slot[i].lines);
	free(c->slot[i].shown);
	c->slot[i].shown = NULL;
	c->slot[i].gen = d->cache_gen = ++c->gens;
	d->cache_slot = (int)i;
	c->slot[i].hash = h;
	c->slot[i].key = *k;
	c->slot[i].text = text;
	c->slot[i].len = d->raw.len;
	c->slot[i].lines = lines;
	c->slot[i].lines_len = d->stream.len;
	c->slot[i].rows = d->stream_rows;
	c->next = (i + 1) % TUI_DRAW_CACHE_SLOTS;
}

/* Draw the answer's unclosed blocks into d->stream from their text so
 * far: lines after the answer's time and name (its first line) or under
 * them; the drawing another member made of the same, when d's cache
 * keeps it. */
static void
tui_draw_stream_render(struct tui_draw *d)
{
	int nline = d->stream_lines;
	struct tui_draw_key k;
	unsigned long long h = 0;

	d->stream_cols = d->cols;
	d->cache_gen = 0;
	if (d->cache && tui_draw_cache_get(d, &k, &h))
		return;
	buf_reset(&d->stream);
	tui_draw_md(d, &d->stream, d->head, d->indent, &nline, d->raw.data ?
	    d->raw.data : "", d->raw.len, d->md_flags);
	d->stream_rows = tui_draw_text_rows(d, d->stream.data, d->stream.len);
	if (d->cache) {
		d->cache->draws++;
		tui_draw_cache_put(d, &k, h);
	}
}

/* Rows the unclosed blocks fill at d->cols: as counted when they were
 * drawn, unless the width changed since. */
static int
tui_draw_stream_total(const struct tui_draw *d)
{
	if (!d->stream.len)
		return 0;
	if (d->stream_cols == d->cols)
		return d->stream_rows;
	return tui_draw_text_rows(d, d->stream.data, d->stream.len);
}

/* The rows of the unclosed blocks the bottom region shows: from *first
 * on (past those printed above, and at most tui_draw_stream_max).
 * Returns their count. */
static int
tui_draw_stream_rows(const struct tui_draw *d, int *first)
{
	int rows = tui_draw_stream_total(d);
	int max = tui_draw_stream_max(d);

	*first = d->stream_shown;
	if (rows - *first > max)
		*first = rows - max;
	return rows > *first ? rows - *first : 0;
}

/* Print the unclosed blocks' first rows above, those not printed yet,
 * until the rest fits in tui_draw_stream_max rows.  Until then they wrap
 * in the bottom region as they grow. */
static void
tui_draw_stream_fit(struct tui_draw *d, struct buf *out)
{
	size_t pos = 0, n;
	const char *line;
	int first, row = 0, rows;

	tui_draw_stream_rows(d, &first);
	if (first <= d->stream_shown)
		return;
	while (row < first && tui_draw_next_line(d->stream.data,
	    d->stream.len, &pos, &line, &n)) {
		struct tui_wrap w;
		size_t start, end;

		tui_wrap_init(&w, line, n, d->cols);
		for (rows = 0; row < first && tui_wrap_next(&w, &start, &end);
		    rows++, row++) {
			if (row < d->stream_shown)
				continue;
			tui_wrap_put(&w, out, start, end);
			buf_append(out, TUI_RESET "\r\n", 6);
		}
	}
	d->stream_shown = first;
}

/* The first len bytes of the answer's text are closed blocks: print
 * their rows not yet printed, keep their lines in the model, and drop
 * them from what is rendered again. */
static void
tui_draw_stream_commit(struct tui_draw *d, struct buf *out, size_t len)
{
	struct buf lines;
	size_t pos = 0, n;
	const char *line;

	buf_init(&lines, TUI_MAX_RENDER);
	tui_draw_md(d, &lines, d->head, d->indent, &d->stream_lines,
	    d->raw.data ? d->raw.data : "", len, d->md_flags);
	tui_draw_text_print(d, out, lines.data, lines.len, d->stream_shown);
	d->stream_shown -= tui_draw_text_rows(d, lines.data, lines.len);
	if (d->stream_shown < 0)
		d->stream_shown = 0;
	while (tui_draw_next_line(lines.data, lines.len, &pos, &line, &n))
		tui_model_add(&d->model, line, n);
	buf_consume(&d->raw, len);
	buf_free(&lines);
}

/* The answer's text now starts with an item of an ordered list whose
 * items before it were printed: give its marker the number it has in
 * that list, so that it is drawn with it. */
static void
tui_draw_stream_renumber(struct tui_draw *d, long number)
{
	size_t i = 0, digits;
	struct buf text;

	while (i < d->raw.len && d->raw.data[i] == ' ')
		i++;
	for (digits = i; digits < d->raw.len && d->raw.data[digits] >= '0' &&
	    d->raw.data[digits] <= '9'; digits++)
		;
	if (digits == i)
		return;
	buf_init(&text, TUI_DRAW_MAX_STREAM);
	buf_append(&text, d->raw.data, i);
	buf_printf(&text, "%ld", number);
	buf_append(&text, d->raw.data + digits, d->raw.len - digits);
	buf_reset(&d->raw);
	buf_append(&d->raw, text.data, text.len);
	buf_free(&text);
}

/* A line of the answer is complete: print the blocks it closed (and a
 * list's items but its last); a fenced code block's lines as they come
 * (the fence carried on, TUI_MD_CONT), and the blocks past
 * TUI_DRAW_MAX_BLOCK as they stand, so that rendering on each delta stays
 * cheap. */
static void
tui_draw_stream_settle(struct tui_draw *d, struct buf *out)
{
	struct tui_md_cache *parses = d->cache ? &d->cache->md : NULL;
	char fence[64];
	size_t off;
	long number;
	int gap, carry;

	if ((off = tui_md_settled_cached(parses, d->raw.data, d->raw.len, &gap,
	    &number))) {
		tui_draw_stream_commit(d, out, off);
		d->md_flags = gap ? TUI_MD_GAP : 0;
		if (number > 0)
			tui_draw_stream_renumber(d, number);
		return;
	}
	carry = tui_md_open_fence_cached(parses, d->raw.data, d->raw.len, fence,
	    sizeof(fence));
	if (!(carry && memchr(d->raw.data, '\n', d->raw.len - 1)) &&
	    d->raw.len <= TUI_DRAW_MAX_BLOCK)
		return;
	tui_draw_stream_commit(d, out, d->raw.len);
	d->md_flags = 0;
	if (carry) {
		buf_append(&d->raw, fence, strlen(fence));
		buf_append(&d->raw, "\n", 1);
		d->md_flags = TUI_MD_CONT;
	}
}

/* The start of the unfinished line in the answer's text. */
static size_t
tui_draw_stream_line_start(const struct tui_draw *d)
{
	const char *nl = d->raw.len ? memrchr(d->raw.data, '\n',
	    d->raw.len) : NULL;

	return nl ? (size_t)(nl - d->raw.data) + 1 : 0;
}

/* Where a too long unfinished line (from from on) is ended: after its
 * last space within TUI_DRAW_MAX_LINE bytes, else after the whole units
 * that fit. */
static size_t
tui_draw_stream_cut(const struct tui_draw *d, size_t from)
{
	const char *s = d->raw.data + from;
	const char *sp = memrchr(s, ' ', TUI_DRAW_MAX_LINE);
	size_t cut = 0, len, n = d->raw.len - from;
	int w;

	if (sp && sp > s)
		return from + (size_t)(sp - s) + 1;
	while (cut < n && (len = tui_width_next(s + cut, n - cut, &w)) +
	    cut <= TUI_DRAW_MAX_LINE)
		cut += len;
	return from + (cut ? cut : n);
}

/* Add s[0..n) (one line's part, cleaned) to the answer's text; past
 * TUI_DRAW_MAX_LINE bytes its unfinished line is ended and the rest
 * starts the next. */
static void
tui_draw_stream_add(struct tui_draw *d, struct buf *out, const char *s,
    size_t n)
{
	size_t from, cut;

	buf_append(&d->raw, s, n);
	while (d->raw.len - (from = tui_draw_stream_line_start(d)) >
	    TUI_DRAW_MAX_LINE) {
		struct buf rest;

		cut = tui_draw_stream_cut(d, from);
		buf_init(&rest, TUI_DRAW_MAX_STREAM);
		buf_append(&rest, d->raw.data + cut, d->raw.len - cut);
		buf_truncate(&d->raw, cut);
		buf_append(&d->raw, "\n", 1);
		tui_draw_stream_settle(d, out);
		if (rest.len)
			buf_append(&d->raw, rest.data, rest.len);
		buf_free(&rest);
	}
}

/* The answer starts: its date line, its head (time and name). */
static void
tui_draw_stream_start(struct tui_draw *d, struct buf *out)
{
	struct buf head;

	buf_reset(&d->raw);
	d->md_flags = 0;
	d->stream_lines = 0;
	d->stream_shown = 0;
	tui_draw_date(d, out);
	buf_init(&head, sizeof(d->head));
	tui_draw_stamp(d, &head, 1, TUI_STYLE_MESSAGE);
	tui_draw_prefix(d, &head, TUI_STYLE_MESSAGE, TUI_DRAW_AGENT);
	snprintf(d->head, sizeof(d->head), "%.*s", (int)head.len,
	    head.data ? head.data : "");
	d->indent = tui_width_str(d->head, strlen(d->head));
	buf_free(&head);
}

/* Agent text, plain: printed as it comes. */
static void
tui_draw_stream_plain(struct tui_draw *d, struct buf *out, const char *text)
{
	const char *nl = d->crlf ? "\r\n" : "\n";

	if (d->stream.len) {
		buf_append(out, d->stream.data, d->stream.len);
		buf_reset(&d->stream);
	}
	tui_draw_sanitize(out, text, strlen(text), nl);
}

/* Agent text: plain prints it now; ansi prints the blocks it closes and
 * keeps the rest. */
void
tui_draw_stream(struct tui_draw *d, struct buf *out, const char *text)
{
	struct buf clean;
	const char *p, *e, *end;

	if (!d->streaming) {
		d->streaming = 1;
		buf_reset(&d->stream);
		if (d->ansi)
			tui_draw_stream_start(d, out);
		else
			tui_draw_prefix(d, &d->stream, TUI_STYLE_MESSAGE,
			    TUI_DRAW_AGENT);
	}
	if (!d->ansi) {
		tui_draw_stream_plain(d, out, text);
		return;
	}
	buf_init(&clean, strlen(text) * 3 + 1);
	tui_draw_sanitize(&clean, text, strlen(text), "\n");
	p = clean.data ? clean.data : "";
	end = p + clean.len;
	while (p < end) {
		e = memchr(p, '\n', (size_t)(end - p));
		tui_draw_stream_add(d, out, p, (size_t)((e ? e : end) - p));
		if (!e)
			break;
		buf_append(&d->raw, "\n", 1);
		tui_draw_stream_settle(d, out);
		p = e + 1;
	}
	buf_free(&clean);
	tui_draw_stream_render(d);
	tui_draw_stream_fit(d, out);
}

/* Close the stream: print what is kept, as closed blocks, and end it; an
 * answer that showed no line at all still shows its head. */
void
tui_draw_stream_end(struct tui_draw *d, struct buf *out)
{
	const char *nl = d->crlf ? "\r\n" : "\n";

	if (!d->streaming)
		return;
	d->streaming = 0;
	if (d->ansi) {
		tui_draw_stream_commit(d, out, d->raw.len);
		if (d->stream_lines == 0) {
			buf_reset(&d->stream);
			buf_append(&d->stream, d->head, strlen(d->head));
			buf_append(&d->stream, TUI_WRAP_MARK_STR, 1);
			tui_draw_emit(d, out, d->stream.data, d->stream.len);
		}
	} else {
		buf_append(out, nl, strlen(nl));
	}
	buf_reset(&d->stream);
	buf_reset(&d->raw);
}

/* Drop the stream: the answer it showed was cut short and is not kept.
 * ansi: its unclosed blocks go (rows already printed above stay); plain:
 * the printed text stays, its line is ended. */
void
tui_draw_stream_drop(struct tui_draw *d, struct buf *out)
{
	const char *nl = d->crlf ? "\r\n" : "\n";

	if (!d->streaming)
		return;
	d->streaming = 0;
	if (!d->ansi)
		buf_append(out, nl, strlen(nl));
	buf_reset(&d->stream);
	buf_reset(&d->raw);
}

/* The status line, one row in reverse video, cut to the width (its text
 * is cleaned when set: names and commands come from the room). */
static void
tui_draw_status_render(struct tui_draw *d, struct buf *row)
{
	struct buf clean;
	size_t n;
	int used = 0;

	buf_reset(row);
	buf_init(&clean, sizeof(d->status) * 3 + 1);
	tui_draw_sanitize(&clean, d->status, strlen(d->status), " ");
	n = clean.data ? tui_width_fit(clean.data, clean.len, d->cols - 1,
	    &used) : 0;
	buf_append(row, TUI_REVERSE, strlen(TUI_REVERSE));
	if (n)
		buf_append(row, clean.data, n);
	/* The whole row in reverse, so it reads as a bar. */
	for (; used < d->cols - 1; used++)
		buf_append(row, " ", 1);
	buf_append(row, TUI_RESET "\r\n", 6);
	buf_free(&clean);
}

/* The status row on out, drawn again only when its text or the width
 * changed since it was last drawn. */
static void
tui_draw_status_row(struct tui_draw *d, struct buf *out)
{
	if (!d->status[0])
		return;
	if (d->status_cols != d->cols || !d->status_row.len) {
		tui_draw_status_render(d, &d->status_row);
		d->status_cols = d->cols;
	}
	buf_append(out, d->status_row.data, d->status_row.len);
	d->bottom_rows++;
}

/* The unclosed blocks' rows the bottom region shows; printed once per
 * drawing and first row for every member, when d->stream is a drawing
 * still in the cache (made for d->cols). */
static void
tui_draw_bottom_stream(struct tui_draw *d, struct buf *out)
{
	struct tui_draw_cache *c = d->cache;
	size_t at = out->len;
	int first, i = d->cache_slot;
	char *copy;

	tui_draw_stream_rows(d, &first);
	if (!c || !d->cache_gen || c->slot[i].gen != d->cache_gen ||
	    d->stream_cols != d->cols) {
		d->bottom_rows = tui_draw_text_print(d, out, d->stream.data,
		    d->stream.len, first);
		return;
	}
	if (c->slot[i].shown && c->slot[i].shown_first == first &&
	    buf_append(out, c->slot[i].shown, c->slot[i].shown_len) == 0) {
		d->bottom_rows = c->slot[i].shown_rows;
		return;
	}
	d->bottom_rows = tui_draw_text_print(d, out, d->stream.data,
	    d->stream.len, first);
	if (out->len < at || !(copy = malloc(out->len - at + 1)))
		return;
	memcpy(copy, out->data + at, out->len - at);
	free(c->slot[i].shown);
	c->slot[i].shown = copy;
	c->slot[i].shown_len = out->len - at;
	c->slot[i].shown_first = first;
	c->slot[i].shown_rows = d->bottom_rows;
}

/* Draw the kept stream row and the prompt, cursor where the editor has it.
 * The prompt row never wraps: the line scrolls sideways in what is left
 * of the row after "ROOM> " (just "> " when the room's name leaves too
 * little). */
void
tui_draw_bottom(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e)
{
	char text[TUI_VIEW_BYTES];
	size_t from, to;
	int pw, avail, col;

	if (!d->ansi)
		return;
	d->bottom_rows = 0;
	if (d->streaming && d->stream.len)
		tui_draw_bottom_stream(d, out);
	tui_draw_status_row(d, out);
	pw = (int)(strlen(room) + strlen(TUI_PROMPT_SUFFIX));
	if (pw + 2 > d->cols)
		room = "";
	pw = (int)(strlen(room) + strlen(TUI_PROMPT_SUFFIX));
	avail = d->cols - pw > 1 ? d->cols - pw : 1;
	tui_editor_view(e, avail, &from, &to, &col);
	buf_printf(out, "\x1b[1m%s%s" TUI_RESET, room, TUI_PROMPT_SUFFIX);
	tui_editor_show(e, from, to, text, sizeof(text));
	buf_append(out, text, strlen(text));
	buf_printf(out, "\r\x1b[%dC", pw + col);
}

/* The line before *pos, walking the model back and then older (its
 * walk in *opos); 0 when both are done. */
static int
tui_draw_prev(const struct tui_draw *d, const struct tui_model *older,
    size_t *pos, size_t *opos, const char **line, size_t *len)
{
	if (*pos != (size_t)-1 &&
	    tui_model_prev(&d->model, pos, line, len))
		return 1;
	*pos = (size_t)-1;
	return older && tui_model_prev(older, opos, line, len);
}

/* See tui_draw.h. */
int
tui_draw_view_height(const struct tui_draw *d)
{
	int stream = 0, left;

	/* The unclosed blocks' rows in the bottom region, as a redraw
	 * shows them (tui_draw_stream_rows with none printed above). */
	if (d->streaming && d->stream.len) {
		stream = tui_draw_stream_total(d);
		if (stream > tui_draw_stream_max(d))
			stream = tui_draw_stream_max(d);
	}
	left = d->rows - 1 - (d->status[0] ? 1 : 0) - stream;
	return left > 0 ? left : 0;
}

/* See tui_draw.h.  Walks back from the newest line: the lowest `offset`
 * rows are passed over (a line among them may show its first rows at the
 * bottom), then rows are taken until the view is full (the line at the
 * top may show only its last rows). */
void
tui_draw_view(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e, const struct tui_model *older,
    size_t offset)
{
	struct {
		const char *line;
		size_t len;
		int from, count;	/* its rows shown */
	} shown[TUI_MAX_REDRAW];
	size_t pos = 0, opos = 0, len;
	const char *line;
	int n = 0, left, rows;

	if (!d->ansi)
		return;
	if (d->streaming && d->stream.len) {
		/* The screen is cleared: none of the unclosed blocks' rows
		 * stays above; the bottom region shows its last ones, and the
		 * next delta prints those before them above it. */
		tui_draw_stream_render(d);
		d->stream_shown = 0;
	}
	left = tui_draw_view_height(d);
	while (left > 0 && n < TUI_MAX_REDRAW &&
	    tui_draw_prev(d, older, &pos, &opos, &line, &len)) {
		rows = tui_wrap_rows(line, len, d->cols);
		if (offset >= (size_t)rows) {
			offset -= (size_t)rows;
			continue;
		}
		rows -= (int)offset;	/* its rows above the view's bottom */
		offset = 0;
		shown[n].line = line;
		shown[n].len = len;
		shown[n].count = rows < left ? rows : left;
		shown[n].from = rows - shown[n].count;
		left -= shown[n++].count;
	}
	buf_append(out, TUI_CLEAR, strlen(TUI_CLEAR));
	while (n-- > 0)
		tui_view_emit_rows(out, shown[n].line, shown[n].len, d->cols,
		    shown[n].from, shown[n].count);
	d->bottom_rows = 0;
	tui_draw_bottom(d, out, room, e);
}

/* See tui_draw.h. */
void
tui_draw_redraw(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e, int cols, int rows)
{
	d->cols = cols > 0 ? cols : d->cols;
	d->rows = rows > 0 ? rows : d->rows;
	tui_draw_view(d, out, room, e, NULL, 0);
}

/* The line of the model that starts at at, without its tag, in *line,
 * *len. */
static void
tui_draw_model_line(const struct tui_draw *d, size_t at, const char **line,
    size_t *len)
{
	const char *start = d->model.lines.data + at;
	const char *nl = memchr(start, '\n', d->model.lines.len - at);
	const char *sep = memchr(start, '\x1e', (size_t)(nl - start));

	*line = sep ? sep + 1 : start;
	*len = (size_t)(nl - *line);
}

/* Print the rows of the model's newest n lines, oldest first (ansi). */
static void
tui_draw_newest(struct tui_draw *d, struct buf *out, size_t n)
{
	size_t pos = 0, len, count = 0, i;
	const char *line, **lines = n ? calloc(n, sizeof(*lines)) : NULL;
	size_t *lens = n ? calloc(n, sizeof(*lens)) : NULL;

	while ((!n || (lines && lens)) && count < n &&
	    tui_model_prev(&d->model, &pos, &line, &len)) {
		lines[count] = line;
		lens[count++] = len;
	}
	for (i = count; i-- > 0;)
		tui_draw_rows(d, out, lines[i], lens[i], 0);
	free(lines);
	free(lens);
}

/* See tui_draw.h.  The rows from the old line's first down are erased
 * and printed again: a new line of fewer rows leaves the bottom region
 * higher, one of more scrolls the screen as any new line does, so no row
 * reaches the terminal's own scrollback twice. */
int
tui_draw_replace(struct tui_draw *d, struct buf *out, size_t at,
    size_t after, enum tui_style style, const char *text)
{
	struct buf clean, row;
	const char *old;
	size_t old_len, below;
	int col, up, r;

	if (!d->ansi)
		return 0;
	tui_draw_model_line(d, at, &old, &old_len);
	up = tui_wrap_rows(old, old_len, d->cols);
	below = tui_view_newest_rows(&d->model, d->cols, after);
	buf_init(&clean, strlen(text) * 3 + 1);
	buf_init(&row, strlen(text) * 3 * TUI_DRAW_TAB + 256);
	tui_draw_sanitize(&clean, text, strlen(text), " ");
	col = tui_draw_line_head(d, &row, 1, style, NULL);
	tui_draw_expand(&row, clean.data ? clean.data : "", clean.len, col,
	    NULL);
	r = row.data ? tui_model_replace(&d->model, at, row.data, row.len) :
	    -1;
	/* On the screen still: not scrolled off above, nor under rows of
	 * the agent's unfinished line printed above the bottom region. */
	tui_draw_clear_bottom(d, out);
	if (r == 0 && !(d->streaming && d->stream_shown) &&
	    below + (size_t)up <= (size_t)tui_draw_view_height(d)) {
		buf_printf(out, "\x1b[%dA\r\x1b[J", up + (int)below);
		tui_draw_rows(d, out, row.data, row.len, 0);
		tui_draw_newest(d, out, after);
	}
	buf_free(&row);
	buf_free(&clean);
	return r < 0 ? -1 : 0;
}
