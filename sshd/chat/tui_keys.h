/*
 * tui_keys.h: bytes from a terminal to key events.  A state machine fed one
 * byte at a time, so input split at any boundary decodes the same; UTF-8 is
 * decoded here (bad sequences give U+FFFD), escape sequences (CSI, SS3) map
 * to keys or are dropped whole; ESC before a printable ASCII key is that
 * key with Alt.  Bracketed paste (ESC [ 200 ~ ... ESC [ 201 ~) gives
 * PASTE_START and PASTE_END around the pasted keys.  Mouse reports (SGR,
 * ESC [ < b ; x ; y M/m, and the legacy ESC [ M b x y) give WHEEL_UP and
 * WHEEL_DOWN for the wheel and nothing for clicks or other buttons.  No
 * I/O.
 */
#ifndef ATRIUMD_TUI_KEYS_H
#define ATRIUMD_TUI_KEYS_H

#include <stdint.h>

enum tui_key_type {
	TUI_KEY_CHAR,		/* cp holds a printable code point */
	TUI_KEY_ENTER,
	TUI_KEY_BACKSPACE,
	TUI_KEY_DELETE,
	TUI_KEY_LEFT,
	TUI_KEY_RIGHT,
	TUI_KEY_UP,
	TUI_KEY_DOWN,
	TUI_KEY_HOME,
	TUI_KEY_END,
	TUI_KEY_CTRL,		/* cp holds the letter: 'c' for Ctrl-C */
	TUI_KEY_ALT,		/* cp holds the ASCII key: 'b' for Alt-B */
	TUI_KEY_PGUP,
	TUI_KEY_PGDN,
	TUI_KEY_TAB,
	TUI_KEY_PASTE_START,	/* bracketed paste: what follows was pasted */
	TUI_KEY_PASTE_END,
	TUI_KEY_WHEEL_UP,	/* mouse wheel (when the chat asked for it) */
	TUI_KEY_WHEEL_DOWN,
};

struct tui_key {
	enum tui_key_type type;
	uint32_t cp;
};

#define TUI_KEYS_MAX_SEQ	32	/* escape sequence bytes kept */

struct tui_keys {
	int state;		/* ground, escape, csi, ss3, utf8, x10 mouse */
	uint32_t cp;		/* UTF-8 code point so far */
	int need;		/* UTF-8 continuation bytes still to come */
	char seq[TUI_KEYS_MAX_SEQ];	/* CSI parameters so far */
	int seqlen;		/* TUI_KEYS_MAX_SEQ - 1: maybe cut */
	int x10;		/* legacy mouse report bytes still to come */
	unsigned char x10_button;	/* its first byte */
	int cr;			/* last byte was CR: a following LF is not a key */
};

void tui_keys_init(struct tui_keys *k);

/* Feed one byte.  The number of keys it completes (0, 1, or 2 when it
 * broke a UTF-8 sequence: U+FFFD, then its own key), stored in out[]. */
int tui_keys_feed(struct tui_keys *k, unsigned char byte,
    struct tui_key out[2]);

#endif
