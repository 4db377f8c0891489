/*
 * monitor_loop.h: the state and the loop of atriumd's monitor, the process
 * that stays root (monitor_loop.c): every room's processes (room.h), the
 * operator socket (ctl.h), exports and imports (room_transfer.h), and the
 * monitor's end of the request and event sockets (monitor.h, privsep.h).
 * The network process's state is its own (sshd/net/server.h): neither
 * process holds the other's fields.
 */
#ifndef ATRIUMD_MONITOR_LOOP_H
#define ATRIUMD_MONITOR_LOOP_H

#include <sys/types.h>

#include <libssh/libssh.h>
#include <libssh/server.h>

#include "authkeys.h"
#include "cmd_cap.h"
#include "config.h"
#include "ctl.h"
#include "helpers.h"
#include "loop.h"
#include "room.h"

/* The listener's queue of connections the kernel has completed and
 * atriumd-net not yet accepted.  libssh listens with 10: a flood's
 * reconnects fill that between two loop turns, and the kernel then drops
 * a user's SYN, which the client resends only after a second.  The kernel
 * caps it at net.core.somaxconn (4096 by default). */
#define MONITOR_LISTEN_BACKLOG	1024

/* The counts of a net_stats request (privsep.h), in monitor.c's order. */
#define MONITOR_NET_STATS	6

struct room_transfer;
struct tokens;
struct http_front;
struct monitor;
struct cluster;

/* A process on the network as the monitor sees it: its pid and the
 * monitor's end of its request and event sockets (privsep.h).  Two of
 * them: atriumd-net (always) and atriumd-http (when --http-listen is set:
 * http_front.h).  Each is served from the same loop by monitor.c; a front
 * that breaks the rules is ended (net: and atriumd stops; http: it is
 * started again, http_front.h). */
struct monitor_front {
	struct monitor *srv;
	const char *name;		/* for the log: "network process" */
	int http;			/* 1: atriumd-http, whose requests carry
					 * a token, not a key (http_front.h) */
	int req_fd;			/* request socket, the monitor's end; -1 */
	int ev_fd;			/* event socket, the monitor's end; -1 */
	struct watch w;			/* on req_fd */
	pid_t pid;			/* the process; 0 once it is gone */
	struct cmd_cap cmds;		/* its people's running commands
					 * (cmd_cap.h); cleared at its end */
};

struct monitor {
	const struct config *cfg;	/* effective settings (reload.h) */
	struct loop loop;		/* the one event */
	struct rooms rooms;		/* every room's processes */
	struct authkeys *keys;		/* its own parse of authorized_keys:
					 * who a request is for
					 * (monitor_identity.h) */
	struct ctl ctl;			/* the operator socket */
	ssh_bind bind;			/* the listener and the host key, from
					 * monitor_loop_bind until atriumd-net
					 * has them (monitor_loop_init) */
	struct watch signal_w;		/* on sigfd */
	int sigfd;			/* SIGCHLD, SIGTERM, SIGINT, SIGHUP */
	int stopping;			/* SIGTERM/SIGINT seen, or the network
					 * process gone */
	/* SIGHUP: reread the settings (reload.h). */
	void (*reload)(void *arg);
	void *reload_arg;
	long long trim_ms;		/* free heap last given back */
	struct monitor_front net;	/* atriumd-net */
	struct http_front *http;	/* atriumd-http, or NULL when
					 * --http-listen is off (http_front.h) */
	int exit_code;			/* of the process once stopped */
	struct room_transfer *transfers; /* exports and imports under way
					 * (room_transfer.h) */
	struct tokens *tokens;		/* DATA/tokens.db (tokens.h) */
	struct monitor_front *asking;	/* the front whose request is being
					 * served now (monitor_serve), else
					 * NULL */
	unsigned long long token_refused; /* HTTP requests whose token the
					 * monitor refused (GET /metrics) */
	long long net_stats[MONITOR_NET_STATS];	/* the network process's
					 * last counts (net_stats request) */
	struct cluster *cluster;	/* --cluster: this host's membership
					 * (placement.h), else NULL */
	struct watch cluster_w;		/* on its wake-up pipe */
	struct room_stream *stream;	/* --s3: every room's writes are
					 * streamed (room_stream.h); NULL */
};

/* Before the fork, as root: load the host key (a check: atriumd-net reads
 * it again from the fd the monitor hands it) and bind the listener, into
 * srv->bind.  0, or -errno with the reason logged. */
int monitor_loop_bind(struct monitor *srv, const struct config *cfg);

/* After the fork: close the listener (atriumd-net has it), serve requests
 * on mon_fd, send events on ev_fd, watch net (the network process).  0 or
 * -errno (logged). */
int monitor_loop_init(struct monitor *srv, const struct helpers *progs,
    int mon_fd, int ev_fd, pid_t net);

/* Serve until SIGTERM/SIGINT or the network process's end, then stop
 * every room and the network process.  The process's exit status. */
int monitor_loop_run(struct monitor *srv);

/* Free what monitor_loop_bind and monitor_loop_init made. */
void monitor_loop_destroy(struct monitor *srv);

#endif
