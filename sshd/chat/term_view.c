/*
 * term_view.c: a member's view of the shared terminal (term_view.h).
 *
 * Model: the pty's size, its rows as runs (agent/term/term_encode.h gives the
 * wire form: [x, w, attrs, fg, bg, text]), the cursor, the members'
 * names, and the chat's news for the status line (cleaned as the names
 * are: the chat's events carry other people's text).  Every field from the wire is checked before it is kept: sizes
 * and columns within PROTO_TERM_MAX_*, widths 1 or 2, colours -1..255 or
 * RGB, text valid UTF-8 without control characters; a bad run is
 * dropped, a bad event is refused whole.
 *
 * Drawing: each run is placed at its column with an absolute cursor move,
 * so a terminal that measures a character differently from the agent's
 * emulator misplaces at most the rest of that run.  Text is clipped at
 * this window's right edge (a wide character that does not fit is left
 * out); rows below the pty's and the columns right of it are cleared.
 */
#include "term_view.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "protocol.h"
#include "tui_width.h"
#include "utf8.h"

#define TV_RESET	"\x1b[0m"
#define TV_MOUSE_OFF	"\x1b[?1006l\x1b[?1000l"
#define TV_STATUS_HELP	"Ctrl-] back to the chat"
#define TV_ATTR_BOLD	1	/* agent/term/term_encode.h's bits */
#define TV_ATTR_UNDER	2
#define TV_ATTR_ITALIC	4
#define TV_ATTR_BLINK	8
#define TV_ATTR_REVERSE	16
#define TV_ATTR_STRIKE	32
#define TV_COLOR_RGB	0x1000000

struct tv_run {
	int x, w;		/* first column, columns per character */
	int attrs, fg, bg;	/* TV_ATTR_*, colours as on the wire */
	char *text;		/* checked UTF-8, NUL-terminated */
	size_t len;
};

struct tv_row {
	struct tv_run *runs;
	int n;
};

struct term_view {
	int color;			/* colours allowed */
	int cols, rows;			/* the pty's, 0 before a screen */
	struct tv_row row[PROTO_TERM_MAX_ROWS];
	int cx, cy, cvisible;		/* the cursor */
	char names[TERM_VIEW_MAX_NAMES];	/* who is in it, cleaned */
	char news[TERM_VIEW_MAX_NEWS];	/* the chat's news, cleaned, one row */
	char carry[4];			/* input: an unfinished character */
	size_t ncarry;
};

/* -------------------------------------------------------------- model -- */

static void
tv_row_clear(struct tv_row *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->runs[i].text);
	free(r->runs);
	r->runs = NULL;
	r->n = 0;
}

struct term_view *
term_view_new(int color)
{
	struct term_view *tv = calloc(1, sizeof(*tv));

	if (tv)
		tv->color = color;
	return tv;
}

void
term_view_free(struct term_view *tv)
{
	if (!tv)
		return;
	for (int y = 0; y < PROTO_TERM_MAX_ROWS; y++)
		tv_row_clear(&tv->row[y]);
	free(tv);
}

void
term_view_area(int cols, int rows, int *tcols, int *trows)
{
	*tcols = cols > 0 ? cols : 80;
	*trows = rows > 1 ? rows - 1 : 1;
}

/* 1 when text is valid UTF-8 with no control character. */
static int
tv_text_ok(const char *s, size_t n)
{
	if (!utf8_valid(s, n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];

		if (b < 0x20 || b == 0x7f)
			return 0;
		/* C1 (U+0080-U+009F) is 0xc2 0x80-0x9f in UTF-8. */
		if (b == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] < 0xa0)
			return 0;
	}
	return 1;
}

/* 1 when c is a colour as the wire carries it. */
static int
tv_color_ok(long long c)
{
	return (c >= -1 && c <= 255) ||
	    (c >= TV_COLOR_RGB && c <= (TV_COLOR_RGB | 0xffffff));
}

/* One run from the wire into r.  0, or -EINVAL. */
static int
tv_run_parse(json_object *a, int cols, struct tv_run *r)
{
	json_object *t;
	long long v[5];

	if (!json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) != 6)
		return -EINVAL;
	for (int i = 0; i < 5; i++) {
		json_object *o = json_object_array_get_idx(a, (size_t)i);

		if (!json_object_is_type(o, json_type_int))
			return -EINVAL;
		v[i] = json_object_get_int64(o);
	}
	t = json_object_array_get_idx(a, 5);
	if (v[0] < 0 || v[0] >= cols || (v[1] != 1 && v[1] != 2) ||
	    v[2] < 0 || v[2] > 63 || !tv_color_ok(v[3]) ||
	    !tv_color_ok(v[4]) || !json_object_is_type(t, json_type_string) ||
	    !tv_text_ok(json_object_get_string(t),
	    (size_t)json_object_get_string_len(t)))
		return -EINVAL;
	r->x = (int)v[0];
	r->w = (int)v[1];
	r->attrs = (int)v[2];
	r->fg = (int)v[3];
	r->bg = (int)v[4];
	r->len = (size_t)json_object_get_string_len(t);
	r->text = strndup(json_object_get_string(t), r->len);
	return r->text ? 0 : -ENOMEM;
}

