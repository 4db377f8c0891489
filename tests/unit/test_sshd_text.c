/*
 * test_sshd_text.c: how a chat line becomes screen rows: word wrap with a
 * hanging indent (sshd/chat/tui_wrap.c), Markdown drawn from libcmark-gfm's
 * tree (sshd/chat/tui_markdown.c), and the agent's streamed answer drawn from
 * both (sshd/chat/tui_draw.c), whatever pieces its text arrives in, and
 * the same whether members share their drawings (tui_draw_cache) or not.
 */
#include <string.h>

#include "unit.h"
#include "buf.h"
#include "../../sshd/chat/tui_draw.h"
#include "../../sshd/chat/tui_editor.h"
#include "../../sshd/chat/tui_markdown.h"
#include "../../sshd/chat/tui_model.h"
#include "../../sshd/chat/tui_wrap.h"

#define MAX_ROWS	32

/* The rows of s at cols as printed, each NUL-terminated in rows[]. */
static int
wrap(const char *s, int cols, char rows[MAX_ROWS][256])
{
	struct tui_wrap w;
	struct buf b;
	size_t start, end;
	int n = 0;

	tui_wrap_init(&w, s, strlen(s), cols);
	while (n < MAX_ROWS && tui_wrap_next(&w, &start, &end)) {
		buf_init(&b, 4096);
		tui_wrap_put(&w, &b, start, end);
		snprintf(rows[n++], 256, "%.*s", (int)b.len, b.data ? b.data : "");
		buf_free(&b);
	}
	CHECK_INT(tui_wrap_rows(s, strlen(s), cols), n);
	return n;
}

/* Rows break at spaces after the mark and hang under it. */
static void
test_wrap_words(void)
{
	char rows[MAX_ROWS][256];

	CHECK_INT(wrap("ab: \x1fone two three four five six seven eight", 20,
	    rows), 3);
	CHECK_STR(rows[0], "ab: one two three");
	CHECK_STR(rows[1], "    four five six");
	CHECK_STR(rows[2], "    seven eight");
	/* A word longer than the row is cut, and only then. */
	CHECK_INT(wrap("x: \x1f" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa end", 20,
	    rows), 2);
	CHECK_STR(rows[0], "x: aaaaaaaaaaaaaaaaa");
	CHECK_STR(rows[1], "   aaaaaaaaaaaaa end");
	/* No break before the mark: the name stays with the first word. */
	CHECK_INT(wrap("a long name: \x1fword", 12, rows), 2);
	CHECK_STR(rows[0], "a long name:");
	/* (the indent would leave under 16 columns: column 0) */
	CHECK_STR(rows[1], "word");
	/* An empty line is one empty row; a line that fits, one row. */
	CHECK_INT(wrap("", 20, rows), 1);
	CHECK_STR(rows[0], "");
	CHECK_INT(wrap("exactly twenty cols!", 20, rows), 1);
}

/* Attributes carry onto continuation rows; wide characters break
 * between each other and never straddle the edge. */
static void
test_wrap_attrs_and_wide(void)
{
	char rows[MAX_ROWS][256];

	CHECK_INT(wrap("n: \x1f\x1b[0;1mbold words here and more\x1b[0m "
	    "plain", 20, rows), 2);
	CHECK_STR(rows[0], "n: \x1b[0;1mbold words here");
	CHECK_STR(rows[1], "   \x1b[0;1mand more\x1b[0m plain");
	/* After a reset only what follows it is replayed. */
	CHECK_INT(wrap("\x1b[1mx\x1b[0m \x1b[3mitalic words that wrap here",
	    20, rows), 2);
	CHECK_STR(rows[1], "\x1b[0m\x1b[3mwrap here");
	/* "a" then ten two-column characters at 20 columns: nine fit. */
	CHECK_INT(wrap("a\xe6\xbc\xa2\xe6\xbc\xa2\xe6\xbc\xa2\xe6\xbc\xa2"
	    "\xe6\xbc\xa2\xe6\xbc\xa2\xe6\xbc\xa2\xe6\xbc\xa2\xe6\xbc\xa2"
	    "\xe6\xbc\xa2", 20, rows), 2);
	CHECK_INT(strlen(rows[0]), 1 + 9 * 3);
	CHECK_STR(rows[1], "\xe6\xbc\xa2");
	/* A two-column character in a one-column row still goes out. */
	CHECK_INT(wrap("\xe6\xbc\xa2\xe6\xbc\xa2", 1, rows), 2);
}

