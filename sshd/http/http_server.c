/*
 * http_server.c: atriumd-http's loop and libmicrohttpd's access handler
 * (http_server.h).  Called by http_main.c.
 *
 * libmicrohttpd (MHD) runs without a thread of its own (MHD_USE_EPOLL):
 * its epoll fd is one watch of the shared loop, MHD_run serves whatever
 * is ready after each poll, and MHD_get_timeout is the loop's next
 * deadline for its own timeouts.  MHD takes the listening socket it was
 * handed (MHD_OPTION_LISTEN_SOCKET: this process can make no socket) and
 * enforces the limits it can: connections in all and per address, the
 * time a client may stay silent (http-request-timeout while it sends a
 * request; http-idle-timeout while a kept-alive connection waits for its
 * next), and a per-connection memory pool that bounds the request head.
 * Silence is not all: the whole time to send a request head is bounded
 * too (http_slow.h), so a client trickling a byte at a time is cut.
 * The rest are checked here on MHD's first call for a request, before any
 * body is read: the request line (414), the headers (431), the body's
 * announced length (413), the route (400, 404, 405), the token (401) and
 * origin (403).  Only then does a body come in, counted against the
 * route's limit (413 past it).
 *
 * A request is answered once: by the route's handler, by a refusal here,
 * or by a stream (http_stream.h) that answers from a callback.  MHD's
 * completion notice logs it (http_reply_log) and frees it; a stream that
 * still points to it is told first.
 *
 * SIGHUP is the monitor's for new settings: the process stops taking
 * connections, tells its streams to reconnect, lets what runs finish
 * (HTTP_DRAIN_MS at most) and ends; the monitor starts it again with the
 * settings in force.  SIGTERM ends it at once.
 */
#include "http_server.h"
#include "http_fileio.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http_ask.h"
#include "http_auth.h"
#include "http_proxy.h"
#include "http_tunnel.h"
#include "http_req.h"
#include "http_routes.h"
#include "http_stream.h"
#include "log.h"
#include "privsep.h"
#include "util.h"

#define HTTP_TRIM_MS		5000	/* free heap given back this often */
#define HTTP_DRAIN_MS		10000	/* SIGHUP: running requests' time */
#define HTTP_POOL_SLACK		(16 * 1024)	/* MHD's pool beyond the head */
#define HTTP_ASK_TIMEOUT_MS	30000	/* the monitor's answers */

/* MHD's own complaints, into the log. */
static void
http_server_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	log_debug("libmicrohttpd: %s", line);
}

/* The path is not unescaped as a whole (http_routes.h): each segment is,
 * when it is matched. */
static size_t
http_server_unescape(void *cls, struct MHD_Connection *c, char *uri)
{
	(void)cls;
	(void)c;
	return strlen(uri);
}

/* A new request for url: its fields, the path cut and made printable
 * for the log.  NULL when out of memory. */
static struct http_req *
http_server_req_new(struct http_server *srv, struct MHD_Connection *c,
    const char *method, const char *url)
{
	struct http_req *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->srv = srv;
	r->conn = c;
	r->start_ms = time_mono_ms();
	srv->requests_running++;
	snprintf(r->method, sizeof(r->method), "%s", method);
	snprintf(r->path, sizeof(r->path), "%s", url);
	for (char *p = r->path; *p; p++)
		if ((unsigned char)*p < 0x21 || (unsigned char)*p >= 0x7f)
			*p = '?';
	buf_init(&r->body, (size_t)srv->cfg.http_max_json);
	http_auth_addr(r);
	return r;
}

/* MHD_KeyValueIterator: add each header's size to *cls. */
static enum MHD_Result
http_server_header_size(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	size_t *n = cls;

	(void)kind;
	*n += strlen(key) + (value ? strlen(value) : 0) + 4;
	return MHD_YES;
}

/* The body limit of r's route: 0 for a route that takes none. */
static long long
http_server_body_max(const struct http_req *r)
{
	if (r->route->flags & HTTP_BODY_STREAM)
		return r->srv->cfg.http_max_body;
	if (r->route->flags & HTTP_BODY_JSON)
		return r->srv->cfg.http_max_json;
	return 0;
}

/* The limits of the request head and the announced body.  0, or 1 with r
 * answered and *ret MHD's result. */
