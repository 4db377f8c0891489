/*
 * fuzz_tui_editor.c: libFuzzer entry point for sshd/chat/tui_editor.c, the
 * chat's input line, driven as sshd/chat/chat.c drives it: key bytes through
 * the decoder (sshd/chat/tui_keys.c), each key applied as chat_key applies it.
 *
 * A reference model (a plain array and a cursor) takes the same edits; the
 * editor must match it after every key, keep cursor <= len <= cap and
 * bytes == the UTF-8 size of its code points <= max_bytes, and give back
 * exactly its code points as UTF-8 (tui_editor_utf8) at Enter.  Two line
 * limits run: a tiny one to reach the limit often, and chat's own.
 * Ctrl-K/U/W cut into a kill buffer that Ctrl-Y puts back, Alt-B/F move
 * by word, and Tab stands for a pasted line break (tui_editor_newline).
 * Moves and deletes go by grapheme cluster: the model steps over the
 * clusters sshd/chat/tui_width.c finds in its own array.  The view of the line
 * at a few widths keeps the cursor in view and never passes the width.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "tui_editor.h"
#include "tui_keys.h"
#include "tui_width.h"

#define CHAT_LINE (16 * 1024)	/* sshd/chat/chat.h: CHAT_MAX_LINE */

/* The reference: code points and a cursor. */
struct model {
	uint32_t cps[CHAT_LINE];
	size_t len, cursor, bytes, max;
	uint32_t kill[CHAT_LINE];	/* what Ctrl-K/U/W took last */
	size_t kill_len;
};

/* Insert at the cursor unless the line is full. */
static void
model_insert(struct model *m, uint32_t cp)
{
	size_t n = tui_utf8_len(cp);

	if (m->bytes + n > m->max)
		return;
	memmove(m->cps + m->cursor + 1, m->cps + m->cursor,
	    (m->len - m->cursor) * sizeof(m->cps[0]));
	m->cps[m->cursor++] = cp;
	m->len++;
	m->bytes += n;
}

/* Remove the code point at at. */
static void
model_remove(struct model *m, size_t at)
{
	m->bytes -= tui_utf8_len(m->cps[at]);
	memmove(m->cps + at, m->cps + at + 1,
	    (m->len - at - 1) * sizeof(m->cps[0]));
	m->len--;
}

/* The model's cluster boundaries around its cursor. */
static size_t
model_next(const struct model *m)
{
	return tui_width_cluster(m->cps, m->len, m->cursor, NULL);
}

static size_t
model_prev(const struct model *m)
{
	return tui_width_cluster_before(m->cps, m->len, m->cursor);
}

/* The start of the model's cluster holding at (a reference walk). */
static size_t
model_snap(const struct model *m, size_t at)
{
	size_t i = 0;

	while (i < at) {
		size_t next = tui_width_cluster(m->cps, m->len, i, NULL);

		if (next > at)
			break;
		i = next;
	}
	return i;
}

/* A cursor inside a cluster moves on to its end, as the editor's does. */
static void
model_snap_forward(struct model *m)
{
	if (m->cursor < m->len && model_snap(m, m->cursor) != m->cursor)
		m->cursor = tui_width_cluster(m->cps, m->len,
		    model_snap(m, m->cursor), NULL);
}

/* Remove [from, to) and put the cursor at from. */
static void
model_remove_range(struct model *m, size_t from, size_t to)
{
	while (to-- > from)
		model_remove(m, from);
	m->cursor = from;
}

/* Ctrl-K/U/W: keep [from, to) as the killed text (when there is any),
 * remove it. */
static void
model_kill(struct model *m, size_t from, size_t to)
{
	if (to == from)
		return;
	memcpy(m->kill, m->cps + from, (to - from) * sizeof(m->cps[0]));
	m->kill_len = to - from;
	model_remove_range(m, from, to);
}

static int
model_blank(uint32_t cp)
{
	return cp == ' ' || cp == '\t' || cp == '\n';
}

