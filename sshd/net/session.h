/*
 * session.h: one SSH connection (struct session) and its channels
 * (struct chan).  session.c owns the connection's libssh callbacks
 * (authentication, channel open), channel.c a channel's transport and data
 * callbacks, chan_requests.c its requests; what a channel does once its
 * request is known is its kind's (stream.c: exec and sftp, control.c: the
 * atrium subsystem, chat.c: the shell), reached through struct chan_ops.
 *
 * Rules kept here for every kind: nothing is freed inside a libssh callback
 * (closing only marks; session_tick reaps); nothing writes more than the
 * channel's window; input a kind cannot take yet stays in libssh (which
 * then stops growing the client's window) and is drained with
 * ssh_channel_read_nonblocking when the kind can take it again.
 *
 * A session is ticked only when session_due says it has work, so whatever
 * changes a session outside its own tick must show: a kind's fd is
 * watched with loop_mark on the session's poke (chan_connect_agent and
 * stream.c do it), a wait is a deadline (chan_wake_at, chan_wake_soon),
 * and what libssh does on the socket shows in its byte counters.
 */
#ifndef ATRIUMD_SESSION_H
#define ATRIUMD_SESSION_H

#include <libssh/libssh.h>
#include <libssh/callbacks.h>

#include <json-c/json.h>

#include "authkeys_opts.h"
#include "buf.h"
#include "libssh_compat.h"
#include "phases.h"
#include "server.h"

/* env requests kept: with TERM, SSH_CONNECTION, SSH_CLIENT and SSH_TTY
 * this is the agent's EXEC_MAX_ENV. */
#define CHAN_MAX_ENV		12
#define CHAN_MAX_OUT		(4 * 1024 * 1024) /* queued to the client */
#define CHAN_MAX_CONNECT	20	/* tries in a row while the agent
					 * restarts (chan_start_agent) */
#define CHAN_PUMP_LOW		(128 * 1024)	/* chan_pump reads below this */
#define CHAN_PUMP_READ		(128 * 1024)	/* ... this much at most */
#define CHAN_KEEP		4096	/* per queue, kept once it is empty */
/* One write to libssh at most: it queues what the socket does not take in
 * a buffer that never shrinks, so a write of a whole window (megabytes)
 * to a client that is slow for a moment stays allocated for the life of
 * the connection.  The next write waits until that queue is empty. */
#define CHAN_WRITE_CHUNK	(16 * 1024)
/* libssh 0.10 grants a client about 1.3 MB of window, keeps what arrives
 * beyond it, and grows the window on every read however much it holds:
 * so input is drained only whole (all libssh holds, into inpend) and only
 * once inpend is empty, which keeps what it holds under a window.  More
 * than CHAN_MAX_INPEND held means the client ignores the window, and the
 * connection is closed (as it is at CHAN_MAX_UNREAD seen by the data
 * callback). */
#define CHAN_MAX_INPEND		(2 * 1024 * 1024) /* input drained, not taken */
#define CHAN_MAX_UNREAD		(4 * 1024 * 1024)
/* A smaller maximum packet from the client is refused: libssh 0.10 loops
 * forever writing to a channel whose maximum packet is 10 bytes. */
#define CHAN_MIN_PACKET		1024
#define SESSION_MAX_CHANNELS	32	/* channels open at once per connection */
#define SESSION_MAX_AUTH_FAILS	10	/* refused auth requests, then closed */

struct agentlink;
struct chan;
struct relay_link;
struct room;

struct chan_ops {
	const char *name;	/* "exec", "sftp", "control", "chat" */
	/* Bytes from the client; returns how many were taken (0: later). */
	size_t (*input)(struct chan *c, const char *p, size_t n);
	/* The client sent EOF and every byte before it was taken. */
	void (*eof)(struct chan *c);
	/* The room is ready: connect (chan_connect_agent) and begin. */
	void (*start)(struct chan *c);
	/* Every loop turn, after the poll (resume output, finish). */
	void (*tick)(struct chan *c);
	/* The window size changed (c->cols, c->rows). */
	void (*resize)(struct chan *c);
	/* A "signal" request (name without SIG). */
	void (*signal)(struct chan *c, const char *sig);
	/* The channel is going: release the kind's state (outside callbacks). */
	void (*free)(struct chan *c);
	/* Ended by the server (the room deleted, atriumd stopping): show msg
	 * and exit with status 1 as the kind must (the chat clears its
	 * screen's bottom first).  NULL: chan_refuse. */
	void (*end)(struct chan *c, const char *msg);
};

