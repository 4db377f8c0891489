/*
 * fuzz_tui_width.c: libFuzzer entry point for sshd/chat/tui_width.c, which
 * measures every text the chat draws (anything people, commands and the
 * model send).  Invariants: each unit is 1..n bytes and 0..2 columns; the
 * units tile the text; a fitted prefix is whole units within the width;
 * the width of a text is the sum of its units'.  (Rows are tui_wrap.c's,
 * fuzzed by fuzz_tui_text.)
 */
#include "fuzz.h"
#include "tui_width.h"

/* libFuzzer's entry: the input as text, measured at a few widths. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	int total = 0, w, used;

	for (size_t i = 0, len; i < size; i += len) {
		len = tui_width_next(s + i, size - i, &w);
		FUZZ_CHECK(len >= 1 && len <= size - i);
		FUZZ_CHECK(w >= 0 && w <= 2);
		total += w;
	}
	FUZZ_CHECK(total == tui_width_str(s, size));
	for (int cols = 1; cols <= 81; cols += 16) {
		size_t fit = tui_width_fit(s, size, cols, &used);

		FUZZ_CHECK(fit <= size && used <= cols);
		FUZZ_CHECK(used == tui_width_str(s, fit));
	}
	return 0;
}