/* Replace row y with the runs of line ([y, [runs]]).  The row's index, or
 * -EINVAL. */
static int
tv_line_parse(struct term_view *tv, json_object *line)
{
	json_object *yo, *runs;
	struct tv_row nr = { 0 };
	long long y;
	size_t n;

	if (!json_object_is_type(line, json_type_array) ||
	    json_object_array_length(line) != 2)
		return -EINVAL;
	yo = json_object_array_get_idx(line, 0);
	runs = json_object_array_get_idx(line, 1);
	y = json_object_get_int64(yo);
	if (!json_object_is_type(yo, json_type_int) || y < 0 ||
	    y >= tv->rows || !json_object_is_type(runs, json_type_array) ||
	    (n = json_object_array_length(runs)) > TERM_VIEW_MAX_RUNS)
		return -EINVAL;
	nr.runs = n ? calloc(n, sizeof(*nr.runs)) : NULL;
	if (n && !nr.runs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (tv_run_parse(json_object_array_get_idx(runs, i), tv->cols,
		    &nr.runs[nr.n]) == 0)
			nr.n++;
	tv_row_clear(&tv->row[y]);
	tv->row[y] = nr;
	return (int)y;
}

/* The members' names, cleaned, as "a, b". */
static void
tv_names(struct term_view *tv, json_object *arr)
{
	size_t used = 0;

	tv->names[0] = '\0';
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *o = json_object_array_get_idx(arr, i);
		char *name;

		if (!json_object_is_type(o, json_type_string) ||
		    !(name = utf8_clean_str(json_object_get_string(o))))
			continue;
		for (char *p = name; *p; p++)
			if (*p == '\t' || *p == '\n')
				*p = ' ';	/* kept by utf8_clean */
		if (used < sizeof(tv->names))
			used += (size_t)snprintf(tv->names + used,
			    sizeof(tv->names) - used, "%s%s", used ? ", " : "",
			    name);
		free(name);
	}
}

/* The cursor from [x, y, visible]; one outside the screen is hidden. */
static void
tv_cursor(struct term_view *tv, json_object *cur)
{
	long long x = json_object_get_int64(json_object_array_get_idx(cur, 0));
	long long y = json_object_get_int64(json_object_array_get_idx(cur, 1));
	int inside = x >= 0 && x < tv->cols && y >= 0 && y < tv->rows;

	tv->cx = inside ? (int)x : 0;
	tv->cy = inside ? (int)y : 0;
	tv->cvisible = inside && json_object_get_int(
	    json_object_array_get_idx(cur, 2)) != 0;
}

/* Size, cursor and names from ev.  1 when the screen must be drawn
 * whole, 0 when not, -EINVAL when they are malformed. */
static int
tv_header(struct term_view *tv, json_object *ev)
{
	long long cols = json_get_int(ev, "cols", 0);
	long long rows = json_get_int(ev, "rows", 0);
	json_object *cur = NULL, *names = NULL;
	int whole = json_get_bool(ev, "full", 0);

	if (cols < 1 || cols > PROTO_TERM_MAX_COLS || rows < 1 ||
	    rows > PROTO_TERM_MAX_ROWS)
		return -EINVAL;
	if (cols != tv->cols || rows != tv->rows)
		whole = 1;
	if (whole)
		for (int y = 0; y < PROTO_TERM_MAX_ROWS; y++)
			tv_row_clear(&tv->row[y]);
	tv->cols = (int)cols;
	tv->rows = (int)rows;
	if (json_object_object_get_ex(ev, "cursor", &cur) &&
	    json_object_is_type(cur, json_type_array) &&
	    json_object_array_length(cur) == 3)
		tv_cursor(tv, cur);
	if (json_object_object_get_ex(ev, "members", &names) &&
	    json_object_is_type(names, json_type_array))
		tv_names(tv, names);
	return whole;
}

/* ------------------------------------------------------------ drawing -- */

/* Append the C string s. */
static void
tv_put(struct buf *out, const char *s)
{
	buf_append(out, s, strlen(s));
}