static int
http_server_limits(struct http_req *r, const char *url, int *ret)
{
	const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
	    "Content-Length");
	size_t headers = 0;

	if ((long long)strlen(url) > r->srv->cfg.http_max_line) {
		*ret = http_reply_error(r, 414, "the request's path is too long "
		    "(http-max-line)");
		return 1;
	}
	MHD_get_connection_values(r->conn, MHD_HEADER_KIND,
	    http_server_header_size, &headers);
	if ((long long)headers > r->srv->cfg.http_max_headers) {
		*ret = http_reply_error(r, 431, "the request's headers are too "
		    "large (http-max-headers)");
		return 1;
	}
	if (r->route && cl && strtoll(cl, NULL, 10) >
	    http_server_body_max(r)) {
		*ret = http_reply_error(r, 413, http_server_body_max(r) ?
		    "the body is too large (http-max-body, http-max-json)" :
		    "this route takes no body");
		return 1;
	}
	return 0;
}

/* MHD's first call for r: limits, route, token, origin.  MHD's result. */
static int
http_server_first(struct http_req *r, const char *url)
{
	unsigned status;
	const char *why;
	int ret;

	if (http_server_limits(r, url, &ret))
		return ret;
	if (!(r->route = http_routes_match(r, r->method, url, &status, &why)))
		return http_reply_error(r, status, why);
	if (http_server_limits(r, url, &ret))
		return ret;
	if ((r->route->flags & HTTP_AUTH) && http_auth_check(r,
	    (r->route->flags & HTTP_UPGRADE) != 0, &ret))
		return ret;
	if ((r->route->flags & HTTP_CHANGES) && r->read_only)
		return http_reply_error(r, 403, "this token is read-only: it "
		    "may read the room, not change it");
	/* A room on another node: the whole request goes to its home. */
	if (http_proxy_first(r, url, &ret))
		return ret;
	return MHD_YES;
}

/* A piece of r's body.  MHD's result. */
static int
http_server_body(struct http_req *r, const char *data, size_t *size)
{
	ssize_t took;

	if (r->route->flags & HTTP_BODY_STREAM) {
		if ((took = r->route->body(r, data, *size)) < 0)
			return r->answered ? MHD_YES : MHD_NO;
		*size -= (size_t)took;
		if (*size && !r->answered) {
			r->suspended = 1;
			MHD_suspend_connection(r->conn);
		}
		return MHD_YES;
	}
	if (buf_append(&r->body, data, *size) < 0 ||
	    !(r->route->flags & HTTP_BODY_JSON))
		r->body_over = 1;
	*size = 0;
	return MHD_YES;
}

/* MHD_AccessHandlerCallback: every request comes here, several times
 * (http_server.h). */
static enum MHD_Result
http_server_access(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *data, size_t *size,
    void **con_cls)
{
	struct http_server *srv = cls;
	struct http_req *r = *con_cls;

	(void)version;
	if (!r) {
		if (!(r = http_server_req_new(srv, c, method, url)))
			return MHD_NO;
		/* A kept-alive connection waited under the idle timeout; its
		 * request (body and all) is under the request timeout. */
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
		    (unsigned)srv->cfg.http_request_timeout);
		http_slow_head_done(c);
		*con_cls = r;
		return http_server_first(r, url) == MHD_YES ? MHD_YES : MHD_NO;
	}
	if (r->proxy) {
		int ret;

		if (http_proxy_access(r, data, size, &ret))
			return ret == MHD_YES ? MHD_YES : MHD_NO;
	}
	if (r->answered) {
		*size = 0;	/* the rest of a refused body, dropped */
		return MHD_YES;
	}
	if (*size)
		return http_server_body(r, data, size) == MHD_YES ? MHD_YES :
		    MHD_NO;
	if (r->body_over)
		return http_reply_error(r, 413, "the body is too large "
		    "(http-max-json)") == MHD_YES ? MHD_YES : MHD_NO;
	return r->route->fn(r) == MHD_YES ? MHD_YES : MHD_NO;
}

/* MHD_RequestCompletedCallback: r is over (answered, or the client
 * went): log it, then free it. */
