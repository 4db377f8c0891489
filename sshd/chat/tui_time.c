/*
 * tui_time.c: event times as the chat shows them (tui_time.h).  Called by
 * chat.c for each event it prints.  Invariant: nothing here fails on a
 * hostile time string: what does not parse is -EINVAL and shows no time.
 */
#include "tui_time.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The n digits at p as a number, or -1 when one is not a digit. */
static int
tui_time_digits(const char *p, int n)
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
tui_time_fields(const char *iso, int f[6])
{
	static const int at[6] = { 0, 5, 8, 11, 14, 17 };
	static const char sep[] = "--T::";

	if (strnlen(iso, 19) < 19)
		return -1;
	for (int i = 0; i < 5; i++)
		if (iso[at[i + 1] - 1] != sep[i])
			return -1;
	for (int i = 0; i < 6; i++)
		if ((f[i] = tui_time_digits(iso + at[i], i ? 2 : 4)) < 0)
			return -1;
	return 0;
}

/* See tui_time.h. */
int
tui_time_parse(const char *iso, long long *ms)
{
	struct tm tm;
	int f[6], y, mo, d, h, mi, s, frac = 0;
	time_t t;

	*ms = 0;
	if (!iso || tui_time_fields(iso, f) < 0)
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

/* ms as local broken-down time. */
static void
tui_time_local(long long ms, struct tm *tm)
{
	time_t t = (time_t)(ms / 1000);

	if (!localtime_r(&t, tm))
		memset(tm, 0, sizeof(*tm));
}

/* See tui_time.h. */
void
tui_time_hhmm(long long ms, char *out, size_t len)
{
	struct tm tm;

	tui_time_local(ms, &tm);
	snprintf(out, len, "%02d:%02d", tm.tm_hour % 24, tm.tm_min % 60);
}

/* See tui_time.h. */
int
tui_time_day(long long ms)
{
	struct tm tm;

	tui_time_local(ms, &tm);
	return (tm.tm_year + 1900) * 10000 + (tm.tm_mon + 1) * 100 +
	    tm.tm_mday;
}

/* See tui_time.h. */
void
tui_time_date(long long ms, char *out, size_t len)
{
	static const char *const days[] = { "Sunday", "Monday", "Tuesday",
	    "Wednesday", "Thursday", "Friday", "Saturday" };
	static const char *const months[] = { "January", "February", "March",
	    "April", "May", "June", "July", "August", "September", "October",
	    "November", "December" };
	struct tm tm;

	tui_time_local(ms, &tm);
	snprintf(out, len, "%s %d %s %d", days[(unsigned)tm.tm_wday % 7],
	    tm.tm_mday, months[(unsigned)tm.tm_mon % 12], tm.tm_year + 1900);
}

/* See tui_time.h. */
void
tui_time_duration(long long ms, char *out, size_t len)
{
	if (ms < 0)
		ms = 0;
	if (ms < 10000)
		snprintf(out, len, "%lld.%02lld s", ms / 1000, ms % 1000 / 10);
	else if (ms < 60000)
		snprintf(out, len, "%lld.%lld s", ms / 1000, ms % 1000 / 100);
	else if (ms < 3600000)
		snprintf(out, len, "%lld min %lld s", ms / 60000,
		    ms % 60000 / 1000);
	else
		snprintf(out, len, "%lld h %lld min", ms / 3600000,
		    ms % 3600000 / 60000);
}
