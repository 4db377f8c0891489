/*
 * tui_markdown.c: Markdown for chat messages (tui_markdown.h).  Called by
 * tui_draw.c for each message, and for the blocks of the agent's answer
 * not yet closed on each streamed delta.
 *
 * libcmark-gfm parses; this file walks the tree with cmark's iterator (no
 * recursion, so a hostile nesting of quotes or lists costs no stack) and
 * writes lines.  Containers (quotes, list items) are a stack of prefixes:
 * each line starts with every open container's prefix, its first form
 * ("• ", "3. ") on the container's first line, its later form (spaces as
 * wide) after.  Past MD_MAX_DEPTH containers no further prefix is added.
 * Inline attributes are counts (emphasis in emphasis stays italic until
 * the outer one closes), written as one SGR from a reset each time they
 * change, so a wrapped row can start over from the last reset
 * (tui_wrap.h).
 *
 * Workload and bounds: tui_draw.c parses a whole message once, and the
 * unclosed blocks of a streaming answer (at most TUI_DRAW_MAX_BLOCK bytes)
 * on each delta; cmark parses in linear time.  With a cache (the
 * process's), a streamed text is parsed once for every member: a tree
 * kept there is only walked, never changed, and is freed only when its
 * slot is taken.  A table's columns are measured in a first pass and
 * drawn in a second, so no cell is kept.
 */
#include "tui_markdown.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmark-gfm.h>
#include <cmark-gfm-core-extensions.h>

#include "tui_width.h"
#include "tui_wrap.h"

#define MD_MAX_DEPTH	16	/* containers drawn with a prefix */
#define MD_BOX_BYTES	48	/* a prefix's bytes */
#define MD_MAX_COLS	32	/* table columns drawn aligned, at most */
#define MD_CODE_COLOR	"36"	/* cyan */
#define MD_INDENT	"    "	/* a code block's indent */
#define MD_RULE		"────────────────────────"
#define MD_BULLET	"• "
#define MD_QUOTE	"\x1b[0;2m│\x1b[0m "
#define MD_FENCE_LABEL	"──"
#define MD_CELL_SEP	" │ "
#define MD_RESET	"\x1b[0m"

/* A container the lines are inside. */
struct md_box {
	char first[MD_BOX_BYTES];	/* its prefix on its first line */
	char rest[MD_BOX_BYTES];	/* on the lines after */
	int used;			/* its first line was written */
};

/* One rendering. */
struct md_r {
	struct buf *out;	/* the lines */
	struct buf *cur;	/* where text goes: out, or a table cell */
	const char *src;	/* the source, for blank lines between blocks */
	size_t n;
	int cols;		/* the lines' columns */
	int flags;		/* TUI_MD_* */
	int lines;		/* lines written */
	int open;		/* a line is started and not ended */
	int sgr;		/* the open line holds an SGR */
	int cell;		/* writing a table cell: breaks are spaces */
	struct md_box box[MD_MAX_DEPTH];	/* open containers */
	int depth;		/* of them in box[] */
	int deep;		/* open past MD_MAX_DEPTH, without a prefix */
	int num[MD_MAX_DEPTH];	/* the next number of each open list */
	int lists;		/* open lists (those past the depth count
				 * too, without numbers) */
	int bold, italic, under, strike, dim, code;	/* open inline
							 * attributes */
};

/* A parser with GitHub's extensions: tables, strikethrough, autolinks.
 * Raw HTML is kept as text in the tree (never interpreted here). */
static cmark_parser *
md_parser(void)
{
	static const char *const ext[] = { "table", "strikethrough",
	    "autolink" };
	cmark_parser *p;

	cmark_gfm_core_extensions_ensure_registered();
	if (!(p = cmark_parser_new(CMARK_OPT_DEFAULT)))
		return NULL;
	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		cmark_syntax_extension *e = cmark_find_syntax_extension(ext[i]);

		if (e)
			cmark_parser_attach_syntax_extension(p, e);
	}
	return p;
}

/* The tree of s[0..n), or NULL (out of memory). */
static cmark_node *
md_parse(const char *s, size_t n)
{
	cmark_parser *p = md_parser();
	cmark_node *doc;

	if (!p)
		return NULL;
	cmark_parser_feed(p, s, n);
	doc = cmark_parser_finish(p);
	cmark_parser_free(p);
	return doc;
}