static void
http_server_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct http_req *r = *con_cls;

	if (!r)
		return;
	*con_cls = NULL;
	srv->requests_running--;
	/* Not on a stream's, nor on a request answered 101: its socket is
	 * handed over (or being handed over) to a WebSocket, which keeps
	 * its own time, and a timeout set on it would end that. */
	if (c && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK && !r->stream &&
	    r->status != 101) {
		MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT,
		    (unsigned)srv->cfg.http_idle_timeout);
		http_slow_rearm(&srv->slow, c, srv->cfg.http_idle_timeout,
		    srv->cfg.http_request_timeout, time_mono_ms());
	}
	if (r->stream)
		http_stream_detach(r->stream);
	if (!r->answered)
		r->status = toe == MHD_REQUEST_TERMINATED_TIMEOUT_REACHED ?
		    408 : 499;
	srv->stats.requests++;
	if (r->status >= 100 && r->status < 600)
		srv->stats.by_class[r->status / 100]++;
	srv->stats.bytes_out += r->bytes;
	http_reply_log(r);
	if (r->ctx_free)
		r->ctx_free(r->ctx);
	buf_free(&r->body);
	explicit_bzero(r->token, sizeof(r->token));
	free(r);
}

/* MHD's epoll fd is ready: MHD_run after the poll serves it. */
static void
http_server_mhd_ready(struct watch *w, int revents)
{
	(void)w;
	(void)revents;
}

/* SIGHUP (the monitor's, for new settings): take no new connection
 * (they wait in the listening socket's queue for the next process), tell
 * the event streams and WebSockets to reconnect, and let the running
 * requests finish, HTTP_DRAIN_MS at most. */
static void
http_server_drain(struct http_server *srv)
{
	if (srv->drain_until_ms)
		return;
	srv->drain_until_ms = time_mono_ms() + HTTP_DRAIN_MS;
	/* The socket stays open (the monitor holds it too); MHD only stops
	 * watching it. */
	MHD_quiesce_daemon(srv->mhd);
	http_stream_end_all(srv, "atriumd-http restarts with new settings: "
	    "reconnect");
	http_tunnel_end_all(srv);
	log_info("SIGHUP: restarting with new settings once the %u running "
	    "request%s end (%d s at most); new connections wait for it",
	    srv->requests_running, srv->requests_running == 1 ? "" : "s",
	    HTTP_DRAIN_MS / 1000);
}

/* Draining: stop once nothing runs, or at the deadline (what still runs
 * is cut, and said). */
static void
http_server_drained(struct http_server *srv)
{
	long long now = time_mono_ms();

	if (!srv->drain_until_ms)
		return;
	if (srv->requests_running == 0 && !srv->streams) {
		log_info("drained: restarting");
		srv->stopping = 1;
	} else if (now >= srv->drain_until_ms) {
		log_warn("%u request%s still running after %d s: cut by the "
		    "restart", srv->requests_running, srv->requests_running ==
		    1 ? "" : "s", HTTP_DRAIN_MS / 1000);
		srv->stopping = 1;
	} else {
		loop_wake_at(&srv->loop, srv->drain_until_ms);
	}
}

/* SIGTERM or SIGINT: stop; SIGHUP: drain, then stop. */
static void
http_server_signal(struct watch *w, int revents)
{
	struct http_server *srv = w->arg;
	struct signalfd_siginfo si;

	(void)revents;
	while (read(srv->sigfd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			srv->stopping = 1;
		else if (si.ssi_signo == SIGHUP)
			http_server_drain(srv);
}

/* The MHD daemon on listen_fd with the settings' limits, or NULL. */
static struct MHD_Daemon *
http_server_mhd(struct http_server *srv, int listen_fd)
{
	const struct config *c = &srv->cfg;
	size_t pool = (size_t)(c->http_max_line + c->http_max_headers) +
	    HTTP_POOL_SLACK;

	return MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
	    MHD_ALLOW_UPGRADE | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	    http_server_access, srv,
	    MHD_OPTION_EXTERNAL_LOGGER, http_server_mhd_log, NULL,
	    MHD_OPTION_LISTEN_SOCKET, listen_fd,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)c->http_max_connections,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)c->http_per_source,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)c->http_request_timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, pool,
	    MHD_OPTION_NOTIFY_COMPLETED, http_server_completed, srv,
	    MHD_OPTION_NOTIFY_CONNECTION, http_slow_notify, srv,
	    MHD_OPTION_UNESCAPE_CALLBACK, http_server_unescape, NULL,
	    MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1,
	    MHD_OPTION_END);
}

