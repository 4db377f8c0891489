/*
 * monitor_loop.c: the monitor's event loop (monitor_loop.h), in the
 * process that stays root.  Called by the monitor's monitor_main.c:
 * monitor_loop_bind before the fork (the listener and the host key, as
 * root, for atriumd-net to serve), then monitor_loop_init,
 * monitor_loop_run and monitor_loop_destroy.
 *
 * One thread: ssh_event_dopoll serves the request socket (monitor.c),
 * the operator socket (ctl.c), each room's children and agent sockets
 * (room.c) and a signalfd; after each poll, monitor_loop_turn reaps
 * children and runs the rooms' timers, and loop_sync updates the poll
 * set.  There is no periodic tick: what must happen at a time is a
 * deadline (loop.h: loop_wake_at).  Signals are blocked and read from the
 * signalfd, so no handler runs inside a library.
 *
 * The monitor holds no client's connection: the listener it binds is
 * closed here once atriumd-net has its copy (monitor_loop_init).  The
 * HTTP listener (--http-listen) is kept, never accepted on, so that a
 * restarted atriumd-http gets it again (http_front.h).
 */
#include "monitor_loop.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access_record.h"
#include "http_front.h"
#include "libssh_compat.h"
#include "listener.h"
#include "log.h"
#include "monitor.h"
#include "placement.h"
#include "room_transfer.h"
#include "tokens.h"
#include "util.h"

#define MONITOR_STOP_POLL_MS	100	/* looks at stopping rooms this often */
#define MONITOR_STOP_WAIT_MS	6000	/* rooms get this long to stop */
#define MONITOR_TRIM_MS		5000	/* free heap given back this often */

/* The network process ended: the monitor stops too (a service manager
 * starts atriumd again; the rooms' processes stop as on a normal stop). */
static void
monitor_loop_net_exited(struct monitor *srv, int status)
{
	srv->net.pid = 0;
	if (srv->stopping && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return;
	if (WIFSIGNALED(status))
		log_error("network process killed by signal %d; stopping every "
		    "room", WTERMSIG(status));
	else
		log_error("network process exited %d; stopping every room",
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	srv->stopping = 1;
	srv->exit_code = 1;
}

/* Reap every exited child and tell the rooms. */
static void
monitor_loop_reap(struct monitor *srv)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (srv->net.pid > 0 && pid == srv->net.pid)
			monitor_loop_net_exited(srv, status);
		else if (http_front_exited(srv, pid, status))
			continue;
		else if (!room_transfer_child_exited(srv, pid, status))
			rooms_child_exited(&srv->rooms, pid, status);
	}
}

/* Signals: SIGCHLD reaps, SIGTERM/SIGINT stop the monitor, SIGHUP reloads
 * the monitor's settings. */