/* The code point at s (valid UTF-8, n > 0); its length in *len. */
static uint32_t
tv_cp(const char *s, size_t n, size_t *len)
{
	const unsigned char *u = (const unsigned char *)s;

	if (u[0] < 0x80 || n < 2) {
		*len = 1;
		return u[0];
	}
	if (u[0] < 0xe0) {
		*len = 2;
		return ((uint32_t)(u[0] & 0x1f) << 6) | (u[1] & 0x3f);
	}
	if (u[0] < 0xf0 && n >= 3) {
		*len = 3;
		return ((uint32_t)(u[0] & 0x0f) << 12) |
		    ((uint32_t)(u[1] & 0x3f) << 6) | (u[2] & 0x3f);
	}
	*len = n >= 4 ? 4 : n;
	return n >= 4 ? ((uint32_t)(u[0] & 0x07) << 18) |
	    ((uint32_t)(u[1] & 0x3f) << 12) | ((uint32_t)(u[2] & 0x3f) << 6) |
	    (u[3] & 0x3f) : '?';
}

/* SGR parameters of one colour (fg: 30/38 family, else 40/48). */
static void
tv_sgr_color(struct buf *out, int c, int fg)
{
	if (c < 0)
		return;
	if (c < 8)
		buf_printf(out, ";%d", (fg ? 30 : 40) + c);
	else if (c < 16)
		buf_printf(out, ";%d", (fg ? 90 : 100) + c - 8);
	else if (c < 256)
		buf_printf(out, ";%d;5;%d", fg ? 38 : 48, c);
	else
		buf_printf(out, ";%d;2;%d;%d;%d", fg ? 38 : 48,
		    (c >> 16) & 0xff, (c >> 8) & 0xff, c & 0xff);
}

/* The SGR sequence for a run's look. */
static void
tv_sgr(const struct term_view *tv, struct buf *out, const struct tv_run *r)
{
	static const struct { int bit, code; } attrs[] = {
		{ TV_ATTR_BOLD, 1 }, { TV_ATTR_ITALIC, 3 }, { TV_ATTR_UNDER, 4 },
		{ TV_ATTR_BLINK, 5 }, { TV_ATTR_REVERSE, 7 },
		{ TV_ATTR_STRIKE, 9 },
	};

	buf_append(out, "\x1b[0", 3);
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (r->attrs & attrs[i].bit)
			buf_printf(out, ";%d", attrs[i].code);
	if (tv->color) {
		tv_sgr_color(out, r->fg, 1);
		tv_sgr_color(out, r->bg, 0);
	}
	buf_append(out, "m", 1);
}

/* The run's text as far as it fits left of column cols: whole cells (a
 * character with the zero-width ones after it), each r->w columns. */
static void
tv_draw_run(const struct term_view *tv, struct buf *out,
    const struct tv_run *r, int cols)
{
	size_t i = 0, len, start;
	int x = r->x;

	if (x >= cols)
		return;
	buf_printf(out, "\x1b[%dG", x + 1);
	tv_sgr(tv, out, r);
	while (i < r->len && x + r->w <= cols) {
		start = i;
		tv_cp(r->text + i, r->len - i, &len);
		i += len;
		while (i < r->len && tui_width_cp(tv_cp(r->text + i,
		    r->len - i, &len)) == 0)
			i += len;	/* combining marks stay with their base */
		buf_append(out, r->text + start, i - start);
		x += r->w;
	}
}

/* Row y of the pty on screen row y + 1, the rest of that row cleared. */
static void
tv_draw_row(const struct term_view *tv, struct buf *out, int y, int cols)
{
	const struct tv_row *row = &tv->row[y];

	buf_printf(out, "\x1b[%d;1H" TV_RESET "\x1b[2K", y + 1);
	for (int i = 0; i < row->n; i++)
		tv_draw_run(tv, out, &row->runs[i], cols < tv->cols ? cols :
		    tv->cols);
	tv_put(out, TV_RESET);
}

/* The status line on the window's last row, in reverse video, padded to
 * the full width. */
static void
tv_draw_status(const struct term_view *tv, struct buf *out, int cols,
    int rows, const char *room)
{
	char text[TERM_VIEW_MAX_NAMES + TERM_VIEW_MAX_NEWS + 256];
	int used = 0, n;
	size_t fit;

	/* The news first: at 80 columns the names are the part to lose. */
	n = snprintf(text, sizeof(text), " " TV_STATUS_HELP " | %s%s",
	    tv->news, tv->news[0] ? " | " : "");
	if (tv->cols)
		snprintf(text + n, sizeof(text) - (size_t)n, "%s's terminal "
		    "%dx%d: %s ", room, tv->cols, tv->rows,
		    tv->names[0] ? tv->names : "you");
	else
		snprintf(text + n, sizeof(text) - (size_t)n, "%s's terminal: "
		    "starting... ", room);
	fit = tui_width_fit(text, strlen(text), cols, &used);
	buf_printf(out, "\x1b[%d;1H" TV_RESET "\x1b[7m", rows);
	buf_append(out, text, fit);
	for (; used < cols; used++)
		buf_append(out, " ", 1);
	tv_put(out, TV_RESET);
}

