/*
 * event_time.h: the time a room event carries, in UTC as protocol.h
 * gives it ("2026-11-30T03:44:26.123Z"), as milliseconds since the epoch
 * (event_time.c), for the chat (tui_time.h shows it) and the HTTP APIs
 * alike.  Read by position, not sscanf: every chat member reads each
 * event's time.
 */
#ifndef ATRIUMD_EVENT_TIME_H
#define ATRIUMD_EVENT_TIME_H

/* Milliseconds since the epoch of an event's time into *ms: 0, or
 * -EINVAL (*ms 0) when iso is not of that form (NULL included), or a
 * field is out of its range. */
int event_time_ms(const char *iso, long long *ms);

#endif
