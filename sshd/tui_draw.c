/*
 * tui_draw.c: rendering for the chat (tui_draw.h).  Called by chat.c with
 * the channel's capped output buffer; a full buffer drops bytes, and chat.c
 * then redraws (the room's events, not the wire bytes, are the truth).
 * Invariant: with ansi, the cursor sits on the prompt row after
 * tui_draw_bottom, bottom_rows rows below the top of the region.
 */
#include "tui_draw.h"

#include <stdio.h>
#include <string.h>

#include "utf8.h"

#define TUI_PROMPT_SUFFIX	"> "

/* Rendering state for one client; cannot fail. */
void
tui_draw_init(struct tui_draw *d, int ansi, int crlf, int cols, int rows)
{
	memset(d, 0, sizeof(*d));
	d->ansi = ansi;
	d->crlf = ansi || crlf;
	d->cols = cols > 0 ? cols : 80;
	d->rows = rows > 0 ? rows : 24;
	buf_init(&d->stream, TUI_DRAW_MAX_STREAM);
}

/* Free the kept stream line. */
void
tui_draw_free(struct tui_draw *d)
{
	buf_free(&d->stream);
}

/* FNV-1a of the name onto six colours. */
int
tui_draw_color(const char *name)
{
	unsigned h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 16777619u;
	return 31 + (int)(h % 6);
}

/* Clean text as utf8_clean does (invalid bytes become U+FFFD; C0 controls
 * but tab and newline, DEL and C1 go), with each newline written as nl.
 * The agent cleans what people send; this holds for every other field too
 * (names, commands, output), whatever the agent let through. */
void
tui_draw_sanitize(struct buf *out, const char *text, size_t len,
    const char *nl)
{
	struct buf clean;
	const char *p, *end, *e;

	buf_init(&clean, len * 3 + 1);
	if (utf8_clean(&clean, text, len) < 0 || !clean.data) {
		buf_free(&clean);
		return;
	}
	p = clean.data;
	end = p + clean.len;
	while (p < end) {
		e = memchr(p, '\n', (size_t)(end - p));
		buf_append(out, p, (size_t)((e ? e : end) - p));
		if (e)
			buf_append(out, nl, strlen(nl));
		p = e ? e + 1 : end;
	}
	buf_free(&clean);
}

/* Columns of UTF-8 text (one per code point). */
static int
tui_draw_width(const char *s, size_t len)
{
	int w = 0;

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			w++;
	return w;
}

/* Move to the top of the bottom region and erase it (ansi only). */
void
tui_draw_clear_bottom(struct tui_draw *d, struct buf *out)
{
	if (!d->ansi)
		return;
	buf_append(out, "\r", 1);
	if (d->bottom_rows > 0)
		buf_printf(out, "\x1b[%dA", d->bottom_rows);
	buf_append(out, "\x1b[J", 3);
	d->bottom_rows = 0;
}

/* The prefix of a line in each style. */
static void
tui_draw_prefix(struct tui_draw *d, struct buf *out, enum tui_style style,
    const char *name)
{
	switch (style) {
	case TUI_STYLE_MESSAGE:
		if (d->ansi)
			buf_printf(out, "\x1b[1;%dm", tui_draw_color(name));
		tui_draw_sanitize(out, name, strlen(name), "");
		buf_append(out, d->ansi ? ":\x1b[0m " : ": ",
		    d->ansi ? 6 : 2);
		break;
	case TUI_STYLE_NOTICE:
		buf_append(out, d->ansi ? "\x1b[2m* " : "* ", d->ansi ? 6 : 2);
		break;
	case TUI_STYLE_ERROR:
		buf_append(out, d->ansi ? "\x1b[1;31m! " : "! ",
		    d->ansi ? 9 : 2);
		break;
	case TUI_STYLE_TOOL:
		buf_append(out, d->ansi ? "\x1b[36m> " : "> ", d->ansi ? 7 : 2);
		break;
	case TUI_STYLE_OUTPUT:
		break;
	}
}

/* Finish an open stream, then print a styled line. */
void
tui_draw_line(struct tui_draw *d, struct buf *out, enum tui_style style,
    const char *name, const char *text)
{
	const char *nl = d->crlf ? "\r\n" : "\n";
	size_t len = strlen(text);

	tui_draw_stream_end(d, out);
	tui_draw_prefix(d, out, style, name ? name : "?");
	while (len && text[len - 1] == '\n')
		len--;
	tui_draw_sanitize(out, text, len, nl);
	if (d->ansi && style != TUI_STYLE_OUTPUT)
		buf_append(out, "\x1b[0m", 4);
	buf_append(out, nl, strlen(nl));
}

/* Agent text: plain prints it now; ansi keeps the unfinished line. */
void
tui_draw_stream(struct tui_draw *d, struct buf *out, const char *text)
{
	const char *nl = d->crlf ? "\r\n" : "\n";

	if (!d->streaming) {
		d->streaming = 1;
		buf_reset(&d->stream);
		tui_draw_prefix(d, &d->stream, TUI_STYLE_MESSAGE, "agent");
	}
	if (!d->ansi) {
		/* Plain: print as it comes. */
		if (d->stream.len) {
			buf_append(out, d->stream.data, d->stream.len);
			buf_reset(&d->stream);
		}
		tui_draw_sanitize(out, text, strlen(text), nl);
		return;
	}
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');
		size_t n = e ? (size_t)(e - p) : strlen(p);

		tui_draw_sanitize(&d->stream, p, n, "");
		if (!e)
			break;
		buf_append(out, d->stream.data ? d->stream.data : "",
		    d->stream.len);
		buf_append(out, nl, strlen(nl));
		buf_reset(&d->stream);
		p = e + 1;
	}
}

/* Close the stream: print its kept tail and end the line. */
void
tui_draw_stream_end(struct tui_draw *d, struct buf *out)
{
	const char *nl = d->crlf ? "\r\n" : "\n";

	if (!d->streaming)
		return;
	d->streaming = 0;
	if (d->ansi && d->stream.len)
		buf_append(out, d->stream.data, d->stream.len);
	if (d->ansi)
		buf_append(out, "\x1b[0m", 4);
	buf_append(out, nl, strlen(nl));
	buf_reset(&d->stream);
}

/* Draw the kept stream line and the prompt, cursor where the editor has it. */
void
tui_draw_bottom(struct tui_draw *d, struct buf *out, const char *room,
    const struct tui_editor *e)
{
	char text[4096];
	int avail, w;
	size_t from = 0;

	if (!d->ansi)
		return;
	d->bottom_rows = 0;
	if (d->streaming && d->stream.len) {
		w = tui_draw_width(d->stream.data, d->stream.len);
		buf_append(out, d->stream.data, d->stream.len);
		buf_append(out, "\x1b[0m\r\n", 6);
		d->bottom_rows = w / d->cols + 1;
	}
	buf_printf(out, "\x1b[1m%s%s\x1b[0m", room, TUI_PROMPT_SUFFIX);
	/* Scroll the line sideways so the cursor stays on screen. */
	avail = d->cols - (int)strlen(room) - (int)strlen(TUI_PROMPT_SUFFIX) - 1;
	if (avail < 1)
		avail = 1;
	if (e->cursor > (size_t)avail)
		from = e->cursor - (size_t)avail;
	tui_editor_utf8(e, from, from + (size_t)avail, text, sizeof(text));
	buf_append(out, text, strlen(text));
	buf_printf(out, "\r\x1b[%dC", (int)(strlen(room) +
	    strlen(TUI_PROMPT_SUFFIX) + e->cursor - from));
}
