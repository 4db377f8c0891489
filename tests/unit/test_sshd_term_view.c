/*
 * test_sshd_term_view.c: a member's view of the shared terminal
 * (sshd/chat/term_view.c) from raw events: what it draws for windows of
 * several sizes (runs at their columns, clipped at the edge, wide
 * characters whole or not at all, colour only without NO_COLOR), what it
 * refuses from a hostile agent (escape sequences in cell text, sizes and
 * columns out of range, bad colours), and how keys are cut into input
 * (Ctrl-], UTF-8 split across reads, NUL, the chunk bound).  And /term in
 * chat_command.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../sshd/chat/chat.h"
#include "../../sshd/chat/term_view.h"
#include "unit.h"

/* Apply the JSON text ev to tv for a cols x rows window; the result, and
 * what was drawn in out. */
static int
apply(struct term_view *tv, const char *ev, struct buf *out, int cols,
    int rows)
{
	json_object *o = json_tokener_parse(ev);
	int r;

	buf_reset(out);
	r = term_view_apply(tv, o, out, cols, rows, "room");
	json_object_put(o);
	return r;
}

static void
test_draws_runs_at_their_columns(void)
{
	struct term_view *tv = term_view_new(1);
	struct buf b;

	buf_init(&b, 1 << 20);
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"full\":true,"
	    "\"cols\":20,\"rows\":3,\"cursor\":[2,1,1],\"lines\":[[0,[[0,1,1,"
	    "1,-1,\"red\"],[5,2,0,-1,-1,\"\xe6\xbc\xa2\xe5\xad\x97\"]]],[1,"
	    "[[0,1,0,-1,-1,\"$ \"]]]],\"members\":[\"alice\",\"bob\"]}", &b,
	    80, 10), 0);
	CHECK(strstr(b.data, "\x1b[H\x1b[2J") != NULL);	/* full: cleared */
	CHECK(strstr(b.data, "\x1b[1G\x1b[0;1;31mred") != NULL);
	CHECK(strstr(b.data, "\x1b[6G\x1b[0m\xe6\xbc\xa2\xe5\xad\x97") != NULL);
	CHECK(strstr(b.data, "\x1b[10;1H") != NULL);	/* the status row */
	CHECK(strstr(b.data, "alice, bob") != NULL);
	CHECK(strstr(b.data, "\x1b[2;3H\x1b[?25h") != NULL);	/* cursor */
	/* A narrower window: "red" cut after two columns, the wide pair
	 * (columns 5-8) not drawn past column 7. */
	buf_reset(&b);
	term_view_redraw(tv, &b, 7, 10, "room");
	CHECK(strstr(b.data, "\xe6\xbc\xa2") != NULL);
	CHECK(strstr(b.data, "\xe5\xad\x97") == NULL);
	buf_reset(&b);
	term_view_redraw(tv, &b, 2, 10, "room");
	CHECK(strstr(b.data, "mre") != NULL && strstr(b.data, "red") == NULL);
	/* An update redraws only its rows, the cursor, not the screen. */
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"full\":false,"
	    "\"cols\":20,\"rows\":3,\"cursor\":[0,2,0],\"lines\":[[2,[[0,1,0,"
	    "-1,-1,\"new\"]]]]}", &b, 40, 10), 0);
	CHECK(strstr(b.data, "\x1b[2J") == NULL);
	CHECK(strstr(b.data, "\x1b[3;1H") != NULL && strstr(b.data, "new"));
	CHECK(strstr(b.data, "red") == NULL);
	CHECK(strstr(b.data, "\x1b[?25l") != NULL);
	term_view_free(tv);
	buf_free(&b);
}

static void
test_no_color_keeps_bold_and_reverse(void)
{
	struct term_view *tv = term_view_new(0);
	struct buf b;

	buf_init(&b, 1 << 20);
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"full\":true,"
	    "\"cols\":10,\"rows\":2,\"cursor\":[0,0,1],\"lines\":[[0,[[0,1,17,"
	    "2,16777316,\"x\"]]]]}", &b, 10, 5), 0);
	CHECK(strstr(b.data, "\x1b[0;1;7mx") != NULL);
	CHECK(strstr(b.data, ";32") == NULL && strstr(b.data, ";48;2") == NULL);
	term_view_free(tv);
	buf_free(&b);
}

