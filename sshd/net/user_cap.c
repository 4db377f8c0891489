/*
 * user_cap.c: a person's commands at once, across rooms and fronts
 * (user_cap.h).  Called by stream.c (exec and sftp channels), chat.c
 * (!CMD) and control.c (exec lines) before they start a command, and by
 * channel.c after each poll and when a channel goes.
 */
#include "user_cap.h"

#include <stdio.h>
#include <string.h>

#include "agentlink.h"
#include "chan_int.h"
#include "log.h"
#include "monitor_ask.h"
#include "server.h"
#include "session.h"
#include "stream.h"

/* The commands c runs now (see user_cap.h). */
static int
user_cap_level(const struct chan *c)
{
	if (c->closing)
		return 0;
	return stream_busy(c) + (c->link ? agentlink_execs(c->link) : 0);
}

/* See user_cap.h. */
int
user_cap_full(struct chan *c, char *msg, size_t msglen)
{
	char why[400];
	int r = monitor_ask_cmd_begin(c->s, why, sizeof(why));

	if (r == 0) {
		c->cap_held++;
		return 0;
	}
	log_info("session %lu: %s: command refused: %s", c->s->num,
	    c->s->user, r < 0 ? strerror(-r) : "over max-commands-per-user");
	snprintf(msg, msglen, "atrium: %s", why);
	return 1;
}

/* See user_cap.h. */
void
user_cap_sync(struct chan *c)
{
	int level;

	if (c->cap_held <= 0)
		return;
	level = user_cap_level(c);
	if (level >= c->cap_held)
		return;
	monitor_ask_cmd_end(c->s->srv, c->s->user, c->cap_held - level);
	c->cap_held = level;
}

/* See user_cap.h. */
void
user_cap_release(struct chan *c)
{
	if (c->cap_held > 0)
		monitor_ask_cmd_end(c->s->srv, c->s->user, c->cap_held);
	c->cap_held = 0;
}
