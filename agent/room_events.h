/*
 * room_events.h: the events the room sends.  An event for the whole room goes
 * through the journal (journal.h): it gets the next room-wide seq and the
 * time there, a stored one is recorded in room.db, and none reaches a
 * socket before the commit that stores it (or, live, that makes its seq
 * durable).  A reply to one connection takes no seq of its own.  The
 * connections themselves are conn.h's.
 */
#ifndef ATRIUM_AGENT_ROOM_H
#define ATRIUM_AGENT_ROOM_H

#include <stdarg.h>

#include <json-c/json.h>

#include "buf.h"
#include "conn.h"
#include "protocol.h"

struct agent;

/* A new event object {"type": type}. */
json_object *room_event_new(const char *type);

/* Send ev to every member: stored (store set: recorded and committed at
 * once, with whatever room.db's open transaction holds) or live.  Takes
 * ownership of ev.  When room.db cannot take a stored event (full disk,
 * read-only) it is announced to nobody and the result is that -errno
 * (room_db_strerror says why): the caller tells whoever asked for it
 * (room_unrecorded). */
int room_emit(struct agent *a, json_object *ev, int store);
/* Record ev in room.db's open transaction; it is announced by the next
 * commit (a checkpoint, journal_commit).  Takes ownership of ev.  0 or
 * -errno (nothing recorded; the next commit fails too). */
int room_record(struct agent *a, json_object *ev);
/* Tell c that what it asked for (what: "your message"; id: its request,
 * or NULL) could not be recorded in room.db (err, from room_emit or a
 * room_db write), so nobody was told of it. */
void room_unrecorded(struct conn *c, const char *id, const char *what,
    int err);

/* Stream a command's output to the room as a live event of type (e.g.
 * "exec_output", "tool_output") with id, stream and text, in whole UTF-8
 * characters: an unfinished sequence at the end waits in carry (a buffer
 * of at least PROC_CHUNK + 4 bytes) for the next call; invalid bytes are
 * replaced.  stream is PROC_STDOUT or PROC_STDERR. */
void room_emit_output(struct agent *a, const char *type, const char *id,
    int stream, struct buf *carry, const char *p, size_t n);

/* Queue line (one JSON object, no newline) to c alone, unstamped: a line
 * for atriumd about this link (exec_done), not a room event. */
void room_send_link(struct conn *c, const char *line);

/* Queue whole lines (each ending in a newline) to c alone, unstamped: a
 * live view such as the terminal's screen (term.h), not a room event. */
void room_send_lines(struct conn *c, const char *p, size_t n);

/* Queue ev to one connection only, as a reply: it carries the seq of the
 * last announced event (it takes none).  Takes ownership. */
void room_send(struct conn *c, json_object *ev);

/* An `error` event for one connection (id may be NULL). */
void room_error(struct conn *c, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The `error` event room_error sends, for a caller that adds fields. */
json_object *room_error_vnew(const char *id, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* A `notice` event to every member. */
void room_notice(struct agent *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A presence event: who is here and how long each has been idle. */
json_object *room_presence_event(struct agent *a);
/* Announce presence, with how ("joined", "left"; NULL: neither) user. */
void room_presence(struct agent *a, const char *how, const char *user);

/* Names of the members connected now, a new JSON array (deduplicated). */
json_object *room_members(struct agent *a);

#endif
