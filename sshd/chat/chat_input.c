/*
 * chat_input.c: the keys of the chat's line UI (chat_int.h).  Called by
 * chat.c with each key tui_keys.c decoded from a pty client.  The line
 * editor's keys act on tui_editor.h; Up and Down walk tui_history.h; Tab
 * completes (tui_complete.h, from the table of commands in
 * chat_commands.h; a path after "!" is listed by the room,
 * whose answer completes the line if it has not changed meanwhile); PgUp
 * and PgDn scroll (chat_scroll.c), End also returns to the live view; a
 * bracketed paste goes into the line whole, its line breaks kept, so
 * Enter after it sends the pasted lines as one message.
 *
 * Keys: Left/Right, Home/End, Ctrl-A/E move; Alt-B/F move by word;
 * Ctrl-K/U/W cut to the end, from the start, the word before; Ctrl-Y
 * puts back what was cut; Ctrl-C clears, and on an empty line stops the
 * member's running !command (chat_attn.c); Ctrl-D leaves on an empty line
 * (else deletes); Ctrl-L draws the screen again.
 */
#include "chat_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_commands.h"
#include "jsonl.h"
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

/* The candidates for a word of kind ('c', '@', 'a', 'n'): commands, the
 * argument of the command line starts with, or the names of the people
 * here (with '@' before them, and @agent). */
static int
chat_input_cands(struct chat *ch, const char *line, int kind,
    char names[][TUI_STATUS_NAME + 1], const char **cands)
{
	const struct chat_cmd *cmd = NULL;
	int n = 0;

	if (kind == 'c') {
		for (const struct chat_cmd *c = chat_cmds; c->name &&
		    n < CHAT_MAX_CANDS; c++)
			cands[n++] = c->name;
		return n;
	}
	if (kind == 'a') {
		cmd = chat_cmd_find(line, strcspn(line, " "));
		if (!cmd || cmd->complete == CHAT_ARG_NONE)
			return 0;
		for (const char *const *w = cmd->words; w && *w &&
		    n < CHAT_MAX_CANDS; w++)
			cands[n++] = *w;
		if (cmd->complete == CHAT_ARG_WORDS)
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

/* Insert the completion of word from cands, or list them when Tab
 * cannot choose.  A directory's path gets no space after it. */
static void
chat_input_apply(struct chat *ch, const char *word, const char **cands,
    int n)
{
	char ext[TUI_COMPLETE_MAX_WORD + 2];
	int m = tui_complete_from(word, cands, n, ext, sizeof(ext));
	size_t len = strlen(ext);

	if (m == 1 && len >= 2 && ext[len - 2] == '/')
		ext[len - 1] = '\0';
	if (m == 1 && len == 1 && word[0] && word[strlen(word) - 1] == '/')
		ext[0] = '\0';
	for (const char *p = ext; *p; p++)
		tui_editor_insert(&ch->ed, (unsigned char)*p);
	if (m > 1 && !ext[0])
		chat_input_list(ch, word, cands, n);
}

/* A path after "!": the room lists the workspace (through its confined
 * view of it, as its file tools do) and answers with `completions`. */
static void
chat_input_ask_path(struct chat *ch, const char *before, const char *word)
{
	json_object *req = chat_req("complete");

	if (!req)
		return;
	free(ch->complete_before);
	ch->complete_before = strdup(before);
	snprintf(ch->complete_id, sizeof(ch->complete_id), "c%lu",
	    ++ch->ncomplete);
	json_object_object_add(req, "id",
	    json_object_new_string(ch->complete_id));
	json_object_object_add(req, "path", json_object_new_string(
	    word[0] == '!' ? word + 1 : word));
	agentlink_send(&ch->link, req);
	json_object_put(req);
}

/* Tab: complete the word before the cursor. */
static void
chat_input_complete(struct chat *ch)
{
	char before[CHAT_MAX_LINE + 8];
	char names[CHAT_MAX_CANDS][TUI_STATUS_NAME + 1];
	const char *cands[CHAT_MAX_CANDS + 1];
	size_t len = tui_editor_utf8(&ch->ed, 0, ch->ed.cursor, before,
	    sizeof(before)), start = tui_complete_word_start(before, len);
	int kind = tui_complete_kind(before, start);

	if (kind == 'p') {
		chat_input_ask_path(ch, before, before + start);
		return;
	}
	chat_input_apply(ch, before + start, cands,
	    chat_input_cands(ch, before, kind, names, cands));
}

/* See chat_int.h. */
void
chat_complete_answer(struct chat *ch, json_object *o)
{
	char before[CHAT_MAX_LINE + 8];
	const char *cands[CHAT_MAX_CANDS + 1], *word;
	json_object *names = NULL;
	size_t len, start;
	int n = 0;

	if (!ch->complete_before || strcmp(json_get_string(o, "id") ?: "",
	    ch->complete_id) != 0)
		return;
	len = tui_editor_utf8(&ch->ed, 0, ch->ed.cursor, before,
	    sizeof(before));
	if (strcmp(before, ch->complete_before) == 0 &&
	    json_object_object_get_ex(o, "names", &names) &&
	    json_object_is_type(names, json_type_array)) {
		start = tui_complete_word_start(before, len);
		word = before + start + (before[start] == '!');
		for (size_t i = 0; i < json_object_array_length(names) &&
		    n < CHAT_MAX_CANDS; i++)
			cands[n++] = json_object_get_string(
			    json_object_array_get_idx(names, i));
		chat_input_apply(ch, word, cands, n);
		chat_bottom(ch);
	}
	free(ch->complete_before);
	ch->complete_before = NULL;
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
	case 'c':
		/* An empty line has nothing to clear: stop a command. */
		if (e->len == 0)
			chat_stop(ch, NULL, 1);
		else
			tui_editor_clear(e);
		break;
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
	case TUI_KEY_END:
		tui_editor_end(e);
		chat_scroll_live(ch);
		break;
	case TUI_KEY_UP: chat_input_history(ch, 1); break;
	case TUI_KEY_DOWN: chat_input_history(ch, 0); break;
	case TUI_KEY_PGUP: chat_scroll_page(ch, -1); break;
	case TUI_KEY_PGDN: chat_scroll_page(ch, 1); break;
	case TUI_KEY_WHEEL_UP:
		chat_scroll_lines(ch, -1, CHAT_WHEEL_LINES);
		break;
	case TUI_KEY_WHEEL_DOWN:
		chat_scroll_lines(ch, 1, CHAT_WHEEL_LINES);
		break;
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
