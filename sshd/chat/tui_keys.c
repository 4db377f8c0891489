/*
 * tui_keys.c: the key decoder of tui_keys.h.  Called by chat.c for each
 * byte a pty client sends.  Invariants: seqlen < TUI_KEYS_MAX_SEQ (longer
 * sequences are discarded to their final byte); need is 0 outside UTF-8.
 */
#include "tui_keys.h"

#include <string.h>

enum { KS_GROUND, KS_ESC, KS_CSI, KS_SS3, KS_UTF8, KS_X10 };

/* Mouse buttons as terminals report them: the wheel is 64 (up) and 65
 * (down), with Shift, Alt and Ctrl as the bits 4, 8 and 16. */
#define TUI_MOUSE_MODIFIERS	(4 | 8 | 16)
#define TUI_MOUSE_WHEEL_UP	64
#define TUI_MOUSE_WHEEL_DOWN	65
#define TUI_MOUSE_MAX_NUM	99999	/* larger numbers: not a report */

/* Ground state; cannot fail. */
void
tui_keys_init(struct tui_keys *k)
{
	memset(k, 0, sizeof(*k));
}

/* Set a key; always 1. */
static int
tui_keys_emit(struct tui_key *out, enum tui_key_type type, uint32_t cp)
{
	out->type = type;
	out->cp = cp;
	return 1;
}

/* A mouse button number: the wheel's scroll, anything else (clicks,
 * drags, other buttons) nothing, so a click never becomes text. */
static int
tui_keys_mouse_button(unsigned long button, struct tui_key *out)
{
	button &= ~(unsigned long)TUI_MOUSE_MODIFIERS;
	if (button == TUI_MOUSE_WHEEL_UP)
		return tui_keys_emit(out, TUI_KEY_WHEEL_UP, 0);
	if (button == TUI_MOUSE_WHEEL_DOWN)
		return tui_keys_emit(out, TUI_KEY_WHEEL_DOWN, 0);
	return 0;
}

/* One decimal number of at most TUI_MOUSE_MAX_NUM at *p, moved past it;
 * -1 when there is none or it is larger. */
static long
tui_keys_number(const char **p)
{
	long n = 0;

	if (**p < '0' || **p > '9')
		return -1;
	while (**p >= '0' && **p <= '9') {
		n = n * 10 + (**p - '0');
		if (n > TUI_MOUSE_MAX_NUM)
			return -1;
		(*p)++;
	}
	return n;
}

/* An SGR mouse report: the parameters "<b;x;y" and the final byte (M for
 * a press, m for a release).  Anything malformed or cut is dropped. */
static int
tui_keys_sgr_mouse(const struct tui_keys *k, unsigned char fin,
    struct tui_key *out)
{
	const char *p = k->seq + 1;
	long v[3];

	if (k->seqlen >= TUI_KEYS_MAX_SEQ - 1)
		return 0;		/* longer than any real report */
	for (int i = 0; i < 3; i++) {
		if ((v[i] = tui_keys_number(&p)) < 0)
			return 0;
		if (*p != (i < 2 ? ';' : '\0'))
			return 0;
		p++;
	}
	return fin == 'M' ? tui_keys_mouse_button((unsigned long)v[0], out) : 0;
}

/* Final byte of a CSI sequence with its parameters. */
static int
tui_keys_csi(struct tui_keys *k, unsigned char fin, struct tui_key *out)
{
	k->seq[k->seqlen] = '\0';
	if (k->seq[0] == '<')
		return (fin == 'M' || fin == 'm') ?
		    tui_keys_sgr_mouse(k, fin, out) : 0;
	switch (fin) {
	case 'A': return tui_keys_emit(out, TUI_KEY_UP, 0);
	case 'B': return tui_keys_emit(out, TUI_KEY_DOWN, 0);
	case 'C': return tui_keys_emit(out, TUI_KEY_RIGHT, 0);
	case 'D': return tui_keys_emit(out, TUI_KEY_LEFT, 0);
	case 'H': return tui_keys_emit(out, TUI_KEY_HOME, 0);
	case 'F': return tui_keys_emit(out, TUI_KEY_END, 0);
	case '~':
		if (strcmp(k->seq, "1") == 0 || strcmp(k->seq, "7") == 0)
			return tui_keys_emit(out, TUI_KEY_HOME, 0);
		if (strcmp(k->seq, "4") == 0 || strcmp(k->seq, "8") == 0)
			return tui_keys_emit(out, TUI_KEY_END, 0);
		if (strcmp(k->seq, "3") == 0)
			return tui_keys_emit(out, TUI_KEY_DELETE, 0);
		if (strcmp(k->seq, "5") == 0)
			return tui_keys_emit(out, TUI_KEY_PGUP, 0);
		if (strcmp(k->seq, "6") == 0)
			return tui_keys_emit(out, TUI_KEY_PGDN, 0);
		if (strcmp(k->seq, "200") == 0)
			return tui_keys_emit(out, TUI_KEY_PASTE_START, 0);
		if (strcmp(k->seq, "201") == 0)
			return tui_keys_emit(out, TUI_KEY_PASTE_END, 0);
		return 0;
	default:
		return 0;
	}
}

