/*
 * test_agent_term.c: the shared terminal's screen rows as JSON
 * (agent/term/term_encode.c), from bytes fed to a real libvterm: runs split by
 * look and width, wide characters at their columns, quotes escaped,
 * trailing blanks left out, and nothing the shell printed as an escape
 * sequence (a title, a colour) left in the text.
 */
#include <json-c/json.h>
#include <string.h>
#include <vterm.h>

#include "../../agent/term/term_encode.h"
#include "unit.h"

/* Row y of a cols x 4 terminal after bytes, encoded. */
static void
encode_after(const char *bytes, int cols, int y, struct buf *out)
{
	VTerm *vt = vterm_new(4, cols);
	VTermScreen *vs;

	vterm_set_utf8(vt, 1);
	vs = vterm_obtain_screen(vt);
	vterm_screen_reset(vs, 1);
	vterm_input_write(vt, bytes, strlen(bytes));
	buf_reset(out);
	CHECK_INT(term_encode_row(vs, y, cols, out), 0);
	vterm_free(vt);
}

static void
test_runs_and_widths(void)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	encode_after("\x1b[1;31mred\x1b[0m \xe6\xbc\xa2x", 12, 0, &b);
	CHECK_STR(b.data, "[0,[[0,1,1,1,-1,\"red\"],[3,1,0,-1,-1,\" \"],"
	    "[4,2,0,-1,-1,\"\xe6\xbc\xa2\"],[6,1,0,-1,-1,\"x\"]]]");
	encode_after("a\"b\\", 12, 0, &b);
	CHECK_STR(b.data, "[0,[[0,1,0,-1,-1,\"a\\\"b\\\\\"]]]");
	encode_after("top\r\n", 12, 1, &b);
	CHECK_STR(b.data, "[1,[]]");
	/* 24-bit and 256 colours; a coloured blank is kept. */
	encode_after("\x1b[38;5;200mp\x1b[48;2;1;2;3m \x1b[0m", 12, 0, &b);
	CHECK_STR(b.data, "[0,[[0,1,0,200,-1,\"p\"],[1,1,0,200,16843267,\" \"]]]");
	buf_free(&b);
}

static void
test_escapes_do_not_reach_the_text(void)
{
	struct buf b;
	json_object *o;

	buf_init(&b, 1 << 20);
	encode_after("\x1b]2;EVIL\x07\x1b[6n\x1b[?1049hok\x07\x1b" "c" "x", 12, 0,
	    &b);
	CHECK(strchr(b.data, 0x1b) == NULL);
	CHECK(strstr(b.data, "EVIL") == NULL);
	o = json_tokener_parse(b.data);
	CHECK(o != NULL && json_object_is_type(o, json_type_array));
	json_object_put(o);
	buf_free(&b);
}

int
main(void)
{
	TEST(test_runs_and_widths);
	TEST(test_escapes_do_not_reach_the_text);
	return unit_done("test_agent_term");
}
