/*
 * http_slow.c: a bound on the whole time to send a request head
 * (http_slow.h).  Called by MHD (connection notices) and by
 * http_server.c (the access handler's first call, a request's end, each
 * loop turn), all on the loop's one thread (the file routes' worker,
 * http_fileio.h, never touches it).
 */
#include "http_slow.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "http_server.h"
#include "log.h"
#include "util.h"

/* What a cut connection is told before its end: it sent no whole
 * request, so nothing else was said on it. */
static const char http_slow_408[] =
    "HTTP/1.1 408 Request Timeout\r\n"
    "Content-Type: application/json\r\n"
    "Connection: close\r\n"
    "Content-Length: 76\r\n"
    "\r\n"
    "{\"error\":\"the request head took too long to arrive (http-request-timeout)\"}\n";

/* c's peer as text into out ("" when unknown). */
static void
http_slow_peer(struct MHD_Connection *c, char *out, size_t len)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	out[0] = '\0';
	if (sa && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr,
		    out, (socklen_t)len);
	else if (sa && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
		    (socklen_t)len);
}

/* c's note, or NULL (MHD did not tell us of it). */
static struct http_slow_conn *
http_slow_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Time sc until deadline_ms. */
static void
http_slow_arm(struct http_slow *s, struct http_slow_conn *sc,
    long long deadline_ms)
{
	sc->deadline_ms = deadline_ms;
	if (!s->next_ms || deadline_ms < s->next_ms)
		s->next_ms = deadline_ms;
}

/* A connection MHD accepted: note it, timed from now. */
static void
http_slow_started(struct http_server *srv, struct MHD_Connection *c,
    void **socket_context)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CONNECTION_FD);
	struct http_slow_conn *sc;

	if (!ci || !(sc = calloc(1, sizeof(*sc)))) {
		/* Untimed, but MHD's silence timeout still holds. */
		log_error("cannot time a new connection's request head");
		return;
	}
	sc->fd = ci->connect_fd;
	http_slow_peer(c, sc->addr, sizeof(sc->addr));
	sc->next = srv->slow.head;
	if (sc->next)
		sc->next->prev = sc;
	srv->slow.head = sc;
	http_slow_arm(&srv->slow, sc, time_mono_ms() +
	    (long long)srv->cfg.http_request_timeout * 1000);
	*socket_context = sc;
}

/* See http_slow.h. */
void
http_slow_notify(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *srv = cls;
	struct http_slow_conn *sc = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		http_slow_started(srv, c, socket_context);
		return;
	}
	if (!sc)
		return;
	if (sc->prev)
		sc->prev->next = sc->next;
	else
		srv->slow.head = sc->next;
	if (sc->next)
		sc->next->prev = sc->prev;
	free(sc);
	*socket_context = NULL;
}

/* See http_slow.h. */
void
http_slow_head_done(struct MHD_Connection *c)
{
	struct http_slow_conn *sc = http_slow_of(c);

	if (sc)
		sc->deadline_ms = 0;
}

/* See http_slow.h. */
void
http_slow_rearm(struct http_slow *s, struct MHD_Connection *c, int idle_s,
    int request_s, long long now_ms)
{
	struct http_slow_conn *sc = http_slow_of(c);

	if (sc)
		http_slow_arm(s, sc, now_ms +
		    ((long long)idle_s + request_s) * 1000);
}

/* Tell sc it took too long and end it: MHD finds the socket shut at its
 * next run and closes the connection. */
static void
http_slow_cut(struct http_slow *s, struct http_slow_conn *sc)
{
	/* Best effort: a client that reads nothing just sees the end. */
	(void)send(sc->fd, http_slow_408, sizeof(http_slow_408) - 1,
	    MSG_DONTWAIT | MSG_NOSIGNAL);
	if (shutdown(sc->fd, SHUT_RDWR) < 0)
		log_debug("shutdown of a slow connection: %m");
	log_info("closed a connection from %s: its request head took longer "
	    "than http-request-timeout", sc->addr[0] ? sc->addr : "?");
	sc->deadline_ms = 0;
	s->closed++;
}

/* See http_slow.h. */
long long
http_slow_sweep(struct http_slow *s, long long now_ms)
{
	long long next = 0;

	if (!s->next_ms || now_ms < s->next_ms)
		return s->next_ms;
	for (struct http_slow_conn *sc = s->head; sc; sc = sc->next) {
		if (!sc->deadline_ms)
			continue;
		if (sc->deadline_ms <= now_ms)
			http_slow_cut(s, sc);
		else if (!next || sc->deadline_ms < next)
			next = sc->deadline_ms;
	}
	s->next_ms = next;
	return next;
}
