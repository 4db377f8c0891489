/*
 * git_path.c: the workspace fallback for git's absolute paths (git_path.h).
 * Called by stream.c before an exec request goes to the room.
 *
 * The path is reused exactly as the client quoted it, and only when it is
 * one word made of single-quoted runs and backslash escapes (what git's
 * sq_quote writes: 'a'\''b'), so the rewritten command means the same to
 * bash as the original; anything else passes unchanged.
 */
#include "git_path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const git_path_verbs[] = {
	"git-upload-pack", "git-receive-pack", "git-upload-archive",
	"git upload-pack", "git receive-pack", "git upload-archive",
};

/* Length of the verb command starts with (and a space after it), or 0. */
static size_t
git_path_verb(const char *command)
{
	for (size_t i = 0; i < sizeof(git_path_verbs) / sizeof(*git_path_verbs);
	    i++) {
		size_t n = strlen(git_path_verbs[i]);

		if (strncmp(command, git_path_verbs[i], n) == 0 &&
		    command[n] == ' ')
			return n;
	}
	return 0;
}

/* 1 when w is one shell word of quoted runs and escapes that starts with
 * '/ and does not name /workspace; its unquoted text then begins with
 * the first run. */
static int
git_path_word(const char *w)
{
	if (strncmp(w, "'/", 2) != 0 || strncmp(w, "'/workspace", 11) == 0)
		return 0;
	while (*w) {
		if (*w == '\\') {
			if (!w[1])
				return 0;
			w += 2;
		} else if (*w == '\'') {
			const char *end = strchr(w + 1, '\'');

			if (!end)
				return 0;
			w = end + 1;
		} else {
			return 0;
		}
	}
	return 1;
}

/* See git_path.h. */
int
git_path_command(const char *command, char *out, size_t len)
{
	size_t verb = git_path_verb(command);
	const char *word = command + verb + 1;
	int n;

	if (!verb || !git_path_word(word))
		return 0;
	n = snprintf(out, len, "p=%s; [ -e \"$p\" ] || p=\"/workspace$p\"; "
	    "exec %.*s \"$p\"", word, (int)verb, command);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 1;
}
