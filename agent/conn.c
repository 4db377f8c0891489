/*
 * conn.c: the room's connections, the transport (conn.h): accept, read and
 * frame lines, queue and write output, pass fds, close and reap.  What a
 * line asks for is the request table's (requests.c, through conn_hooks);
 * what the room announces is the journal's (journal.c), which queues only
 * committed events.  This file knows neither.
 */
#include "conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent.h"
#include "fdpass.h"
#include "log.h"
#include "loop_uring.h"
#include "util.h"

static void conn_io(struct loop *l, int fd, int mask, void *arg);

/* See conn.h. */
void
conn_queue(struct conn *c, const char *line, size_t len)
{
	if (c->closing)
		return;
	if (buf_append(&c->out, line, len) < 0)
		conn_close(c, "fell too far behind (output queue full)");
}

/* See conn.h. */
int
conn_event_line(json_object *ev, struct buf *line)
{
	const char *s = json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE), *del;
	int r = 0;

	/* json-c escapes every C0 control in a string but leaves DEL as it
	 * is; a command's output keeps its controls (utf8.h), so escape DEL
	 * too: no raw control byte reaches a client's line.  0x7f is never
	 * part of a UTF-8 sequence nor of JSON's own syntax, so every one is
	 * inside a string. */
	buf_reset(line);
	while (r == 0 && (del = strchr(s, 0x7f))) {
		r = buf_append(line, s, (size_t)(del - s));
		if (r == 0)
			r = buf_append(line, "\\u007f", 6);
		s = del + 1;
	}
	if (r == 0)
		r = buf_append(line, s, strlen(s));
	if (r == 0)
		r = buf_append(line, "\n", 1);
	return r;
}

/* See conn.h. */
void
conn_queue_event(struct conn *c, json_object *ev)
{
	struct buf line;

	buf_init(&line, ROOM_MAX_OUTPUT);
	if (conn_event_line(ev, &line) < 0)
		conn_close(c, "fell too far behind (output queue full)");
	else
		conn_queue(c, line.data, line.len);
	buf_free(&line);
}

/* See conn.h. */
int
conn_queue_event_fd(struct conn *c, json_object *ev, int fd)
{
	long long at = c->tx + (long long)c->out.len;
	size_t before = c->out.len;

	if (c->closing || c->nfds_out == ROOM_MAX_FDS_QUEUED) {
		close(fd);
		return c->closing ? -ENOBUFS : -EMFILE;
	}
	conn_queue_event(c, ev);
	if (c->closing || c->out.len == before) {
		close(fd);
		return -ENOBUFS;
	}
	c->fds_out[c->nfds_out] = fd;
	c->fd_out_at[c->nfds_out++] = at;
	return 0;
}

/* The fd at the front of c->fds_out is sent: close and drop it. */
static void
conn_fd_sent(struct conn *c)
{
	close(c->fds_out[0]);
	c->nfds_out--;
	memmove(c->fds_out, c->fds_out + 1, (size_t)c->nfds_out *
	    sizeof(int));
	memmove(c->fd_out_at, c->fd_out_at + 1, (size_t)c->nfds_out *
	    sizeof(c->fd_out_at[0]));
}

/* How much of c->out one send may take, and the fd to go with its first
 * byte (-1: none): a line with an fd starts a send of its own, and a send
 * stops before the next such line. */
static size_t
conn_send_span(const struct conn *c, int *fd)
{
	int i = 0;

	*fd = -1;
	if (c->nfds_out > 0 && c->fd_out_at[0] == c->tx) {
		*fd = c->fds_out[0];
		i = 1;
	}
	if (i < c->nfds_out && c->fd_out_at[i] - c->tx < (long long)c->out.len)
		return (size_t)(c->fd_out_at[i] - c->tx);
	return c->out.len;
}

int
conn_is_member(const struct conn *c)
{
	return c->kind == CONN_CHAT || c->kind == CONN_CONTROL;
}

int
conn_gets_events(const struct conn *c)
{
	return (conn_is_member(c) && !c->fed) || c->kind == CONN_FEED;
}

int
conn_count(struct agent *a)
{
	int n = 0;

	for (struct conn *c = a->conns; c; c = c->next)
		if (!c->closing && c->kind != CONN_MONITOR)
			n++;
	return n;
}