/* See tui_markdown.h.  Eight bytes at a time (a text is hashed on every
 * member's delta, so byte-wise FNV would cost as much as a small parse),
 * then the tail; mixed as in splitmix64. */
unsigned long long
tui_md_hash(const char *s, size_t n)
{
	unsigned long long h = 0x9e3779b97f4a7c15ULL ^ n, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
		h ^= h >> 31;
	}
	for (w = 0; i < n; i++)
		w = (w << 8) | (unsigned char)s[i];
	h = (h ^ w) * 0x94d049bb133111ebULL;
	return h ^ (h >> 29);
}

/* See tui_markdown.h. */
void
tui_md_cache_free(struct tui_md_cache *c)
{
	for (int i = 0; i < TUI_MD_CACHE_SLOTS; i++) {
		free(c->slot[i].text);
		if (c->slot[i].doc)
			cmark_node_free(c->slot[i].doc);
	}
	memset(c, 0, sizeof(*c));
}

/* Keep doc as the tree of s[0..n) in place of the oldest slot; a copy
 * that cannot be made is simply not kept (*owned stays 1: the caller
 * frees doc). */
static void
md_cache_put(struct tui_md_cache *c, unsigned long long h, const char *s,
    size_t n, cmark_node *doc, int *owned)
{
	unsigned i = c->next;
	char *copy = malloc(n ? n : 1);

	if (!copy)
		return;
	memcpy(copy, s, n);
	free(c->slot[i].text);
	if (c->slot[i].doc)
		cmark_node_free(c->slot[i].doc);
	c->slot[i].hash = h;
	c->slot[i].text = copy;
	c->slot[i].len = n;
	c->slot[i].doc = doc;
	c->next = (i + 1) % TUI_MD_CACHE_SLOTS;
	*owned = 0;
}

/* The tree of s[0..n): the cache's when it holds those bytes (*owned 0:
 * not the caller's to free), else parsed here and kept there when it
 * fits (*owned 0 too), else the caller's (*owned 1).  NULL: out of
 * memory. */
static cmark_node *
md_tree(struct tui_md_cache *c, const char *s, size_t n, int *owned)
{
	unsigned long long h;
	cmark_node *doc;

	*owned = 1;
	if (!c || n > TUI_MD_CACHE_TEXT)
		return md_parse(s, n);
	h = tui_md_hash(s, n);
	for (int i = 0; i < TUI_MD_CACHE_SLOTS; i++) {
		if (c->slot[i].text && c->slot[i].hash == h &&
		    c->slot[i].len == n && memcmp(c->slot[i].text, s, n) == 0) {
			c->hits++;
			*owned = 0;
			return c->slot[i].doc;
		}
	}
	c->parses++;
	if ((doc = md_parse(s, n)))
		md_cache_put(c, h, s, n, doc, owned);
	return doc;
}

/* Give back a tree md_tree gave. */
static void
md_tree_done(cmark_node *doc, int owned)
{
	if (doc && owned)
		cmark_node_free(doc);
}

/* Append s[0..n) as text: control characters decoded from entities
 * (C0 but tab, DEL, C1) and the wrap mark are left out. */
static void
md_put(struct buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t from = 0;

	for (size_t i = 0; i < n; i++) {
		int c1 = u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 &&
		    u[i + 1] < 0xa0;

		if ((u[i] >= 0x20 || u[i] == '\t') && u[i] != 0x7f && !c1)
			continue;
		buf_append(b, s + from, i - from);
		i += c1;
		from = i + 1;
	}
	buf_append(b, s + from, n - from);
}

static void
md_puts(struct buf *b, const char *s)
{
	if (s)
		md_put(b, s, strlen(s));
}

/* The open attributes as one SGR from a reset. */
static void
md_sgr(struct md_r *r)
{
	buf_append(r->cur, "\x1b[0", 3);
	if (r->bold)
		buf_append(r->cur, ";1", 2);
	if (r->dim)
		buf_append(r->cur, ";2", 2);
	if (r->italic)
		buf_append(r->cur, ";3", 2);
	if (r->under)
		buf_append(r->cur, ";4", 2);
	if (r->strike)
		buf_append(r->cur, ";9", 2);
	if (r->code && (r->flags & TUI_MD_COLOR))
		buf_append(r->cur, ";" MD_CODE_COLOR, strlen(MD_CODE_COLOR) + 1);
	buf_append(r->cur, "m", 1);
	r->sgr = 1;
}

