/*
 * ctl.c: the operator socket (ctl.h).  Called by monitor_loop.c: ctl_init
 * at start, ctl_tick after each poll, ctl_free at the end.
 *
 * A connection is read until its first newline (at most CTL_MAX_LINE
 * bytes), answered, and closed; a deletion's answer waits until the
 * room's processes stopped and its directories were removed (room.h),
 * which ctl_tick notices.  Nothing here blocks: the socket and each
 * connection are non-blocking, and an answer is one short write to a
 * socket with an empty buffer.  Connections are freed only in ctl_tick.
 */
#include "ctl.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "jsonl.h"
#include "log.h"
#include "monitor.h"
#include "monitor_loop.h"
#include "names.h"
#include "room_list.h"
#include "status.h"
#include "util.h"

struct ctl_conn {
	struct ctl *ctl;		/* owner */
	int fd;
	struct watch w;			/* on fd, while reading */
	char in[CTL_MAX_LINE + 1];	/* the request so far */
	size_t len;
	char deleting[64];		/* room whose deletion it awaits */
	long long deadline_ms;		/* of that wait */
	int done;			/* answered: free at the next tick */
	struct ctl_conn *next;
};

/* Write the answer ev (owned) and finish c. */
static void
ctl_answer(struct ctl_conn *c, json_object *ev)
{
	struct buf line;

	buf_init(&line, CTL_MAX_LINE * 1024);
	if (ev && jsonl_format(&line, ev) == 0 &&
	    write_all(c->fd, line.data, line.len) < 0)
		log_warn("ctl: cannot answer: %s", strerror(errno));
	buf_free(&line);
	json_object_put(ev);
	c->done = 1;
}

/* An error answer. */
static void
ctl_error(struct ctl_conn *c, const char *msg)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "type", json_object_new_string("error"));
	json_object_object_add(ev, "message", json_object_new_string(msg));
	ctl_answer(c, ev);
}

/* The answer to a finished deletion. */
static void
ctl_deleted(struct ctl_conn *c)
{
	json_object *ev = json_object_new_object();

	json_object_object_add(ev, "type", json_object_new_string("deleted"));
	json_object_object_add(ev, "room", json_object_new_string(c->deleting));
	ctl_answer(c, ev);
}

