/*
 * server.h: the state and the loop of atriumd's network process
 * (atriumd-net, unprivileged: see privdrop.h), on one thread and one
 * ssh_event (see loop.h), plus a few handshake threads (kexpool.h) that
 * run new connections' key exchanges and hand them to its loop.  It has
 * the listener and every session, and asks the monitor for what needs
 * root (monitor_ask.h).  The monitor's state is its own
 * (sshd/monitor/monitor_loop.h: rooms, the operator socket, transfers):
 * neither process holds the other's fields.
 */
#ifndef ATRIUMD_SERVER_H
#define ATRIUMD_SERVER_H

#include <libssh/libssh.h>
#include <libssh/server.h>

#include "admission.h"
#include "agentlink.h"
#include "ask_queue.h"
#include "authkeys.h"
#include "config.h"
#include "kexpool.h"
#include "loop.h"
#include "net_stats.h"
#include "tui_draw.h"

#define SERVER_AUTH_TIMEOUT_MS	30000	/* handshake and auth */
#define SERVER_MAX_SESSIONS	4096	/* connections at once */
#define SERVER_ACCEPT_PAUSE_MS	1000	/* no accept after running out of fds */
#define SERVER_ACCEPT_BATCH	16	/* accepted per loop turn at most: a few
					 * ms, so sessions wait little */
#define SERVER_REFUSAL_KINDS	8	/* reasons counted between log lines */
#define SERVER_TRIM_MS		5000	/* free heap given back this often */

struct session;

struct chat_feed;

struct http_relay;
struct http_link;

struct server {
	const struct config *cfg;	/* the settings it was given (fixed:
					 * a reload is the monitor's) */
	struct loop loop;		/* the one event */
	struct authkeys *keys;		/* DATA/authorized_keys, read from the
					 * fd the monitor hands over */
	struct admission admission;	/* who may start a handshake */
	struct kexpool kexpool;		/* the handshake threads */
	struct watch kex_w;		/* on kexpool_fd */
	uint64_t rng;			/* xorshift state for early drop */
	long long refused_log_ms;	/* last refusal logged */
	struct {
		const char *why;	/* a refusal's reason (static text) */
		unsigned long n;	/* refused for it, not logged since */
	} refused_quiet[SERVER_REFUSAL_KINDS];
	ssh_bind bind;			/* the listener */
	ssh_key relay_key;		/* the host key again, which the
					 * front signs a relay's userauth
					 * with (relay.h); NULL */
	struct watch listen_w;		/* on the listener */
	struct watch signal_w;		/* on sigfd */
	int sigfd;			/* SIGTERM, SIGINT (SIGCHLD, SIGHUP
					 * read and ignored) */
	struct session *sessions;	/* every live session */
	int tick_all;			/* the next turn ticks every session,
					 * due or not (after something rare
					 * that reaches many: an answer of the
					 * monitor, a room ended) */
	size_t nsessions;
	unsigned long next_id;		/* for exec ids and session numbers */
	int stopping;			/* SIGTERM/SIGINT seen, or the monitor
					 * gone: server_begin_stop */
	long long stop_by_ms;		/* stopping: the loop ends by then */
	long long accept_resume_ms;	/* listener paused until then; 0: not */
	long long trim_ms;		/* free heap last given back */
	int mon_fd;			/* request socket (privsep.h), the
					 * network's end; -1 */
	int ev_fd;			/* event socket, the network's end; -1 */
	struct watch mon_w;		/* on ev_fd */
	int exit_code;			/* of the process once stopped */
	struct ask_queue asks;		/* requests answered later, oldest
					 * first (monitor_ask.h) */
	struct agentlink_cache link_cache; /* room events parsed once for
					 * every chat member (agentlink.h) */
	struct chat_feed *feeds;	/* one per room with chat sessions
					 * (chat_feed.h) */
	struct tui_draw_cache draw_cache; /* a streamed answer's Markdown
					 * parsed once and drawn once per
					 * width for every member
					 * (tui_draw.h) */
	struct net_stats stats;		/* counts for GET /metrics
					 * (net_stats.h) */
	struct http_relay *http_relays;	/* this host's atriumd-http's
					 * connections relayed to rooms'
					 * homes (http_relay.h) */
	struct http_link *http_links;	/* the links they share
					 * (http_link.h) */
};

/* 1 when atriumd has file descriptors to spare for a new connection
 * (channel 0) or a new channel (channel 1).  A reserve of an eighth of
 * the limit (at least 32) is kept from new connections and half of it
 * from new channels, so sessions already in can go on and rooms start. */
int server_fds_left(struct server *srv, int channel);

/* End every channel of every session in room (deleted), each with msg on
 * the client's stderr and exit status 1. */
void server_end_room(struct server *srv, const char *room, const char *msg);

/* In atriumd-net, before server_init_network: serve listen_fd (bound
 * and listening, from the monitor) with key as the host key; both are
 * the server's from here, whatever the result.  0, or -errno (logged). */
int server_adopt(struct server *srv, const struct config *cfg, int listen_fd,
    ssh_key key);

/* In atriumd-net, after server_adopt (privileges already dropped):
 * accept connections, ask on mon_fd, read events on ev_fd.  0 or -errno
 * (logged). */
int server_init_network(struct server *srv, int mon_fd, int ev_fd);

/* What each session's channels show when atriumd stops. */
#define SERVER_STOP_MSG	"atrium: the server is restarting or shutting " \
			"down; connect again in a moment"
#define SERVER_STOP_GRACE_MS	1000	/* to send SERVER_STOP_MSG */
#define SERVER_STOP_FLUSH_MS	500	/* then for libssh to write it */

/* Begin stopping (SIGTERM, or the monitor gone), once: every channel ends
 * with SERVER_STOP_MSG (chan_end), server_run returns once they sent it
 * or after SERVER_STOP_GRACE_MS, with exit_code. */
void server_begin_stop(struct server *srv, int exit_code);

/* Serve until SIGTERM/SIGINT (or until the monitor is gone: its death
 * signal, privdrop.h), then close every session.  The process's exit
 * status. */
int server_run(struct server *srv);

void server_destroy(struct server *srv);

#endif
