/*
 * http_guard.c: failed tokens per address (http_guard.h).  Called by
 * http_auth.c before and after the monitor resolves a token.
 */
#include "http_guard.h"

#include <stdio.h>
#include <string.h>

/* FNV-1a of addr, for its slot. */
static unsigned
http_guard_hash(const char *addr)
{
	unsigned h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)addr; *p; p++)
		h = (h ^ *p) * 16777619u;
	return h % HTTP_GUARD_SLOTS;
}

/* addr's slot, its window started again when over; NULL when the slot is
 * another address's current one (create: take it anyway when it is
 * stale). */
static struct http_guard_slot *
http_guard_slot(struct http_guard *g, const char *addr, long long now_ms,
    int create)
{
	struct http_guard_slot *s = &g->slot[http_guard_hash(addr)];
	int stale = now_ms - s->since_ms >= HTTP_GUARD_WINDOW_MS;

	if (strcmp(s->addr, addr) != 0) {
		if (!create || (s->addr[0] && !stale))
			return NULL;
		snprintf(s->addr, sizeof(s->addr), "%s", addr);
		s->since_ms = now_ms;
		s->failures = 0;
		return s;
	}
	if (stale) {
		s->since_ms = now_ms;
		s->failures = 0;
	}
	return s;
}

/* See http_guard.h. */
int
http_guard_wait(struct http_guard *g, const char *addr, int limit,
    long long now_ms)
{
	struct http_guard_slot *s = http_guard_slot(g, addr, now_ms, 0);
	long long left;

	if (!s || limit <= 0 || s->failures < limit)
		return 0;
	left = s->since_ms + HTTP_GUARD_WINDOW_MS - now_ms;
	return left > 0 ? (int)((left + 999) / 1000) : 0;
}

/* See http_guard.h. */
void
http_guard_failed(struct http_guard *g, const char *addr, long long now_ms)
{
	struct http_guard_slot *s = http_guard_slot(g, addr, now_ms, 1);

	if (s && s->failures < 1 << 30)
		s->failures++;
}
