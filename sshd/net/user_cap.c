/*
 * user_cap.c: a person's commands at once, across rooms (user_cap.h).
 * Called by stream.c (exec and sftp channels), chat.c (!CMD) and
 * control.c (exec lines) before they start a command.
 */
#include "user_cap.h"

#include <stdio.h>
#include <string.h>

#include "agentlink.h"
#include "log.h"
#include "server.h"
#include "session.h"
#include "stream.h"

/* See user_cap.h. */
int
user_cap_count(struct server *srv, const char *user)
{
	int n = 0;

	for (struct session *s = srv->sessions; s; s = s->next) {
		if (strcmp(s->user, user) != 0)
			continue;
		for (struct chan *c = s->chans; c; c = c->next) {
			if (c->closing)
				continue;
			n += stream_busy(c);
			if (c->link)
				n += agentlink_execs(c->link);
		}
	}
	return n;
}

/* See user_cap.h. */
int
user_cap_full(struct chan *c, char *msg, size_t msglen)
{
	int max = c->s->srv->cfg->max_commands_per_user;

	if (max <= 0 || user_cap_count(c->s->srv, c->s->user) < max)
		return 0;
	log_info("session %lu: %s: command refused, %d running (the "
	    "max-commands-per-user cap)", c->s->num, c->s->user, max);
	snprintf(msg, msglen, "atrium: command refused: you already run %d "
	    "commands (ssh exec, sftp, chat !commands and atrium exec "
	    "requests, across all rooms), the most allowed per user "
	    "(max-commands-per-user = %d); wait for one to end", max, max);
	return 1;
}
