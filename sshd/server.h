/*
 * server.h: atriumd's one process: the listener, every session, every room,
 * on one thread and one ssh_event (see loop.h).
 */
#ifndef ATRIUMD_SERVER_H
#define ATRIUMD_SERVER_H

#include <libssh/libssh.h>
#include <libssh/server.h>

#include "admission.h"
#include "authkeys.h"
#include "config.h"
#include "ctl.h"
#include "loop.h"
#include "room.h"

#define SERVER_AUTH_TIMEOUT_MS	30000	/* handshake and auth */
#define SERVER_MAX_SESSIONS	4096	/* connections at once */
#define SERVER_ACCEPT_PAUSE_MS	1000	/* no accept after running out of fds */

struct session;

struct server {
	const struct config *cfg;	/* effective settings */
	struct loop loop;		/* the one event */
	struct rooms rooms;		/* every room's processes */
	struct authkeys *keys;		/* DATA/authorized_keys */
	struct ctl ctl;			/* the operator socket */
	struct admission admission;	/* who may start a handshake */
	uint64_t rng;			/* xorshift state for early drop */
	long long refused_log_ms;	/* last refusal logged */
	unsigned long refused_quiet;	/* refusals not logged since */
	ssh_bind bind;			/* the listener */
	struct watch listen_w;		/* on the listener */
	struct watch signal_w;		/* on sigfd */
	int sigfd;			/* SIGCHLD, SIGTERM, SIGINT, SIGHUP */
	struct session *sessions;	/* every live session */
	size_t nsessions;
	unsigned long next_id;		/* for exec ids and session numbers */
	int stopping;			/* SIGTERM/SIGINT seen */
	long long accept_resume_ms;	/* listener paused until then; 0: not */
};

/* 1 when atriumd has file descriptors to spare for a new connection
 * (channel 0) or a new channel (channel 1).  A reserve of an eighth of
 * the limit (at least 32) is kept from new connections and half of it
 * from new channels, so sessions already in can go on and rooms start. */
int server_fds_left(struct server *srv, int channel);

/* End every channel of every session in room (deleted), each with msg on
 * the client's stderr and exit status 1. */
void server_end_room(struct server *srv, const char *room, const char *msg);

/* Listen and prepare.  0, or -errno with the reason logged. */
int server_init(struct server *srv, const struct config *cfg,
    const char *bin_dir);

/* Serve until SIGTERM/SIGINT, then stop every room.  0 on a clean stop. */
int server_run(struct server *srv);

void server_destroy(struct server *srv);

#endif