/* Start a line: every open container's prefix (its first form once). */
static void
md_line_open(struct md_r *r)
{
	for (int i = 0; i < r->depth; i++) {
		const char *p = r->box[i].used ? r->box[i].rest : r->box[i].first;

		buf_append(r->out, p, strlen(p));
		r->box[i].used = 1;
	}
	r->open = 1;
	r->sgr = 0;
}

/* End the open line. */
static void
md_line_close(struct md_r *r)
{
	if (!r->open)
		return;
	if (r->sgr)
		buf_append(r->out, MD_RESET, strlen(MD_RESET));
	buf_append(r->out, "\n", 1);
	r->open = 0;
	r->lines++;
}

/* Whether source line no (from 1) is blank. */
static int
md_blank_line(const struct md_r *r, int no)
{
	const char *p = r->src, *end = r->src + r->n, *e;

	if (no < 1)
		return 0;
	for (int i = 1; i < no && p < end; i++) {
		if (!(e = memchr(p, '\n', (size_t)(end - p))))
			return 0;
		p = e + 1;
	}
	if (p >= end)
		return 0;
	for (; p < end && *p != '\n'; p++)
		if (*p != ' ' && *p != '\t')
			return 0;
	return 1;
}

/* A blank line before block node when the text had one: between it and
 * the block before it, or (TUI_MD_GAP) before the text's first block. */
static void
md_gap(struct md_r *r, cmark_node *node)
{
	cmark_node *prev = cmark_node_previous(node);
	int gap;

	if (prev)
		gap = md_blank_line(r, cmark_node_get_start_line(node) - 1);
	else
		gap = cmark_node_get_type(cmark_node_parent(node)) ==
		    CMARK_NODE_DOCUMENT && (r->flags & TUI_MD_GAP) &&
		    r->lines == 0;
	if (!gap)
		return;
	for (int i = 0; i < r->depth; i++)
		if (strcmp(r->box[i].rest, MD_QUOTE) == 0)
			buf_append(r->out, MD_QUOTE, strlen(MD_QUOTE));
	buf_append(r->out, "\n", 1);
	r->lines++;
}

/* Open a container with its two prefixes. */
static void
md_box_push(struct md_r *r, const char *first, const char *rest)
{
	if (r->depth >= MD_MAX_DEPTH) {
		r->deep++;
		return;
	}
	snprintf(r->box[r->depth].first, MD_BOX_BYTES, "%s", first);
	snprintf(r->box[r->depth].rest, MD_BOX_BYTES, "%s", rest);
	r->box[r->depth++].used = 0;
}

/* Close the innermost container; an item that wrote nothing still shows
 * its bullet. */
static void
md_box_pop(struct md_r *r)
{
	if (r->deep) {
		r->deep--;
		return;
	}
	if (r->depth && !r->box[r->depth - 1].used) {
		md_line_open(r);
		md_line_close(r);
	}
	if (r->depth)
		r->depth--;
}

/* A list item's prefixes: a bullet, or its list's next number. */
static void
md_item(struct md_r *r, cmark_node *item)
{
	cmark_node *list = cmark_node_parent(item);
	char first[MD_BOX_BYTES], rest[MD_BOX_BYTES];
	int w;

	if (cmark_node_get_list_type(list) == CMARK_ORDERED_LIST &&
	    r->lists <= MD_MAX_DEPTH && r->lists > 0) {
		snprintf(first, sizeof(first), "%d%c ", r->num[r->lists - 1]++,
		    cmark_node_get_list_delim(list) == CMARK_PAREN_DELIM ?
		    ')' : '.');
	} else {
		snprintf(first, sizeof(first), "%s", MD_BULLET);
	}
	w = tui_width_str(first, strlen(first));
	snprintf(rest, sizeof(rest), "%*s", w, "");
	md_box_push(r, first, rest);
}

/* Whether the visible text of a link is its url (an autolink, or
 * "www.x.org" made "http://www.x.org"). */
