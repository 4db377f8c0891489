/*
 * room.h: the room's connections on RUN/agent.sock and the events sent to
 * them.  Every event gets the next room-wide seq and the time here; stored
 * events go into room.db in the same loop turn and reach the sockets only
 * after the before-sleep commit (room_flush runs after it).
 */
#ifndef ATRIUM_AGENT_ROOM_H
#define ATRIUM_AGENT_ROOM_H

#include <json-c/json.h>

#include "buf.h"
#include "jsonl.h"
#include "protocol.h"

struct agent;

#define ROOM_MAX_OUTPUT	(32 * 1024 * 1024)	/* queued bytes per client */
#define ROOM_MAX_FDS_QUEUED	(PROTO_MAX_FDS * 2)
#define ROOM_MAX_CONNS	1024

/* CONN_MONITOR is atriumd's watchdog: it sends only "ping", answered with
 * "pong" from the loop, and does not keep the room from going idle. */
enum conn_kind { CONN_NEW, CONN_CHAT, CONN_CONTROL, CONN_EXEC, CONN_MONITOR };

struct conn {
	struct conn *next;
	struct agent *a;
	int fd;
	enum conn_kind kind;		/* CONN_NEW until hello */
	char user[64];
	int admin;			/* hello said the key has atrium-admin */
	struct jsonl in;		/* framed input, PROTO_MAX_LINE */
	struct buf out;			/* queued output, ROOM_MAX_OUTPUT */
	int fds[ROOM_MAX_FDS_QUEUED];	/* received, not yet claimed */
	long long fd_end[ROOM_MAX_FDS_QUEUED];	/* rx after the read that
					 * brought each (see room_line_fds) */
	int nfds;
	long long rx;			/* bytes received so far */
	const char *closing;		/* reason; reaped in room_flush */
	const char *ending;		/* reason; closed once its queued
					 * output is written (room_conn_end) */
	long long last_line_ms;		/* monotonic ms of its last line (or
					 * of connecting): idle time in who */
};

/* Listen on a->sock_path (0600, stale socket removed).  0 or -errno. */
int room_listen(struct agent *a);

/* Close every connection and the listening socket. */
void room_close_all(struct agent *a);

/* Write queued output to every client and reap closed ones.  Called before
 * the loop sleeps, after the commit. */
void room_flush(struct agent *a);

/* A new event object {"type": type}. */
json_object *room_event_new(const char *type);

/* Stamp ev (seq, time), store it when store is set, and queue it to every
 * member.  Takes ownership of ev.  A stored event is committed before it is
 * queued; when room.db cannot take it (full disk, read-only) it is queued to
 * nobody and the result is that -errno (room_db_strerror says why): the
 * caller tells whoever asked for it (room_unrecorded). */
int room_emit(struct agent *a, json_object *ev, int store);
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

/* Stamp ev and queue it to one connection only.  Takes ownership. */
void room_send(struct conn *c, json_object *ev);

/* An `error` event for one connection (id may be NULL). */
void room_error(struct conn *c, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A `notice` event to every member. */
void room_notice(struct agent *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Names of the members connected now, a new JSON array (deduplicated). */
json_object *room_members(struct agent *a);

/* Connections open now (any kind but atriumd's monitor, which must not
 * keep an idle room running). */
int room_conn_count(struct agent *a);

/* Mark a connection to be closed (reason logged) at the next flush. */
void room_conn_close(struct conn *c, const char *reason);

/* End a connection once what is queued to it is written (a last event
 * such as access_denied); its input is ignored from now on. */
void room_conn_end(struct conn *c, const char *reason);

/* Take n received fds from c's queue, in order.  0 or -EBADF when fewer
 * than n were received. */
int room_take_fds(struct conn *c, int *fds, int n);

/* Close the received fds at the front of c's queue that came in one read
 * (those sent with a bad exec line). */
void room_drop_fds(struct conn *c);

#endif