/* The lines Markdown text renders to at cols, coloured or not, joined by
 * '\n' (each line ends with one). */
static void
check_md_at(const char *text, int cols, int color, const char *want)
{
	struct buf b;

	buf_init(&b, 1 << 16);
	tui_md_render(&b, text, strlen(text), cols, color ? TUI_MD_COLOR : 0);
	buf_append(&b, "", 1);
	CHECK_STR(b.data, want);
	buf_free(&b);
}

static void
check_md(const char *text, int color, const char *want)
{
	check_md_at(text, 80, color, want);
}

static void
test_markdown_inline(void)
{
	check_md("**b** *i* `c`", 1, "\x1f\x1b[0;1mb\x1b[0m \x1b[0;3mi\x1b[0m "
	    "\x1b[0;36mc\x1b[0m\x1b[0m\n");
	check_md("a `c` b", 0, "\x1f" "a \x1b[0m`c`\x1b[0m b\x1b[0m\n");
	check_md("***both***", 1, "\x1f\x1b[0;3m\x1b[0;1;3mboth\x1b[0;3m"
	    "\x1b[0m\x1b[0m\n");
	/* Unclosed, spaced or inside words: as typed. */
	check_md("**Und", 1, "\x1f**Und\n");
	check_md("2 * 3 * 4", 1, "\x1f" "2 * 3 * 4\n");
	check_md("snake_case_name", 1, "\x1fsnake_case_name\n");
	check_md("\\*not\\*", 1, "\x1f*not*\n");
	check_md("~~gone~~ left", 1, "\x1f\x1b[0;9mgone\x1b[0m left\x1b[0m\n");
	/* A line break stays one; a blank line between paragraphs is one
	 * blank line. */
	check_md("one\ntwo\n\n\nthree", 1, "\x1fone\n\x1f\x1b[0mtwo\x1b[0m\n\n"
	    "\x1fthree\n");
}

/* Links show their url dim after the text, once; images say so; HTML
 * is text; a control character decoded from an entity goes. */
static void
test_markdown_links(void)
{
	check_md("see [the docs](https://x.org/d).", 1, "\x1fsee the docs "
	    "\x1b[0;2m(https://x.org/d)\x1b[0m.\x1b[0m\n");
	check_md("<https://x.org> and https://y.org/a and www.z.org", 1,
	    "\x1fhttps://x.org and https://y.org/a and www.z.org\n");
	check_md("![a logo](l.png)", 1, "\x1f[image: a logo] \x1b[0;2m"
	    "(l.png)\x1b[0m\x1b[0m\n");
	check_md("<b>bold?</b> <script>x</script>", 1,
	    "\x1f<b>bold?</b> <script>x</script>\n");
	check_md("a&#27;[2J&#x9b;b [x](&#7;u)", 1, "\x1f" "a[2Jb x "
	    "\x1b[0;2m(u)\x1b[0m\x1b[0m\n");
}

static void
test_markdown_blocks(void)
{
	check_md("## Title ##", 1, "\x1f\x1b[0;1mTitle\x1b[0m\n");
	check_md("# Top", 1, "\x1f\x1b[0;1;4mTop\x1b[0m\n");
	check_md("#hashtag", 1, "\x1f#hashtag\n");
	check_md("* * *", 1, "\x1b[0;2m" "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\x1b[0m\n");
	/* A fence: its language, its code dim and untouched, no row for
	 * its end. */
	check_md("```sh\necho *x*\n```", 1, "    \x1b[0;2m\xe2\x94\x80"
	    "\xe2\x94\x80 sh\x1b[0m\n    \x1f\x1b[0;2mecho *x*\x1b[0m\n");
	/* Carried over: no language row. */
	{
		struct buf b;

		buf_init(&b, 4096);
		tui_md_render(&b, "```\nls\n", 7, 80, TUI_MD_CONT);
		buf_append(&b, "", 1);
		CHECK_STR(b.data, "    \x1f\x1b[0;2mls\x1b[0m\n");
		buf_free(&b);
	}
	check_md("> quoted\n> on", 1, "\x1b[0;2m\xe2\x94\x82\x1b[0m \x1fquoted\n"
	    "\x1b[0;2m\xe2\x94\x82\x1b[0m \x1f\x1b[0mon\x1b[0m\n");
}

