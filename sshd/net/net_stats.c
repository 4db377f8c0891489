/*
 * net_stats.c: the network process's counts, reported to the monitor for
 * GET /metrics (net_stats.h).  Called by server.c after each poll.
 *
 * The walk over every channel is done once a second at most, not each
 * loop turn: with thousands of sessions it costs a turn's worth of ticks.
 * A turn inside the second asks for one wake at its end, so the last
 * change is reported even when nothing else happens; an idle process is
 * not woken again.
 */
#include "net_stats.h"

#include <string.h>

#include "monitor_ask.h"
#include "server.h"
#include "session.h"
#include "stream.h"
#include "util.h"

#define NET_STATS_MS	1000	/* between two reports, at least */

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
	long long now = time_mono_ms(), v[NET_STAT_N];

	if (srv->stopping)
		return;
	if (now < srv->stats.next_ms) {
		/* Something happened this turn: look once the second is
		 * over, even if nothing else wakes the loop by then. */
		loop_wake_at(&srv->loop, srv->stats.next_ms);
		return;
	}
	srv->stats.next_ms = now + NET_STATS_MS;
	net_stats_count(srv, v);
	if (memcmp(v, srv->stats.sent, sizeof(v)) == 0)
		return;
	memcpy(srv->stats.sent, v, sizeof(v));
	monitor_ask_stats(srv, v);
}
