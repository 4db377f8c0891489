/*
 * http_guard.h: failed tokens counted per client address (http_guard.c),
 * so that guessing tokens, or flooding the monitor and the log with bad
 * ones, is slowed to http-auth-failures a minute from one address: past
 * it, requests from there that need a token get 429 with Retry-After
 * until the minute is over, without the monitor being asked.
 *
 * A fixed table (HTTP_GUARD_SLOTS), no allocation: an address that falls
 * out of it (the table is full of others within the minute) starts
 * again from zero, which a flood from many addresses can force; the
 * connection limits bound that one.
 */
#ifndef ATRIUMD_HTTP_GUARD_H
#define ATRIUMD_HTTP_GUARD_H

#define HTTP_GUARD_SLOTS	1024
#define HTTP_GUARD_WINDOW_MS	60000

struct http_guard_slot {
	char addr[64];			/* "" when free */
	long long since_ms;		/* the window's start */
	int failures;			/* in the window */
};

struct http_guard {
	struct http_guard_slot slot[HTTP_GUARD_SLOTS];
};

/* Seconds until addr may try again (0: it may now), with limit failures
 * a window (0: no limit). */
int http_guard_wait(struct http_guard *g, const char *addr, int limit,
    long long now_ms);

/* A token from addr was refused. */
void http_guard_failed(struct http_guard *g, const char *addr,
    long long now_ms);

#endif
