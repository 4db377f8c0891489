/*
 * phases.c: a connection's phase stamps and their log line (phases.h).
 */
#include <stddef.h>
#include <stdio.h>
#include <time.h>

#include "phases.h"

static const char *const phase_names[PHASE_COUNT] = {
	[PHASE_ACCEPT] = "accept",
	[PHASE_KEX_START] = "kex-wait",
	[PHASE_KEX_DONE] = "kex",
	[PHASE_KEX_BACK] = "hand-back",
	[PHASE_AUTH] = "auth",
	[PHASE_CHANNEL] = "channel",
	[PHASE_REQUEST] = "request",
	[PHASE_ROOM] = "room",
	[PHASE_EXIT] = "run",
	[PHASE_CLOSE] = "close",
};

/* See phases.h. */
long long
phases_now_us(void)
{
	struct timespec ts;
	long long us;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	us = (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	return us ? us : 1;
}

/* See phases.h. */
void
phases_set(struct phases *ph, enum phase p, long long us)
{
	if (p >= 0 && p < PHASE_COUNT && !ph->us[p])
		ph->us[p] = us;
}

/* See phases.h. */
void
phases_mark(struct phases *ph, enum phase p)
{
	phases_set(ph, p, phases_now_us());
}

/* Append to out at *used what snprintf would, never past len. */
static void
phases_append(char *out, size_t len, size_t *used, const char *name,
    long long us, int first)
{
	int n;

	if (*used >= len)
		return;
	n = snprintf(out + *used, len - *used, "%s%s %.1f", first ? "" : ", ",
	    name, us / 1000.0);
	if (n > 0)
		*used += (size_t)n;
}

/* See phases.h. */
const char *
phases_format(const struct phases *ph, char *out, size_t len)
{
	long long prev = ph->us[PHASE_ACCEPT], last = prev;
	size_t used = 0;
	int first = 1;

	if (!len)
		return out;
	out[0] = '\0';
	if (!prev)
		return out;
	for (int p = PHASE_ACCEPT + 1; p < PHASE_COUNT; p++) {
		if (!ph->us[p])
			continue;
		phases_append(out, len, &used, phase_names[p],
		    ph->us[p] - prev, first);
		first = 0;
		prev = last = ph->us[p];
	}
	if (used < len)
		snprintf(out + used, len - used, "%stotal %.1f (accepted at "
		    "%lld.%06lld s)", first ? "" : "; ", (last -
		    ph->us[PHASE_ACCEPT]) / 1000.0, ph->us[PHASE_ACCEPT] /
		    1000000, ph->us[PHASE_ACCEPT] % 1000000);
	return out;
}
