/*
 * http_front.c: atriumd-http as the monitor starts, watches and restarts
 * it, and the token rules of its requests (http_front.h).  Called by the
 * monitor's monitor_main.c (http_front_open, before the split), monitor_loop.c
 * (start, reap, tick, stop) and monitor.c (allowed, identity, grants).
 *
 * The listener stays open in the monitor for atriumd's life (it never
 * accepts on it): a restarted atriumd-http gets the same socket, and
 * connections that arrived meanwhile wait in its queue.  A restart comes
 * HTTP_FRONT_RESTART_MS after the end, so a process that dies at once
 * costs a fork a second, not a busy loop.
 */
#include "http_front.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "front_exec.h"
#include "helpers.h"
#include "http_token.h"
#include "jsonl.h"
#include "listener.h"
#include "log.h"
#include "monitor.h"
#include "monitor_identity.h"
#include "monitor_loop.h"
#include "names.h"
#include "privdrop_id.h"
#include "privsep.h"
#include "util.h"

#define HTTP_FRONT_RESTART_MS	1000	/* after an end, before a restart */
#define HTTP_FRONT_BACKLOG	1024	/* as MONITOR_LISTEN_BACKLOG */
#define HTTP_FRONT_MAX_TOKEN	256	/* bytes of a token in a request */
#define HTTP_FRONT_MAX_ADDR	63

/* The settings atriumd-http reads (config.h); no other is passed on. */
static const char *const http_front_settings[] = {
	"http-idle-timeout", "http-auth-failures",
	"http-listen", "http-trusted-proxy", "http-insecure-cookie",
	"http-max-body", "http-max-json", "http-max-line", "http-max-headers",
	"http-request-timeout", "http-per-source", "http-max-connections",
	"max-commands-per-user", "http-web-dir",
};
#define HTTP_FRONT_NSETTINGS \
	(sizeof(http_front_settings) / sizeof(http_front_settings[0]))

struct http_front {
	struct monitor_front f;		/* the process and its sockets */
	int listen_fd;			/* bound by http_front_open */
	char path[PATH_MAX];		/* atriumd-http */
	struct privdrop_id id;		/* who it becomes */
	long long restart_ms;		/* when to start it again; 0: none due */
	int restarting;			/* ended for new settings (SIGHUP) */
	struct front_exec cmd;		/* its command line, made before
					 * each fork */
};

/* The requests atriumd-http may send (privsep.h): never authkeys,
 * export, import, nor anything that names a key. */
static const char *const http_front_requests[] = {
	"use", "agent", "why", "access", "rooms", "delete", "pipes",
	"whoami", "metrics", "cmd_begin", "cmd_end", "http_relay",
};

/* See http_front.h. */
int
http_front_allowed(const char *type)
{
	for (size_t i = 0; i < sizeof(http_front_requests) /
	    sizeof(http_front_requests[0]); i++)
		if (strcmp(type, http_front_requests[i]) == 0)
			return 1;
	return 0;
}

/* See http_front.h. */
int
http_front_open(struct monitor *srv, const struct helpers *progs,
    const struct privdrop_id *id)
{
	char addr[128], port[16];
	struct http_front *h;
	int fd;

	if (!srv->cfg->http_listen[0])
		return 0;
	if (listener_parse(srv->cfg->http_listen, addr, sizeof(addr), port,
	    sizeof(port)) < 0 || !addr[0]) {
		log_error("--http-listen %s: use ADDR:PORT, e.g. "
		    "127.0.0.1:8080 behind a reverse proxy (atriumd(8), HTTP)",
		    srv->cfg->http_listen);
		return -EINVAL;
	}
	if (!progs->http[0]) {
		log_error("--http-listen: atriumd-http is not beside %s: "
		    "install it with atriumd (make install)", progs->net);
		return -ENOENT;
	}
	if ((fd = listener_open_addr(addr, port, HTTP_FRONT_BACKLOG)) < 0)
		return fd;
	if (!(h = calloc(1, sizeof(*h)))) {
		close(fd);
		return -ENOMEM;
	}
	h->f = (struct monitor_front){ srv, "HTTP process", 1, -1, -1,
	    { .fd = -1 }, 0, { 0 } };
	h->listen_fd = fd;
	h->id = *id;
	snprintf(h->path, sizeof(h->path), "%s", progs->http);
	srv->http = h;
	log_info("HTTP on %s (atriumd-http)", srv->cfg->http_listen);
	return 0;
}

