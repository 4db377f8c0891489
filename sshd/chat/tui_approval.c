/*
 * tui_approval.c: approval requests as people read them, and what answers
 * one (tui_approval.h).  Called by chat.c for each approval_request, live
 * or replayed, and for each line typed while one waits.  The input comes
 * from the model through the room: every field is cut to its bound here
 * and cleaned when drawn (tui_draw.c), so an input of any size or content
 * makes a bounded text.
 */
#include "tui_approval.h"

#include <stdio.h>
#include <string.h>

#include "jsonl.h"

/* Append to out at *used, cut at len. */
static void
tui_approval_add(char *out, size_t len, size_t *used, const char *s,
    size_t n)
{
	if (*used + 1 >= len)
		return;
	if (n > len - *used - 1)
		n = len - *used - 1;
	memcpy(out + *used, s, n);
	*used += n;
	out[*used] = '\0';
}

/* Each line of text (at most TUI_APPROVAL_LINES, TUI_APPROVAL_MAX bytes)
 * on its own line after mark ("- ", "+ ", "  "). */
static void
tui_approval_lines(const char *mark, const char *text, char *out,
    size_t len, size_t *used)
{
	size_t left = strlen(text), shown = 0;
	int lines = 0;

	if (left > TUI_APPROVAL_MAX)
		left = TUI_APPROVAL_MAX;
	while (shown < left && lines++ < TUI_APPROVAL_LINES) {
		const char *p = text + shown;
		const char *nl = memchr(p, '\n', left - shown);
		size_t n = nl ? (size_t)(nl - p) : left - shown;

		tui_approval_add(out, len, used, "\n", 1);
		tui_approval_add(out, len, used, mark, strlen(mark));
		tui_approval_add(out, len, used, p, n);
		shown += n + (nl ? 1 : 0);
	}
	if (shown < strlen(text))
		tui_approval_add(out, len, used, "\n  ...", 6);
}

/* The tool-specific part: what will run, or what will change, with hint
 * (how to answer) at the end of its first line. */
static void
tui_approval_what(const char *tool, json_object *input, const char *hint,
    char *out, size_t len, size_t *used)
{
	const char *cmd = json_get_string(input, "command");
	const char *path = json_get_string(input, "path");
	const char *s;

	if (cmd && strcmp(tool, "bash") == 0) {
		size_t n = strlen(cmd);

		tui_approval_add(out, len, used, cmd, n > TUI_APPROVAL_MAX ?
		    TUI_APPROVAL_MAX : n);
		if (n > TUI_APPROVAL_MAX)
			tui_approval_add(out, len, used, "...", 3);
		tui_approval_add(out, len, used, hint, strlen(hint));
		return;
	}
	if (path && strcmp(tool, "edit") == 0) {
		tui_approval_add(out, len, used, path, strlen(path));
		tui_approval_add(out, len, used, hint, strlen(hint));
		tui_approval_lines("- ", json_get_string(input, "old_string") ?:
		    "", out, len, used);
		tui_approval_lines("+ ", json_get_string(input, "new_string") ?:
		    "", out, len, used);
		if (json_get_bool(input, "replace_all", 0))
			tui_approval_add(out, len, used, "\n(every occurrence)",
			    19);
		return;
	}
	if (path && strcmp(tool, "write") == 0) {
		tui_approval_add(out, len, used, path, strlen(path));
		tui_approval_add(out, len, used, hint, strlen(hint));
		tui_approval_lines("+ ", json_get_string(input, "content") ?: "",
		    out, len, used);
		return;
	}
	s = input ? json_object_to_json_string_ext(input,
	    JSON_C_TO_STRING_PLAIN) : "";
	tui_approval_add(out, len, used, s, strlen(s) > TUI_APPROVAL_MAX ?
	    TUI_APPROVAL_MAX : strlen(s));
	tui_approval_add(out, len, used, hint, strlen(hint));
}

/* See tui_approval.h. */
void
tui_approval_text(json_object *o, int several, char *out, size_t len)
{
	const char *tool = json_get_string(o, "tool") ?: "?";
	const char *id = json_get_string(o, "id") ?: "?";
	json_object *input = NULL;
	char hint[256];
	size_t used = 0;

	if (len == 0)
		return;
	out[0] = '\0';
	json_object_object_get_ex(o, "input", &input);
	if (several)
		snprintf(hint, sizeof(hint), " (y/n, %lld s; /approve %.64s or "
		    "/deny %.64s for this one)", json_get_int(o, "seconds", 0),
		    id, id);
	else
		snprintf(hint, sizeof(hint), " (y/n, %lld s)",
		    json_get_int(o, "seconds", 0));
	tui_approval_add(out, len, &used, "approval needed: ", 17);
	tui_approval_add(out, len, &used, tool, strlen(tool));
	tui_approval_add(out, len, &used, " ", 1);
	tui_approval_what(tool, input, hint, out, len, &used);
}

/* See tui_approval.h. */
int
tui_approval_answer(const char *line, const char **reason)
{
	*reason = NULL;
	if ((line[0] == 'y' || line[0] == 'Y') && line[1] == '\0')
		return 1;
	if (line[0] != 'n' && line[0] != 'N')
		return -1;
	if (line[1] == '\0')
		return 0;
	if (line[1] != ' ')
		return -1;
	line += strspn(line + 1, " ") + 1;
	*reason = *line ? line : NULL;
	return 0;
}