/* Lists: a bullet or the list's own numbers, counted on from its first;
 * a nested list under its item's text. */
static void
test_markdown_lists(void)
{
	check_md("- a\n- b", 1, "\xe2\x80\xa2 \x1f" "a\n\xe2\x80\xa2 \x1f" "b\n");
	check_md("3. three\n1. four\n7) x", 1, "3. \x1fthree\n4. \x1f" "four\n"
	    "7) \x1fx\n");
	check_md("1. one\n   - in *it*\n     1. deeper\n2. two", 1,
	    "1. \x1fone\n   \xe2\x80\xa2 \x1fin \x1b[0;3mit\x1b[0m\x1b[0m\n"
	    "     1. \x1f" "deeper\n2. \x1ftwo\n");
	check_md("- a\n\n- b", 1, "\xe2\x80\xa2 \x1f" "a\n\n\xe2\x80\xa2 \x1f"
	    "b\n");
}

/* A table: aligned under a bold header when it fits, else "header:
 * value" lines, rows apart. */
static void
test_markdown_tables(void)
{
	const char *t = "| Name | Size |\n|:--|--:|\n| a | 12 |\n"
	    "| long name | 3 |";

	check_md_at(t, 40, 0, "\x1f\x1b[0;1mName\x1b[0m     \x1b[0;2m \xe2\x94"
	    "\x82 \x1b[0;1mSize\x1b[0m\x1b[0m\n"
	    "\x1b[0;2m\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94"
	    "\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\xbc\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\x1b[0m\n"
	    "\x1f\x1b[0ma\x1b[0m        \x1b[0;2m \xe2\x94\x82 \x1b[0m  12"
	    "\x1b[0m\x1b[0m\n"
	    "\x1f\x1b[0mlong name\x1b[0m\x1b[0;2m \xe2\x94\x82 \x1b[0m   3"
	    "\x1b[0m\x1b[0m\n");
	check_md_at(t, 12, 0, "\x1b[0;1mName:\x1b[0m \x1f" "a\x1b[0m\n"
	    "\x1b[0;1mSize:\x1b[0m \x1f" "12\x1b[0m\n\n"
	    "\x1b[0;1mName:\x1b[0m \x1flong name\x1b[0m\n"
	    "\x1b[0;1mSize:\x1b[0m \x1f" "3\x1b[0m\n");
}

/* Which blocks are closed: those before the last top-level one, in
 * complete lines only; a fence left open. */
static void
test_markdown_settled(void)
{
	const char *s = "para\n\n- a\n- b\n\nnext\n";
	const char *list = "3. a\n1. b\n\n1. c\n";
	char fence[16];
	long number;
	int gap;

	CHECK_INT(tui_md_settled("one **two", 9, &gap, &number), 0);
	CHECK_INT(tui_md_settled("para\n\n- a", 10, &gap, &number), 0);
	CHECK_INT(tui_md_settled(s, strlen(s), &gap, &number), 15);
	CHECK_INT(gap, 1);
	/* "next" unfinished may yet be a list item: the list is open. */
	CHECK_INT(tui_md_settled(s, strlen(s) - 1, &gap, &number), 6);
	CHECK_INT(gap, 1);
	CHECK_INT(tui_md_settled("para\n```\n", 9, &gap, &number), 5);
	CHECK_INT(gap, 0);
	/* A list alone: its items but the last, which is the list's 5th. */
	CHECK_INT(tui_md_settled(list, strlen(list), &gap, &number), 11);
	CHECK_INT(gap, 1);
	CHECK_INT(number, 5);
	CHECK_INT(tui_md_settled("- a\n- b\n", 8, &gap, &number), 4);
	CHECK_INT(number, 0);
	CHECK_INT(tui_md_open_fence("~~~~ c\nx\n", 9, fence, sizeof(fence)), 1);
	CHECK_STR(fence, "~~~~");
	CHECK_INT(tui_md_open_fence("```\nx\n```\n", 10, fence,
	    sizeof(fence)), 0);
	CHECK_INT(tui_md_open_fence("```\n", 4, fence, sizeof(fence)), 1);
	CHECK_INT(tui_md_open_fence("  ```\n  x\n", 10, fence, sizeof(fence)), 1);
	CHECK_STR(fence, "  ```");
}

/* Hostile text renders in bounded work: markers that never pair stay as
 * typed, nesting deeper than the prefixes drawn costs no stack. */
