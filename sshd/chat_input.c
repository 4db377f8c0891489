/*
 * chat_input.c: the keys of the chat's line UI (chat_int.h).  Called by
 * chat.c with each key tui_keys.c decoded from a pty client.  The line
 * editor's keys act on tui_editor.h; Up and Down walk tui_history.h; Tab
 * completes (tui_complete.h); PgUp and PgDn scroll (chat_scroll.c); a
 * bracketed paste goes into the line whole, its line breaks kept, so
 * Enter after it sends the pasted lines as one message.
 *
 * Keys: Left/Right, Home/End, Ctrl-A/E move; Alt-B/F move by word;
 * Ctrl-K/U/W cut to the end, from the start, the word before; Ctrl-Y
 * puts back what was cut; Ctrl-C clears; Ctrl-D leaves on an empty line
 * (else deletes); Ctrl-L draws the screen again.
 */
#include "chat_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui_complete.h"
#include "util.h"

#define CHAT_MAX_CANDS		64	/* names offered to completion */

/* Show text in the line, cursor at its end. */
static void
chat_input_set(struct chat *ch, const char *text)
{
	if (tui_editor_set(&ch->ed, text) == -ENOBUFS)
		chat_print(ch, TUI_STYLE_ERROR, NULL, "line too long: at most "
		    "16 KiB; it was cut");
}

/* Up (older) or Down (newer) through the input history. */
static void
chat_input_history(struct chat *ch, int up)
{
	char *cur = malloc(CHAT_MAX_LINE + 8);
	const char *line;

	if (!cur)
		return;
	tui_editor_utf8(&ch->ed, 0, ch->ed.len, cur, CHAT_MAX_LINE + 8);
	line = up ? tui_history_up(&ch->hist, cur) :
	    tui_history_down(&ch->hist);
	if (line)
		chat_input_set(ch, line);
	free(cur);
}

/* The candidates for a word of kind ('c', '@', 'n'): commands, or the
 * names of the people here (with '@' before them, and @agent). */
static int
chat_input_cands(struct chat *ch, int kind, char names[][TUI_STATUS_NAME
    + 1], const char **cands)
{
	int n = 0;

	if (kind == 'c') {
		while (tui_complete_commands[n] && n < CHAT_MAX_CANDS)
			cands[n] = tui_complete_commands[n], n++;
		return n;
	}
	if (kind == '@')
		cands[n++] = "@agent";
	for (int i = 0; i < ch->status.nusers && n < CHAT_MAX_CANDS; i++) {
		snprintf(names[i], TUI_STATUS_NAME + 1, "%s%s", kind == '@' ?
		    "@" : "", ch->status.users[i]);
		cands[n++] = names[i];
	}
	return n;
}