static int
md_link_is_url(cmark_node *link, const char *url)
{
	cmark_node *c = cmark_node_first_child(link);
	const char *text;
	size_t tl, ul = strlen(url);

	if (!c || cmark_node_next(c) || cmark_node_get_type(c) !=
	    CMARK_NODE_TEXT || !(text = cmark_node_get_literal(c)))
		return !c;
	tl = strlen(text);
	if (strcmp(text, url) == 0)
		return 1;
	return ul > tl && strcmp(url + ul - tl, text) == 0 &&
	    (strncmp(url, "http://", ul - tl) == 0 ||
	    strncmp(url, "https://", ul - tl) == 0 ||
	    strncmp(url, "mailto:", ul - tl) == 0);
}

/* The " (url)" after a link's or an image's text, dim. */
static void
md_url(struct md_r *r, const char *url, int image)
{
	if (!url || !*url)
		return;
	buf_append(r->cur, image ? "] " : " ", image ? 2 : 1);
	r->dim++;
	md_sgr(r);
	buf_append(r->cur, "(", 1);
	md_puts(r->cur, url);
	buf_append(r->cur, ")", 1);
	r->dim--;
	md_sgr(r);
}

/* A line break inside inline text: a space in a table cell, else a new
 * line under the text. */
static void
md_break(struct md_r *r)
{
	if (r->cell) {
		buf_append(r->cur, " ", 1);
		return;
	}
	md_line_close(r);
	md_line_open(r);
	buf_append(r->out, TUI_WRAP_MARK_STR, 1);
	md_sgr(r);
}

/* An inline code span: cyan, or without colours in its backquotes. */
static void
md_code_span(struct md_r *r, const char *text)
{
	int color = r->flags & TUI_MD_COLOR;

	r->code++;
	md_sgr(r);
	if (!color)
		buf_append(r->cur, "`", 1);
	md_puts(r->cur, text);
	if (!color)
		buf_append(r->cur, "`", 1);
	r->code--;
	md_sgr(r);
}

/* The attribute count an emphasis-like node changes, or NULL. */
static int *
md_attr(struct md_r *r, cmark_node *node)
{
	const char *type = cmark_node_get_type_string(node);

	switch (cmark_node_get_type(node)) {
	case CMARK_NODE_EMPH:
		return &r->italic;
	case CMARK_NODE_STRONG:
		return &r->bold;
	default:
		return type && strcmp(type, "strikethrough") == 0 ?
		    &r->strike : NULL;
	}
}

/* One event of the inline walk. */
static void
md_inline_event(struct md_r *r, cmark_node *node, cmark_event_type ev)
{
	int *attr = md_attr(r, node);

	if (attr) {
		*attr += ev == CMARK_EVENT_ENTER ? 1 : -1;
		md_sgr(r);
		return;
	}
	switch (cmark_node_get_type(node)) {
	case CMARK_NODE_TEXT:
	case CMARK_NODE_HTML_INLINE:
		md_puts(r->cur, cmark_node_get_literal(node));
		break;
	case CMARK_NODE_CODE:
		md_code_span(r, cmark_node_get_literal(node));
		break;
	case CMARK_NODE_SOFTBREAK:
	case CMARK_NODE_LINEBREAK:
		md_break(r);
		break;
	case CMARK_NODE_LINK:
		if (ev == CMARK_EVENT_EXIT && !md_link_is_url(node,
		    cmark_node_get_url(node)))
			md_url(r, cmark_node_get_url(node), 0);
		break;
	case CMARK_NODE_IMAGE:
		if (ev == CMARK_EVENT_ENTER)
			buf_append(r->cur, "[image: ", 8);
		else if (cmark_node_get_url(node) &&
		    *cmark_node_get_url(node))
			md_url(r, cmark_node_get_url(node), 1);
		else
			buf_append(r->cur, "]", 1);
		break;
	default:
		if (ev == CMARK_EVENT_ENTER)
			md_puts(r->cur, cmark_node_get_literal(node));
		break;
	}
}

/* The inline content under node (not node itself). */
static void
md_inlines(struct md_r *r, cmark_node *node)
{
	cmark_iter *it = cmark_iter_new(node);
	cmark_event_type ev;

	if (!it)
		return;
	while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
		cmark_node *n = cmark_iter_get_node(it);

		if (n != node)
			md_inline_event(r, n, ev);
	}
	cmark_iter_free(it);
}

