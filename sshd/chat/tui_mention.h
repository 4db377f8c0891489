/*
 * tui_mention.h: does a line mention a person (tui_mention.c)?  The chat
 * rings the bell and shows the name in reverse video when someone else's
 * line names you, as @name or as a word of its own, in any case ("Bob,
 * look", "ping @bob.", not "bobby" nor "bob_2").  Pure: no I/O.
 */
#ifndef ATRIUMD_TUI_MENTION_H
#define ATRIUMD_TUI_MENTION_H

/* 1 when text names name as a word (see the head), else 0 (also for an
 * empty or NULL name or text). */
int tui_mention(const char *text, const char *name);

#endif
