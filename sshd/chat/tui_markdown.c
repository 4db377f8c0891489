/*
 * tui_markdown.c: light Markdown for chat lines (tui_markdown.h).  Called
 * by tui_draw.c for each line of a message, and for the agent's unfinished
 * line on each streamed delta.
 *
 * Workload and bounds: a line is at most a few KiB (tui_draw.c ends a
 * streamed line that grows past TUI_DRAW_MAX_LINE), and it is rendered
 * again on each delta, so the search for an emphasis's closing marker has
 * a budget of steps per line (MD_BUDGET_PER_BYTE): a line full of
 * unmatched markers from a hostile model costs linear time, its markers
 * past the budget shown as typed.  Nesting is at most MD_MAX_DEPTH deep.
 */
#include "tui_markdown.h"

#include <string.h>

#include "tui_wrap.h"

#define MD_BOLD		0x01
#define MD_DIM		0x02
#define MD_ITALIC	0x04
#define MD_UNDER	0x08
#define MD_CODE		0x10
#define MD_MAX_DEPTH	8	/* emphasis inside emphasis */
#define MD_BUDGET_PER_BYTE 8	/* closing-marker search steps per byte */
#define MD_CODE_COLOR	"36"	/* cyan */
#define MD_INDENT	"    "	/* a code block's indent */
#define MD_RULE		"────────────────────────"
#define MD_BULLET	"• "
#define MD_QUOTE_BAR	"│"
#define MD_FENCE_LABEL	"──"
#define MD_RESET	"\x1b[0m"

/* One line's rendering. */
struct md_ctx {
	struct buf *out;
	int color;		/* colours allowed */
	long budget;		/* closing-marker search steps left */
};

/* An empty block state: outside any fence. */
void
tui_md_init(struct tui_md *md)
{
	memset(md, 0, sizeof(*md));
}

/* A byte of a word, for the flanking rules of '_' (bytes of UTF-8
 * letters count, so snake_case and ünter_strich stay as typed). */
static int
md_word(unsigned char c)
{
	return c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z');
}

