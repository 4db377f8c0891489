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

/* Turn one input line into a request for the room, or into text for the
 * user alone.  waiting is the id of the newest approval request still
 * waiting for an answer, or NULL: then y, n, /approve and /deny alone
 * answer it.  Returns 1 with *out (caller puts) to send (a history request
 * for /history TEXT, usage for /cost, a chat line "/me TEXT" for /me; for
 * /kill a signal request without id, which the caller completes with the
 * command it stops),
 * 0 with reply set (help, errors), 2 for /quit, 3 for an empty line, 4
 * for /term (the caller opens the shared terminal), 5 for /mouse on, 6
 * for /mouse off.  Pure. */
int chat_command(const char *line, const char *waiting, json_object **out,
    char *reply, size_t replylen);

#endif
