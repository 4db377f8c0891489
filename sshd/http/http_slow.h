/*
 * http_slow.h: the time a connection may take to send a request head
 * (http_slow.c), counted in all, not in silence.
 *
 * libmicrohttpd's connection timeout counts only silence, so a client
 * that sends one header byte every few seconds (slowloris) would hold
 * its connection, and a place under http-per-source and
 * http-max-connections, for ever.  Here each connection is noted when
 * MHD accepts it (MHD_OPTION_NOTIFY_CONNECTION) with a deadline:
 * http-request-timeout from then.  The access handler's first call for
 * a request means its head is in, and the connection is no longer timed;
 * when that request is over and the connection is kept alive, the clock
 * starts again with http-idle-timeout + http-request-timeout for the
 * whole of the next head (its wait and its sending).  After each loop
 * turn, a connection past its deadline is sent a 408 and shut down
 * (shutdown(2): MHD sees the end and closes it at its next run), and the
 * loop is asked to wake at the next deadline.
 *
 * A connection whose request is being answered (a body coming, a stream,
 * a WebSocket) is not timed here: MHD's own timeout and the streams'
 * rules cover it.
 */
#ifndef ATRIUMD_HTTP_SLOW_H
#define ATRIUMD_HTTP_SLOW_H

#include <microhttpd.h>

struct http_server;

/* One connection MHD holds: its socket, and its head's deadline. */
struct http_slow_conn {
	struct http_slow_conn *prev, *next;
	int fd;
	long long deadline_ms;		/* 0: not timed (a request is on) */
	char addr[64];			/* the peer, for the log */
};

/* The connections being timed. */
struct http_slow {
	struct http_slow_conn *head;
	long long next_ms;		/* no deadline before this; 0: none */
	unsigned long long closed;	/* connections cut, for /metrics */
};

/* MHD_NotifyConnectionCallback (cls: the http_server). */
void http_slow_notify(void *cls, struct MHD_Connection *c,
    void **socket_context, enum MHD_ConnectionNotificationCode toe);

/* c's request head is in: stop timing it. */
void http_slow_head_done(struct MHD_Connection *c);

/* c's request is over and c is kept alive: time its next head, which
 * may take until idle_s + request_s from now. */
void http_slow_rearm(struct http_slow *s, struct MHD_Connection *c,
    int idle_s, int request_s, long long now_ms);

/* Cut the connections past their deadline; the next deadline (0: none)
 * for the loop. */
long long http_slow_sweep(struct http_slow *s, long long now_ms);

#endif