static void
monitor_loop_signal_cb(struct watch *w, int revents)
{
	struct monitor *srv = w->arg;
	struct signalfd_siginfo si;

	(void)revents;
	while (read(srv->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		if (si.ssi_signo == SIGHUP) {
			if (srv->reload && !srv->stopping)
				srv->reload(srv->reload_arg);
			continue;
		}
		if ((si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) &&
		    !srv->stopping) {
			log_info("signal %u: stopping every room",
			    si.ssi_signo);
			srv->stopping = 1;
		}
	}
	monitor_loop_reap(srv);
}

/* For ":PORT", a socket of our own that takes IPv6 and IPv4 (listener.h),
 * handed to libssh; addr becomes what is bound ("::" or, on a host without
 * IPv6, "0.0.0.0").  1 for both families, 0 for IPv4 alone, or -errno
 * (logged). */
static int
monitor_loop_listen_every(struct monitor *srv, char *addr, size_t alen,
    const char *port)
{
	int fd = listener_open_dual(port, MONITOR_LISTEN_BACKLOG);

	if (fd == -EAFNOSUPPORT) {
		log_info("no IPv6 on this host: :%s listens on IPv4 only", port);
		snprintf(addr, alen, "0.0.0.0");
		return 0;
	}
	if (fd < 0)
		return fd;
	ssh_bind_set_fd(srv->bind, fd);
	snprintf(addr, alen, "::");
	return 1;
}

/* Load the host key and bind the listener from the settings. */
static int
monitor_loop_listen(struct monitor *srv)
{
	char addr[128], port[16], key[PATH_MAX + 16];
	int dual = 0;

	if (listener_parse(srv->cfg->listen, addr, sizeof(addr), port,
	    sizeof(port)) < 0) {
		log_error("--listen %s: use [ADDR]:PORT, PORT from 1 to 65535: "
		    "e.g. :2222 or 127.0.0.1:2222", srv->cfg->listen);
		return -EINVAL;
	}
	snprintf(key, sizeof(key), "%s/hostkey", srv->cfg->data_dir);
	if (!(srv->bind = ssh_bind_new()))
		return -ENOMEM;
	if (!addr[0] && (dual = monitor_loop_listen_every(srv, addr, sizeof(addr),
	    port)) < 0)
		return dual;
	ssh_bind_options_set(srv->bind, SSH_BIND_OPTIONS_BINDADDR, addr);
	ssh_bind_options_set(srv->bind, SSH_BIND_OPTIONS_BINDPORT_STR, port);
	if (ssh_bind_options_set(srv->bind, SSH_BIND_OPTIONS_HOSTKEY, key) < 0) {
		log_error("%s: cannot load the host key: %s", key,
		    ssh_get_error(srv->bind));
		return -EINVAL;
	}
	if (compat_bind_setup(srv->bind) < 0)
		return -EINVAL;
	if (ssh_bind_listen(srv->bind) < 0) {
		log_error("cannot listen on %s: %s (is another server on that "
		    "port?)", srv->cfg->listen, ssh_get_error(srv->bind));
		return -EADDRINUSE;
	}
	ssh_bind_set_blocking(srv->bind, 0);
	fd_set_cloexec(ssh_bind_get_fd(srv->bind), 1);
	/* atriumd-net accepts in batches until EAGAIN (server.c). */
	fd_set_nonblock(ssh_bind_get_fd(srv->bind), 1);
	/* A second listen() only sets the queue's length (see
	 * MONITOR_LISTEN_BACKLOG); failing, libssh's 10 stays. */
	if (listen(ssh_bind_get_fd(srv->bind), MONITOR_LISTEN_BACKLOG) < 0)
		log_warn("cannot lengthen the listener's queue to %d: %s",
		    MONITOR_LISTEN_BACKLOG, strerror(errno));
	/* An IPv6 address is written in brackets, as --listen takes it. */
	log_info("listening on %s%s%s:%s%s", strchr(addr, ':') ? "[" : "", addr,
	    strchr(addr, ':') ? "]" : "", port, dual ?
	    " (every address, IPv6 and IPv4)" : "");
	return 0;
}

/* See monitor_loop.h. */
int
monitor_loop_bind(struct monitor *srv, const struct config *cfg)
{
	int r;

	memset(srv, 0, sizeof(*srv));
	srv->cfg = cfg;
	srv->sigfd = -1;
	srv->ctl.fd = -1;
	srv->net = (struct monitor_front){ srv, "network process", 0, -1, -1,
	    { .fd = -1 }, 0, { 0 } };
	if ((r = compat_init()) < 0)
		return r;
	return monitor_loop_listen(srv);
}

/* See monitor_loop.h. */
int
monitor_loop_init(struct monitor *srv, const struct helpers *progs,
    int mon_fd, int ev_fd, pid_t net)
{
	char path[PATH_MAX + 32];
	int r;

	srv->net.req_fd = mon_fd;
	srv->net.ev_fd = ev_fd;
	srv->net.pid = net;
	/* The monitor holds no connection, not even the listener. */
	ssh_bind_free(srv->bind);
	srv->bind = NULL;
	if ((r = loop_init(&srv->loop)) < 0)
		return r;
	if ((r = loop_add_signals(&srv->loop, &srv->signal_w, &srv->sigfd,
	    monitor_loop_signal_cb, srv)) < 0) {
		log_error("cannot set up signals: %s", strerror(-r));
		return r;
	}
	/* Its own parse of authorized_keys: who a request is for is the
	 * monitor's reading of the key's line (monitor_identity.h). */
	snprintf(path, sizeof(path), "%s/authorized_keys", srv->cfg->data_dir);
	if (!(srv->keys = authkeys_new(path)))
		return -ENOMEM;
	authkeys_set_quiet(srv->keys);
	if (!(srv->tokens = tokens_new(srv->cfg->data_dir)))
		return -ENOMEM;
	access_record_migrate(srv->cfg->data_dir);
	rooms_init(&srv->rooms, srv->cfg, &srv->loop, progs);
	srv->rooms.changed = monitor_wake;
	srv->rooms.changed_arg = srv;
	if ((r = placement_start(srv)) < 0)
		return r;
	loop_add(&srv->loop, &srv->net.w, mon_fd, POLLIN, monitor_serve,
	    &srv->net);
	if (srv->http && (r = http_front_start(srv)) < 0)
		return r;
	ctl_init(&srv->ctl, srv);
	loop_sync(&srv->loop);
	return 0;
}

/* Work done after each poll, outside every callback. */
static void
monitor_loop_turn(struct monitor *srv)
{
	placement_tick(srv);
	monitor_loop_reap(srv);
	rooms_tick(&srv->rooms);
	ctl_tick(&srv->ctl);
	http_front_tick(srv);
	loop_trim_heap(&srv->trim_ms, MONITOR_TRIM_MS);
	loop_sync(&srv->loop);
}

/* Stop every room and the network process, and wait for them. */
static void
monitor_loop_stop(struct monitor *srv)
{
	long long until = time_mono_ms() + MONITOR_STOP_WAIT_MS;

	ctl_free(&srv->ctl);
	monitor_loop_turn(srv);
	if (srv->net.pid > 0)
		kill(srv->net.pid, SIGTERM);
	http_front_stop(srv, SIGTERM);
	room_transfer_stop_all(srv);
	rooms_shutdown(&srv->rooms, 0);
	while ((!rooms_all_stopped(&srv->rooms) || srv->net.pid > 0 ||
	    http_front_running(srv)) &&
	    time_mono_ms() < until) {
		loop_sync(&srv->loop);
		ssh_event_dopoll(srv->loop.event, MONITOR_STOP_POLL_MS);
		monitor_loop_reap(srv);
		rooms_tick(&srv->rooms);
	}
	if (srv->net.pid > 0)
		kill(srv->net.pid, SIGKILL);
	http_front_stop(srv, SIGKILL);
	if (!rooms_all_stopped(&srv->rooms)) {
		rooms_shutdown(&srv->rooms, 1);
		for (int i = 0; i < 20 && !rooms_all_stopped(&srv->rooms); i++) {
			usleep(50000);
			monitor_loop_reap(srv);
		}
	}
	placement_stop(srv);
	log_info("stopped");
}

/* See monitor_loop.h. */
int
monitor_loop_run(struct monitor *srv)
{
	while (!srv->stopping) {
		int r;

		/* The fence time is looked at before the poll and first
		 * after it, so a wake-up after a long stop (kill -STOP)
		 * stops this host's rooms before serving anything. */
		placement_tick(srv);
		r = ssh_event_dopoll(srv->loop.event, loop_timeout(&srv->loop));

		if (r == SSH_ERROR && errno != EINTR && errno != 0) {
			/* A room's fd error surfaces here; its tick handles
			 * it. */
		}
		monitor_loop_turn(srv);
	}
	monitor_loop_stop(srv);
	return srv->exit_code;
}

/* See monitor_loop.h. */
void
monitor_loop_destroy(struct monitor *srv)
{
	placement_stop(srv);
	rooms_free(&srv->rooms);
	loop_destroy(&srv->loop);
	if (srv->bind)
		ssh_bind_free(srv->bind);
	if (srv->sigfd >= 0)
		close(srv->sigfd);
	if (srv->net.req_fd >= 0)
		close(srv->net.req_fd);
	if (srv->net.ev_fd >= 0)
		close(srv->net.ev_fd);
	cmd_cap_clear(&srv->net.cmds);
	http_front_free(srv);
	authkeys_free(srv->keys);
	tokens_free(srv->tokens);
}
