/*
 * user_cap.h: max-commands-per-user, a person's commands at once across
 * every room and both of atriumd's fronts (user_cap.c).
 *
 * The count is the monitor's (sshd/monitor/cmd_cap.h): the one place
 * both atriumd-net and atriumd-http reach, so a person runs at most that
 * many over SSH and HTTP together.  This side asks for each command
 * (cmd_begin, one round trip) and gives each back once it is over
 * (cmd_end).  What a channel holds is its cap_held (session.h); what it
 * runs now, its level, is counted here as before:
 *   - an exec or sftp channel (ssh ROOM@host CMD, sftp, scp, sshfs, git)
 *     from its open until its result (stream.c);
 *   - an exec line sent on a chat (!CMD) or `atrium` subsystem link,
 *     from when it is sent until the agent's exec_done for it on that
 *     link (agentlink.h), which only the agent can write.
 * After each poll (chan_tick) a channel whose level fell below what it
 * holds gives the difference back, and a channel freed gives back all:
 * so every way a command ends (result, exec_done, the agent's end, the
 * client's close) is one place, not many.
 * The agent's own commands (its bash tool) are the room's, not a
 * person's, and are not counted.
 */
#ifndef ATRIUMD_USER_CAP_H
#define ATRIUMD_USER_CAP_H

#include <stddef.h>

struct chan;

/* Would one more command of c's user pass max-commands-per-user?  0 when
 * it may run (counted by the monitor and held by c from now on); 1 when
 * not, with the refusal for the user in msg (naming the cap). */
int user_cap_full(struct chan *c, char *msg, size_t msglen);

/* Give back what c holds beyond what it runs now (after each poll). */
void user_cap_sync(struct chan *c);

/* Give back all c holds (c goes). */
void user_cap_release(struct chan *c);

#endif
