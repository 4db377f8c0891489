/*
 * chat.h: the shell request: the room's chat (kind "chat", 50 lines of
 * history), as a full-screen UI with ANSI when the client has a pty and a
 * TERM other than "dumb" (history pane, status line, line editor:
 * chat_int.h), else as plain lines.
 */
#ifndef ATRIUMD_CHAT_H
#define ATRIUMD_CHAT_H

#include <json-c/json.h>

#include "session.h"

#define CHAT_MAX_LINE		(16 * 1024)	/* one input line */
#define CHAT_HISTORY		50		/* events replayed on join */

/* Make c a chat channel.  0 or -ENOMEM. */
int chat_open(struct chan *c);

/* What chat_command asks its caller to do with a line. */
enum chat_action {
	CHAT_ACT_REPLY = 0,		/* show reply to the user alone (help, errors) */
	CHAT_ACT_SEND = 1,		/* send *out (caller puts): a history request
				 * for /history TEXT, usage for /cost, a chat
				 * line "/me TEXT" for /me ... */
	CHAT_ACT_QUIT = 2,		/* /quit */
	CHAT_ACT_EMPTY = 3,		/* an empty line: nothing */
	CHAT_ACT_TERM = 4,		/* /term: open the shared terminal */
	CHAT_ACT_MOUSE_ON = 5,	/* /mouse on */
	CHAT_ACT_MOUSE_OFF = 6,	/* /mouse off */
};

/* Turn one input line into a request for the room, or into text for the
 * user alone, with the table of commands (chat_commands.h).  waiting is
 * the id of the newest approval request still waiting for an answer, or
 * NULL: then y, n, /approve and /deny alone answer it.  Returns an enum
 * chat_action.  Pure. */
int chat_command(const char *line, const char *waiting, json_object **out,
    char *reply, size_t replylen);

#endif