static void
test_markdown_hostile(void)
{
	static char line[8192];
	struct buf b;

	for (size_t i = 0; i + 3 <= sizeof(line) - 1; i += 3)
		memcpy(line + i, "*a ", 3);
	line[sizeof(line) - 1] = '\0';
	buf_init(&b, 1 << 20);
	CHECK_INT(tui_md_render(&b, line, strlen(line), 80, TUI_MD_COLOR), 1);
	CHECK(memchr(b.data, '\x1b', b.len) == NULL);
	buf_reset(&b);
	memset(line, '>', sizeof(line) - 2);
	line[sizeof(line) - 2] = 'x';
	CHECK_INT(tui_md_render(&b, line, strlen(line), 80, TUI_MD_COLOR), 1);
	buf_free(&b);
}

/* The agent's answer split mid-marker and mid-line ends up drawn as the
 * whole text is, with no control byte of the model's in it. */
static void
test_stream_pieces(void)
{
	const char *pieces[] = { "**Und", "o** takes `ma", "ke` back\x1b[2J",
	    "\x07\n\n```s", "h\nls\n``", "`\nend" };
	const char *want[] = {
		"\x1b[1;35magent:\x1b[0m \x1f\x1f\x1b[0;1mUndo\x1b[0m takes "
		    "\x1b[0;36mmake\x1b[0m back[2J\x1b[0m",
		"       \x1f",
		"       \x1f    \x1b[0;2m\xe2\x94\x80\xe2\x94\x80 sh\x1b[0m",
		"       \x1f    \x1f\x1b[0;2mls\x1b[0m",
		"       \x1f\x1f" "end",
	};
	struct tui_draw d;
	struct buf out;
	size_t pos = 0, len;
	const char *l;
	char line[512];
	int n = 0;

	tui_draw_init(&d, 1, 1, 1, 80, 24);
	buf_init(&out, 1 << 20);
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
		tui_draw_stream(&d, &out, pieces[i]);
	tui_draw_stream_end(&d, &out);
	while (tui_model_prev(&d.model, &pos, &l, &len))
		n++;
	CHECK_INT(n, 5);
	pos = 0;
	for (int i = 4; i >= 0 && tui_model_prev(&d.model, &pos, &l, &len);
	    i--) {
		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		CHECK_STR(line, want[i]);
	}
	/* Nothing but the chat's own SGR escapes reached the output. */
	for (size_t i = 0; i < out.len; i++)
		CHECK(out.data[i] != '\x07' && out.data[i] != TUI_WRAP_MARK &&
		    (out.data[i] != '\x1b' || (i + 1 < out.len &&
		    out.data[i + 1] == '[')));
	buf_append(&out, "", 1);
	CHECK(strstr(out.data, "\x1b[2J") == NULL);
	tui_draw_free(&d);
	buf_free(&out);
}

/* The model's lines of d, oldest first, joined by '\n' into out. */
static void
model_lines(const struct tui_draw *d, struct buf *out)
{
	const char *l[256];
	size_t len[256], pos = 0;
	int n = 0;

	while (n < 256 && tui_model_prev(&d->model, &pos, &l[n], &len[n]))
		n++;
	while (n-- > 0) {
		buf_append(out, l[n], len[n]);
		buf_append(out, "\n", 1);
	}
}

/* An answer streamed in small pieces is drawn line for line as the same
 * text drawn whole (a reconnect's replay): a list numbered "1." each time
 * printed an item at a time keeps counting, a table is laid out once. */
static void
test_stream_same_as_whole(void)
{
	const char *text = "Steps:\n\n1. one\n1. two\n   - nested *a*\n"
	    "   - nested b\n1. three\n\n| k | v |\n|---|--:|\n| a | 1 |\n"
	    "| bb | 22 |\n\n```sh\nmake\nmake check\n```\n- x\n\n- y\nend\n"
	    "\nText.\n\n  ~~~~\n  in two\n    in four\n  ~~~~\nlast";
	struct tui_draw d, w;
	struct buf out, a, b;
	char piece[4];

	tui_draw_init(&d, 1, 1, 1, 80, 24);
	tui_draw_init(&w, 1, 1, 1, 80, 24);
	buf_init(&out, 1 << 20);
	for (size_t i = 0; i < strlen(text); i += 3) {
		size_t n = strlen(text + i) < 3 ? strlen(text + i) : 3;

		memcpy(piece, text + i, n);
		piece[n] = '\0';
		tui_draw_stream(&d, &out, piece);
	}
	tui_draw_stream_end(&d, &out);
	tui_draw_line(&w, &out, TUI_STYLE_MESSAGE, "agent", text);
	buf_init(&a, 1 << 20);
	buf_init(&b, 1 << 20);
	model_lines(&d, &a);
	model_lines(&w, &b);
	buf_append(&a, "", 1);
	buf_append(&b, "", 1);
	CHECK_STR(a.data, b.data);
	CHECK(strstr(a.data, "3. \x1fthree") != NULL);
	CHECK(strstr(a.data, "2. \x1ftwo") != NULL);
	tui_draw_free(&d);
	tui_draw_free(&w);
	buf_free(&out);
	buf_free(&a);
	buf_free(&b);
}

