/*
 * test_sshd_text.c: how a chat line becomes screen rows: word wrap with a
 * hanging indent (sshd/chat/tui_wrap.c), light Markdown
 * (sshd/chat/tui_markdown.c), and the agent's streamed answer drawn from
 * both (sshd/chat/tui_draw.c), whatever pieces its text arrives in.
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

/* Inline Markdown of one line, coloured or not. */
static void
check_md(const char *line, int color, const char *want)
{
	struct tui_md md;
	struct buf b;

	tui_md_init(&md);
	buf_init(&b, 1 << 16);
	CHECK_INT(tui_md_render(&md, &b, line, strlen(line), color), 0);
	buf_append(&b, "", 1);
	CHECK_STR(b.data, want);
	buf_free(&b);
}

static void
test_markdown_inline(void)
{
	check_md("**b** *i* `c`", 1, "\x1b[0;1mb\x1b[0m \x1b[0;3mi\x1b[0m "
	    "\x1b[0;36mc\x1b[0m");
	check_md("a `c` b", 0, "a `c` b");
	check_md("***both***", 1, "\x1b[0;1;3mboth\x1b[0m");
	check_md("**bold *in* it**", 1, "\x1b[0;1mbold \x1b[0;1;3min"
	    "\x1b[0;1m it\x1b[0m");
	/* Unclosed, spaced or inside words: as typed. */
	check_md("**Und", 1, "**Und");
	check_md("2 * 3 * 4", 1, "2 * 3 * 4");
	check_md("snake_case_name", 1, "snake_case_name");
	check_md("\\*not\\*", 1, "*not*");
	check_md("`` a`b ``", 1, "\x1b[0;36ma`b\x1b[0m");
	check_md("__b__ _i_", 1, "\x1b[0;1mb\x1b[0m \x1b[0;3mi\x1b[0m");
}

static void
test_markdown_blocks(void)
{
	struct tui_md md;
	struct buf b;
	const char *fence[] = { "```sh", "echo *x*", "```" };

	check_md("## Title ##", 1, "\x1b[0;1mTitle\x1b[0m");
	check_md("# Top", 1, "\x1b[0;1;4mTop\x1b[0m");
	check_md("#hashtag", 1, "#hashtag");
	check_md("  - item *x*", 1, "  \xe2\x80\xa2 \x1f" "item "
	    "\x1b[0;3mx\x1b[0m");
	check_md("12. twelve", 1, "12. \x1ftwelve");
	check_md("* * *", 1, "\x1b[0;2m" "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80"
	    "\xe2\x94\x80\x1b[0m");
	/* A fence: its language, its code dim and untouched, no row for
	 * its end; the state moves only when a line ends. */
	tui_md_init(&md);
	buf_init(&b, 4096);
	CHECK_INT(tui_md_render(&md, &b, fence[0], strlen(fence[0]), 1), 0);
	buf_append(&b, "", 1);
	CHECK_STR(b.data, "    \x1b[0;2m\xe2\x94\x80\xe2\x94\x80 sh\x1b[0m");
	CHECK_INT(md.fence, 0);
	tui_md_end_line(&md, fence[0], strlen(fence[0]));
	CHECK_INT(md.fence, 1);
	buf_reset(&b);
	CHECK_INT(tui_md_render(&md, &b, fence[1], strlen(fence[1]), 1), 0);
	buf_append(&b, "", 1);
	CHECK_STR(b.data, "    \x1f\x1b[0;2mecho *x*\x1b[0m");
	tui_md_end_line(&md, fence[1], strlen(fence[1]));
	buf_reset(&b);
	CHECK_INT(tui_md_render(&md, &b, fence[2], strlen(fence[2]), 1), 1);
	tui_md_end_line(&md, fence[2], strlen(fence[2]));
	CHECK_INT(md.fence, 0);
	buf_free(&b);
}

/* A hostile line of markers renders in bounded work and leaves what it
 * cannot pair as typed. */
static void
test_markdown_hostile(void)
{
	static char line[4096];
	struct tui_md md;
	struct buf b;

	for (size_t i = 0; i + 3 <= sizeof(line) - 1; i += 3)
		memcpy(line + i, "*a ", 3);
	line[sizeof(line) - 1] = '\0';
	tui_md_init(&md);
	buf_init(&b, 1 << 20);
	CHECK_INT(tui_md_render(&md, &b, line, strlen(line), 1), 0);
	CHECK(memchr(b.data, '\x1b', b.len) == NULL);
	CHECK_INT(b.len, strlen(line));
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
		"\x1b[1;35magent:\x1b[0m \x1f\x1b[0;1mUndo\x1b[0m takes "
		    "\x1b[0;36mmake\x1b[0m back[2J",
		"       \x1f",
		"       \x1f    \x1b[0;2m\xe2\x94\x80\xe2\x94\x80 sh\x1b[0m",
		"       \x1f    \x1f\x1b[0;2mls\x1b[0m",
		"       \x1f" "end",
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
	TEST(test_markdown_blocks);
	TEST(test_markdown_hostile);
	TEST(test_stream_pieces);
	TEST(test_stream_redraw);
	TEST(test_name_colours);
	return unit_done("test_sshd_text");
}