/* The child's three fds (listener, request and event sockets), above
 * FRONT_EXEC_FD_TOP.  0 or -errno. */
static int
http_front_fds(struct http_front *h, int req, int ev, int *fds)
{
	const int src[3] = { h->listen_fd, req, ev };

	return front_exec_fds(src, 3, fds);
}

/* See http_front.h. */
int
http_front_start(struct monitor *srv)
{
	struct http_front *h = srv->http;
	int req[2], ev[2], fds[3], r;
	pid_t pid = -1;

	h->restart_ms = 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, req) < 0)
		return -errno;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ev) < 0) {
		r = -errno;
		front_exec_close(req, 2);
		return r;
	}
	if ((r = front_exec_cmd(&h->cmd, h->path, srv->cfg, &h->id,
	    http_front_settings, HTTP_FRONT_NSETTINGS, 1)) == 0 &&
	    (r = http_front_fds(h, req[1], ev[1], fds)) == 0 &&
	    (pid = fork()) < 0) {
		r = -errno;
		front_exec_close(fds, 3);
	}
	if (r < 0) {
		log_error("cannot start atriumd-http: %s", strerror(-r));
		front_exec_close(req, 2);
		front_exec_close(ev, 2);
		return r;
	}
	if (pid == 0)
		front_exec_child(&h->cmd, fds, 3,
		    "atriumd: cannot execute atriumd-http\n");
	front_exec_close(fds, 3);
	close(req[1]);
	close(ev[1]);
	privsep_set_timeout(req[0], PRIVSEP_IO_TIMEOUT_MS);
	privsep_set_timeout(ev[0], PRIVSEP_IO_TIMEOUT_MS);
	h->f.req_fd = req[0];
	h->f.ev_fd = ev[0];
	h->f.pid = pid;
	loop_add(&srv->loop, &h->f.w, req[0], POLLIN, monitor_serve, &h->f);
	return 0;
}

/* See http_front.h. */
struct monitor_front *
http_front_of(struct monitor *srv)
{
	return srv->http && srv->http->f.pid > 0 && srv->http->f.req_fd >= 0 ?
	    &srv->http->f : NULL;
}

/* Close the monitor's ends of f's sockets. */
static void
http_front_close_sockets(struct monitor_front *f)
{
	loop_del(&f->w);
	if (f->req_fd >= 0)
		close(f->req_fd);
	if (f->ev_fd >= 0)
		close(f->ev_fd);
	f->req_fd = f->ev_fd = -1;
}

/* See http_front.h. */
void
http_front_abandoned(struct monitor_front *f)
{
	http_front_close_sockets(f);
}