static void
test_refuses_what_a_terminal_must_not_see(void)
{
	struct term_view *tv = term_view_new(1);
	struct buf b;

	buf_init(&b, 1 << 20);
	/* Cell text with ESC, BEL, a C1 control: those runs are dropped. */
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"full\":true,"
	    "\"cols\":10,\"rows\":2,\"cursor\":[0,0,1],\"lines\":[[0,[[0,1,0,"
	    "-1,-1,\"\\u001b]2;EVIL\\u0007\"],[3,1,0,-1,-1,\"\\u009b31m\"],"
	    "[6,1,0,-1,-1,\"ok\"]]]]}", &b, 10, 5), 0);
	CHECK(strstr(b.data, "EVIL") == NULL && strstr(b.data, "\x07") == NULL);
	CHECK(strstr(b.data, "\xc2\x9b") == NULL);
	CHECK(strstr(b.data, "ok") != NULL);
	/* Out of range: columns, widths, colours, attributes. */
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"full\":false,"
	    "\"cols\":10,\"rows\":2,\"cursor\":[0,0,1],\"lines\":[[1,[[10,1,0,"
	    "-1,-1,\"a\"],[0,3,0,-1,-1,\"b\"],[0,1,0,-2,-1,\"c\"],[0,1,64,-1,"
	    "-1,\"d\"],[0,1,0,-1,33554432,\"e\"]]]]}", &b, 10, 5), 0);
	CHECK(strpbrk(b.data, "abcde") == NULL);
	/* A row past the screen is not kept; sizes out of range are refused
	 * whole. */
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"full\":false,"
	    "\"cols\":10,\"rows\":2,\"cursor\":[0,0,1],\"lines\":[[2,[[0,1,0,"
	    "-1,-1,\"z\"]]]]}", &b, 10, 5), 0);
	CHECK(strchr(b.data, 'z') == NULL);
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"cols\":501,\"rows\":2,"
	    "\"lines\":[]}", &b, 10, 5), -EINVAL);
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"cols\":10,\"rows\":0,"
	    "\"lines\":[]}", &b, 10, 5), -EINVAL);
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"cols\":10,\"rows\":2,"
	    "\"lines\":7}", &b, 10, 5), -EINVAL);
	/* A name with an escape is cleaned before the status line. */
	CHECK_INT(apply(tv, "{\"type\":\"term_screen\",\"full\":true,"
	    "\"cols\":10,\"rows\":2,\"cursor\":[0,0,1],\"lines\":[],"
	    "\"members\":[\"ev\\u001b[2Jil\"]}", &b, 60, 5), 0);
	CHECK(strstr(b.data, "ev[2Jil") != NULL);
	term_view_free(tv);
	buf_free(&b);
}

static void
test_keys_become_bounded_input(void)
{
	struct term_view *tv = term_view_new(1);
	struct buf b;
	char big[3000];
	int leave;

	buf_init(&b, 3 * TERM_VIEW_INPUT_CHUNK + 16);
	CHECK_INT(term_view_input(tv, "ls\r\x1d" "after", 9, &b, &leave), 4);
	CHECK(leave);
	CHECK_INT(b.len, 3);
	CHECK(memcmp(b.data, "ls\r", 3) == 0);
	/* A character split across reads waits for its end. */
	buf_reset(&b);
	CHECK_INT(term_view_input(tv, "a\xe6\xbc", 3, &b, &leave), 3);
	CHECK(!leave);
	CHECK_STR(b.data, "a");
	buf_reset(&b);
	CHECK_INT(term_view_input(tv, "\xa2z", 2, &b, &leave), 2);
	CHECK_STR(b.data, "\xe6\xbc\xa2z");
	/* NUL is dropped, a bad byte replaced. */
	buf_reset(&b);
	CHECK_INT(term_view_input(tv, "x\0y\xff", 4, &b, &leave), 4);
	CHECK_STR(b.data, "xy\xef\xbf\xbd");
	/* At most one chunk at a time. */
	memset(big, 'k', sizeof(big));
	buf_reset(&b);
	CHECK_INT(term_view_input(tv, big, sizeof(big), &b, &leave),
	    TERM_VIEW_INPUT_CHUNK);
	CHECK_INT(b.len, TERM_VIEW_INPUT_CHUNK);
	term_view_free(tv);
	buf_free(&b);
}

static void
test_term_command(void)
{
	json_object *o = NULL;
	char reply[256];

	CHECK_INT(chat_command("/term", NULL, &o, reply, sizeof(reply)), 4);
	CHECK(o == NULL);
}

int
main(void)
{
	TEST(test_draws_runs_at_their_columns);
	TEST(test_no_color_keeps_bold_and_reverse);
	TEST(test_refuses_what_a_terminal_must_not_see);
	TEST(test_keys_become_bounded_input);
	TEST(test_term_command);
	return unit_done("test_sshd_term_view");
}