/* The cursor where the pty has it (hidden when the shell hid it or it is
 * outside this window). */
static void
tv_draw_cursor(const struct term_view *tv, struct buf *out, int cols,
    int rows)
{
	int shown = tv->cvisible && tv->cols && tv->cx < cols &&
	    tv->cy < rows - 1;

	if (tv->cols)
		buf_printf(out, "\x1b[%d;%dH", tv->cy + 1, tv->cx + 1);
	tv_put(out, shown ? "\x1b[?25h" : "\x1b[?25l");
}

void
term_view_redraw(struct term_view *tv, struct buf *out, int cols, int rows,
    const char *room)
{
	int trows = tv->rows < rows - 1 ? tv->rows : rows - 1;

	/* The chat's mouse reports off: in the shared terminal the mouse
	 * is the member's terminal's again (selecting text). */
	tv_put(out, TV_MOUSE_OFF TV_RESET "\x1b[H\x1b[2J");
	for (int y = 0; y < trows; y++)
		tv_draw_row(tv, out, y, cols);
	tv_draw_status(tv, out, cols, rows, room);
	tv_draw_cursor(tv, out, cols, rows);
}

void
term_view_news(struct term_view *tv, const char *news, struct buf *out,
    int cols, int rows, const char *room)
{
	char *clean = utf8_clean_str(news ? news : "");
	size_t n;

	if (!clean)
		return;		/* the old news stays: out of memory */
	for (char *p = clean; *p; p++)
		if (*p == '\t' || *p == '\n')
			*p = ' ';	/* one row; kept by utf8_clean */
	n = strlen(clean);
	if (n >= sizeof(tv->news))
		n = utf8_complete(clean, sizeof(tv->news) - 1);
	memcpy(tv->news, clean, n);
	tv->news[n] = '\0';
	free(clean);
	tv_draw_status(tv, out, cols, rows, room);
	tv_draw_cursor(tv, out, cols, rows);
}

int
term_view_apply(struct term_view *tv, json_object *ev, struct buf *out,
    int cols, int rows, const char *room)
{
	json_object *lines = NULL;
	char *names = strdup(tv->names);
	int whole = tv_header(tv, ev), y;

	if (whole < 0 || !json_object_object_get_ex(ev, "lines", &lines) ||
	    !json_object_is_type(lines, json_type_array)) {
		free(names);
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(lines); i++) {
		y = tv_line_parse(tv, json_object_array_get_idx(lines, i));
		if (!whole && y >= 0 && y < rows - 1)
			tv_draw_row(tv, out, y, cols);
	}
	if (whole)
		term_view_redraw(tv, out, cols, rows, room);
	else if (!names || strcmp(names, tv->names) != 0)
		tv_draw_status(tv, out, cols, rows, room);
	if (!whole)
		tv_draw_cursor(tv, out, cols, rows);
	free(names);
	return 0;
}

/* Append p[0..n) to out repaired, without NULs. */
static void
tv_input_clean(struct buf *out, const char *p, size_t n)
{
	const char *nul;

	while (n) {
		nul = memchr(p, '\0', n);
		utf8_repair(out, p, nul ? (size_t)(nul - p) : n);
		if (!nul)
			break;
		n -= (size_t)(nul - p) + 1;
		p = nul + 1;
	}
}

size_t
term_view_input(struct term_view *tv, const char *p, size_t n,
    struct buf *out, int *leave)
{
	const char *esc = memchr(p, TERM_VIEW_ESCAPE, n);
	size_t k = esc ? (size_t)(esc - p) : n, take, m, done;
	char tmp[TERM_VIEW_INPUT_CHUNK + sizeof(tv->carry)];

	take = k < TERM_VIEW_INPUT_CHUNK ? k : TERM_VIEW_INPUT_CHUNK;
	*leave = esc && take == k;
	memcpy(tmp, tv->carry, tv->ncarry);
	memcpy(tmp + tv->ncarry, p, take);
	m = tv->ncarry + take;
	tv->ncarry = 0;
	done = *leave ? m : utf8_complete(tmp, m);
	if (m - done < sizeof(tv->carry)) {
		memcpy(tv->carry, tmp + done, m - done);
		tv->ncarry = m - done;
	} else {
		done = m;
	}
	tv_input_clean(out, tmp, done);
	return take + (*leave ? 1 : 0);
}

void
term_view_leave(struct buf *out)
{
	tv_put(out, TV_RESET "\x1b[?25h\x1b[H\x1b[2J");
}
