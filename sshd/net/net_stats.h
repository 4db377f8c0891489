/*
 * net_stats.h: the network process's counts for GET /metrics
 * (net_stats.c): its SSH connections and their channels by kind, and the
 * connections it refused over a limit.  atriumd-http cannot see them, so
 * this process reports them to the monitor (the net_stats request,
 * privsep.h), which hands the last report to atriumd-http's metrics
 * request.  A report goes when a count changed, at most every 100 ms.
 */
#ifndef ATRIUMD_NET_STATS_H
#define ATRIUMD_NET_STATS_H

struct server;

enum net_stat {
	NET_STAT_CONNECTIONS,	/* authenticated SSH connections */
	NET_STAT_CHAT,		/* chat channels (ssh ROOM@host) */
	NET_STAT_EXEC,		/* exec channels (ssh ROOM@host CMD) */
	NET_STAT_SFTP,		/* sftp, scp, sshfs channels */
	NET_STAT_CONTROL,	/* atrium subsystem channels */
	NET_STAT_REFUSED,	/* connections refused over a limit, in all */
	NET_STAT_N
};

/* The names of the counts on the wire, in enum net_stat's order. */
extern const char *const net_stat_names[NET_STAT_N];

struct net_stats {
	long long sent[NET_STAT_N];	/* the last report */
	long long next_ms;		/* no report before then */
	unsigned long long refused;	/* NET_STAT_REFUSED, counted by
					 * server.c */
};

/* After each poll: report the counts if one changed (see above). */
void net_stats_tick(struct server *srv);

#endif