/* A paragraph or a heading: one line (more at its line breaks), its text
 * hanging under itself. */
static void
md_text_block(struct md_r *r, cmark_node *node)
{
	int heading = cmark_node_get_type(node) == CMARK_NODE_HEADING;
	int level = heading ? cmark_node_get_heading_level(node) : 0;

	md_line_open(r);
	buf_append(r->out, TUI_WRAP_MARK_STR, 1);
	if (heading) {
		r->bold++;
		r->under += level == 1;
		md_sgr(r);
	}
	md_inlines(r, node);
	if (heading) {
		r->bold--;
		r->under -= level == 1;
	}
	md_line_close(r);
}

/* Lines of literal text: a code block's (indented, dim) or raw HTML's
 * (as typed). */
static void
md_literal_lines(struct md_r *r, const char *s, int code)
{
	const char *e;

	if (!s)
		return;
	for (; *s; s = e + 1) {
		e = strchr(s, '\n');
		md_line_open(r);
		if (code)
			buf_append(r->out, MD_INDENT, strlen(MD_INDENT));
		buf_append(r->out, TUI_WRAP_MARK_STR, 1);
		if (code) {
			r->dim++;
			md_sgr(r);
			r->dim--;
		}
		md_put(r->out, s, e ? (size_t)(e - s) : strlen(s));
		md_line_close(r);
		if (!e)
			break;
	}
}

/* A code block: for a fence, a row with its language (its info string's
 * first word) unless the fence was drawn before (TUI_MD_CONT); then its
 * code. */
static void
md_code_block(struct md_r *r, cmark_node *node)
{
	int len, off;
	char ch;
	const char *info = cmark_node_get_fence_info(node);
	size_t word = 0;

	if (cmark_node_get_fenced(node, &len, &off, &ch) &&
	    !((r->flags & TUI_MD_CONT) && r->lines == 0)) {
		md_line_open(r);
		buf_append(r->out, MD_INDENT, strlen(MD_INDENT));
		r->dim++;
		md_sgr(r);
		r->dim--;
		buf_append(r->out, MD_FENCE_LABEL, strlen(MD_FENCE_LABEL));
		while (info && info[word] && info[word] != ' ' &&
		    info[word] != '\t')
			word++;
		if (word) {
			buf_append(r->out, " ", 1);
			md_put(r->out, info, word);
		}
		md_line_close(r);
	}
	md_literal_lines(r, cmark_node_get_literal(node), 1);
}

/* A thematic break: a dim rule. */
static void
md_rule(struct md_r *r)
{
	md_line_open(r);
	r->dim++;
	md_sgr(r);
	r->dim--;
	buf_append(r->out, MD_RULE, strlen(MD_RULE));
	md_line_close(r);
}

/* Render the inline content of a cell into cell (emptied first). */
static void
md_cell(struct md_r *r, cmark_node *node, struct buf *cell)
{
	buf_reset(cell);
	r->cur = cell;
	r->cell = 1;
	md_inlines(r, node);
	r->cur = r->out;
	r->cell = 0;
}

/* The columns the open containers' prefixes take. */
static int
md_prefix_width(const struct md_r *r)
{
	int w = 0;

	for (int i = 0; i < r->depth; i++)
		w += tui_width_str(r->box[i].rest, strlen(r->box[i].rest));
	return w;
}

/* The widest cell of each of a table's ncols columns in width[]; the
 * total row width, separators included. */
static int
md_table_widths(struct md_r *r, cmark_node *table, int ncols, int *width,
    struct buf *cell)
{
	int total = 0;

	memset(width, 0, sizeof(*width) * (size_t)ncols);
	for (cmark_node *row = cmark_node_first_child(table); row;
	    row = cmark_node_next(row)) {
		int i = 0;

		for (cmark_node *c = cmark_node_first_child(row); c &&
		    i < ncols; c = cmark_node_next(c), i++) {
			int w;

			md_cell(r, c, cell);
			w = cell->len ? tui_width_str(cell->data, cell->len) : 0;
			if (w > width[i])
				width[i] = w;
		}
	}
	for (int i = 0; i < ncols; i++)
		total += width[i] + (i ? (int)strlen(" | ") : 0);
	return total;
}

