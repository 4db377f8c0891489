/*
 * net_stats.c: the network process's counts, reported to the monitor for
 * GET /metrics (net_stats.h).  Called by server.c after each poll.
 *
 * The counts are taken after each loop turn (a walk over every session
 * and channel, as session_tick's), and reported when they changed: so a
 * change is reported in the turn that made it, and an idle process is
 * never woken for them.  Under a flood of changes a report goes every
 * NET_STATS_MS at most; a change held back by that asks for one wake
 * when it may go.
 */
#include "net_stats.h"

#include <string.h>

#include "monitor_ask.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "util.h"

#define NET_STATS_MS	100	/* between two reports, at least */

const char *const net_stat_names[NET_STAT_N] = {
	"connections", "chat", "exec", "sftp", "control", "refused",
};

/* The counts now, into v. */
static void
net_stats_count(struct server *srv, long long v[NET_STAT_N])
{
	memset(v, 0, sizeof(long long) * NET_STAT_N);
	for (struct session *s = srv->sessions; s; s = s->next) {
		if (!s->authed || s->dead)
			continue;
		v[NET_STAT_CONNECTIONS]++;
		for (struct chan *c = s->chans; c; c = c->next) {
			const char *name = c->ops && !c->closing ?
			    c->ops->name : "";

			if (strcmp(name, "chat") == 0)
				v[NET_STAT_CHAT]++;
			else if (strcmp(name, "control") == 0)
				v[NET_STAT_CONTROL]++;
			else if (strcmp(name, "exec") == 0)
				v[stream_sftp(c) ? NET_STAT_SFTP :
				    NET_STAT_EXEC]++;
		}
	}
	v[NET_STAT_REFUSED] = (long long)srv->stats.refused;
}

/* See net_stats.h. */
void
net_stats_tick(struct server *srv)
{
	long long now, v[NET_STAT_N];

	if (srv->stopping)
		return;
	net_stats_count(srv, v);
	if (memcmp(v, srv->stats.sent, sizeof(v)) == 0)
		return;
	now = time_mono_ms();
	if (now < srv->stats.next_ms) {
		/* Sent a moment ago: this change goes once that is over,
		 * even if nothing else wakes the loop by then. */
		loop_wake_at(&srv->loop, srv->stats.next_ms);
		return;
	}
	srv->stats.next_ms = now + NET_STATS_MS;
	memcpy(srv->stats.sent, v, sizeof(v));
	monitor_ask_stats(srv, v);
}
