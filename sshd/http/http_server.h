/*
 * http_server.h: atriumd-http's state and loop (http_server.c).  One
 * thread serves (only the file routes' reads and writes run on a worker
 * of their own, http_fileio.h): the shared loop (loop.h, an ssh_event
 * used as a poll loop) watches libmicrohttpd's epoll fd, the monitor's event socket, a
 * signalfd, and each stream's agent socket and WebSocket; after each poll
 * MHD_run serves what is ready, and MHD_get_timeout becomes the loop's
 * next deadline.  Nothing on it blocks but the requests to the monitor,
 * which answers each at once from its own loop (http_ask.h).
 *
 * The process holds no room state: every room is reached through the
 * monitor's use and agent requests and then the room protocol, as SSH
 * sessions reach it.
 */
#ifndef ATRIUMD_HTTP_SERVER_H
#define ATRIUMD_HTTP_SERVER_H

#include <stdint.h>

#include "ask_queue.h"
#include "config.h"
#include "http_web.h"
#include "loop.h"
#include "http_guard.h"
#include "http_slow.h"

struct MHD_Daemon;
struct http_stream;
struct http_proxy;
struct http_tunnel;
struct http_fileio;
struct api_room_wait;

/* Counts for GET /metrics, this process's own. */
struct http_stats {
	uint64_t requests;		/* answered, every status */
	uint64_t by_class[6];		/* by status class: [2] 2xx ... [5] */
	uint64_t refused[8];		/* by reason (http_refusal) */
	uint64_t bytes_out;		/* body bytes sent */
	uint64_t streams_dropped;	/* backlogs dropped for slow readers */
};

/* Why a request was refused, for the refusals counter. */
enum http_refusal {
	HTTP_REFUSED_AUTH,		/* 401 */
	HTTP_REFUSED_FORBIDDEN,		/* 403: room, origin, read-only */
	HTTP_REFUSED_LIMIT,		/* 413, 414, 431 */
	HTTP_REFUSED_BAD,		/* 400, 404, 405 */
	HTTP_REFUSED_UNAVAILABLE,	/* 502, 503 */
	HTTP_REFUSED_N
};

struct http_server {
	struct config cfg;		/* the settings it was given */
	struct http_web web;		/* the page's files, read before the
					 * privilege drop */
	struct loop loop;		/* the one poll loop */
	struct MHD_Daemon *mhd;		/* libmicrohttpd, external epoll */
	struct watch mhd_w;		/* on MHD's epoll fd */
	struct watch sig_w;		/* on sigfd */
	int sigfd;			/* SIGTERM, SIGINT, SIGHUP (SIGCHLD
					 * unused) */
	int req_fd;			/* request socket to the monitor */
	int ev_fd;			/* event socket from the monitor */
	struct watch ev_w;		/* on ev_fd */
	int stopping;			/* SIGTERM or the monitor gone */
	long long drain_until_ms;	/* SIGHUP: no new connection, the
					 * running requests finish until then,
					 * then the process ends (the monitor
					 * starts it again with the new
					 * settings); 0: not draining */
	unsigned requests_running;	/* begun and not completed */
	struct ask_queue asks;		/* asked of the monitor, answered
					 * later, in order (http_ask.h) */
	struct http_stream *streams;	/* event streams and WebSockets */
	struct api_room_wait *room_waits; /* requests waiting for a room
					 * to start (api_room.h) */
	int nstreams;
	int nproxies;			/* requests relayed to rooms' homes
					 * (http_proxy.h) */
	struct http_proxy *proxy_waits;	/* requests waiting to learn where
					 * their room lives */
	struct http_tunnel *tunnels;	/* WebSockets relayed to rooms'
					 * homes (http_tunnel.h) */
	int no_cluster;			/* the monitor said this host is in
					 * no cluster: nothing is relayed,
					 * nothing asked (http_proxy.h) */
	struct http_stats stats;
	struct http_guard guard;	/* failed tokens per address */
	struct http_slow slow;		/* request heads' deadlines */
	long long trim_ms;		/* free heap last given back */
	struct http_fileio *fileio;	/* the file routes' I/O thread, made
					 * on first use (http_fileio.h) */
};

/* Start MHD on the listening socket listen_fd, watch the monitor's
 * sockets and the signals.  0 or -errno (logged). */
int http_server_init(struct http_server *srv, int listen_fd, int req_fd,
    int ev_fd);

/* Serve fd (owned from now on), a connection another node of the cluster
 * relayed (the monitor's http_conn event; sshd/net/http_bridge.h), as
 * one from addr, the relayed client's numeric address: port 0 marks it
 * relayed (http_auth_relayed), and per-address limits, the token
 * failures' slowing and the log see addr.  0 or -errno (logged). */
int http_server_add_relayed(struct http_server *srv, int fd,
    const char *addr);

/* Serve until SIGTERM or the monitor's end.  0 or -errno. */
int http_server_run(struct http_server *srv);

/* Free what init made. */
void http_server_destroy(struct http_server *srv);

#endif
