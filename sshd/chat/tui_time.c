/*
 * tui_time.c: event times as the chat shows them (tui_time.h).  Called by
 * chat.c for each event it prints, with the milliseconds event_time.h
 * read from the event (a time that does not parse shows no time).
 */
#include "tui_time.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

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
