/*
 * tui_complete.h: Tab completion of the input line.  The word before the
 * cursor is completed from what fits where it stands: the first word of
 * a line that starts with '/' from the chat's commands; a word starting
 * with '@' from "@agent" and "@" + each member's name; a command's
 * argument from what its entry in the table of commands names
 * (chat_commands.h: the members' names, or its words); any other word
 * from the members' names.  (Paths after '!' are the room's to list:
 * chat.c asks it.)  Pure: no I/O.
 */
#ifndef ATRIUMD_TUI_COMPLETE_H
#define ATRIUMD_TUI_COMPLETE_H

#include <stddef.h>

#define TUI_COMPLETE_MAX_WORD	256	/* bytes of a word completed */

/* Where the word before the cursor starts in line[0..cursor) (UTF-8
 * bytes): its offset. */
size_t tui_complete_word_start(const char *line, size_t cursor);

/* Complete word (UTF-8, no blanks) from the candidates cands[0..n): into
 * out the text to insert after the word (their longest common extension,
 * plus a space when exactly one matched) and the count of matches as the
 * result (0: none; more than 1: out may be empty, and the caller lists
 * them).  A candidate matches when it starts with word. */
int tui_complete_from(const char *word, const char *const *cands, int n,
    char *out, size_t len);

/* Which candidates the word at start in line takes: 'c' commands, '@'
 * mentions, 'a' a command's argument, 'n' names, 'p' a workspace path
 * (after '!'). */
int tui_complete_kind(const char *line, size_t start);

#endif