static int
model_wordch(uint32_t cp)
{
	return (cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') ||
	    (cp >= 'A' && cp <= 'Z') || cp >= 0x80;
}

/* Ctrl-W on the model: the word before the cursor, blanks after it. */
static void
model_kill_word(struct model *m)
{
	size_t i = m->cursor;

	while (i > 0 && model_blank(m->cps[i - 1]))
		i--;
	while (i > 0 && !model_blank(m->cps[i - 1]))
		i--;
	model_kill(m, model_snap(m, i), m->cursor);
}

/* Ctrl-Y on the model: the killed text, until the line is full. */
static void
model_yank(struct model *m)
{
	for (size_t i = 0; i < m->kill_len; i++) {
		if (m->bytes + tui_utf8_len(m->kill[i]) > m->max)
			break;
		model_insert(m, m->kill[i]);
	}
	model_snap_forward(m);
}

/* Alt-B / Alt-F on the model. */
static void
model_word(struct model *m, int left)
{
	if (left) {
		while (m->cursor > 0 && !model_wordch(m->cps[m->cursor - 1]))
			m->cursor--;
		while (m->cursor > 0 && model_wordch(m->cps[m->cursor - 1]))
			m->cursor--;
		m->cursor = model_snap(m, m->cursor);
		return;
	}
	while (m->cursor < m->len && !model_wordch(m->cps[m->cursor]))
		m->cursor++;
	while (m->cursor < m->len && model_wordch(m->cps[m->cursor]))
		m->cursor++;
	model_snap_forward(m);
}

/* The keys added with the line editor: Ctrl-K/W/Y, Alt-B/F, and Tab as
 * a pasted line break (the one control a line may hold). */
static void
apply_more(struct tui_editor *e, struct model *m, const struct tui_key *k)
{
	if (k->type == TUI_KEY_TAB) {
		int r = tui_editor_newline(e);

		FUZZ_CHECK((r == -ENOBUFS) == (m->bytes + 1 > m->max));
		model_insert(m, '\n');
	} else if (k->type == TUI_KEY_ALT && (k->cp == 'b' || k->cp == 'f')) {
		if (k->cp == 'b')
			tui_editor_word_left(e);
		else
			tui_editor_word_right(e);
		model_word(m, k->cp == 'b');
	} else if (k->type == TUI_KEY_CTRL && k->cp == 'k') {
		tui_editor_kill_end(e);
		model_kill(m, m->cursor, m->len);
	} else if (k->type == TUI_KEY_CTRL && k->cp == 'w') {
		tui_editor_kill_word(e);
		model_kill_word(m);
	} else if (k->type == TUI_KEY_CTRL && k->cp == 'y') {
		tui_editor_yank(e);
		model_yank(m);
	}
}

/* Apply one key to both, as chat_key does. */
static void
apply(struct tui_editor *e, struct model *m, const struct tui_key *k)
{
	static char line[CHAT_LINE + 8];
	int r;

	switch (k->type) {
	case TUI_KEY_CHAR:
		r = tui_editor_insert(e, k->cp);
		/* Controls, surrogates and beyond U+10FFFF never get in. */
		if (k->cp < 0x20 || (k->cp >= 0x7f && k->cp <= 0x9f) ||
		    (k->cp >= 0xd800 && k->cp <= 0xdfff) || k->cp > 0x10ffff) {
			FUZZ_CHECK(r == -EINVAL);
			break;
		}
		FUZZ_CHECK(r == 0 || r == -ENOBUFS);
		FUZZ_CHECK((r == -ENOBUFS) ==
		    (m->bytes + tui_utf8_len(k->cp) > m->max));
		model_insert(m, k->cp);
		if (r == 0)
			model_snap_forward(m);
		break;
	case TUI_KEY_ENTER: {
		size_t n = tui_editor_utf8(e, 0, e->len, line, sizeof(line));
		size_t o = 0;
		char enc[4];

		FUZZ_CHECK(n == m->bytes && line[n] == '\0');
		for (size_t i = 0; i < m->len; i++) {
			size_t w = tui_utf8_put(m->cps[i], enc);

			FUZZ_CHECK(memcmp(line + o, enc, w) == 0);
			o += w;
		}
		tui_editor_clear(e);
		m->len = m->cursor = m->bytes = 0;
		break;
	}
	case TUI_KEY_BACKSPACE:
		tui_editor_backspace(e);
		if (m->cursor > 0)
			model_remove_range(m, model_prev(m), m->cursor);
		break;
	case TUI_KEY_DELETE:
		tui_editor_delete(e);
		if (m->cursor < m->len)
			model_remove_range(m, m->cursor, model_next(m));
		break;
	case TUI_KEY_LEFT:
		tui_editor_left(e);
		if (m->cursor > 0)
			m->cursor = model_prev(m);
		break;
	case TUI_KEY_RIGHT:
		tui_editor_right(e);
		if (m->cursor < m->len)
			m->cursor = model_next(m);
		break;
	case TUI_KEY_HOME:
		tui_editor_home(e);
		m->cursor = 0;
		break;
	case TUI_KEY_END:
		tui_editor_end(e);
		m->cursor = m->len;
		break;
	case TUI_KEY_CTRL:
		if (k->cp == 'c') {
			tui_editor_clear(e);
			m->len = m->cursor = m->bytes = 0;
		} else if (k->cp == 'd' && m->len > 0) {
			tui_editor_delete(e);
			if (m->cursor < m->len)
				model_remove_range(m, m->cursor,
				    model_next(m));
		} else if (k->cp == 'u') {
			tui_editor_kill_start(e);
			model_kill(m, 0, m->cursor);
		} else if (k->cp == 'a') {
			tui_editor_home(e);
			m->cursor = 0;
		} else if (k->cp == 'e') {
			tui_editor_end(e);
			m->cursor = m->len;
		} else {
			apply_more(e, m, k);
		}
		break;
	default:
		apply_more(e, m, k);
		break;
	}
}

/* The editor equals the model and keeps its invariants. */
static void
check(const struct tui_editor *e, const struct model *m)
{
	size_t bytes = 0;

	FUZZ_CHECK(e->cursor <= e->len && e->len <= e->cap);
	FUZZ_CHECK(e->len == m->len && e->cursor == m->cursor);
	FUZZ_CHECK(e->bytes == m->bytes && e->bytes <= e->max_bytes);
	for (size_t i = 0; i < e->len; i++)
		bytes += tui_utf8_len(e->cps[i]);
	FUZZ_CHECK(bytes == e->bytes);
	FUZZ_CHECK(e->len == 0 ||
	    memcmp(e->cps, m->cps, e->len * sizeof(m->cps[0])) == 0);
}

/* The view at a width from the hash: whole clusters, the cursor in it
 * and short of the width, no more columns than the width. */
static void
check_view(const struct tui_editor *e, uint64_t h)
{
	int cols = 1 + (int)((h >> 32) % 40), col;
	size_t from, to;

	tui_editor_view(e, cols, &from, &to, &col);
	FUZZ_CHECK(from <= e->cursor && to <= e->len && from <= to);
	FUZZ_CHECK(col == tui_width_cps(e->cps, from, e->cursor));
	FUZZ_CHECK(col < cols);
	FUZZ_CHECK(tui_width_cps(e->cps, from, to) <= cols);
}

/* Some slices of the line as UTF-8 into small buffers. */
static void
check_slices(const struct tui_editor *e, uint64_t h)
{
	char out[16];
	size_t from = (size_t)(h % (e->len + 2));
	size_t to = from + (size_t)((h >> 16) % 8);
	size_t outlen = (size_t)((h >> 24) % sizeof(out));
	size_t n = tui_editor_utf8(e, from, to, out, outlen);

	if (outlen == 0) {
		FUZZ_CHECK(n == 0);
		return;
	}
	FUZZ_CHECK(n < outlen && out[n] == '\0');
}

/* Type the input into an editor of max_bytes. */
static void
run(const uint8_t *p, size_t size, size_t max_bytes)
{
	static struct model m;
	struct tui_editor e;
	struct tui_keys k;
	struct tui_key keys[2];

	tui_editor_init(&e, max_bytes);
	tui_keys_init(&k);
	m.len = m.cursor = m.bytes = m.kill_len = 0;
	m.max = max_bytes;
	for (size_t i = 0; i < size; i++) {
		int got = tui_keys_feed(&k, p[i], keys);

		for (int j = 0; j < got; j++) {
			apply(&e, &m, &keys[j]);
			check(&e, &m);
		}
		check_slices(&e, fuzz_hash(p, i + 1));
		check_view(&e, fuzz_hash(p, i + 1));
	}
	tui_editor_free(&e);
}

/* libFuzzer's entry: Key bytes typed into two editors. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	run(data, size, 9);
	run(data, size, CHAT_LINE);
	return 0;
}
