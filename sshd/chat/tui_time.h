/*
 * tui_time.h: the times the chat shows.  Room events carry their time in
 * UTC ("2026-11-30T03:44:26.123Z", protocol.h); the chat shows HH:MM in
 * the server's time zone (TZ, else /etc/localtime), a line with the date
 * when the date changes, and how long a command ran.  The time is read
 * into milliseconds by event_time.h.  Pure but for the
 * time zone, which the C library reads once.
 */
#ifndef ATRIUMD_TUI_TIME_H
#define ATRIUMD_TUI_TIME_H

#include <stddef.h>

/* "HH:MM" of ms in the server's time zone (out: at least 6 bytes). */
void tui_time_hhmm(long long ms, char *out, size_t len);

/* The local day of ms as a number that orders and compares (yyyymmdd). */
int tui_time_day(long long ms);

/* The local date of ms for the date line: "Tuesday 1 December 2026". */
void tui_time_date(long long ms, char *out, size_t len);

/* A duration for people: "0.21 s", "12.0 s", "3 min 4 s", "2 h 5 min". */
void tui_time_duration(long long ms, char *out, size_t len);

#endif
