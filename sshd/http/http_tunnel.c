/*
 * http_tunnel.c: a relayed WebSocket's bytes (http_tunnel.h).  Made by
 * http_proxy.c when the home answers an upgrade with 101; driven by the
 * two sockets' watches in the shared loop.  Counted in srv->nproxies for
 * its life (HTTP_PROXY_MAX).
 */
#include "http_tunnel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "buf.h"
#include "http_server.h"
#include "log.h"

struct http_tunnel {
	struct http_server *srv;
	int fd;				/* the relay to the home */
	int sock;			/* the client's, once MHD hands it */
	struct MHD_UpgradeResponseHandle *urh;
	struct http_tunnel **holder;	/* its request's, until the
					 * hand-over (http_tunnel.h) */
	struct watch fd_w, sock_w;
	struct buf up;			/* client -> home, not yet written */
	struct buf down;		/* home -> client, not yet written */
	int up_eof, down_eof;		/* that side read to its end */
	int dead;
	struct http_tunnel *next;	/* in srv->tunnels, until cut */
};

/* Read fd into b while it holds under HTTP_TUNNEL_HIGH.  0, or 1 at its
 * end (or an error). */
static int
http_tunnel_read(int fd, struct buf *b)
{
	while (b->len < HTTP_TUNNEL_HIGH) {
		char *space = buf_tail(b, 16 * 1024);
		ssize_t n;

		if (!space)
			return 0;
		n = recv(fd, space, 16 * 1024, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return 1;
		buf_added(b, (size_t)n);
	}
	return 0;
}

/* Write b to fd as far as it takes it.  0, or -1 (the peer is gone). */
static int
http_tunnel_write(int fd, struct buf *b)
{
	while (b->len) {
		ssize_t n = send(fd, b->data, b->len, MSG_DONTWAIT |
		    MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n < 0)
			return -1;
		buf_consume(b, (size_t)n);
	}
	return 0;
}

/* Close t's relay socket and stop watching: the home sees the WebSocket
 * end.  t is out of srv->tunnels and no longer counted; it is freed by
 * whoever holds it (http_tunnel.h). */
static void
http_tunnel_cut(struct http_tunnel *t)
{
	struct http_tunnel **pp = &t->srv->tunnels;

	while (*pp && *pp != t)
		pp = &(*pp)->next;
	if (*pp)
		*pp = t->next;
	loop_del(&t->fd_w);
	loop_del(&t->sock_w);
	if (t->fd >= 0) {
		close(t->fd);
		t->fd = -1;
		t->srv->nproxies--;
	}
	t->dead = 1;
}

/* Free t (its sockets closed: MHD's through its handle). */
static void
http_tunnel_free(struct http_tunnel *t)
{
	http_tunnel_cut(t);
	if (t->holder)
		*t->holder = NULL;
	if (t->urh)
		MHD_upgrade_action(t->urh, MHD_UPGRADE_ACTION_CLOSE);
	buf_free(&t->up);
	buf_free(&t->down);
	free(t);
}

/* t is over: freed once MHD handed it the client's socket; before that
 * MHD's response still names it, so only its relay socket goes. */
static void
http_tunnel_end(struct http_tunnel *t)
{
	if (t->holder)
		http_tunnel_cut(t);
	else
		http_tunnel_free(t);
}

/* See http_tunnel.h. */
void
http_tunnel_drop(struct http_tunnel *t)
{
	http_tunnel_free(t);
}

/* Move what can move, and watch for the rest; t freed once both ways
 * ended, or either peer went. */
static void
http_tunnel_pump(struct http_tunnel *t)
{
	short fd_want = 0, sock_want = 0;

	if (!t->down_eof && http_tunnel_read(t->fd, &t->down))
		t->down_eof = 1;
	if (t->sock >= 0 && !t->up_eof && http_tunnel_read(t->sock, &t->up))
		t->up_eof = 1;
	if ((t->sock >= 0 && http_tunnel_write(t->sock, &t->down) < 0) ||
	    http_tunnel_write(t->fd, &t->up) < 0)
		t->dead = 1;
	/* A WebSocket ends both ways at once: either side's end ends it,
	 * once what it sent is out. */
	if ((t->down_eof && !t->down.len) || (t->up_eof && !t->up.len))
		t->dead = 1;
	if (t->dead) {
		http_tunnel_end(t);
		return;
	}
	if (!t->down_eof && t->down.len < HTTP_TUNNEL_HIGH)
		fd_want |= POLLIN;
	if (t->up.len)
		fd_want |= POLLOUT;
	if (!t->up_eof && t->up.len < HTTP_TUNNEL_HIGH)
		sock_want |= POLLIN;
	if (t->down.len)
		sock_want |= POLLOUT;
	loop_want(&t->fd_w, fd_want);
	if (t->sock >= 0)
		loop_want(&t->sock_w, sock_want);
}

static void
http_tunnel_ready(struct watch *w, int revents)
{
	(void)revents;
	http_tunnel_pump(w->arg);
}

/* MHD_UpgradeHandler: the client's socket, and what it sent past the
 * request (already the WebSocket's). */
static void
http_tunnel_upgraded(void *cls, struct MHD_Connection *c, void *con_cls,
    const char *extra, size_t nextra, MHD_socket sock,
    struct MHD_UpgradeResponseHandle *urh)
{
	struct http_tunnel *t = cls;

	(void)c;
	(void)con_cls;
	t->sock = sock;
	t->urh = urh;
	if (t->holder)
		*t->holder = NULL;	/* t is its own from now on */
	t->holder = NULL;
	if (t->dead || fcntl(sock, F_SETFL, O_NONBLOCK) < 0 ||
	    (nextra && buf_append(&t->up, extra, nextra) < 0)) {
		http_tunnel_free(t);
		return;
	}
	loop_add(&t->srv->loop, &t->sock_w, sock, 0, http_tunnel_ready, t);
	http_tunnel_pump(t);
}

/* See http_tunnel.h. */
struct http_tunnel *
http_tunnel_new(struct http_server *srv, int fd, const char *head_rest,
    size_t n, struct http_tunnel **holder)
{
	struct http_tunnel *t = calloc(1, sizeof(*t));

	if (!t) {
		close(fd);
		return NULL;
	}
	t->srv = srv;
	t->fd = fd;
	t->sock = -1;
	t->sock_w.fd = -1;
	t->holder = holder;
	*holder = t;
	buf_init(&t->up, 2 * HTTP_TUNNEL_HIGH);
	buf_init(&t->down, 2 * HTTP_TUNNEL_HIGH);
	srv->nproxies++;
	t->next = srv->tunnels;
	srv->tunnels = t;
	loop_add(&srv->loop, &t->fd_w, fd, 0, http_tunnel_ready, t);
	if (n && buf_append(&t->down, head_rest, n) < 0) {
		http_tunnel_free(t);
		return NULL;
	}
	return t;
}

/* See http_tunnel.h. */
struct MHD_Response *
http_tunnel_response(struct http_tunnel *t)
{
	struct MHD_Response *resp = MHD_create_response_for_upgrade(
	    http_tunnel_upgraded, t);

	if (!resp)
		http_tunnel_free(t);
	return resp;
}

/* See http_tunnel.h. */
void
http_tunnel_end_all(struct http_server *srv)
{
	while (srv->tunnels)
		http_tunnel_end(srv->tunnels);
}
