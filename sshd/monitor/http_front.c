/*
 * http_front.c: atriumd-http as the monitor starts, watches and restarts
 * it, and the token rules of its requests (http_front.h).  Called by the
 * monitor's main.c (http_front_open, before the split), monitor_loop.c
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
#define HTTP_FRONT_FD_TOP	16	/* fds are moved above this first */
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

/* atriumd-http's command line, made before each fork. */
struct http_front_cmd {
	char *argv[6 + 2 * HTTP_FRONT_NSETTINGS];
	char nums[3][24];		/* MONITOR-PID, UID, GID */
	char name[64];			/* USER */
	char keys[HTTP_FRONT_NSETTINGS][48];	/* "--KEY" */
	char values[HTTP_FRONT_NSETTINGS][256];
	char *envp[2];
	char log_env[64];		/* ATRIUM_LOG=LEVEL */
};

struct http_front {
	struct monitor_front f;		/* the process and its sockets */
	int listen_fd;			/* bound by http_front_open */
	char path[PATH_MAX];		/* atriumd-http */
	struct privdrop_id id;		/* who it becomes */
	long long restart_ms;		/* when to start it again; 0: none due */
	int restarting;			/* ended for new settings (SIGHUP) */
	struct http_front_cmd cmd;
};

/* The requests atriumd-http may send (privsep.h): never authkeys,
 * export, import, nor anything that names a key. */
static const char *const http_front_requests[] = {
	"use", "agent", "why", "access", "rooms", "delete", "pipes",
	"whoami", "metrics", "cmd_begin", "cmd_end",
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

/* config_each's callback: keep the settings of http_front_settings. */
static void
http_front_setting(const char *key, const char *value, void *arg)
{
	struct http_front_cmd *cmd = arg;

	for (size_t i = 0; i < HTTP_FRONT_NSETTINGS; i++) {
		if (strcmp(key, http_front_settings[i]) != 0)
			continue;
		snprintf(cmd->keys[i], sizeof(cmd->keys[i]), "--%s", key);
		snprintf(cmd->values[i], sizeof(cmd->values[i]), "%s", value);
	}
}

/* Fill h->cmd from the settings now in force. */
static void
http_front_cmd(struct http_front *h, const struct config *c)
{
	struct http_front_cmd *cmd = &h->cmd;
	const char *level = getenv("ATRIUM_LOG");
	int n = 0;

	memset(cmd, 0, sizeof(*cmd));
	snprintf(cmd->nums[0], sizeof(cmd->nums[0]), "%d", (int)getpid());
	snprintf(cmd->nums[1], sizeof(cmd->nums[1]), "%u", (unsigned)h->id.uid);
	snprintf(cmd->nums[2], sizeof(cmd->nums[2]), "%u", (unsigned)h->id.gid);
	snprintf(cmd->name, sizeof(cmd->name), "%s", h->id.name);
	config_each(c, http_front_setting, cmd);
	cmd->argv[n++] = h->path;
	for (int i = 0; i < 3; i++)
		cmd->argv[n++] = cmd->nums[i];
	cmd->argv[n++] = cmd->name;
	for (size_t i = 0; i < HTTP_FRONT_NSETTINGS; i++) {
		if (!cmd->keys[i][0] || !cmd->values[i][0])
			continue;
		cmd->argv[n++] = cmd->keys[i];
		cmd->argv[n++] = cmd->values[i];
	}
	if (level && strlen(level) < 32) {
		snprintf(cmd->log_env, sizeof(cmd->log_env), "ATRIUM_LOG=%s",
		    level);
		cmd->envp[0] = cmd->log_env;
	}
}

/* The child: fds to 3..5, every other closed, then atriumd-http.  Only
 * async-signal-safe calls.  Never returns. */
static void
http_front_exec(const struct http_front_cmd *cmd, const int *fds)
{
	static const char failed[] = "atriumd: cannot execute atriumd-http\n";

	for (int i = 0; i < 3; i++)
		if (dup2(fds[i], 3 + i) < 0)
			_exit(127);
	if (close_range(6, ~0U, 0) < 0)
		_exit(127);
	execve(cmd->argv[0], cmd->argv, cmd->envp);
	if (write(2, failed, sizeof(failed) - 1) < 0)
		_exit(127);
	_exit(127);
}

/* Close the n fds (each may be -1). */
static void
http_front_close(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* The child's three fds, above HTTP_FRONT_FD_TOP.  0 or -errno. */
static int
http_front_fds(struct http_front *h, int req, int ev, int *fds)
{
	const int src[3] = { h->listen_fd, req, ev };
	int r = 0;

	for (int i = 0; i < 3; i++) {
		fds[i] = fcntl(src[i], F_DUPFD_CLOEXEC, HTTP_FRONT_FD_TOP);
		if (fds[i] < 0 && r == 0)
			r = -errno;
	}
	if (r < 0)
		http_front_close(fds, 3);
	return r;
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
		http_front_close(req, 2);
		return r;
	}
	http_front_cmd(h, srv->cfg);
	if ((r = http_front_fds(h, req[1], ev[1], fds)) == 0 &&
	    (pid = fork()) < 0) {
		r = -errno;
		http_front_close(fds, 3);
	}
	if (r < 0) {
		log_error("cannot start atriumd-http: %s", strerror(-r));
		http_front_close(req, 2);
		http_front_close(ev, 2);
		return r;
	}
	if (pid == 0)
		http_front_exec(&h->cmd, fds);
	http_front_close(fds, 3);
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

/* 1 when addr can be a numeric address (atriumd-http writes it from the
 * connection, or from a trusted proxy's X-Forwarded-For). */
static int
http_front_addr_ok(const char *addr)
{
	size_t n = strlen(addr);

	return n > 0 && n <= HTTP_FRONT_MAX_ADDR &&
	    strspn(addr, "0123456789abcdefABCDEF.:%") == n;
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
