/*
 * tui_mention.c: mentions of a person in a chat line (tui_mention.h).
 * Called by chat_attn.c for every line someone else says.
 *
 * A user name is 1-32 of A-Z a-z 0-9 . _ - (names.h), so a match is a
 * mention only where no name character goes on either side: the name
 * "bob" is not mentioned by "bobby", "jimbob" or "bob-ci".  A '.' after
 * it (or several) ends a sentence unless a name character follows ("bob.",
 * "bob...", not "bob.smith"); '@' before it is the usual way to call someone.
 */
#include "tui_mention.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* 1 when c may be part of a user name. */
static int
tui_mention_namechar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* 1 when the match of n bytes at text + i stands as a word. */
static int
tui_mention_alone(const char *text, size_t i, size_t n)
{
	const char *after = text + i + n;

	if (i > 0 && tui_mention_namechar(text[i - 1]))
		return 0;
	while (*after == '.')		/* the sentence's end, or more name */
		after++;
	return !tui_mention_namechar(*after);
}

int
tui_mention(const char *text, const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!text || n == 0)
		return 0;
	for (size_t i = 0; text[i]; i++)
		if (strncasecmp(text + i, name, n) == 0 &&
		    tui_mention_alone(text, i, n))
			return 1;
	return 0;
}