/* Append spaces for n columns. */
static void
md_pad(struct buf *b, int n)
{
	static const char spaces[] = "                ";

	for (; n > 0; n -= 16)
		buf_append(b, spaces, n < 16 ? (size_t)n : 16);
}

/* One aligned row: each cell padded to its column as aligned, dim bars
 * between; a header's cells bold. */
static void
md_table_row(struct md_r *r, cmark_node *row, const int *width,
    const uint8_t *align, int ncols, int header, struct buf *cell)
{
	cmark_node *c = cmark_node_first_child(row);

	md_line_open(r);
	buf_append(r->out, TUI_WRAP_MARK_STR, 1);
	for (int i = 0; i < ncols; i++) {
		int w, left;

		if (i) {
			r->dim++;
			md_sgr(r);
			r->dim--;
			buf_append(r->out, MD_CELL_SEP, strlen(MD_CELL_SEP));
		}
		r->bold += header;
		md_sgr(r);
		if (c)
			md_cell(r, c, cell);
		else
			buf_reset(cell);
		w = cell->len ? tui_width_str(cell->data, cell->len) : 0;
		left = align && align[i] == 'r' ? width[i] - w :
		    align && align[i] == 'c' ? (width[i] - w) / 2 : 0;
		md_pad(r->out, left);
		if (cell->len)
			buf_append(r->out, cell->data, cell->len);
		r->bold -= header;
		md_sgr(r);
		if (i + 1 < ncols)
			md_pad(r->out, width[i] - w - left);
		c = c ? cmark_node_next(c) : NULL;
	}
	md_line_close(r);
}

/* The dim rule under an aligned table's header. */
static void
md_table_rule(struct md_r *r, const int *width, int ncols)
{
	md_line_open(r);
	r->dim++;
	md_sgr(r);
	r->dim--;
	for (int i = 0; i < ncols; i++) {
		if (i)
			buf_append(r->out, "─┼─", strlen("─┼─"));
		for (int k = 0; k < width[i]; k++)
			buf_append(r->out, "─", strlen("─"));
	}
	md_line_close(r);
}

/* A table too wide for the lines: each body row as "header: value"
 * lines, a blank line between rows; a table of only its header shows it
 * as one row. */
static void
md_table_records(struct md_r *r, cmark_node *table, struct buf *cell)
{
	static const int none[MD_MAX_COLS];
	cmark_node *head = cmark_node_first_child(table);
	int ncols = cmark_gfm_extensions_get_table_columns(table);

	if (head && !cmark_node_next(head)) {
		md_table_row(r, head, none, NULL, ncols < MD_MAX_COLS ? ncols :
		    MD_MAX_COLS, 1, cell);
		return;
	}

	for (cmark_node *row = head ? cmark_node_next(head) : NULL; row;
	    row = cmark_node_next(row)) {
		cmark_node *h = cmark_node_first_child(head);

		if (row != cmark_node_next(head)) {
			md_line_open(r);
			md_line_close(r);
		}
		for (cmark_node *c = cmark_node_first_child(row); c;
		    c = cmark_node_next(c), h = h ? cmark_node_next(h) : NULL) {
			md_line_open(r);
			r->bold++;
			md_sgr(r);
			if (h) {
				md_cell(r, h, cell);
				if (cell->len)
					buf_append(r->out, cell->data, cell->len);
			}
			buf_append(r->out, ":", 1);
			r->bold--;
			md_sgr(r);
			buf_append(r->out, " " TUI_WRAP_MARK_STR, 2);
			md_cell(r, c, cell);
			if (cell->len)
				buf_append(r->out, cell->data, cell->len);
			md_line_close(r);
		}
	}
}

/* A table: aligned when it fits, else as records. */
static void
md_table(struct md_r *r, cmark_node *table)
{
	int ncols = cmark_gfm_extensions_get_table_columns(table);
	const uint8_t *align = cmark_gfm_extensions_get_table_alignments(table);
	int width[MD_MAX_COLS];
	struct buf cell;

	buf_init(&cell, 1 << 16);
	if (ncols > 0 && ncols <= MD_MAX_COLS && md_table_widths(r, table,
	    ncols, width, &cell) <= r->cols - md_prefix_width(r)) {
		for (cmark_node *row = cmark_node_first_child(table); row;
		    row = cmark_node_next(row)) {
			int header = row == cmark_node_first_child(table);

			md_table_row(r, row, width, align, ncols, header, &cell);
			if (header)
				md_table_rule(r, width, ncols);
		}
	} else {
		md_table_records(r, table, &cell);
	}
	buf_free(&cell);
}

