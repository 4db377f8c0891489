/*
 * stored_event.h: the constructors of the events a room stores
 * (stored_event.c says what each holds).  Every stored event passes
 * through one of them whatever it came from: one the room makes now
 * (journal_record), a row of room.db replayed to a client (journal_replay)
 * and a row of an imported archive (room_import.c).  So what a client is
 * sent from history is what a live event of its type could have been,
 * never the bytes a file held, and an archive cannot make the room say
 * what it never says live (an exec_done, an access_denied).
 */
#ifndef ATRIUM_AGENT_STORED_EVENT_H
#define ATRIUM_AGENT_STORED_EVENT_H

#include <stddef.h>

#include <json-c/json.h>

/* Rebuild in (a parsed event with its type, seq and time) into *out, a
 * new event of the same type: only the fields its type's constructor
 * makes, each of its JSON type; user names checked (names.h); text made
 * valid UTF-8 with the control characters removed as live text is
 * (utf8_clean), a command's output made valid UTF-8 as live output is
 * (utf8_repair).  Fields a constructor does not make are left out and
 * named in note (len bytes; "" when none), which is not an error.
 * 0; -EINVAL with the reason in note when in cannot be a stored event
 * (not an object, a type that is not stored (event_types.h), a field of
 * another JSON type, an invalid name or time, a field its type needs
 * missing); -ENOMEM. */
int stored_event_build(json_object *in, json_object **out, char *note,
    size_t len);

/* The same for a row of room.db's events table: json must be exactly one
 * JSON object, whose seq and time become the row's (seq, time: the row's
 * own order and stamp win over what its text says).  Same results. */
int stored_event_from_row(long long seq, const char *time, const char *json,
    json_object **out, char *note, size_t len);

/* A copy of the JSON value v (not NULL) at most depth levels deep, its
 * strings made valid UTF-8 (utf8_repair) and its keys cleaned: how a
 * stored value of any shape (a tool's input) is rebuilt.  NULL when too
 * deep or out of memory. */
json_object *stored_event_copy_value(json_object *v, int depth);

/* 1 when s is a time as the room stamps them ("2026-11-30T03:44:26.123Z",
 * the fraction optional), else 0. */
int stored_event_time_valid(const char *s);

#endif
