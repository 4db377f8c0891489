/*
 * fuzz_tui_keys.c: libFuzzer entry point for sshd/chat/tui_keys.c, the decoder
 * of what a person's terminal sends (any bytes a client likes).
 *
 * The input is fed one byte at a time (the decoder's only way).  Checks
 * after every byte: 0 to 2 keys, of known types; a character is a Unicode
 * scalar value that is not a C0 control or DEL; Ctrl keys carry the
 * letter of a C0 control (Tab is its own key), Alt keys a printable ASCII
 * character; the state stays within its bounds (seqlen below
 * TUI_KEYS_MAX_SEQ, need 0..3, a legacy mouse report 0..3 bytes to go).  Feeding the same bytes to a fresh decoder
 * gives the same keys (no hidden state).
 */
#include <string.h>

#include "fuzz.h"
#include "tui_keys.h"

/* One key is well formed. */
static void
check_key(const struct tui_key *k)
{
	FUZZ_CHECK(k->type >= TUI_KEY_CHAR && k->type <= TUI_KEY_WHEEL_DOWN);
	if (k->type == TUI_KEY_CHAR) {
		FUZZ_CHECK(k->cp >= 0x20 && k->cp != 0x7f);
		FUZZ_CHECK(k->cp <= 0x10ffff);
		FUZZ_CHECK(k->cp < 0xd800 || k->cp > 0xdfff);
	}
	if (k->type == TUI_KEY_CTRL)
		FUZZ_CHECK(k->cp >= '`' && k->cp <= 'a' + 30 && k->cp != 'i');
	if (k->type == TUI_KEY_ALT)
		FUZZ_CHECK(k->cp > 0x20 && k->cp < 0x7f);
}

/* Decode all bytes; a hash of the keys. */
static uint64_t
decode(const uint8_t *p, size_t n)
{
	struct tui_keys k;
	struct tui_key out[2];
	uint64_t h = 1469598103934665603ull;

	tui_keys_init(&k);
	for (size_t i = 0; i < n; i++) {
		int got;

		memset(out, 0xa5, sizeof(out));
		got = tui_keys_feed(&k, p[i], out);
		FUZZ_CHECK(got >= 0 && got <= 2);
		FUZZ_CHECK(k.seqlen >= 0 && k.seqlen < TUI_KEYS_MAX_SEQ);
		FUZZ_CHECK(k.need >= 0 && k.need <= 3);
		FUZZ_CHECK(k.x10 >= 0 && k.x10 <= 3);
		for (int j = 0; j < got; j++) {
			check_key(&out[j]);
			h = (h ^ out[j].type) * 1099511628211ull;
			h = (h ^ out[j].cp) * 1099511628211ull;
		}
	}
	return h;
}

/* libFuzzer's entry: Key bytes, decoded twice. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FUZZ_CHECK(decode(data, size) == decode(data, size));
	return 0;
}