/* Whether node is a table (an extension's node type). */
static int
md_is_table(cmark_node *node)
{
	const char *type = cmark_node_get_type_string(node);

	return type && strcmp(type, "table") == 0;
}

/* A block the walk enters: containers open, leaves are drawn whole.
 * Returns 1 when the walk is to skip the node's children. */
static int
md_enter(struct md_r *r, cmark_node *node)
{
	switch (cmark_node_get_type(node)) {
	case CMARK_NODE_DOCUMENT:
		return 0;
	case CMARK_NODE_BLOCK_QUOTE:
		md_gap(r, node);
		md_box_push(r, MD_QUOTE, MD_QUOTE);
		return 0;
	case CMARK_NODE_LIST:
		md_gap(r, node);
		if (r->lists < MD_MAX_DEPTH)
			r->num[r->lists] = cmark_node_get_list_start(node);
		r->lists++;
		return 0;
	case CMARK_NODE_ITEM:
		md_gap(r, node);
		md_item(r, node);
		return 0;
	case CMARK_NODE_PARAGRAPH:
	case CMARK_NODE_HEADING:
		md_gap(r, node);
		md_text_block(r, node);
		return 1;
	case CMARK_NODE_CODE_BLOCK:
		md_gap(r, node);
		md_code_block(r, node);
		return 1;
	case CMARK_NODE_HTML_BLOCK:
		md_gap(r, node);
		md_literal_lines(r, cmark_node_get_literal(node), 0);
		return 1;
	case CMARK_NODE_THEMATIC_BREAK:
		md_gap(r, node);
		md_rule(r);
		return 1;
	default:
		if (md_is_table(node)) {
			md_gap(r, node);
			md_table(r, node);
		}
		return 1;
	}
}

/* A block the walk leaves: containers close. */
static void
md_exit(struct md_r *r, cmark_node *node)
{
	switch (cmark_node_get_type(node)) {
	case CMARK_NODE_BLOCK_QUOTE:
	case CMARK_NODE_ITEM:
		md_box_pop(r);
		break;
	case CMARK_NODE_LIST:
		r->lists--;
		break;
	default:
		break;
	}
}

/* The source as plain lines, when the parser could not run. */
static void
md_plain(struct md_r *r)
{
	const char *p = r->src, *end = r->src + r->n, *e;

	while (p < end) {
		e = memchr(p, '\n', (size_t)(end - p));
		md_line_open(r);
		buf_append(r->out, TUI_WRAP_MARK_STR, 1);
		md_put(r->out, p, (size_t)((e ? e : end) - p));
		md_line_close(r);
		p = e ? e + 1 : end;
	}
}

/* See tui_markdown.h. */
int
tui_md_render(struct buf *out, const char *s, size_t n, int cols, int flags)
{
	return tui_md_render_cached(NULL, out, s, n, cols, flags);
}

/* See tui_markdown.h. */
int
tui_md_render_cached(struct tui_md_cache *cache, struct buf *out,
    const char *s, size_t n, int cols, int flags)
{
	struct md_r r;
	int owned;
	cmark_node *doc = md_tree(cache, s, n, &owned);
	cmark_iter *it = doc ? cmark_iter_new(doc) : NULL;
	cmark_event_type ev;

	memset(&r, 0, sizeof(r));
	r.out = r.cur = out;
	r.src = s;
	r.n = n;
	r.cols = cols;
	r.flags = flags;
	if (!it) {
		md_plain(&r);
	} else {
		while ((ev = cmark_iter_next(it)) != CMARK_EVENT_DONE) {
			cmark_node *node = cmark_iter_get_node(it);

			if (ev == CMARK_EVENT_EXIT)
				md_exit(&r, node);
			else if (md_enter(&r, node))
				cmark_iter_reset(it, node, CMARK_EVENT_EXIT);
		}
		cmark_iter_free(it);
	}
	md_tree_done(doc, owned);
	return r.lines;
}