void
conn_end(struct conn *c, const char *reason)
{
	if (!c->closing && !c->ending)
		c->ending = reason;
}

void
conn_close(struct conn *c, const char *reason)
{
	if (c->closing)
		return;
	c->closing = reason;
	loop_del_fd(c->a->loop, c->fd);
}

int
conn_take_fds(struct conn *c, int *fds, int n)
{
	if (n < 0 || n > c->nfds)
		return -EBADF;
	memcpy(fds, c->fds, (size_t)n * sizeof(int));
	memmove(c->fds, c->fds + n, (size_t)(c->nfds - n) * sizeof(int));
	memmove(c->fd_end, c->fd_end + n,
	    (size_t)(c->nfds - n) * sizeof(c->fd_end[0]));
	c->nfds -= n;
	return 0;
}

/* Close the first n queued fds. */
static void
conn_close_fds(struct conn *c, int n)
{
	int fds[ROOM_MAX_FDS_QUEUED];

	if (n <= 0 || conn_take_fds(c, fds, n) < 0)
		return;
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

void
conn_drop_fds(struct conn *c)
{
	int n = 0;

	while (n < c->nfds && c->fd_end[n] == c->fd_end[0])
		n++;
	conn_close_fds(c, n);
}

/* Close the fds no line can claim any more before the line that starts at
 * stream offset pos.  The kernel hands fds over with the first byte of the
 * sendmsg that carried them and ends the read there, so the line they came
 * with starts inside that read: fds from a read that ended at or before
 * pos belonged to an earlier line, which did not take them (not an exec,
 * or a bad one).  Left queued they would be taken by the next exec. */
static void
conn_line_fds(struct conn *c, long long pos)
{
	int stale = 0;

	while (stale < c->nfds && c->fd_end[stale] <= pos)
		stale++;
	if (stale > 0)
		log_warn("closed %d fd(s) that came without an exec line",
		    stale);
	conn_close_fds(c, stale);
}

/* Free a closed connection: what the layer above holds for it (its
 * commands, its presence: conn_hooks.gone), its fds, its buffers. */
static void
conn_free(struct agent *a, struct conn *c)
{
	if (c->kind != CONN_NEW && c->kind != CONN_EXEC)
		log_info("%s left (%s)", c->user, c->closing);
	else if (strcmp(c->closing, "disconnected") != 0)
		log_info("connection closed: %s", c->closing);
	a->conn_hooks->gone(c);
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	for (int i = 0; i < c->nfds_out; i++)
		close(c->fds_out[i]);
	close(c->fd);
	jsonl_free(&c->in);
	buf_free(&c->out);
	free(c);
}

/* Write what c has queued; watch for writability when the socket is full. */
static void
conn_write(struct conn *c)
{
	ssize_t n;
	size_t len;
	int fd;

	while (c->out.len > 0 && !c->closing) {
		len = conn_send_span(c, &fd);
		n = fdpass_send(c->fd, c->out.data, len, &fd, fd >= 0);
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN || n == -EWOULDBLOCK)
			break;
		if (n < 0) {
			conn_close(c, "disconnected");
			return;
		}
		if (fd >= 0)
			conn_fd_sent(c);	/* it went with the first byte */
		c->tx += n;
		buf_consume(&c->out, (size_t)n);
	}
	if (c->closing)
		return;
	loop_add_fd(c->a->loop, c->fd, LOOP_READ |
	    (c->out.len ? LOOP_WRITE : 0), conn_io, c);
}

void
conn_flush(struct agent *a)
{
	struct conn **pp = &a->conns, *c;

	for (c = a->conns; c; c = c->next) {
		if (!c->closing && c->out.len)
			conn_write(c);
		if (c->ending && !c->closing && !c->out.len)
			conn_close(c, c->ending);
	}
	while ((c = *pp)) {
		if (c->closing) {
			*pp = c->next;
			conn_free(a, c);
			pp = &a->conns;	/* presence may have queued output */
		} else {
			pp = &c->next;
		}
	}
	for (c = a->conns; c; c = c->next)
		if (!c->closing && c->out.len)
			conn_write(c);
}