/* ASCII punctuation, which a backslash makes literal. */
static int
md_punct(unsigned char c)
{
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
	    (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

static int
md_space(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/* Bytes of the run of c at s[i..n). */
static size_t
md_run(const char *s, size_t n, size_t i, char c)
{
	size_t j = i;

	while (j < n && s[j] == c)
		j++;
	return j - i;
}

/* The attributes as one SGR, starting from a reset so it never depends
 * on what came before. */
static void
md_sgr(const struct md_ctx *x, int attrs)
{
	buf_append(x->out, "\x1b[0", 3);
	if (attrs & MD_BOLD)
		buf_append(x->out, ";1", 2);
	if (attrs & MD_DIM)
		buf_append(x->out, ";2", 2);
	if (attrs & MD_ITALIC)
		buf_append(x->out, ";3", 2);
	if (attrs & MD_UNDER)
		buf_append(x->out, ";4", 2);
	if ((attrs & MD_CODE) && x->color)
		buf_append(x->out, ";" MD_CODE_COLOR, strlen(MD_CODE_COLOR) + 1);
	buf_append(x->out, "m", 1);
}

/* The start of the next run of exactly k backquotes in s[from..n), or -1:
 * the end of a code span. */
static long
md_find_ticks(struct md_ctx *x, const char *s, size_t n, size_t from,
    size_t k)
{
	for (size_t j = from; j < n && x->budget > 0; x->budget--) {
		size_t r;

		if (s[j] != '`') {
			j++;
			continue;
		}
		r = md_run(s, n, j, '`');
		if (r == k)
			return (long)j;
		j += r;
	}
	return -1;
}

/* The start of the marker closing the run of k c at s[i] (a run of
 * exactly k after text, not after a space; for '_' not inside a word), or
 * -1: it then shows as typed. */
static long
md_find_closer(struct md_ctx *x, const char *s, size_t n, size_t i, size_t k)
{
	char c = s[i];

	for (size_t j = i + k + 1; j < n && x->budget > 0; x->budget--) {
		size_t r;

		if (s[j] == '\\') {
			j += 2;
			continue;
		}
		if (s[j] != c) {
			j++;
			continue;
		}
		r = md_run(s, n, j, c);
		if (r == k && !md_space((unsigned char)s[j - 1]) &&
		    (c != '_' || j + r >= n || !md_word((unsigned char)s[j + r])))
			return (long)j;
		j += r;
	}
	return -1;
}

/* Whether the run of k c at s[i] can open emphasis: text follows it, and
 * for '_' no word precedes it. */
static int
md_opens(const char *s, size_t n, size_t i, size_t k)
{
	if (k > 3 || i + k >= n || md_space((unsigned char)s[i + k]))
		return 0;
	return s[i] != '_' || i == 0 || !md_word((unsigned char)s[i - 1]);
}

static void md_inline(struct md_ctx *x, const char *s, size_t n, int attrs,
    int depth);

/* A code span: s[0..n) is its text between runs of k backquotes; shown
 * cyan without them (one space trimmed from each end when both have
 * one), or without colours as typed, backquotes and all. */
static void
md_code_span(struct md_ctx *x, const char *s, size_t n, size_t k, int attrs)
{
	if (!x->color) {
		buf_append(x->out, s - k, n + 2 * k);
		return;
	}
	if (n >= 2 && s[0] == ' ' && s[n - 1] == ' ' &&
	    md_run(s, n, 0, ' ') < n) {
		s++;
		n -= 2;
	}
	md_sgr(x, attrs | MD_CODE);
	buf_append(x->out, s, n);
	md_sgr(x, attrs);
}

/* A run of '*' or '_' at s[i] (k long): emphasis up to its closer, or
 * the run as typed.  Returns the bytes used. */
static size_t
md_emphasis(struct md_ctx *x, const char *s, size_t n, size_t i, size_t k,
    int attrs, int depth)
{
	static const int add[4] = { 0, MD_ITALIC, MD_BOLD, MD_BOLD | MD_ITALIC };
	long j = -1;

	if (depth < MD_MAX_DEPTH && md_opens(s, n, i, k))
		j = md_find_closer(x, s, n, i, k);
	if (j < 0) {
		buf_append(x->out, s + i, k);
		return k;
	}
	md_sgr(x, attrs | add[k]);
	md_inline(x, s + i + k, (size_t)j - i - k, attrs | add[k], depth + 1);
	md_sgr(x, attrs);
	return (size_t)j + k - i;
}

/* Inline Markdown of s[0..n) in attrs: escapes, code spans, emphasis;
 * everything else as is. */
static void
md_inline(struct md_ctx *x, const char *s, size_t n, int attrs, int depth)
{
	size_t i = 0, plain, k;
	long j;

	while (i < n) {
		for (plain = 0; i + plain < n && !memchr("\\`*_",
		    s[i + plain], 4); plain++)
			;
		buf_append(x->out, s + i, plain);
		if ((i += plain) >= n)
			break;
		if (s[i] == '\\') {
			k = i + 1 < n && md_punct((unsigned char)s[i + 1]) ? 1 : 0;
			buf_append(x->out, s + i + k, 1);
			i += 1 + k;
			continue;
		}
		k = md_run(s, n, i, s[i]);
		if (s[i] != '`') {
			i += md_emphasis(x, s, n, i, k, attrs, depth);
			continue;
		}
		if ((j = md_find_ticks(x, s, n, i + k, k)) < 0) {
			buf_append(x->out, s + i, k);
			i += k;
			continue;
		}
		md_code_span(x, s + i + k, (size_t)j - i - k, k, attrs);
		i = (size_t)j + k;
	}
}

/* Columns of leading spaces (at most max, else -1): a block marker may
 * be indented by up to three. */
static long
md_lead(const char *s, size_t n, size_t max)
{
	size_t i = md_run(s, n, 0, ' ');

	return i <= max ? (long)i : -1;
}

/* Whether s[0..n) opens a fence: its marker and length in *ch, *len, its
 * language (the info string's first word) in s[*lang, *lang + *lang_len). */
static int
md_fence_open(const char *s, size_t n, char *ch, int *len, size_t *lang,
    size_t *lang_len)
{
	long i = md_lead(s, n, 3);
	size_t k, e;

	if (i < 0 || (size_t)i >= n || (s[i] != '`' && s[i] != '~'))
		return 0;
	if ((k = md_run(s, n, (size_t)i, s[i])) < 3)
		return 0;
	if (s[i] == '`' && memchr(s + i + k, '`', n - (size_t)i - k))
		return 0;
	*ch = s[i];
	*len = k > 64 ? 64 : (int)k;
	*lang = (size_t)i + k + md_run(s, n, (size_t)i + k, ' ');
	for (e = *lang; e < n && !md_space((unsigned char)s[e]); e++)
		;
	*lang_len = e - *lang;
	return 1;
}

/* Whether s[0..n) closes the open fence of md. */
static int
md_fence_close(const struct tui_md *md, const char *s, size_t n)
{
	long i = md_lead(s, n, 3);
	size_t k;

	if (i < 0 || (size_t)i >= n || s[i] != md->fence_ch)
		return 0;
	k = md_run(s, n, (size_t)i, s[i]);
	if (k < (size_t)md->fence_len)
		return 0;
	return (size_t)i + k + md_run(s, n, (size_t)i + k, ' ') == n;
}

/* A thematic break: three or more of one of - * _, spaces between. */
static int
md_rule(const char *s, size_t n)
{
	long i = md_lead(s, n, 3);
	int count = 0;
	char c;

	if (i < 0 || (size_t)i >= n)
		return 0;
	c = s[i];
	if (c != '-' && c != '*' && c != '_')
		return 0;
	for (size_t j = (size_t)i; j < n; j++) {
		if (s[j] == c)
			count++;
		else if (s[j] != ' ')
			return 0;
	}
	return count >= 3;
}

/* An ATX heading: its level (1-6), text in s[*from, *to), or 0. */
static int
md_heading(const char *s, size_t n, size_t *from, size_t *to)
{
	long i = md_lead(s, n, 3);
	size_t k, e;

	if (i < 0 || (size_t)i >= n || s[i] != '#')
		return 0;
	k = md_run(s, n, (size_t)i, '#');
	if (k > 6 || ((size_t)i + k < n && s[i + k] != ' '))
		return 0;
	*from = (size_t)i + k + md_run(s, n, (size_t)i + k, ' ');
	e = n;
	while (e > *from && s[e - 1] == ' ')
		e--;
	/* A closing run of # after a space goes too. */
	k = e;
	while (k > *from && s[k - 1] == '#')
		k--;
	if (k < e && (k == *from || s[k - 1] == ' '))
		for (e = k; e > *from && s[e - 1] == ' '; e--)
			;
	*to = e;
	return (int)md_run(s, n, (size_t)i, '#');
}

/* A list item's marker: "- ", "* ", "+ " or digits then ". " or ") ",
 * after any indent.  Its end (the item's text) in *text, the marker in
 * s[*mark, *mark_end); 1 when it is a bullet, 2 numbered, 0 none. */
static int
md_item(const char *s, size_t n, size_t *mark, size_t *mark_end,
    size_t *text)
{
	size_t i = md_run(s, n, 0, ' '), d;

	*mark = i;
	if (i + 1 < n && memchr("-*+", s[i], 3) && s[i + 1] == ' ') {
		*mark_end = i + 1;
		*text = i + 2;
		return 1;
	}
	for (d = i; d < n && d - i < 9 && s[d] >= '0' && s[d] <= '9'; d++)
		;
	if (d == i || d + 1 >= n || (s[d] != '.' && s[d] != ')') ||
	    s[d + 1] != ' ')
		return 0;
	*mark_end = d + 1;
	*text = d + 2;
	return 2;
}

/* A line inside a fence: indented, dim, no inline Markdown. */
static void
md_code_line(struct md_ctx *x, const char *s, size_t n)
{
	buf_append(x->out, MD_INDENT TUI_WRAP_MARK_STR,
	    strlen(MD_INDENT TUI_WRAP_MARK_STR));
	md_sgr(x, MD_DIM);
	buf_append(x->out, s, n);
	buf_append(x->out, MD_RESET, strlen(MD_RESET));
}

/* An opening fence: the language, dim, where the marker was. */
static void
md_fence_label(struct md_ctx *x, const char *lang, size_t len)
{
	buf_append(x->out, MD_INDENT, strlen(MD_INDENT));
	md_sgr(x, MD_DIM);
	buf_append(x->out, MD_FENCE_LABEL, strlen(MD_FENCE_LABEL));
	if (len) {
		buf_append(x->out, " ", 1);
		buf_append(x->out, lang, len);
	}
	buf_append(x->out, MD_RESET, strlen(MD_RESET));
}

/* A list item: its indent, "• " or its number, the text hanging under
 * the text. */
static void
md_list_item(struct md_ctx *x, const char *s, size_t n, int kind,
    size_t mark, size_t mark_end, size_t text)
{
	buf_append(x->out, s, mark);
	if (kind == 1)
		buf_append(x->out, MD_BULLET, strlen(MD_BULLET));
	else {
		buf_append(x->out, s + mark, mark_end - mark);
		buf_append(x->out, " ", 1);
	}
	buf_append(x->out, TUI_WRAP_MARK_STR, 1);
	md_inline(x, s + text, n - text, 0, 0);
}

/* A line outside fences: heading, rule, quote, list item or paragraph. */
static void
md_text_line(struct md_ctx *x, const char *s, size_t n)
{
	size_t from, to, mark, mark_end;
	int level, kind;
	long i;

	if ((level = md_heading(s, n, &from, &to))) {
		int attrs = MD_BOLD | (level == 1 ? MD_UNDER : 0);

		md_sgr(x, attrs);
		md_inline(x, s + from, to - from, attrs, 0);
		buf_append(x->out, MD_RESET, strlen(MD_RESET));
	} else if (md_rule(s, n)) {
		md_sgr(x, MD_DIM);
		buf_append(x->out, MD_RULE, strlen(MD_RULE));
		buf_append(x->out, MD_RESET, strlen(MD_RESET));
	} else if ((i = md_lead(s, n, 3)) >= 0 && (size_t)i < n &&
	    s[i] == '>') {
		from = (size_t)i + 1 + ((size_t)i + 1 < n && s[i + 1] == ' ');
		md_sgr(x, MD_DIM);
		buf_append(x->out, MD_QUOTE_BAR, strlen(MD_QUOTE_BAR));
		buf_append(x->out, MD_RESET " " TUI_WRAP_MARK_STR,
		    strlen(MD_RESET) + 2);
		md_inline(x, s + from, n - from, 0, 0);
	} else if ((kind = md_item(s, n, &mark, &mark_end, &from))) {
		md_list_item(x, s, n, kind, mark, mark_end, from);
	} else {
		md_inline(x, s, n, 0, 0);
	}
}

/* See tui_markdown.h. */
int
tui_md_render(const struct tui_md *md, struct buf *out, const char *s,
    size_t n, int color)
{
	struct md_ctx x = { out, color, (long)n * MD_BUDGET_PER_BYTE + 64 };
	size_t lang, lang_len;
	char ch;
	int len;

	if (md->fence) {
		if (md_fence_close(md, s, n))
			return 1;
		md_code_line(&x, s, n);
	} else if (md_fence_open(s, n, &ch, &len, &lang, &lang_len)) {
		md_fence_label(&x, s + lang, lang_len);
	} else {
		md_text_line(&x, s, n);
	}
	return 0;
}

/* See tui_markdown.h. */
void
tui_md_end_line(struct tui_md *md, const char *s, size_t n)
{
	size_t lang, lang_len;

	if (md->fence)
		md->fence = !md_fence_close(md, s, n);
	else
		md->fence = md_fence_open(s, n, &md->fence_ch, &md->fence_len,
		    &lang, &lang_len);
}