/* The offset of line no (from 1) in s[0..n). */
static size_t
md_line_offset(const char *s, size_t n, int no)
{
	const char *p = s, *end = s + n, *e;

	for (int i = 1; i < no && p < end; i++) {
		if (!(e = memchr(p, '\n', (size_t)(end - p))))
			return n;
		p = e + 1;
	}
	return (size_t)(p - s);
}

/* The first line of what is not closed in the tree doc: its last
 * top-level block when another precedes it, else the last item of a list
 * that is the only one (its number in *number when the list is ordered);
 * 0 when all may change. */
static int
md_open_line(cmark_node *doc, long *number)
{
	cmark_node *last = cmark_node_last_child(doc), *item;
	long count = 0;

	*number = 0;
	if (!last)
		return 0;
	if (cmark_node_previous(last))
		return cmark_node_get_start_line(last);
	if (cmark_node_get_type(last) != CMARK_NODE_LIST ||
	    !(item = cmark_node_last_child(last)) || !cmark_node_previous(item))
		return 0;
	if (cmark_node_get_list_type(last) == CMARK_ORDERED_LIST) {
		for (cmark_node *i = cmark_node_first_child(last); i;
		    i = cmark_node_next(i))
			count++;
		*number = cmark_node_get_list_start(last) + count - 1;
		if (*number > TUI_MD_MAX_NUMBER)
			return 0;
	}
	return cmark_node_get_start_line(item);
}

/* See tui_markdown.h. */
size_t
tui_md_settled(const char *s, size_t n, int *gap, long *number)
{
	return tui_md_settled_cached(NULL, s, n, gap, number);
}

/* See tui_markdown.h. */
size_t
tui_md_settled_cached(struct tui_md_cache *cache, const char *s, size_t n,
    int *gap, long *number)
{
	const char *nl = n ? memrchr(s, '\n', n) : NULL;
	size_t complete = nl ? (size_t)(nl - s) + 1 : 0, off = 0;
	cmark_node *doc;
	int line, owned;

	*gap = 0;
	*number = 0;
	if (!complete || !(doc = md_tree(cache, s, complete, &owned)))
		return 0;
	if ((line = md_open_line(doc, number)) > 1) {
		struct md_r r = { .src = s, .n = complete };

		off = md_line_offset(s, complete, line);
		*gap = md_blank_line(&r, line - 1);
	}
	md_tree_done(doc, owned);
	if (off >= complete)
		*number = 0;
	return off < complete ? off : 0;
}

/* See tui_markdown.h. */
int
tui_md_open_fence(const char *s, size_t n, char *fence, size_t size)
{
	return tui_md_open_fence_cached(NULL, s, n, fence, size);
}

/* See tui_markdown.h.  The last block is a fence left open when its last
 * line is not a closing one (a run of its character at least as long,
 * then only spaces), or when it has only its opening line. */
int
tui_md_open_fence_cached(struct tui_md_cache *cache, const char *s, size_t n,
    char *fence, size_t size)
{
	int len = 0, off = 0, open = 0, owned;
	cmark_node *doc = md_tree(cache, s, n, &owned), *last;
	char ch = 0;

	if (!doc)
		return 0;
	last = cmark_node_last_child(doc);
	if (last && cmark_node_get_type(last) == CMARK_NODE_CODE_BLOCK &&
	    cmark_node_get_fenced(last, &len, &off, &ch) && len > 0) {
		size_t from = md_line_offset(s, n, cmark_node_get_end_line(last));
		size_t i = from, run;

		while (i < n && s[i] == ' ')
			i++;
		for (run = 0; i < n && s[i] == ch; i++)
			run++;
		while (i < n && (s[i] == ' ' || s[i] == '\n'))
			i++;
		open = cmark_node_get_end_line(last) ==
		    cmark_node_get_start_line(last) || run < (size_t)len ||
		    i < n;
	}
	if (open && (size_t)len + (size_t)off + 1 <= size && off >= 0 &&
	    off <= 3) {
		memset(fence, ' ', (size_t)off);
		memset(fence + off, ch, (size_t)len);
		fence[off + len] = '\0';
	} else {
		open = 0;	/* a fence longer than fence[]: not carried */
	}
	md_tree_done(doc, owned);
	return open;
}
