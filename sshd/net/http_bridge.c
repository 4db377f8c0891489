/*
 * http_bridge.c: the home's end of relayed HTTP (http_bridge.h): a relay
 * channel's bytes to and from this host's atriumd-http, through a unix
 * socket the monitor made.  Started by chan_requests.c (the subsystem on a
 * relayed session), driven by channel.c through chan_ops.
 *
 * Backpressure both ways, as stream.c's pipes: the front's bytes are
 * written to the socket only as far as it takes them (the rest stays in
 * libssh, which then stops growing the front's window), and the socket
 * is read only while the channel's queue is under CHAN_PUMP_LOW.  The
 * front's EOF shuts the socket's write side; the socket's EOF ends the
 * channel (exit status 0) once its queue is out.
 */
#include "http_bridge.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "monitor_ask.h"

struct http_bridge {
	struct chan *c;
	int fd;			/* to atriumd-http; -1 once closed */
	struct watch w;
	int out_full;		/* the socket took less than it was given */
	int eof;		/* atriumd-http closed its side */

};

/* Watch for what the socket can do now. */
static void
http_bridge_update(struct http_bridge *b)
{
	short want = 0;

	if (b->fd < 0)
		return;
	if (!b->eof && chan_pump_wants(b->c, 0))
		want |= POLLIN;
	if (b->out_full)
		want |= POLLOUT;
	loop_want(&b->w, want);
}

/* The socket is ready: the session's tick (poked) moves the bytes. */
static void
http_bridge_ready(struct watch *w, int revents)
{
	struct http_bridge *b = w->arg;

	if (revents & (POLLOUT | POLLERR | POLLHUP))
		b->out_full = 0;
}

/* The front's bytes to atriumd-http, as far as the socket takes them. */
static size_t
http_bridge_input(struct chan *c, const char *p, size_t n)
{
	struct http_bridge *b = c->kind;
	ssize_t w;

	if (b->fd < 0)
		return n;		/* nobody reads them */
	do {
		w = send(b->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		b->out_full = 1;
		http_bridge_update(b);
		return 0;
	}
	if (w < 0)
		return n;		/* atriumd-http went: its EOF ends it */
	if ((size_t)w < n)
		b->out_full = 1;
	http_bridge_update(b);
	return (size_t)w;
}

static void
http_bridge_eof(struct chan *c)
{
	struct http_bridge *b = c->kind;

	if (b->fd >= 0)
		shutdown(b->fd, SHUT_WR);
}

/* atriumd-http's bytes to the front while the queue has room; its EOF
 * ends the channel once they are out. */
static void
http_bridge_tick(struct chan *c)
{
	struct http_bridge *b = c->kind;
	int r = 1;

	for (int i = 0; i < 8 && r > 0 && b->fd >= 0 && !b->eof; i++) {
		chan_flush(c);
		r = chan_pump(c, b->fd, 0);
	}
	if (r == 0 || (r < 0 && r != -EAGAIN && r != -ENOMEM)) {
		if (r < 0)
			log_warn("session %lu: relayed HTTP: %s", c->s->num,
			    strerror(-r));
		b->eof = 1;
		chan_exit(c, 0, NULL);
	}
	http_bridge_update(b);
}

static void
http_bridge_free(struct chan *c)
{
	struct http_bridge *b = c->kind;

	loop_del(&b->w);
	if (b->fd >= 0)
		close(b->fd);
	free(b);
	c->kind = NULL;
}

static const struct chan_ops http_bridge_ops = {
	.name = "http",
	.input = http_bridge_input,
	.eof = http_bridge_eof,
	.tick = http_bridge_tick,
	.free = http_bridge_free,
};

/* See http_bridge.h. */
int
http_bridge_open(struct chan *c)
{
	struct http_bridge *b;
	char why[300];
	int fd = monitor_ask_http_conn(c->s, why, sizeof(why));

	if (fd >= 0 && fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		snprintf(why, sizeof(why), "this host cannot serve it now");
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		log_info("session %lu: relayed HTTP for %s refused: %s",
		    c->s->num, c->s->user, why);
		chan_refuse(c, "atrium: %s", why);
		return 0;
	}
	if (!(b = calloc(1, sizeof(*b)))) {
		close(fd);
		return -ENOMEM;
	}
	b->c = c;
	b->fd = fd;
	c->kind = b;
	c->ops = &http_bridge_ops;
	loop_add(&c->s->srv->loop, &b->w, fd, POLLIN, http_bridge_ready, b);
	loop_mark(&b->w, &c->s->poke);
	/* The link said who relays (relay_accept.c), and atriumd-http logs
	 * the request: one info line each. */
	log_debug("session %lu: %s in %s: HTTP relayed by node %s for %s",
	    c->s->num, c->s->user, c->s->room, c->s->relay_node, c->s->peer);
	chan_wake_soon(c);
	return 0;
}
