/*
 * fuzz_tui_editor.c: libFuzzer entry point for sshd/tui_editor.c, the
 * chat's input line, driven as sshd/chat.c drives it: key bytes through
 * the decoder (sshd/tui_keys.c), each key applied as chat_key applies it.
 *
 * A reference model (a plain array and a cursor) takes the same edits; the
 * editor must match it after every key, keep cursor <= len <= cap and
 * bytes == the UTF-8 size of its code points <= max_bytes, and give back
 * exactly its code points as UTF-8 (tui_editor_utf8) at Enter.  Two line
 * limits run: a tiny one to reach the limit often, and chat's own.
 * Moves and deletes go by grapheme cluster: the model steps over the
 * clusters sshd/tui_width.c finds in its own array.  The view of the line
 * at a few widths keeps the cursor in view and never passes the width.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "tui_editor.h"
#include "tui_keys.h"
#include "tui_width.h"

#define CHAT_LINE (16 * 1024)	/* sshd/chat.h: CHAT_MAX_LINE */

/* The reference: code points and a cursor. */
struct model {
	uint32_t cps[CHAT_LINE];
	size_t len, cursor, bytes, max;
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

/* Remove [from, to) and put the cursor at from. */
static void
model_remove_range(struct model *m, size_t from, size_t to)
{
	while (to-- > from)
		model_remove(m, from);
	m->cursor = from;
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
			while (m->cursor > 0)
				model_remove(m, --m->cursor);
		} else if (k->cp == 'a') {
			tui_editor_home(e);
			m->cursor = 0;
		} else if (k->cp == 'e') {
			tui_editor_end(e);
			m->cursor = m->len;
		}
		break;
	default:
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
	m.len = m.cursor = m.bytes = 0;
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
