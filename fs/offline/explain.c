/*
 * explain.c: one wording, for every command of fs/fs_main.c and
 * fs/offline/commands.h, of why a workspace database could not be opened.
 */
#include "commands.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void
fs_explain_open(const char *db, int r, const char *verb)
{
	if (r == -ENOENT)
		fprintf(stderr, "atrium-fs: %s does not exist; check the path\n", db);
	else if (r == -EPROTO)
		fprintf(stderr, "atrium-fs: %s was written by a newer atrium-fs; "
		    "upgrade atrium-fs to %s it\n", db, verb);
	else if (r == -EINVAL)
		fprintf(stderr, "atrium-fs: %s is not an atrium-fs database\n", db);
	else
		fprintf(stderr, "atrium-fs: cannot %s %s: %s\n", verb, db,
		    strerror(-r));
}
