/*
 * tui_status.h: what the chat's status line says, kept from the room's
 * events: who is here and who is typing, what the agent is doing (idle,
 * thinking, running a command, waiting for approval), the tokens the model
 * used in the room today; and when each running command started, so its
 * block can say how long it took.  Pure: events in, text out, no I/O and
 * no escape sequences (tui_draw.c draws the line).
 */
#ifndef ATRIUMD_TUI_STATUS_H
#define ATRIUMD_TUI_STATUS_H

#include <json-c/json.h>

#define TUI_STATUS_MAX_USERS	32	/* names kept (more are counted) */
#define TUI_STATUS_MAX_TYPING	4	/* typists kept */
#define TUI_STATUS_TYPING_MS	6000	/* a typing event shows this long */
#define TUI_STATUS_MAX_RUNS	16	/* start times of running commands */
#define TUI_STATUS_NAME		33	/* a user name and its NUL */

enum tui_agent_state {
	TUI_AGENT_IDLE,
	TUI_AGENT_THINKING,	/* a turn runs: the model is answering */
	TUI_AGENT_RUNNING,	/* a tool runs: `detail` */
	TUI_AGENT_WAITING,	/* an approval request is open: `detail` */
};

struct tui_status {
	char self[TUI_STATUS_NAME];	/* this session's user: not shown
					 * as typing */
	char users[TUI_STATUS_MAX_USERS][TUI_STATUS_NAME];	/* here */
	int nusers;			/* names kept */
	int nhere;			/* people here (may pass nusers) */
	struct {
		char name[TUI_STATUS_NAME];
		long long until_ms;	/* shown until (monotonic) */
	} typing[TUI_STATUS_MAX_TYPING];
	long long typing_next_ms;	/* the earliest until_ms shown, 0:
					 * none (a deadline, not a scan) */
	enum tui_agent_state agent;
	char detail[96];		/* the command (or tool) of RUNNING and
					 * WAITING */
	long long tokens;		/* used today, input and output */
	struct {
		char id[64];
		long long start_ms;	/* the event time it started */
	} runs[TUI_STATUS_MAX_RUNS];	/* ring, newest at nruns % MAX */
	unsigned nruns;
};

/* Empty; self is the user whose screen this is. */
void tui_status_init(struct tui_status *st, const char *self);

/* Take one room event (type, its object, its time in ms since the epoch,
 * 0 when unknown; now_ms on the monotonic clock).  Replayed events
 * (`replay`) move the agent's state but add no tokens (the welcome's
 * usage_today holds them).  0 when the status line reads as before (a
 * chat line from someone not typing, a command's start), 1 when it may
 * not: most members' lines change nothing, and a thousand of them need
 * not build the line again to find that out. */
int tui_status_event(struct tui_status *st, const char *type,
    json_object *o, long long time_ms, long long now_ms);

/* Take only the times of one event (a command's or a tool call's start,
 * an approval that starts it again), for an older event drawn from the
 * room's history: its blocks show their durations, the line stays. */
void tui_status_timing(struct tui_status *st, const char *type,
    json_object *o, long long time_ms);

/* The status line's text for room at now_ms: "ROOM | here: a, b | b is
 * typing | agent: running `make` | 1234 tokens today". */
void tui_status_text(const struct tui_status *st, const char *room,
    long long now_ms, char *out, size_t len);

/* Forget who stopped typing by now_ms: 1 when someone did (the line
 * changes), else 0.  Cheap: chat.c asks on every tick, and only a
 * deadline passed makes it look at the entries. */
int tui_status_expire(struct tui_status *st, long long now_ms);

/* When the next typing entry expires (monotonic ms), or 0 when none is
 * shown: chat.c asks its loop to wake then. */
long long tui_status_next_expiry(const struct tui_status *st);

/* How long the command with id ran, when it ended at end_ms: its
 * milliseconds, or -1 when its start was not seen.  The entry is
 * forgotten. */
long long tui_status_took(struct tui_status *st, const char *id,
    long long end_ms);

#endif