/* See http_front.h. */
int
http_front_exited(struct monitor *srv, pid_t pid, int status)
{
	struct http_front *h = srv->http;

	if (!h || h->f.pid <= 0 || pid != h->f.pid)
		return 0;
	h->f.pid = 0;
	http_front_close_sockets(&h->f);
	if (h->f.cmds.running > 0)
		log_info("HTTP process ended with %lld commands counted: "
		    "no longer counted against their users' cap",
		    h->f.cmds.running);
	cmd_cap_clear(&h->f.cmds);
	if (srv->stopping)
		return 1;
	if (h->restarting) {
		h->restarting = 0;
		log_info("HTTP process ended for new settings; starting it "
		    "again");
		h->restart_ms = time_mono_ms();
		return 1;
	}
	if (WIFSIGNALED(status))
		log_error("HTTP process killed by signal %d; starting it again",
		    WTERMSIG(status));
	else
		log_error("HTTP process exited %d; starting it again",
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	h->restart_ms = time_mono_ms() + HTTP_FRONT_RESTART_MS;
	return 1;
}

/* See http_front.h. */
void
http_front_tick(struct monitor *srv)
{
	struct http_front *h = srv->http;

	if (!h || !h->restart_ms || srv->stopping)
		return;
	if (time_mono_ms() < h->restart_ms) {
		loop_wake_at(&srv->loop, h->restart_ms);
		return;
	}
	if (http_front_start(srv) < 0)
		h->restart_ms = time_mono_ms() + HTTP_FRONT_RESTART_MS;
}

/* See http_front.h. */
int
http_front_takes(const char *key)
{
	if (strncmp(key, "http-", 5) != 0 || strcmp(key, "http-listen") == 0)
		return 0;
	for (size_t i = 0; i < HTTP_FRONT_NSETTINGS; i++)
		if (strcmp(key, http_front_settings[i]) == 0)
			return 1;
	return 0;
}

/* See http_front.h. */
void
http_front_restart(struct monitor *srv)
{
	struct http_front *h = srv->http;

	if (!h || h->f.pid <= 0 || h->restarting)
		return;		/* a start to come reads the new settings */
	h->restarting = 1;
	kill(h->f.pid, SIGHUP);
}

/* See http_front.h. */
void
http_front_stop(struct monitor *srv, int sig)
{
	if (srv->http && srv->http->f.pid > 0)
		kill(srv->http->f.pid, sig);
}

/* See http_front.h. */
const struct cmd_cap *
http_front_cmds(struct monitor *srv)
{
	return srv->http ? &srv->http->f.cmds : NULL;
}

/* See http_front.h. */
int
http_front_running(struct monitor *srv)
{
	return srv->http && srv->http->f.pid > 0;
}

/* See http_front.h. */
void
http_front_free(struct monitor *srv)
{
	struct http_front *h = srv->http;

	if (!h)
		return;
	http_front_close_sockets(&h->f);
	cmd_cap_clear(&h->f.cmds);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	free(h);
	srv->http = NULL;
}

/* See http_front.h. */
int
http_front_addr_ok(const char *addr)
{
	size_t n = strlen(addr);

	return n > 0 && n <= HTTP_FRONT_MAX_ADDR &&
	    strspn(addr, "0123456789abcdefABCDEF.:%") == n;
}

/* See http_front.h. */
int
http_front_pass_conn(struct monitor *srv, const char *addr, int *fd,
    char *why, size_t len)
{
	struct monitor_front *f = http_front_of(srv);
	json_object *ev;
	int sp[2], r;

	*fd = -1;
	if (!f || f->ev_fd < 0) {
		snprintf(why, len, "this host serves no HTTP (atriumd "
		    "--http-listen)");
		return -ENOENT;
	}
	if (!addr || !http_front_addr_ok(addr)) {
		snprintf(why, len, "not a client address");
		return -EPROTO;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		r = -errno;
		snprintf(why, len, "cannot make a socket: %s", strerror(-r));
		return r;
	}
	if (!(ev = json_object_new_object())) {
		front_exec_close(sp, 2);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	json_object_object_add(ev, "type", json_object_new_string("http_conn"));
	json_object_object_add(ev, "addr", json_object_new_string(addr));
	r = privsep_send(f->ev_fd, ev, &sp[1], 1);
	json_object_put(ev);
	close(sp[1]);
	if (r < 0) {
		close(sp[0]);
		snprintf(why, len, "this host's HTTP process does not answer");
		return r;
	}
	*fd = sp[0];
	return 0;
}

/* See http_front.h. */
int
http_front_grants(const struct monitor_identity *id, const char *room)
{
	size_t n = strlen(room);

	if (!id || !id->token_rooms)
		return 1;
	for (const char *p = id->rooms; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && strncmp(p, room, n) == 0)
			return 1;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* See http_front.h. */
int
http_front_identity(struct monitor *srv, json_object *req, const char *room,
    struct monitor_identity *id, char *why, size_t len)
{
	const char *token = json_get_string(req, "token");
	const char *addr = json_get_string(req, "addr");
	int r;

	memset(id, 0, sizeof(*id));
	snprintf(why, len, "the request does not say who it is for");
	if (!token || !addr || !http_front_addr_ok(addr))
		return -EPROTO;
	if (!token[0] || strlen(token) > HTTP_FRONT_MAX_TOKEN) {
		snprintf(why, len, "not a token");
		return -EACCES;
	}
	if ((r = http_token_identity(srv, token, addr, id, why, len)) < 0)
		return r;
	if (room && !http_front_grants(id, room)) {
		snprintf(why, len, "this token is not for room '%s' (its rooms: "
		    "%.200s)", room, id->rooms);
		return -EACCES;
	}
	return 0;
}
