/*
 * tui_complete.c: Tab completion (tui_complete.h).  Called by chat_input.c on
 * Tab with the line before the cursor.  Invariant: out is always
 * NUL-terminated and never longer than len - 1 bytes; a word or candidate
 * past TUI_COMPLETE_MAX_WORD matches nothing.
 */
#include "tui_complete.h"

#include <string.h>

/* See tui_complete.h. */
size_t
tui_complete_word_start(const char *line, size_t cursor)
{
	size_t i = cursor;

	while (i > 0 && line[i - 1] != ' ' && line[i - 1] != '\t' &&
	    line[i - 1] != '\n')
		i--;
	return i;
}

/* See tui_complete.h. */
int
tui_complete_kind(const char *line, size_t start)
{
	if (line[start] == '@')
		return '@';
	if (line[0] == '!')
		return 'p';
	if (line[0] == '/')
		return start == 0 ? 'c' : 'a';
	return 'n';
}

/* See tui_complete.h. */
int
tui_complete_from(const char *word, const char *const *cands, int n,
    char *out, size_t len)
{
	size_t wl = strlen(word), common = 0;
	const char *first = NULL;
	int matches = 0;

	if (len == 0)
		return 0;
	out[0] = '\0';
	if (wl > TUI_COMPLETE_MAX_WORD)
		return 0;
	for (int i = 0; i < n; i++) {
		const char *c = cands[i];
		size_t k = 0;

		if (!c || strlen(c) > TUI_COMPLETE_MAX_WORD ||
		    strncmp(c, word, wl) != 0)
			continue;
		if (matches++ == 0) {
			first = c;
			common = strlen(c);
			continue;
		}
		while (k < common && first[k] == c[k])
			k++;
		common = k;
	}
	if (!matches || common < wl)
		return matches;
	/* Never end inside a UTF-8 character. */
	while (common > wl && (first[common] & 0xc0) == 0x80)
		common--;
	if (common - wl + 2 > len)
		return matches;
	memcpy(out, first + wl, common - wl);
	out[common - wl] = '\0';
	if (matches == 1)
		strcat(out, " ");
	return matches;
}
