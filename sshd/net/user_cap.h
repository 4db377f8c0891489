/*
 * user_cap.h: max-commands-per-user, a person's commands at once across
 * every room (user_cap.c).
 *
 * Counted here, in atriumd's network process, because it is the one
 * place every person's command passes through whatever the room: an
 * agent sees only its own room, and the monitor sees no request.  What
 * counts, for a user, in every session:
 *   - an exec or sftp channel (ssh ROOM@host CMD, sftp, scp, sshfs, git)
 *     from its open until its result (stream.c);
 *   - an exec line sent on a chat (!CMD) or `atrium` subsystem link,
 *     from when it is sent until the agent's exec_done for it on that
 *     link (agentlink.h), which only the agent can write.
 * The agent's own commands (its bash tool) are the room's, not a
 * person's, and are not counted.
 */
#ifndef ATRIUMD_USER_CAP_H
#define ATRIUMD_USER_CAP_H

#include <stddef.h>

struct chan;
struct server;

/* The user's commands running (or asked for) now, in every session. */
int user_cap_count(struct server *srv, const char *user);

/* Would one more command of c's user pass max-commands-per-user?  0 when
 * it may run; 1 when not, with the refusal for the user in msg (naming
 * the cap) and a log line. */
int user_cap_full(struct chan *c, char *msg, size_t msglen);

#endif