/* A redraw in the middle of an answer taller than the screen: the
 * bottom region shows the line's last rows, and the next delta prints
 * the rows before them above it, since the redraw cleared them. */
static void
test_stream_redraw(void)
{
	struct tui_draw d;
	struct tui_editor e;
	struct buf out;

	tui_editor_init(&e, 64);
	tui_draw_init(&d, 1, 1, 1, 20, 8);
	buf_init(&out, 1 << 20);
	for (int i = 0; i < 40; i++) {
		char piece[16];

		snprintf(piece, sizeof(piece), " w%02d", i);
		tui_draw_stream(&d, &out, i ? piece : "w00");
	}
	CHECK(d.stream_shown > 0);
	buf_reset(&out);
	tui_draw_redraw(&d, &out, "room", &e, 20, 8);
	CHECK_INT(d.stream_shown, 0);
	CHECK(d.bottom_rows <= 6);
	buf_append(&out, "", 1);
	CHECK(strstr(out.data, "w00") == NULL);
	buf_reset(&out);
	tui_draw_clear_bottom(&d, &out);
	tui_draw_stream(&d, &out, " w40");
	buf_append(&out, "", 1);
	CHECK(strstr(out.data, "agent:") != NULL);
	CHECK(strstr(out.data, "w00") != NULL);
	CHECK(d.stream_shown > 0);
	tui_draw_free(&d);
	tui_editor_free(&e);
	buf_free(&out);
}

/* Texts for the shared cache's test: every kind of block, streamed. */
static const char *const cache_texts[] = {
	"**Undo** takes `make` back, *then* ~~nothing~~ more.\n\nA second "
	    "paragraph, long enough to wrap at forty columns and again at "
	    "eighty columns, with a [link](https://example.org/a/b) in it.",
	"Steps:\n\n1. one\n1. two\n   - nested *a*\n   - nested b\n1. three\n"
	    "\n- x\n\n- y\nend\n",
	"| k | value |\n|---|--:|\n| a | 1 |\n| bb | 22 |\n| a much longer "
	    "key than forty columns allow | 333 |\n\nafter",
	"```sh\nmake\nmake check\n```\n\n  ~~~~\n  in two\n    in four\n"
	    "  ~~~~\n> quoted **bold\n> still** quoted\n\n---\n# Head\n## Two",
	"\xe6\xbc\xa2\xe5\xad\x97\xe3\x81\xa7\xe6\x9b\xb8\xe3\x81\x84\xe3\x81"
	    "\x9f\xe6\x96\x87 \xe6\xbc\xa2\xe5\xad\x97\xe3\x81\xa7\xe6\x9b\xb8"
	    "\xe3\x81\x84\xe3\x81\x9f\xe6\x96\x87 &#27;[2J two\ttabs \x1b[31m "
	    "w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w w",
};

#define CACHE_PAIRS	12	/* members drawn both ways */

/* One delta (or the end, piece NULL) to member d, the frame as chat.c
 * makes it into f. */
static void
cache_step(struct tui_draw *d, struct tui_editor *e, struct buf *f,
    const char *piece)
{
	buf_reset(f);
	tui_draw_clear_bottom(d, f);
	if (piece)
		tui_draw_stream(d, f, piece);
	else
		tui_draw_stream_end(d, f);
	tui_draw_bottom(d, f, "room", e);
}

/* Members at widths 40, 80 and 120 (heights 35 and 8, colour on and
 * off, a highlight) draw each text delta by delta twice: alone, and with
 * one cache they all share (drawn after one another, as atriumd-net
 * does).  Every frame and every line kept is the same both ways, and the
 * cache was used. */
