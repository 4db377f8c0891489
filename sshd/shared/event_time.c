/*
 * event_time.c: a room event's time as milliseconds (event_time.h).
 * Called by the chat (atriumd-net) for each event it prints or scrolls
 * to, and by atriumd-http's seeds' APIs for each event they report.
 * Invariant: nothing here fails on a hostile time string: what does not
 * parse is -EINVAL.
 */
#include "event_time.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* The n digits at p as a number, or -1 when one is not a digit. */
static int
event_time_digits(const char *p, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* "YYYY-MM-DDTHH:MM:SS" at the start of iso into its six fields, by
 * position (every chat member reads each event's time: no sscanf).
 * 0, or -1 when it is not that. */
static int
event_time_fields(const char *iso, int f[6])
{
	static const int at[6] = { 0, 5, 8, 11, 14, 17 };
	static const char sep[] = "--T::";

	if (strnlen(iso, 19) < 19)
		return -1;
	for (int i = 0; i < 5; i++)
		if (iso[at[i + 1] - 1] != sep[i])
			return -1;
	for (int i = 0; i < 6; i++)
		if ((f[i] = event_time_digits(iso + at[i], i ? 2 : 4)) < 0)
			return -1;
	return 0;
}

/* See event_time.h. */
int
event_time_ms(const char *iso, long long *ms)
{
	struct tm tm;
	int f[6], y, mo, d, h, mi, s, frac = 0;
	time_t t;

	*ms = 0;
	if (!iso || event_time_fields(iso, f) < 0)
		return -EINVAL;
	y = f[0], mo = f[1], d = f[2], h = f[3], mi = f[4], s = f[5];
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
	    s > 60 || y < 1970)
		return -EINVAL;
	/* Milliseconds: up to three digits after the point. */
	for (int i = 20; iso[19] == '.' && i < 23 && iso[i] >= '0' &&
	    iso[i] <= '9'; i++)
		frac = frac * 10 + (iso[i] - '0');
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -EINVAL;
	*ms = (long long)t * 1000 + (frac >= 0 && frac < 1000 ? frac : 0);
	return 0;
}
