/*
 * phases.h: where one connection's time went, for the debug log.
 *
 * A connection passes through fixed phases; each is stamped (monotonic
 * microseconds) when it begins, and the session logs them once, at debug
 * level, when it is freed:
 *
 *   session 7 phases from 127.0.0.1 (ms): kex-wait 0.1, kex 4.2,
 *     hand-back 0.2, auth 1.3, channel 0.4, request 0.6, room 1.1,
 *     run 62.0, close 0.9; total 70.8 (accepted at 1234.567890 s)
 *
 * Each number is the time from the phase before it (the last one stamped)
 * to this one; a phase a connection never reached is left out.  "accepted
 * at" is CLOCK_MONOTONIC, so a client on the same host can line its own
 * clock up with it.  Cheap: one clock read per phase.
 */
#ifndef ATRIUMD_PHASES_H
#define ATRIUMD_PHASES_H

enum phase {
	PHASE_ACCEPT,		/* accepted, handed to a handshake thread */
	PHASE_KEX_START,	/* a handshake thread took it (kex-wait) */
	PHASE_KEX_DONE,		/* the client asked for ssh-userauth (kex) */
	PHASE_KEX_BACK,		/* the main loop took it back (hand-back) */
	PHASE_AUTH,		/* authenticated (auth) */
	PHASE_CHANNEL,		/* first channel opened (channel) */
	PHASE_REQUEST,		/* its exec, subsystem or shell (request) */
	PHASE_ROOM,		/* the room ready, the kind started (room) */
	PHASE_EXIT,		/* exit status sent (run) */
	PHASE_CLOSE,		/* the connection freed (close) */
	PHASE_COUNT
};

struct phases {
	long long us[PHASE_COUNT];	/* 0: not reached */
};

/* Monotonic microseconds, never 0. */
long long phases_now_us(void);

/* Stamp phase p now, unless it was stamped before (first time counts). */
void phases_mark(struct phases *ph, enum phase p);

/* Stamp phase p with us (taken on another thread), unless stamped. */
void phases_set(struct phases *ph, enum phase p, long long us);

/* Format the phases as the log line's tail (no session number) into out.
 * Returns out. */
const char *phases_format(const struct phases *ph, char *out, size_t len);

#endif