static void
test_stream_cache_same(void)
{
	static const int cols[CACHE_PAIRS] = { 40, 80, 120, 40, 80, 120, 80,
	    40, 80, 120, 80, 120 };
	static const int rows[CACHE_PAIRS] = { 35, 35, 35, 8, 8, 8, 35, 35,
	    35, 35, 24, 24 };
	static const int color[CACHE_PAIRS] = { 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
	    1, 1 };
	struct tui_draw alone[CACHE_PAIRS], shared[CACHE_PAIRS];
	struct tui_draw_cache cache;
	struct tui_editor e;
	struct buf fa, fs, ma, ms;
	size_t step[] = { 1, 3, 7 };

	memset(&cache, 0, sizeof(cache));
	tui_editor_init(&e, 64);
	buf_init(&fa, 1 << 20);
	buf_init(&fs, 1 << 20);
	buf_init(&ma, 1 << 20);
	buf_init(&ms, 1 << 20);
	for (size_t t = 0; t < sizeof(cache_texts) / sizeof(cache_texts[0]);
	    t++) {
		const char *text = cache_texts[t];
		size_t k = step[t % 3];

		for (int m = 0; m < CACHE_PAIRS; m++) {
			tui_draw_init(&alone[m], 1, color[m], 1, cols[m],
			    rows[m]);
			tui_draw_init(&shared[m], 1, color[m], 1, cols[m],
			    rows[m]);
			shared[m].cache = &cache;
			alone[m].time_ms = shared[m].time_ms = 1700000000000LL;
			tui_draw_set_status(&alone[m], "status");
			tui_draw_set_status(&shared[m], "status");
		}
		snprintf(alone[1].highlight, sizeof(alone[1].highlight), "two");
		snprintf(shared[1].highlight, sizeof(shared[1].highlight), "two");
		/* Pieces of k bytes, then the end (NULL). */
		for (size_t i = 0; i < strlen(text) + k; i += k) {
			char piece[8] = "";
			size_t n = i < strlen(text) ? strlen(text + i) : 0;

			memcpy(piece, text + i, n < k ? n : k);
			for (int m = 0; m < CACHE_PAIRS; m++) {
				cache_step(&shared[m], &e, &fs, n ? piece :
				    NULL);
				cache_step(&alone[m], &e, &fa, n ? piece : NULL);
				buf_append(&fa, "", 1);
				buf_append(&fs, "", 1);
				CHECK_STR(fs.data, fa.data);
			}
		}
		for (int m = 0; m < CACHE_PAIRS; m++) {
			buf_reset(&ma);
			buf_reset(&ms);
			model_lines(&alone[m], &ma);
			model_lines(&shared[m], &ms);
			buf_append(&ma, "", 1);
			buf_append(&ms, "", 1);
			CHECK_STR(ms.data, ma.data);
			tui_draw_free(&alone[m]);
			tui_draw_free(&shared[m]);
		}
	}
	/* Most members drew from what another kept; each text was parsed
	 * once for all of them. */
	CHECK(cache.hits > cache.draws);
	CHECK(cache.md.hits > cache.md.parses);
	tui_draw_cache_free(&cache);
	CHECK_INT((int)cache.hits, 0);
	tui_editor_free(&e);
	buf_free(&fa);
	buf_free(&fs);
	buf_free(&ma);
	buf_free(&ms);
}

/* The agent's name has its own colour; no person's is red or it. */
static void
test_name_colours(void)
{
	char name[16];

	CHECK_INT(tui_draw_color("agent"), 35);
	for (int i = 0; i < 500; i++) {
		int c;

		snprintf(name, sizeof(name), "user%d", i);
		c = tui_draw_color(name);
		CHECK(c != 31 && c != 35 && c != 91 && c != 95);
	}
}

int
main(void)
{
	TEST(test_wrap_words);
	TEST(test_wrap_attrs_and_wide);
	TEST(test_markdown_inline);
	TEST(test_markdown_links);
	TEST(test_markdown_blocks);
	TEST(test_markdown_lists);
	TEST(test_markdown_tables);
	TEST(test_markdown_settled);
	TEST(test_markdown_hostile);
	TEST(test_stream_pieces);
	TEST(test_stream_same_as_whole);
	TEST(test_stream_redraw);
	TEST(test_stream_cache_same);
	TEST(test_name_colours);
	return unit_done("test_sshd_text");
}