/* delete: end the room's sessions, stop it, remove it. */
static void
ctl_delete(struct ctl_conn *c, const char *room)
{
	struct monitor *srv = c->ctl->srv;
	char dir[4200], msg[256];
	struct stat sb;

	if (!room || !room_name_valid(room)) {
		ctl_error(c, "delete needs \"room\": a room's name");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/rooms/%s", srv->cfg->data_dir, room);
	if (stat(dir, &sb) < 0 && !rooms_deleting(&srv->rooms, room)) {
		snprintf(msg, sizeof(msg), "there is no room '%s'", room);
		ctl_error(c, msg);
		return;
	}
	log_info("ctl: the operator deletes room '%s'", room);
	snprintf(msg, sizeof(msg), "atrium: room '%s' was deleted by the "
	    "server's operator", room);
	monitor_end_room(srv, room, msg);
	rooms_delete(&srv->rooms, room);
	snprintf(c->deleting, sizeof(c->deleting), "%s", room);
	c->deadline_ms = time_mono_ms() + CTL_DELETE_WAIT_MS;
	if (!rooms_deleting(&srv->rooms, room))
		ctl_deleted(c);
}

/* One request line. */
static void
ctl_request(struct ctl_conn *c, const char *line, size_t len)
{
	const char *err, *type;
	json_object *req = jsonl_parse_object(line, len, &err);
	struct monitor *srv = c->ctl->srv;

	type = req ? json_get_string(req, "type") : NULL;
	if (type && strcmp(type, "rooms") == 0)
		ctl_answer(c, room_list(srv->cfg->data_dir, &srv->rooms,
		    "", 1));
	else if (type && strcmp(type, "status") == 0)
		ctl_answer(c, status_json(&srv->rooms));
	else if (type && strcmp(type, "delete") == 0)
		ctl_delete(c, json_get_string(req, "room"));
	else
		ctl_error(c, "unknown request: send {\"type\":\"rooms\"}, "
		    "{\"type\":\"status\"} or "
		    "{\"type\":\"delete\",\"room\":NAME}");
	json_object_put(req);
}

/* Bytes from a connection: serve its line once whole. */
static void
ctl_conn_cb(struct watch *w, int revents)
{
	struct ctl_conn *c = w->arg;
	char *nl;
	ssize_t n;

	(void)revents;
	n = read(c->fd, c->in + c->len, CTL_MAX_LINE - c->len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	loop_want(w, 0);
	if (n <= 0) {
		c->done = 1;
		return;
	}
	c->len += (size_t)n;
	c->in[c->len] = '\0';
	if ((nl = memchr(c->in, '\n', c->len))) {
		fd_set_nonblock(c->fd, 0);	/* answers are short */
		ctl_request(c, c->in, (size_t)(nl - c->in));
	} else if (c->len == CTL_MAX_LINE) {
		ctl_error(c, "request too long");
	} else {
		loop_want(w, POLLIN);
	}
}

/* 1 when the peer of fd runs as atriumd's uid. */
static int
ctl_peer_ok(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);

	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
	    cr.uid == geteuid();
}

/* A new operator connection. */
static void
ctl_accept_cb(struct watch *w, int revents)
{
	struct ctl *ctl = w->arg;
	struct ctl_conn *c;
	int fd = accept4(ctl->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

	(void)revents;
	if (fd < 0)
		return;
	if (!ctl_peer_ok(fd) || ctl->nconns >= CTL_MAX_CONNS ||
	    !(c = calloc(1, sizeof(*c)))) {
		log_warn("ctl: connection refused (another uid, or too many)");
		close(fd);
		return;
	}
	c->ctl = ctl;
	c->fd = fd;
	c->next = ctl->conns;
	ctl->conns = c;
	ctl->nconns++;
	loop_add(&ctl->srv->loop, &c->w, fd, POLLIN, ctl_conn_cb, c);
}

/* 1 when a process listens on the socket at path: a connect succeeds, or
 * would once its backlog drains.  Never the case for the holder of DATA's
 * lock (datalock.h), unless something else than atriumd put it there. */
static int
ctl_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	int fd, r;

	if (len >= sizeof(sa.sun_path))
		return 0;
	memcpy(sa.sun_path, path, len + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
	    errno == EAGAIN;
	close(fd);
	return r;
}

/* See ctl.h. */
int
ctl_init(struct ctl *ctl, struct monitor *srv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int r;

	memset(ctl, 0, sizeof(*ctl));
	ctl->srv = srv;
	snprintf(ctl->path, sizeof(ctl->path), "%s/run/%s", srv->cfg->data_dir,
	    CTL_SOCKET_NAME);
	if (strlen(ctl->path) >= sizeof(sa.sun_path)) {
		log_warn("ctl: %s: path too long; no operator socket", ctl->path);
		ctl->fd = -1;
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, ctl->path);
	if (ctl_answers(ctl->path)) {
		log_error("ctl: something already answers on %s; it is left "
		    "alone, and `atriumd room` will not reach this atriumd",
		    ctl->path);
		ctl->fd = -1;
		return -EADDRINUSE;
	}
	ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (ctl->fd < 0)
		return -errno;
	/* Nothing answers there: a socket left by an atriumd that died, and
	 * ours to replace, as the holder of DATA's lock. */
	unlink(ctl->path);
	old = umask(0177);
	r = bind(ctl->fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(ctl->fd, 8) < 0) {
		r = -errno;
		log_warn("ctl: cannot listen on %s: %s; `atriumd room` will not "
		    "reach this atriumd", ctl->path, strerror(-r));
		close(ctl->fd);
		ctl->fd = -1;
		return r;
	}
	if (file_id_get(ctl->path, &ctl->id) < 0)
		log_warn("ctl: %s: cannot stat the new socket: %s; it will be "
		    "left behind at exit", ctl->path, strerror(errno));
	loop_add(&srv->loop, &ctl->w, ctl->fd, POLLIN, ctl_accept_cb, ctl);
	return 0;
}

/* See ctl.h. */
void
ctl_tick(struct ctl *ctl)
{
	struct ctl_conn **pp = &ctl->conns, *c;

	for (c = ctl->conns; c; c = c->next) {
		if (c->done || !c->deleting[0])
			continue;
		if (!rooms_deleting(&ctl->srv->rooms, c->deleting))
			ctl_deleted(c);
		else if (time_mono_ms() > c->deadline_ms)
			ctl_error(c, "the room's processes did not stop in time; "
			    "see atriumd's log");
		else
			loop_wake_at(&ctl->srv->loop, c->deadline_ms + 1);
	}
	while ((c = *pp)) {
		if (!c->done) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		loop_del(&c->w);
		close(c->fd);
		free(c);
		ctl->nconns--;
	}
}

/* See ctl.h. */
void
ctl_free(struct ctl *ctl)
{
	for (struct ctl_conn *c = ctl->conns; c; c = c->next)
		c->done = 1;
	ctl_tick(ctl);
	if (ctl->fd >= 0) {
		loop_del(&ctl->w);
		close(ctl->fd);
		/* Only the socket this process bound: one put there since by
		 * anyone else stays theirs. */
		if (unlink_if_same(ctl->path, &ctl->id) == -ESTALE)
			log_warn("ctl: %s is no longer the socket this atriumd "
			    "made; left alone", ctl->path);
		ctl->fd = -1;
	}
}
