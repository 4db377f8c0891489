/*
 * agentwatch.h: atriumd's watchdog on one room's atrium-agent
 * (agentwatch.c).  A crashed agent is noticed by its exit; a hung one (an
 * endless loop, a blocking call, SIGSTOP) keeps its socket open and answers
 * nothing, so sessions would wait on it for ever.  The watchdog keeps one
 * connection to RUN/agent.sock (hello kind "monitor") and pings it; the
 * agent answers "pong" from its loop.  When no line has come back for the
 * timeout, the room kills the agent and restarts it as after a crash.
 *
 * Each pong also carries the agent's model requests since it started,
 * whose growth is added to the monitor's totals (model_totals.h).
 *
 * The same connection carries the agent's reports of its access list
 * ("access": owner, visibility, members; at each new connection and after
 * each change), which the watchdog hands to on_access unchecked: the
 * room's record is the monitor's (access_record.h).
 */
#ifndef ATRIUMD_AGENTWATCH_H
#define ATRIUMD_AGENTWATCH_H

#include "agentlink.h"
#include "loop.h"
#include "model_totals.h"

/* What the agent's last pong said it was doing (turn_report in the
 * agent), for `atriumd status`; checked and cleaned when read. */
struct agentwatch_turn {
	char phase[12];		/* idle, context, model, retry, approval, tool;
				 * "" before the first pong */
	long long turn;		/* the turn's id, 0 when idle */
	char user[64];		/* who prompted it */
	long long step;		/* model responses so far */
	char tool[48];		/* the tool running in phase tool, or "" */
	long long queued;	/* prompts waiting */
};

struct agentwatch {
	struct agentlink link;	/* the monitor connection, fd -1 when none */
	int watching;		/* between agentwatch_start and _stop */
	int hello_sent;		/* on this connection */
	int ended;		/* the agent closed it: connect again */
	int ping_out;		/* a ping is waiting for its pong */
	long long answered_ms;	/* last line from the agent (or the start) */
	long long next_ping_ms;	/* when to ping next */
	struct agentwatch_turn turn;	/* from the last pong */
	long long model[MODEL_COUNTS];	/* the agent's model counts at its
					 * last pong (model_totals.h) */
	struct model_totals *totals;	/* where what grew is added; NULL:
					 * not counted */
	/* An "access" line from the agent (obj is the caller's to check,
	 * not to keep); NULL: ignored. */
	void (*on_access)(void *arg, json_object *obj);
	void *on_access_arg;
};

/* Not watching; cannot fail.  on_access(arg, obj) gets each access
 * report (may be NULL). */
void agentwatch_init(struct agentwatch *w,
    void (*on_access)(void *arg, json_object *obj), void *arg);

/* Begin watching an agent that just became ready, at now. */
void agentwatch_start(struct agentwatch *w, long long now);

/* Stop watching and close the connection. */
void agentwatch_stop(struct agentwatch *w);

/* When agentwatch_tick has work next (the next ping or the timeout;
 * monotonic ms), or 0 when it has none. */
long long agentwatch_next(const struct agentwatch *w, long long timeout_ms);

/* Connect and ping as due.  1 when the agent has answered nothing for
 * timeout_ms (the caller kills it), else 0. */
int agentwatch_tick(struct agentwatch *w, struct loop *loop,
    const char *run_dir, long long now, long long timeout_ms);

#endif