/* List the candidates that match word, when Tab could not choose. */
static void
chat_input_list(struct chat *ch, const char *word, const char **cands,
    int n)
{
	char text[2048];
	size_t used = 0, wl = strlen(word);

	text[0] = '\0';
	for (int i = 0; i < n && used + 2 < sizeof(text); i++) {
		int w;

		if (strncmp(cands[i], word, wl) != 0)
			continue;
		w = snprintf(text + used, sizeof(text) - used, "%s%s",
		    used ? "  " : "", cands[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
}

/* Tab: complete the word before the cursor.  Paths after '!' are listed
 * by the room (its confined view of the workspace), which this build's
 * room does not offer yet: such a word is left as it is. */
static void
chat_input_complete(struct chat *ch)
{
	char before[CHAT_MAX_LINE + 8], ext[TUI_COMPLETE_MAX_WORD + 2];
	char names[CHAT_MAX_CANDS][TUI_STATUS_NAME + 1];
	const char *cands[CHAT_MAX_CANDS + 1];
	size_t len = tui_editor_utf8(&ch->ed, 0, ch->ed.cursor, before,
	    sizeof(before)), start = tui_complete_word_start(before, len);
	int kind = tui_complete_kind(before, start), n, m;

	if (kind == 'p')
		return;
	n = chat_input_cands(ch, kind, names, cands);
	m = tui_complete_from(before + start, cands, n, ext, sizeof(ext));
	for (const char *p = ext; *p; p++)
		tui_editor_insert(&ch->ed, (unsigned char)*p);
	if (m > 1 && !ext[0])
		chat_input_list(ch, before + start, cands, n);
}

/* Insert a key's code point; a paste's line break goes in as one. */
static void
chat_input_char(struct chat *ch, uint32_t cp)
{
	/* A control character is refused (-EINVAL) quietly. */
	if (tui_editor_insert(&ch->ed, cp) == -ENOBUFS)
		chat_print(ch, TUI_STYLE_ERROR, NULL, "line too long: at most "
		    "16 KiB");
	tui_history_reset(&ch->hist);
}

/* Enter: send the line, or inside a paste, a line break in it. */
static void
chat_input_enter(struct chat *ch)
{
	char *line;

	if (ch->pasting) {
		if (tui_editor_newline(&ch->ed) == -ENOBUFS)
			chat_print(ch, TUI_STYLE_ERROR, NULL, "paste too long: "
			    "at most 16 KiB");
		return;
	}
	if (!(line = malloc(CHAT_MAX_LINE + 8)))
		return;
	tui_editor_utf8(&ch->ed, 0, ch->ed.len, line, CHAT_MAX_LINE + 8);
	tui_editor_clear(&ch->ed);
	chat_submit(ch, line);
	free(line);
}

/* Ctrl and a letter. */
static void
chat_input_ctrl(struct chat *ch, uint32_t letter)
{
	struct tui_editor *e = &ch->ed;

	switch (letter) {
	case 'a': tui_editor_home(e); break;
	case 'e': tui_editor_end(e); break;
	case 'k': tui_editor_kill_end(e); break;
	case 'u': tui_editor_kill_start(e); break;
	case 'w': tui_editor_kill_word(e); break;
	case 'y': tui_editor_yank(e); break;
	case 'c': tui_editor_clear(e); break;
	case 'l': chat_redraw(ch); break;
	case 'd':
		if (e->len == 0)
			ch->leaving = 1;
		else
			tui_editor_delete(e);
		break;
	default:
		break;
	}
}

/* See chat_int.h. */
void
chat_key(struct chat *ch, const struct tui_key *k)
{
	struct tui_editor *e = &ch->ed;

	switch (k->type) {
	case TUI_KEY_CHAR: chat_input_char(ch, k->cp); break;
	case TUI_KEY_ENTER: chat_input_enter(ch); break;
	case TUI_KEY_BACKSPACE: tui_editor_backspace(e); break;
	case TUI_KEY_DELETE: tui_editor_delete(e); break;
	case TUI_KEY_LEFT: tui_editor_left(e); break;
	case TUI_KEY_RIGHT: tui_editor_right(e); break;
	case TUI_KEY_HOME: tui_editor_home(e); break;
	case TUI_KEY_END: tui_editor_end(e); break;
	case TUI_KEY_UP: chat_input_history(ch, 1); break;
	case TUI_KEY_DOWN: chat_input_history(ch, 0); break;
	case TUI_KEY_PGUP: chat_scroll_page(ch, -1); break;
	case TUI_KEY_PGDN: chat_scroll_page(ch, 1); break;
	case TUI_KEY_PASTE_START: ch->pasting = 1; break;
	case TUI_KEY_PASTE_END: ch->pasting = 0; break;
	case TUI_KEY_CTRL: chat_input_ctrl(ch, k->cp); break;
	case TUI_KEY_TAB:
		if (ch->pasting)
			chat_input_char(ch, ' ');
		else
			chat_input_complete(ch);
		break;
	case TUI_KEY_ALT:
		if (k->cp == 'b')
			tui_editor_word_left(e);
		else if (k->cp == 'f')
			tui_editor_word_right(e);
		break;
	default:
		break;
	}
}

/* See chat_int.h. */
void
chat_typing(struct chat *ch)
{
	long long now = time_mono_ms();
	json_object *req;

	if (ch->ed.len == 0 || ch->ed.cps[0] == '/' ||
	    now - ch->typing_ms < CHAT_TYPING_EVERY_MS)
		return;
	ch->typing_ms = now;
	if (!(req = chat_req("typing")))
		return;
	agentlink_send(&ch->link, req);
	json_object_put(req);
}
