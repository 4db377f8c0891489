/*
 * fuzz_term_view.c: libFuzzer entry point for sshd/chat/term_view.c, which
 * draws the shared terminal's cells (term_screen events from the agent)
 * onto members' terminals and cuts their keys into term_input.
 * Invariants: whatever the event, what is drawn holds no control byte
 * but ESC, and every ESC starts a CSI sequence (no OSC: no title, no
 * query, no mode change the view did not make); the keys, fed in any
 * pieces, are all taken and come out as valid UTF-8 without NUL.
 */
#include <json-c/json.h>
#include <string.h>

#include "fuzz.h"
#include "term_view.h"
#include "utf8.h"

/* Only the view's own sequences: ESC always followed by '['. */
static void
check_drawn(const struct buf *b)
{
	for (size_t i = 0; i < b->len; i++) {
		unsigned char c = (unsigned char)b->data[i];

		if (c == 0x1b)
			FUZZ_CHECK(i + 1 < b->len && b->data[i + 1] == '[');
		else
			FUZZ_CHECK(c >= 0x20 && c != 0x7f);
	}
}

/* The input as an event, applied and drawn at two window sizes. */
static void
fuzz_event(const uint8_t *data, size_t size)
{
	static const int sizes[][2] = { { 80, 24 }, { 7, 3 } };
	json_tokener *tok = json_tokener_new();
	json_object *ev = json_tokener_parse_ex(tok, (const char *)data,
	    (int)size);
	struct term_view *tv = term_view_new(1);
	struct buf b;

	buf_init(&b, 1 << 24);
	for (size_t i = 0; ev && tv && i < 2; i++) {
		buf_reset(&b);
		term_view_apply(tv, ev, &b, sizes[i][0], sizes[i][1], "room");
		check_drawn(&b);
		buf_reset(&b);
		term_view_redraw(tv, &b, sizes[i][0], sizes[i][1], "room");
		check_drawn(&b);
	}
	buf_free(&b);
	term_view_free(tv);
	json_object_put(ev);
	json_tokener_free(tok);
}

/* The input as keys, in the pieces of each plan. */
static void
fuzz_keys(const uint8_t *data, size_t size)
{
	struct term_view *tv = term_view_new(1);
	struct buf b;
	size_t off = 0, n;
	int leave;

	buf_init(&b, 3 * TERM_VIEW_INPUT_CHUNK + 16);
	while (tv && off < size) {
		buf_reset(&b);
		n = term_view_input(tv, (const char *)data + off, size - off, &b,
		    &leave);
		FUZZ_CHECK(n >= 1 && n <= size - off);
		FUZZ_CHECK(utf8_valid(b.data ? b.data : "", b.len));
		off += n;
	}
	buf_free(&b);
	term_view_free(tv);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_event(data, size);
	fuzz_keys(data, size);
	return 0;
}
