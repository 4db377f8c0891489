/*
 * conn.h: the room's connections on RUN/agent.sock, the transport only.
 * atriumd connects once per session (and per exec); lines are framed with
 * common/jsonl.h (PROTO_MAX_LINE) and handed, parsed, to the request table
 * (requests.h); fds arrive by SCM_RIGHTS and wait in the connection's
 * queue until the `exec` line that announced them claims them.  The other
 * way, an answer may carry one fd (conn_queue_event_fd: a workspace file
 * opened for the peer): it is sent with the first byte of exactly that
 * line, never with an earlier or a later one.
 *
 * A connection's output queue holds only what may be written now: events
 * the journal announced after their commit (journal.h), replies to this
 * connection, and link lines; so the socket is written whenever it is
 * writable, in the middle of a loop turn too, and never shows an event
 * that is not stored.  A client that falls behind by more than
 * ROOM_MAX_OUTPUT is disconnected with a logged reason; the loop never
 * blocks on a socket.
 *
 * Connections are freed only in conn_flush (marked `closing` before),
 * never inside their own callback.  A connection told to go with a last
 * event (conn_end: access_denied) is closed by conn_flush once that event
 * is written.
 */
#ifndef ATRIUM_AGENT_CONN_H
#define ATRIUM_AGENT_CONN_H

#include <json-c/json.h>
#include <stddef.h>

#include "buf.h"
#include "jsonl.h"
#include "protocol.h"

struct agent;

#define ROOM_MAX_OUTPUT	(32 * 1024 * 1024)	/* queued bytes per client */
#define ROOM_MAX_FDS_QUEUED	(PROTO_MAX_FDS * 2)
#define ROOM_MAX_CONNS	1024

/* CONN_MONITOR is atriumd's watchdog: it sends only "ping", answered with
 * "pong" from the loop, and does not keep the room from going idle.
 * CONN_FEED is atriumd's network process reading the room's events once
 * for all of its chat sessions that said "feed" in their hello (their
 * own connections then get only what is theirs: replies, replays); it
 * is no member and no person, and sends nothing after its hello. */
enum conn_kind { CONN_NEW, CONN_CHAT, CONN_CONTROL, CONN_EXEC, CONN_MONITOR,
	CONN_FEED };

struct conn {
	struct conn *next;
	struct agent *a;
	int fd;
	enum conn_kind kind;		/* CONN_NEW until hello */
	char user[64];
	int admin;			/* hello said the key has atrium-admin */
	int fed;			/* hello said feed: the room's events
					 * reach it through a CONN_FEED, not
					 * on this connection (conn_gets_events) */
	int read_only;			/* hello said read_only (a read-only
					 * token over HTTP): requests that
					 * change the room are refused */
	struct jsonl in;		/* framed input, PROTO_MAX_LINE */
	struct buf out;			/* output that may be written now,
					 * ROOM_MAX_OUTPUT */
	long long seq_out;		/* committed watermark: the last room
					 * event queued to it (journal.c) */
	int fds[ROOM_MAX_FDS_QUEUED];	/* received, not yet claimed */
	long long fd_end[ROOM_MAX_FDS_QUEUED];	/* rx after the read that
					 * brought each (see conn_line_fds) */
	int nfds;
	long long rx;			/* bytes received so far */
	int fds_out[ROOM_MAX_FDS_QUEUED];	/* to send, in order, each
					 * with the line that starts at
					 * stream offset fd_out_at */
	long long fd_out_at[ROOM_MAX_FDS_QUEUED];
	int nfds_out;
	long long tx;			/* bytes written so far */
	const char *closing;		/* reason; reaped in conn_flush */
	const char *ending;		/* reason; closed once its queued
					 * output is written (conn_end) */
	long long last_line_ms;		/* monotonic ms of its last line (or
					 * of connecting): idle time in who */
};

/* What the layer above does with a connection: each framed line (line,
 * len; NULL, 0 for a line over PROTO_MAX_LINE, skipped), and a
 * connection about to be freed. */
struct conn_hooks {
	void (*line)(struct conn *c, const char *line, size_t len);
	void (*gone)(struct conn *c);
};

/* Bind and listen on a->sock_path (0600, stale socket removed) into
 * a->listen_fd; as root, before the agent gives it up (the run directory
 * is root's).  0 or -errno (logged). */
int conn_bind(struct agent *a);

/* Accept connections on a->listen_fd from the loop, served with hooks.
 * 0 or -errno. */
int conn_listen(struct agent *a, const struct conn_hooks *hooks);

/* Close every connection and the listening socket. */
void conn_close_all(struct agent *a);

/* Write queued output to every client and reap closed ones.  Called before
 * the loop sleeps, after the journal's commit. */
void conn_flush(struct agent *a);

/* 1 when c is a member: a chat or control connection. */
int conn_is_member(const struct conn *c);

/* 1 when the room's events are written on c: a member not fed through a
 * CONN_FEED, or a feed. */
int conn_gets_events(const struct conn *c);

/* Queue len bytes to c (whole lines); close c when it is too far behind.
 * Only the journal queues room events (journal.h); replies and link lines
 * come through room_events.h. */
void conn_queue(struct conn *c, const char *p, size_t len);
/* Queue ev, serialised as one line with no raw control byte, to c. */
void conn_queue_event(struct conn *c, json_object *ev);
/* Queue ev as conn_queue_event does, with fd attached to its first byte
 * (SCM_RIGHTS).  Takes fd: it is closed once sent, or at once when it
 * cannot be queued.  0, or -EMFILE when ROOM_MAX_FDS_QUEUED wait to be
 * sent, or -ENOBUFS when c is closing or too far behind. */
int conn_queue_event_fd(struct conn *c, json_object *ev, int fd);
/* That line, into line (emptied first): to serialise an event once for
 * every client it goes to.  0, or -ENOBUFS past line's max. */
int conn_event_line(json_object *ev, struct buf *line);

/* Connections open now (any kind but atriumd's monitor, which must not
 * keep an idle room running). */
int conn_count(struct agent *a);

/* Mark a connection to be closed (reason logged) at the next flush. */
void conn_close(struct conn *c, const char *reason);

/* End a connection once what is queued to it is written (a last event
 * such as access_denied); its input is ignored from now on. */
void conn_end(struct conn *c, const char *reason);

/* Take n received fds from c's queue, in order.  0 or -EBADF when fewer
 * than n were received. */
int conn_take_fds(struct conn *c, int *fds, int n);

/* Close the received fds at the front of c's queue that came in one read
 * (those sent with a bad exec line). */
void conn_drop_fds(struct conn *c);

#endif