/* Read what is waiting on c and handle its whole lines. */
static void
conn_read(struct conn *c)
{
	char chunk[65536], *line;
	int fds[PROTO_MAX_FDS], nfds = 0, r;
	size_t len;
	ssize_t n;

	n = fdpass_recv(c->fd, chunk, sizeof(chunk), fds, &nfds,
	    PROTO_MAX_FDS);
	if (n == -EAGAIN || n == -EINTR)
		return;
	if (n <= 0) {
		conn_close(c, n == 0 ? "disconnected" : "receive failed");
		return;
	}
	c->rx += n;
	for (int i = 0; i < nfds; i++) {
		if (c->nfds == ROOM_MAX_FDS_QUEUED) {
			close(fds[i]);
			conn_close(c, "sent fds without exec lines");
		} else {
			c->fd_end[c->nfds] = c->rx;
			c->fds[c->nfds++] = fds[i];
		}
	}
	if (jsonl_feed(&c->in, chunk, (size_t)n) < 0) {
		conn_close(c, "out of memory");
		return;
	}
	while (!c->closing && (r = jsonl_next(&c->in, &line, &len)) != 0) {
		if (r == -EMSGSIZE) {
			c->a->conn_hooks->line(c, NULL, 0);
		} else if (r == 1) {
			/* The line is at the front of what jsonl holds. */
			conn_line_fds(c, c->rx - (long long)c->in.in.len);
			c->a->conn_hooks->line(c, line, len);
		}
	}
}

static void
conn_io(struct loop *l, int fd, int mask, void *arg)
{
	struct conn *c = arg;

	if (mask & LOOP_WRITE)
		conn_write(c);
	if ((mask & LOOP_READ) && !c->closing)
		conn_read(c);
}

/* A new client on the listening socket. */
static void
conn_accept(struct loop *l, int lfd, int mask, void *arg)
{
	struct agent *a = arg;
	struct conn *c;
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd < 0)
		return;
	if (conn_count(a) >= ROOM_MAX_CONNS || !(c = calloc(1, sizeof(*c)))) {
		log_warn("connection refused: %d connections open",
		    conn_count(a));
		close(fd);
		return;
	}
	c->a = a;
	c->fd = fd;
	c->last_line_ms = time_mono_ms();
	jsonl_init(&c->in, PROTO_MAX_LINE);
	buf_init(&c->out, ROOM_MAX_OUTPUT);
	c->next = a->conns;
	a->conns = c;
	if (loop_add_fd(l, fd, LOOP_READ, conn_io, c) < 0)
		conn_close(c, "cannot watch socket");
}

int
conn_bind(struct agent *a)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, r;

	if (strlen(a->sock_path) >= sizeof(sa.sun_path)) {
		log_error("socket path too long: %s", a->sock_path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, a->sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	unlink(a->sock_path);	/* a stale socket of an earlier run */
	old = umask(0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || chmod(a->sock_path, 0600) < 0 || listen(fd, 64) < 0 ||
	    stat(a->sock_path, &st) < 0) {
		r = -errno;
		log_error("cannot listen on %s: %s", a->sock_path, strerror(-r));
		close(fd);
		return r;
	}
	a->listen_fd = fd;
	a->sock_dev = st.st_dev;
	a->sock_ino = st.st_ino;
	return 0;
}

int
conn_listen(struct agent *a, const struct conn_hooks *hooks)
{
	a->conn_hooks = hooks;
	return loop_add_fd(a->loop, a->listen_fd, LOOP_READ, conn_accept, a);
}

void
conn_close_all(struct agent *a)
{
	for (struct conn *c = a->conns; c; c = c->next)
		conn_close(c, "agent stopping");
	conn_flush(a);
	if (a->listen_fd >= 0) {
		loop_del_fd(a->loop, a->listen_fd);
		close(a->listen_fd);
		a->listen_fd = -1;
		/* Made as root in a root's directory: the agent, now the
		 * room's uid, may not remove it; the spawner does
		 * (room_limits_close).  Started by hand, it is its own. */
		if (unlink(a->sock_path) < 0 && errno != EACCES)
			log_debug("%s: %s", a->sock_path, strerror(errno));
	}
}

