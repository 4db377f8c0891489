/*
 * fswatch.h: the monitor's reading of one room's workspace request counts
 * (fswatch.c), for GET /metrics.  While the room is ready and someone
 * reads the metrics (a metrics request within the last FSWATCH_WANTED_MS:
 * an idle atriumd that nobody scrapes must not wake), every
 * FSWATCH_EVERY_MS the monitor opens the mount's control socket
 * (DATA/rooms/ROOM/workspace.db-ctl, fs/daemon/control_socket.c), asks "stats"
 * and reads the answer from its loop, never waiting for it; what grew since
 * the last answer is added to the monitor's totals.  So the totals only
 * grow though rooms stop and start, and lag the mounts by at most
 * FSWATCH_EVERY_MS while scraped (the first scrape after a quiet spell
 * shows the figures of the last one before it); what a mount served after
 * its last answer and before it stopped is not seen.  An answer that breaks the format, or none
 * within FSWATCH_TIMEOUT_MS, counts nothing.
 */
#ifndef ATRIUMD_FSWATCH_H
#define ATRIUMD_FSWATCH_H

#include <stddef.h>

#include "fsstats.h"
#include "loop.h"

#define FSWATCH_EVERY_MS	2000
#define FSWATCH_TIMEOUT_MS	5000
#define FSWATCH_WANTED_MS	60000	/* asked this long after a scrape */

/* One kind's figures: count, summed nanoseconds, then the buckets, each
 * alone (not cumulative). */
#define FSWATCH_FIELDS (2 + FSSTATS_BUCKETS)

/* Every room's workspace requests over atriumd's life, by kind. */
struct fsops_totals {
	unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS];
	long long wanted_until_ms;	/* ask the mounts until then (0:
					 * nobody reads the metrics) */
};

struct fswatch {
	struct watch w;		/* the open request's socket */
	int fd;			/* -1: none open */
	int watching;		/* between fswatch_start and _stop */
	long long next_ms;	/* when to ask next */
	long long asked_ms;	/* when the open request was sent */
	int have_last;		/* last holds this mount's previous answer */
	int warned;		/* a bad answer of this mount was logged */
	unsigned long long last[FSSTATS_KINDS][FSWATCH_FIELDS];
	struct fsops_totals *totals;	/* where what grew is added */
	const char *room;	/* its name, for the log */
	size_t len;		/* bytes of in */
	char in[FSSTATS_ANSWER_MAX];	/* the answer so far */
};

/* Not watching, adding to totals; room names it in the log (kept, not
 * copied).  Cannot fail. */
void fswatch_init(struct fswatch *w, struct fsops_totals *totals,
    const char *room);

/* The room's mount is up (a new atrium-fs): count it from its start. */
void fswatch_start(struct fswatch *w, long long now);

/* The room stops: close any open request.  Accepts a w not watching. */
void fswatch_stop(struct fswatch *w);

/* Ask the mount of room_dir's workspace.db again when it is time; close
 * a request left unanswered too long.  Cannot fail (a mount that cannot
 * be asked is asked again next time). */
void fswatch_tick(struct fswatch *w, struct loop *loop, const char *room_dir,
    long long now);

/* When fswatch_tick has work next (0: none). */
long long fswatch_next(const struct fswatch *w);

/* Parse a stats answer (text, len bytes, fs/daemon/control_socket.c's format)
 * into v.  0, or -1 when it breaks the format.  For fswatch.c and its unit
 * test. */
int fswatch_parse(const char *text, size_t len,
    unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS]);

/* Add what grew since the mount's last answer v to the totals, and keep
 * v (a figure below the last one's: a new daemon, all of v grew).  For
 * fswatch.c and its unit test. */
void fswatch_add(struct fswatch *w,
    unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS]);

#endif
