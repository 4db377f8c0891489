/*
 * fuzz_tui_text.c: libFuzzer entry point for how the chat draws text from
 * the room (sshd/chat/tui_draw.c with tui_markdown.c, which draws
 * libcmark-gfm's tree, and tui_wrap.c): the input is an agent's answer,
 * fed as streamed deltas whole, a code point at a time and in random
 * pieces, and also drawn as a finished message and parsed for the blocks
 * a stream may print (tui_md_settled).  Invariants: every plan keeps the
 * same lines (a marker, fence or table split across deltas is drawn as
 * the whole text is), when no line is long enough to be ended early; the
 * closed blocks end at a line's end; nothing written to the terminal or
 * kept holds a control byte but the chat's own SGR escapes, CR, LF and
 * (kept only) the wrap mark; every row fits its width; the rows counted
 * are the rows printed; a member drawing from a cache shared by every
 * plan (tui_draw_cache, as atriumd-net's members share one) writes and
 * keeps the same bytes as the member drawing alone.
 */
#include <string.h>

#include "fuzz.h"
#include "tui_draw.h"
#include "tui_markdown.h"
#include "tui_width.h"
#include "tui_wrap.h"

/* Whether s[0..n) holds only text, LF, CR (out only), the mark (kept
 * only) and SGR escapes "ESC [ digits and ; m". */
static int
only_sgr(const char *s, size_t n, int kept)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < n; i++) {
		if (u[i] == 0x1b) {
			size_t j = i + 1;

			if (j >= n || u[j] != '[')
				return 0;
			for (j++; j < n && ((u[j] >= '0' && u[j] <= '9') ||
			    u[j] == ';'); j++)
				;
			if (j >= n || u[j] != 'm')
				return 0;
			i = j;
		} else if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 &&
		    u[i + 1] < 0xa0) {
			return 0;	/* a C1 control */
		} else if (u[i] < 0x20 && u[i] != '\n' && u[i] != '\r' &&
		    !(kept && u[i] == TUI_WRAP_MARK)) {
			return 0;
		} else if (u[i] == 0x7f) {
			return 0;
		}
	}
	return 1;
}

/* The model's lines, newest first, joined by LF into out. */
static void
model_text(const struct tui_draw *d, struct buf *out)
{
	size_t pos = 0, len;
	const char *l;

	while (tui_model_prev(&d->model, &pos, &l, &len)) {
		FUZZ_CHECK(only_sgr(l, len, 1));
		buf_append(out, l, len);
		buf_append(out, "\n", 1);
	}
}

/* Every line wraps into rows no wider than cols (a lone wide character
 * in a one-column row aside), as many as tui_wrap_rows counts. */
static void
check_rows(const struct tui_draw *d, int cols)
{
	size_t pos = 0, len, start, end;
	const char *l;

	while (tui_model_prev(&d->model, &pos, &l, &len)) {
		struct tui_wrap w;
		int rows = 0;

		tui_wrap_init(&w, l, len, cols);
		while (tui_wrap_next(&w, &start, &end)) {
			struct buf row;
			int width;

			buf_init(&row, 1 << 20);
			tui_wrap_put(&w, &row, start, end);
			width = row.len ? tui_width_str(row.data, row.len) : 0;
			FUZZ_CHECK(width <= cols || (cols == 1 && width == 2));
			buf_free(&row);
			rows++;
		}
		FUZZ_CHECK(rows == tui_wrap_rows(l, len, cols));
	}
}

/* Stream text as deltas cut by plan (at code point starts), end the
 * answer, and return what the model kept in *kept; a second member
 * drawing from cache must write and keep the same. */
static void
stream(const char *text, size_t n, enum fuzz_plan plan, struct buf *kept,
    struct tui_draw_cache *cache)
{
	struct fuzz_split split;
	struct tui_draw d, c;
	struct buf out, cout, ckept;
	char piece[1024];

