/*
 * server.h: the loop of each of atriumd's two processes, on one thread and
 * one ssh_event (see loop.h); the network process also has a few
 * handshake threads (kexpool.h) that run new connections' key exchanges
 * and hand them to its loop.  The network process (unprivileged: see
 * privdrop.h) has the listener and every session, and asks the monitor
 * for what needs root (monitor_ask.h); the monitor (root) has the rooms
 * and the operator socket and serves those requests (monitor.h).  Both
 * are a struct server with a role; what the other role owns stays empty.
 */
#ifndef ATRIUMD_SERVER_H
#define ATRIUMD_SERVER_H

#include <libssh/libssh.h>
#include <libssh/server.h>

#include "admission.h"
#include "authkeys.h"
#include "config.h"
#include "ctl.h"
#include "kexpool.h"
#include "loop.h"
#include "room.h"

#define SERVER_AUTH_TIMEOUT_MS	30000	/* handshake and auth */
#define SERVER_MAX_SESSIONS	4096	/* connections at once */
#define SERVER_ACCEPT_PAUSE_MS	1000	/* no accept after running out of fds */
/* The listener's queue of connections the kernel has completed and atriumd
 * not yet accepted.  libssh listens with 10: a flood's reconnects fill
 * that between two loop turns, and the kernel then drops a user's SYN,
 * which the client resends only after a second.  The kernel caps it at
 * net.core.somaxconn (4096 by default). */
#define SERVER_LISTEN_BACKLOG	1024
#define SERVER_ACCEPT_BATCH	16	/* accepted per loop turn at most: a few
					 * ms, so sessions wait little */
#define SERVER_REFUSAL_KINDS	8	/* reasons counted between log lines */
#define SERVER_TRIM_MS		5000	/* free heap given back this often */

struct session;
struct room_transfer;

enum server_role {
	SERVER_NETWORK,		/* clients' connections, no privilege */
	SERVER_MONITOR,		/* rooms, root */
};

struct server {
	enum server_role role;
	const struct config *cfg;	/* effective settings */
	struct loop loop;		/* the one event */
	struct rooms rooms;		/* every room's processes */
	struct authkeys *keys;		/* DATA/authorized_keys */
	struct ctl ctl;			/* the operator socket */
	struct admission admission;	/* who may start a handshake */
	struct kexpool kexpool;		/* network: the handshake threads */
	struct watch kex_w;		/* network: on kexpool_fd */
	uint64_t rng;			/* xorshift state for early drop */
	long long refused_log_ms;	/* last refusal logged */
	struct {
		const char *why;	/* a refusal's reason (static text) */
		unsigned long n;	/* refused for it, not logged since */
	} refused_quiet[SERVER_REFUSAL_KINDS];
	ssh_bind bind;			/* the listener */
	struct watch listen_w;		/* on the listener */
	struct watch signal_w;		/* on sigfd */
	int sigfd;			/* SIGCHLD, SIGTERM, SIGINT, SIGHUP */
	struct session *sessions;	/* every live session */
	size_t nsessions;
	unsigned long next_id;		/* for exec ids and session numbers */
	int stopping;			/* SIGTERM/SIGINT seen */
	/* SIGHUP: the monitor rereads its settings (reload.h); NULL in the
	 * network process, which ignores it. */
	void (*reload)(void *arg);
	void *reload_arg;
	long long accept_resume_ms;	/* listener paused until then; 0: not */
	long long trim_ms;		/* free heap last given back */
	int mon_fd;			/* request socket (privsep.h): the
					 * network's end or the monitor's; -1 */
	int ev_fd;			/* event socket, either end; -1 */
	struct watch mon_w;		/* monitor: on mon_fd; network: ev_fd */
	pid_t net_pid;			/* monitor: the network process; 0 once
					 * it is gone */
	int exit_code;			/* of the process once stopped */
	struct room_transfer *transfers; /* monitor: exports and imports
					 * under way (room_transfer.h) */
	struct monitor_pending *pending; /* network: requests answered later,
					 * oldest first (monitor_ask.h) */
	struct watch ans_w;		/* network: on mon_fd while one of them
					 * waits */
};

/* 1 when atriumd has file descriptors to spare for a new connection
 * (channel 0) or a new channel (channel 1).  A reserve of an eighth of
 * the limit (at least 32) is kept from new connections and half of it
 * from new channels, so sessions already in can go on and rooms start. */
int server_fds_left(struct server *srv, int channel);

/* End every channel of every session in room (deleted), each with msg on
 * the client's stderr and exit status 1. */
void server_end_room(struct server *srv, const char *room, const char *msg);

/* Before the fork, as root: load the host key (a check: atriumd-net reads
 * it again from the fd the monitor hands it) and bind the listener.
 * 0, or -errno with the reason logged. */
int server_bind(struct server *srv, const struct config *cfg);

/* In atriumd-net, before server_init_network: serve listen_fd (bound
 * and listening, from the monitor) with key as the host key; both are
 * the server's from here, whatever the result.  0, or -errno (logged). */
int server_adopt(struct server *srv, const struct config *cfg, int listen_fd,
    ssh_key key);

/* After the fork, in the monitor: drop the listener, serve requests on
 * mon_fd, send events on ev_fd, watch net (the network process).  0 or
 * -errno (logged). */
int server_init_monitor(struct server *srv, const struct helpers *progs,
    int mon_fd, int ev_fd, pid_t net);

/* In atriumd-net, after server_adopt (privileges already dropped):
 * accept connections, ask on mon_fd, read events on ev_fd.  0 or -errno
 * (logged). */
int server_init_network(struct server *srv, int mon_fd, int ev_fd);

/* Serve until SIGTERM/SIGINT (or until the other process is gone), then
 * stop: the network process closes every session, the monitor stops
 * every room.  The process's exit status. */
int server_run(struct server *srv);

void server_destroy(struct server *srv);

#endif