/* See http_server.h. */
int
http_server_init(struct http_server *srv, int listen_fd, int req_fd, int ev_fd)
{
	const union MHD_DaemonInfo *di;
	int r;

	srv->req_fd = req_fd;
	srv->ev_fd = ev_fd;
	srv->sigfd = -1;
	http_ask_init(srv);
	privsep_set_timeout(req_fd, HTTP_ASK_TIMEOUT_MS);
	if ((r = loop_init(&srv->loop)) < 0)
		return r;
	if ((r = loop_add_signals(&srv->loop, &srv->sig_w, &srv->sigfd,
	    http_server_signal, srv)) < 0) {
		log_error("cannot set up signals: %s", strerror(-r));
		return r;
	}
	if (!(srv->mhd = http_server_mhd(srv, listen_fd))) {
		log_error("libmicrohttpd does not start on the listening socket");
		return -EINVAL;
	}
	di = MHD_get_daemon_info(srv->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	if (!di || di->epoll_fd < 0) {
		log_error("libmicrohttpd has no epoll fd");
		return -EINVAL;
	}
	loop_add(&srv->loop, &srv->mhd_w, di->epoll_fd, POLLIN,
	    http_server_mhd_ready, srv);
	loop_add(&srv->loop, &srv->ev_w, ev_fd, POLLIN, http_ask_event, srv);
	loop_sync(&srv->loop);
	return 0;
}

/* See http_server.h. */
int
http_server_add_relayed(struct http_server *srv, int fd, const char *addr)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;

	memset(&ss, 0, sizeof(ss));	/* port 0: relayed */
	if (addr && inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		len = sizeof(*s4);
	} else if (addr && inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		len = sizeof(*s6);
	} else {
		log_warn("a relayed connection without a client address: "
		    "dropped");
		close(fd);
		return -EINVAL;
	}
	if (srv->drain_until_ms || srv->stopping) {
		close(fd);	/* the front's client sees the link close */
		return -ESHUTDOWN;
	}
	/* MHD closes fd when it refuses it (a limit reached). */
	if (MHD_add_connection(srv->mhd, fd, (const struct sockaddr *)&ss,
	    len) != MHD_YES) {
		log_info("relayed connection for %s not taken (a limit of "
		    "connections)", addr);
		return -EAGAIN;
	}
	return 0;
}

/* Work after each poll, outside every callback. */
static void
http_server_turn(struct http_server *srv)
{
	MHD_UNSIGNED_LONG_LONG ms;
	long long slow_ms;

	http_stream_tick(srv);
	http_proxy_wake(srv, 0);
	http_ask_deliver(srv);
	/* Before the runs: a connection cut here is closed by them. */
	if ((slow_ms = http_slow_sweep(&srv->slow, time_mono_ms())) > 0)
		loop_wake_at(&srv->loop, slow_ms);
	MHD_run(srv->mhd);
	/* MHD frees the connections a run closed (and gives their address
	 * its place back under http-per-source) only at its next run: have
	 * it now, not when the next client comes and finds no place. */
	MHD_run(srv->mhd);
	http_stream_reap(srv);
	if (MHD_get_timeout(srv->mhd, &ms) == MHD_YES)
		loop_wake_at(&srv->loop, time_mono_ms() + (long long)ms);
	loop_trim_heap(&srv->trim_ms, HTTP_TRIM_MS);
	http_server_drained(srv);
	loop_sync(&srv->loop);
}

/* See http_server.h. */
int
http_server_run(struct http_server *srv)
{
	http_server_turn(srv);
	while (!srv->stopping) {
		ssh_event_dopoll(srv->loop.event, loop_timeout(&srv->loop));
		http_server_turn(srv);
	}
	log_info("stopped");
	return 0;
}

/* See http_server.h. */
void
http_server_destroy(struct http_server *srv)
{
	http_stream_free_all(srv);
	http_tunnel_end_all(srv);
	ask_queue_forget(&srv->asks);
	http_fileio_free(srv->fileio);
	srv->fileio = NULL;
	if (srv->mhd)
		MHD_stop_daemon(srv->mhd);
	srv->mhd = NULL;
	loop_destroy(&srv->loop);
	if (srv->sigfd >= 0)
		close(srv->sigfd);
}