	tui_draw_init(&d, 1, 1, 1, 40, 12);
	tui_draw_init(&c, 1, 1, 1, 40, 12);
	c.cache = cache;
	buf_init(&out, 1 << 24);
	buf_init(&cout, 1 << 24);
	buf_init(&ckept, 1 << 24);
	fuzz_split_init(&split, plan, (const uint8_t *)text, n, 512);
	for (size_t i = 0; i < n;) {
		size_t len = fuzz_split_next(&split, n - i);

		while (i + len < n && ((unsigned char)text[i + len] & 0xc0) ==
		    0x80)
			len++;	/* a delta is whole code points */
		if (len >= sizeof(piece))
			len = sizeof(piece) - 1;
		memcpy(piece, text + i, len);
		piece[len] = '\0';
		tui_draw_stream(&c, &cout, piece);
		tui_draw_stream(&d, &out, piece);
		i += len;
	}
	tui_draw_stream_end(&c, &cout);
	tui_draw_stream_end(&d, &out);
	FUZZ_CHECK(only_sgr(out.data ? out.data : "", out.len, 0));
	FUZZ_CHECK(cout.len == out.len && (!out.len ||
	    memcmp(cout.data, out.data, out.len) == 0));
	model_text(&d, kept);
	model_text(&c, &ckept);
	FUZZ_CHECK(ckept.len == kept->len && (!ckept.len ||
	    memcmp(ckept.data, kept->data, ckept.len) == 0));
	check_rows(&d, 40);
	check_rows(&d, 1);
	check_rows(&d, 17);
	buf_free(&out);
	buf_free(&cout);
	buf_free(&ckept);
	tui_draw_free(&d);
	tui_draw_free(&c);
}

/* Whether some line of s[0..n) is long enough to be ended early. */
static int
has_long_line(const char *s, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		run = s[i] == '\n' ? 0 : run + 1;
		if (run > TUI_DRAW_MAX_LINE)
			return 1;
	}
	return 0;
}

/* libFuzzer's entry: the input, cleaned as the chat cleans what the room
 * sends, as an answer streamed three ways and as a message. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct buf clean, whole, cut;
	struct tui_draw_cache cache;
	struct tui_draw d;
	struct buf out;
	char *text;

	if (size > 16384)
		return 0;
	buf_init(&clean, size * 3 + 1);
	tui_draw_sanitize(&clean, (const char *)data, size, "\n");
	text = fuzz_cstring((const uint8_t *)(clean.data ? clean.data : ""),
	    clean.len);
	{
		long number;
		int gap;
		size_t off = tui_md_settled(text, clean.len, &gap, &number);

		FUZZ_CHECK(off < clean.len || !off);
		FUZZ_CHECK(!off || text[off - 1] == '\n');
		FUZZ_CHECK(number >= 0 && number <= TUI_MD_MAX_NUMBER);
	}
	memset(&cache, 0, sizeof(cache));
	buf_init(&whole, 1 << 24);
	stream(text, clean.len, FUZZ_WHOLE, &whole, &cache);
	for (enum fuzz_plan p = FUZZ_BYTES; p < FUZZ_NPLANS; p++) {
		buf_init(&cut, 1 << 24);
		stream(text, clean.len, p, &cut, &cache);
		if (!has_long_line(text, clean.len))
			FUZZ_CHECK(cut.len == whole.len && (!cut.len ||
			    memcmp(cut.data, whole.data, cut.len) == 0));
		buf_free(&cut);
	}
	/* The raw input as a person's message, in a narrow window. */
	tui_draw_init(&d, 1, 1, 1, 20, 6);
	buf_init(&out, 1 << 24);
	text = realloc(text, size + 1);
	FUZZ_CHECK(text != NULL);
	memcpy(text, data, size);
	text[size] = '\0';
	tui_draw_line(&d, &out, TUI_STYLE_MESSAGE, "alice", text);
	FUZZ_CHECK(only_sgr(out.data ? out.data : "", out.len, 0));
	check_rows(&d, 20);
	buf_free(&out);
	tui_draw_free(&d);
	free(text);
	buf_free(&whole);
	buf_free(&clean);
	tui_draw_cache_free(&cache);
	return 0;
}