struct chan {
	struct session *s;		/* owner */
	ssh_channel ch;			/* libssh's channel */
	struct ssh_channel_callbacks_struct cb;	/* registered on ch */
	const struct chan_ops *ops;	/* NULL until a request picks a kind */
	void *kind;			/* the kind's state */
	int pty;			/* a pty was requested */
	char term[64];			/* TERM from pty-req */
	int cols, rows;			/* terminal size */
	char *env[CHAN_MAX_ENV];	/* "NAME=VALUE" from env requests */
	int nenv;
	struct buf out;			/* to the client's stdout, capped */
	struct buf err;			/* to the client's stderr, capped */
	struct buf inpend;		/* drained from libssh, not yet taken */
	int in_blocked;			/* libssh holds input we did not take */
	int in_eof;			/* the client sent EOF */
	int eof_done;			/* ops->eof was called */
	int waiting_room;		/* ops->start when the room is ready */
	int use_look;			/* the room is not on this host and
					 * this use may not create it: only
					 * where it lives (room_access.c) */
	int look_may_create;		/* use_look: the key's rooms= allows
					 * the name (the refusal's words) */
	char look_what[24];		/* use_look: what was asked ("exec") */
	int finish;			/* exit when out and err are flushed */
	int exit_code;			/* with finish, when exit_signal[0] == 0 */
	char exit_signal[16];		/* "KILL"... with finish */
	int finished;			/* exit sent, EOF and close sent */
	int ended;			/* chan_end told it why it ends */
	int closing;			/* reap at the next tick */
	int vetted;			/* the client's packet size was checked */
	int connect_tries;		/* chan_start_agent's, since the last
					 * connection */
	struct agentlink *link;		/* the kind's link to the agent, once
					 * connected (its execs: user_cap.h) */
	int cap_held;			/* commands the monitor counts for it
					 * (user_cap.h) */
	char req_kind;			/* its request: 'e' exec, 's'
					 * subsystem, 'h' shell (kept for a
					 * relay: relay.h), 0 */
	char *req_arg;			/* the command or subsystem asked */
	struct ask_pending *rooms_ask; /* a rooms listing asked for it and
					 * not answered yet (monitor_ask.h):
					 * one at a time; cancelled when it
					 * goes */
	struct chan *next;		/* in s->chans */
};

struct session {
	struct server *srv;		/* owner */
	ssh_session ssh;		/* libssh's session */
	struct ssh_server_callbacks_struct cb;
	unsigned long num;		/* for logs */
	char peer[64];			/* client address */
	struct admission_key source;	/* its source, for admission */
	char connection[128];		/* SSH_CONNECTION: "CLIENT PORT SERVER PORT" */
	char room[80];			/* SSH user name (the room), as given */
	char user[64];			/* user named by the key */
	char fp[128];			/* SHA256 fingerprint of the key */
	struct authkey_opts opts;	/* that key's options (owned copy;
					 * empty for --open guests) */
	int authed;			/* auth succeeded */
	int auth_fails;			/* refused auth requests so far */
	int nchans;			/* channels in chans */
	int banner_sent;		/* the refusal banner went out */
	int in_event;			/* added to the ssh_event */
	int in_kex;			/* a handshake thread has ssh: the main
					 * loop touches neither ssh nor kex */
	struct kex_job kex;		/* its key exchange (kexpool.h) */
	long long deadline_ms;		/* auth must be done by then */
	struct phases ph;		/* where its time went (debug log) */
	struct compat_nudge nudge;	/* libssh_compat.c W11 */
	/* Whether server_turn ticks it (session_due): a session is looked
	 * at only when something of its own happened since its last tick. */
	int poke;			/* one of its watches fired, or a
					 * change from outside wants a tick */
	long long wake_ms;		/* earliest deadline asked for and not
					 * yet passed (session_wake_at), 0 */
	struct ssh_counter_struct io;	/* bytes libssh moved on its socket
					 * (ssh_set_counters) */
	uint64_t io_seen;		/* io's in + out at its last tick */
	int dead;			/* free at the next reap */
	struct relay_link *relay;	/* its link to its room's home, when
					 * the room lives on another host
					 * (relay.h), or NULL */
	int relayed;			/* it came through another node's
					 * relay: user, fp and peer are the
					 * ones that node relays */
	char relay_node[64];		/* that node */
	struct chan *chans;
	struct session *next;		/* in srv->sessions */
};

