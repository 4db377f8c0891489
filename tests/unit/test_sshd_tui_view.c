/*
 * test_sshd_tui_view.c: the chat's lines as screen rows
 * (sshd/chat/tui_view.c) and the view scrolled back by rows that
 * tui_draw_view draws from them: rows as tui_wrap.c makes them (wide
 * characters included), the rows of a line cut with its attributes
 * kept, the new lines below a view, and views that are full whatever
 * their offset.
 */
#include <string.h>

#include "unit.h"
#include "../../sshd/chat/tui_draw.h"
#include "../../sshd/chat/tui_editor.h"
#include "../../sshd/chat/tui_model.h"
#include "../../sshd/chat/tui_view.h"

#define ADD(m, s) tui_model_add((m), (s), strlen(s))
#define R "\x1b[0m\r\n"

/* The rows emitted for rows [from, from + count) of line, as a string. */
static void
rows_of(const char *line, int cols, int from, int count, char *out,
    size_t len)
{
	struct buf b;

	buf_init(&b, 4096);
	tui_view_emit_rows(&b, line, strlen(line), cols, from, count);
	snprintf(out, len, "%.*s", (int)b.len, b.data ? b.data : "");
	buf_free(&b);
}

static void
test_rows_and_lines_below(void)
{
	struct tui_model m;

	tui_model_init(&m);
	ADD(&m, "abc");				/* 1 row at 10 */
	ADD(&m, "0123456789012345678901234");	/* 3 rows */
	ADD(&m, "");				/* 1 row */
	CHECK_INT(tui_view_rows(&m, 10), 5);
	CHECK_INT(tui_view_rows(&m, 80), 3);
	CHECK_INT(tui_view_newest_rows(&m, 10, 1), 1);
	CHECK_INT(tui_view_newest_rows(&m, 10, 2), 4);
	CHECK_INT(tui_view_newest_rows(&m, 10, 99), 5);
	/* Lines with a row among the lowest `below` rows. */
	CHECK_INT(tui_view_lines_below(&m, 10, 0, 3), 0);
	CHECK_INT(tui_view_lines_below(&m, 10, 1, 3), 1);
	CHECK_INT(tui_view_lines_below(&m, 10, 2, 3), 2);	/* in part */
	CHECK_INT(tui_view_lines_below(&m, 10, 4, 3), 2);
	CHECK_INT(tui_view_lines_below(&m, 10, 5, 3), 3);
	CHECK_INT(tui_view_lines_below(&m, 10, 5, 1), 1);	/* new: 1 */
	tui_model_free(&m);
}

static void
test_emit_rows_keeps_attributes(void)
{
	char out[256];

	rows_of("\x1b[36mAAAAAAAAAABB", 10, 0, 1, out, sizeof(out));
	CHECK_STR(out, "\x1b[36mAAAAAAAAAA" R);
	/* The colour set in the row left out still holds. */
	rows_of("\x1b[36mAAAAAAAAAABB", 10, 1, 1, out, sizeof(out));
	CHECK_STR(out, "\x1b[36mBB" R);
	/* Each row ends reset; the next starts with the attributes in effect
	 * since the last reset. */
	rows_of("\x1b[1mAAAAAAAAAA\x1b[0mBBBBBBBBBBCC", 10, 1, 2, out,
	    sizeof(out));
	CHECK_STR(out, "\x1b[0mBBBBBBBBBB" R "\x1b[0mCC" R);
	rows_of("\x1b[1mAAAAAAAAAA\x1b[0mBBBBBBBBBBCC", 10, 1, 1, out,
	    sizeof(out));
	CHECK_STR(out, "\x1b[0mBBBBBBBBBB" R);
	/* A wide character that does not fit in the last column starts the
	 * next row. */
	rows_of("AAAAAAAAA\xe6\xbc\xa2X", 10, 1, 1, out, sizeof(out));
	CHECK_STR(out, "\xe6\xbc\xa2X" R);
	rows_of("AAAAAAAAA\xe6\xbc\xa2X", 10, 0, 1, out, sizeof(out));
	CHECK_STR(out, "AAAAAAAAA" R);
	rows_of("", 10, 0, 1, out, sizeof(out));
	CHECK_STR(out, R);
}

/* tui_draw_view of a 10x5 screen (4 rows above the input line) at
 * offset: the view's rows, after the clear, as one string. */
static void
view_at(struct tui_draw *d, size_t offset, char *out, size_t len)
{
	static const char clear[] = "\x1b[0m\x1b[H\x1b[2J";
	struct tui_editor ed;
	struct buf b;
	const char *p, *q;

	tui_editor_init(&ed, 64);
	buf_init(&b, 1 << 16);
	tui_draw_view(d, &b, "r", &ed, NULL, offset);
	buf_append(&b, "", 1);
	p = b.data ? strstr(b.data, clear) : NULL;
	p = p ? p + strlen(clear) : "";
	q = strstr(p, "\x1b[1mr> ");	/* the input line */
	snprintf(out, len, "%.*s", (int)(q ? q - p : 0), p);
	buf_free(&b);
	tui_editor_free(&ed);
}

static void
test_view_is_full_at_every_offset(void)
{
	struct tui_draw d;
	char out[512];

	tui_draw_init(&d, 1, 0, 1, 10, 5);
	CHECK_INT(tui_draw_view_height(&d), 4);
	ADD(&d.model, "a");
	ADD(&d.model, "bbbbbbbbbbBBBBB");	/* 2 rows */
	ADD(&d.model, "c");
	ADD(&d.model, "d");
	ADD(&d.model, "e");
	/* Live: the wrapped line shows its last row at the top. */
	view_at(&d, 0, out, sizeof(out));
	CHECK_STR(out, "BBBBB" R "c" R "d" R "e" R);
	/* One row back: the wrapped line whole, a row each. */
	view_at(&d, 1, out, sizeof(out));
	CHECK_STR(out, "bbbbbbbbbb" R "BBBBB" R "c" R "d" R);
	/* The highest view: the oldest line's first row at the top. */
	view_at(&d, 2, out, sizeof(out));
	CHECK_STR(out, "a" R "bbbbbbbbbb" R "BBBBB" R "c" R);
	/* Three rows back the wrapped line shows its first row at the
	 * bottom: nothing is left out between views. */
	tui_model_free(&d.model);
	tui_model_init(&d.model);
	ADD(&d.model, "a");
	ADD(&d.model, "b");
	ADD(&d.model, "c");
	ADD(&d.model, "dddddddddd");
	ADD(&d.model, "DDDDDDDDDDxx");	/* 2 rows */
	ADD(&d.model, "e");
	view_at(&d, 2, out, sizeof(out));
	CHECK_STR(out, "b" R "c" R "dddddddddd" R "DDDDDDDDDD" R);
	tui_draw_free(&d);
}

int
main(void)
{
	TEST(test_rows_and_lines_below);
	TEST(test_emit_rows_keeps_attributes);
	TEST(test_view_is_full_at_every_offset);
	return unit_done("test_sshd_tui_view");
}