/* A byte outside any sequence. */
static int
tui_keys_ground(struct tui_keys *k, unsigned char b, struct tui_key *out)
{
	int cr = k->cr;

	k->cr = 0;
	if (b == 0x1b) {
		k->state = KS_ESC;
		return 0;
	}
	if (b == '\r') {
		k->cr = 1;
		return tui_keys_emit(out, TUI_KEY_ENTER, 0);
	}
	if (b == '\n')
		return cr ? 0 : tui_keys_emit(out, TUI_KEY_ENTER, 0);
	if (b == 0x7f || b == 0x08)
		return tui_keys_emit(out, TUI_KEY_BACKSPACE, 0);
	if (b == '\t')
		return tui_keys_emit(out, TUI_KEY_TAB, 0);
	if (b < 0x20)
		return tui_keys_emit(out, TUI_KEY_CTRL, (uint32_t)('a' + b - 1));
	if (b < 0x80)
		return tui_keys_emit(out, TUI_KEY_CHAR, b);
	if ((b & 0xe0) == 0xc0) {
		k->cp = b & 0x1f;
		k->need = 1;
	} else if ((b & 0xf0) == 0xe0) {
		k->cp = b & 0x0f;
		k->need = 2;
	} else if ((b & 0xf8) == 0xf0) {
		k->cp = b & 0x07;
		k->need = 3;
	} else {
		return tui_keys_emit(out, TUI_KEY_CHAR, 0xfffd);
	}
	k->state = KS_UTF8;
	return 0;
}

/* A continuation byte of a UTF-8 sequence. */
static int
tui_keys_utf8(struct tui_keys *k, unsigned char b, struct tui_key *out)
{
	k->cp = (k->cp << 6) | (b & 0x3f);
	if (--k->need > 0)
		return 0;
	k->state = KS_GROUND;
	if (k->cp < 0x80 || k->cp > 0x10ffff ||
	    (k->cp >= 0xd800 && k->cp <= 0xdfff))
		return tui_keys_emit(out, TUI_KEY_CHAR, 0xfffd);
	return tui_keys_emit(out, TUI_KEY_CHAR, k->cp);
}

/* A byte of a legacy mouse report (ESC [ M then button, column and row,
 * each plus 32): taken whole, the wheel scrolls. */
static int
tui_keys_x10(struct tui_keys *k, unsigned char b, struct tui_key *out)
{
	if (k->x10 == 3)
		k->x10_button = b;
	if (--k->x10 > 0)
		return 0;
	k->state = KS_GROUND;
	return k->x10_button < 32 ? 0 :
	    tui_keys_mouse_button(k->x10_button - 32u, out);
}

/* See tui_keys.h. */
int
tui_keys_feed(struct tui_keys *k, unsigned char b, struct tui_key out[2])
{
	switch (k->state) {
	case KS_ESC:
		k->seqlen = 0;
		k->state = b == '[' ? KS_CSI : b == 'O' ? KS_SS3 : KS_GROUND;
		if (k->state == KS_GROUND && b > 0x20 && b < 0x7f)
			return tui_keys_emit(out, TUI_KEY_ALT, b);	/* Alt-x */
		if (k->state == KS_GROUND && b != 0x1b)
			return tui_keys_ground(k, b, out);
		if (b == 0x1b)
			k->state = KS_ESC;
		return 0;
	case KS_SS3:
		k->state = KS_GROUND;
		return tui_keys_csi(k, b, out);
	case KS_CSI:
		if (b == 'M' && k->seqlen == 0) {
			k->state = KS_X10;	/* ESC [ M b x y: 3 raw bytes */
			k->x10 = 3;
			return 0;
		}
		if (b >= 0x40 && b <= 0x7e) {
			k->state = KS_GROUND;
			return tui_keys_csi(k, b, out);
		}
		if (k->seqlen < TUI_KEYS_MAX_SEQ - 1)
			k->seq[k->seqlen++] = (char)b;
		return 0;
	case KS_UTF8:
		if ((b & 0xc0) != 0x80) {
			/* Broken sequence: U+FFFD, then b afresh. */
			k->state = KS_GROUND;
			k->need = 0;
			tui_keys_emit(out, TUI_KEY_CHAR, 0xfffd);
			return 1 + tui_keys_ground(k, b, out + 1);
		}
		return tui_keys_utf8(k, b, out);
	case KS_X10:
		return tui_keys_x10(k, b, out);
	default:
		return tui_keys_ground(k, b, out);
	}
}