/* Take one accepted connection from peer (fd, owned from now on: closed on
 * failure).  0 or -errno (logged). */
int session_accept(struct server *srv, int fd, const char *peer,
    const struct admission_key *source);

/* A key exchange handed back by a handshake thread (j is a session's
 * kex): authentication goes on in the main loop, or the session is
 * marked dead with the reason logged. */
void session_kex_done(struct kex_job *j);

/* Timeouts, channel ticks and reaping; call in every loop turn in which
 * session_due says it has work. */
void session_tick(struct session *s);

/* 1 when s has work at now: not authenticated yet, poked, a deadline of
 * its own passed, its socket moved bytes (a packet in, a window grown,
 * output libssh held went out) or closed since its last tick, or bytes
 * still wait in it to go either way.  Anything else that changes a
 * session from outside its tick pokes it. */
int session_due(const struct session *s, long long now_ms);

/* Tick s by when_ms (monotonic; 0: no need) at the latest. */
void session_wake_at(struct session *s, long long when_ms);

/* Free a session and its channels (outside callbacks). */
void session_free(struct session *s);

/* Queue bytes to the client's stdout / stderr.  0 or -ENOBUFS (dropped). */
int chan_write(struct chan *c, const void *p, size_t n);
int chan_write_err(struct chan *c, const void *p, size_t n);

/* Bytes the client may be sent on c now: its window, or 0 while libssh
 * still holds output the socket did not take (a client's window may be
 * 4 GiB: without this a client that stops reading grows atriumd). */
uint32_t chan_can_write(struct chan *c);

/* A pipe's bytes reach the client through c's queues: chan_pump reads
 * from fd into the stdout (is_err: stderr) queue while it holds less than
 * CHAN_PUMP_LOW, and chan_flush writes them, keeping what the channel does
 * not take yet.  Returns 1 when bytes were read, 0 at EOF (or EIO from a
 * pty master whose command is gone), -EAGAIN when fd has nothing now or
 * the queue is full, another -errno on a read error.  Every kind writes to
 * the client only through these queues. */
int chan_pump(struct chan *c, int fd, int is_err);

/* 1 when chan_pump would take bytes now (the queue has room). */
int chan_pump_wants(const struct chan *c, int is_err);

/* Write what the window allows of out and err now.  Bytes left queued. */
size_t chan_flush(struct chan *c);

/* End the channel once out and err are flushed: exit-status code (or
 * exit-signal sig when sig is not NULL), EOF, close. */
void chan_exit(struct chan *c, int code, const char *sig);

/* Tell the client why on stderr and exit with status 1. */
void chan_refuse(struct chan *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Ended by the server: msg through the kind's end, or chan_refuse
 * (once; also when an exit waits to be sent).  Nothing when c has no
 * kind yet or its exit was sent. */
void chan_end(struct chan *c, const char *msg);

/* Ask for the room (s->room): ops->start is called when it is ready, or
 * the channel is refused when it cannot start. */
void chan_wait_room(struct chan *c);

/* Have the loop look at c again by when_ms (monotonic; 0: no need), or
 * within a short poll interval (soon): for a kind's deadlines (loop.h). */
void chan_wake_at(struct chan *c, long long when_ms);
void chan_wake_soon(struct chan *c);

struct agentlink;
struct monitor_hello;

/* Connect l to the agent of c's (ready) room: the monitor dials it and
 * writes the connection's hello (who c's session is, and h), so the kind
 * sends none.  0, or -errno (-ECONNREFUSED, -ENOENT while the agent
 * restarts, -EACCES when the monitor refused the session's key). */
int chan_connect_agent(struct chan *c, struct agentlink *l,
    const struct monitor_hello *h,
    void (*on_line)(void *, json_object *, const char *, size_t),
    void (*on_end)(void *), void *arg);

/* A kind's start: chan_connect_agent, and while it fails (the agent
 * restarting) the room asked for again (chan_wait_room), up to
 * CHAN_MAX_CONNECT times in a row.  0 connected; 1 waiting for the room
 * again; -errno when it gave up (the kind refuses the channel). */
int chan_start_agent(struct chan *c, struct agentlink *l,
    const struct monitor_hello *h,
    void (*on_line)(void *, json_object *, const char *, size_t),
    void (*on_end)(void *), void *arg);

/* A new id for an exec, unique in this process. */
void chan_new_id(struct chan *c, char *out, size_t len);

#endif
