/*
 * server.c: the listener and the main loop of atriumd's network process
 * (server.h).  Called by atriumd-net's net_main.c: server_adopt, then
 * server_init_network, server_run and server_destroy.  The monitor's loop
 * is sshd/monitor/monitor_loop.c.
 *
 * One thread: ssh_event_dopoll serves the listener, every session, command
 * pipes, agent sockets, the monitor's sockets and a signalfd; after each
 * poll, server_turn runs the work that must happen outside callbacks
 * (answers from the monitor, channel ticks, the window workaround,
 * reaping sessions) and then loop_sync updates the poll set.  Only the
 * sessions with work are ticked (session.h: session_due: a watch of
 * theirs fired, their socket moved bytes, a deadline of theirs passed,
 * bytes wait in them): a chat line in a room of a thousand touches the
 * thousand members once, not at each of the several polls it takes to
 * read their links; the walk that asks costs a few loads per session.
 * Something rare that reaches many sessions (an answer of the monitor,
 * a room ended, stopping) ticks them all at the next turn.  There is
 * no periodic tick: what server_turn must do at a time it asks for as a
 * deadline (loop.h: loop_wake_at), and the poll sleeps until the
 * earliest one or an fd, so an idle server costs no CPU and no wake-up
 * whatever its number of idle sessions.  A new connection's key exchange
 * is the exception: it runs on a handshake thread (kexpool.h) and comes
 * back through an eventfd on this loop; until then the session is on the
 * list (admission counts it) but in_kex, and only the thread touches it.
 * Signals are blocked and read from the signalfd, so no handler runs
 * inside libssh (nor on a handshake thread: they inherit the mask).
 * SIGTERM (or the monitor gone) stops in two steps: every channel is told
 * why it ends (chan_end: SERVER_STOP_MSG), and the loop goes on until the
 * clients have left or SERVER_STOP_GRACE_MS passed; then every session
 * is closed.
 */
#include "server.h"
#include "http_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libssh_compat.h"
#include "log.h"
#include "monitor_ask.h"
#include "netaddr.h"
#include "session.h"
#include "util.h"

/* See server.h. */
int
server_fds_left(struct server *srv, int channel)
{
	struct rlimit rl;
	long limit, reserve;
	int lowest;

	/* Read each time: an operator may change it (prlimit). */
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1;
	limit = rl.rlim_cur < (rlim_t)INT_MAX ? (long)rl.rlim_cur : INT_MAX;
	reserve = limit / 8 < 32 ? 32 : limit / 8;
	/* fds are handed out lowest first: the lowest free one tells how
	 * many are in use. */
	lowest = fcntl(srv->sigfd, F_DUPFD_CLOEXEC, 0);
	if (lowest < 0)
		return 0;
	close(lowest);
	return lowest < limit - (channel ? reserve / 2 : reserve);
}

/* See server.h. */
void
server_end_room(struct server *srv, const char *room, const char *msg)
{
	srv->tick_all = 1;	/* rare: every session looks */
	for (struct session *s = srv->sessions; s; s = s->next) {
		if (!s->authed || strcmp(s->room, room) != 0)
			continue;
		for (struct chan *c = s->chans; c; c = c->next)
			chan_end(c, msg);
	}
}

/* Stopping: tell every channel that is not ending yet (one opened since
 * the last turn too).  1 while a session is still open: its client
 * leaves once its channels closed, and a disconnect sent before that
 * could arrive with the goodbye still unwritten by the client (OpenSSH's
 * client exits at a disconnect without writing what it holds). */
static int
server_stop_channels(struct server *srv)
{
	int open = 0;

	for (struct session *s = srv->sessions; s; s = s->next) {
		if (!s->authed || s->dead)
			continue;
		for (struct chan *c = s->chans; c; c = c->next)
			chan_end(c, SERVER_STOP_MSG);
		open = 1;
	}
	return open;
}

/* Begin stopping (once): no new connection; every channel is told why
 * it ends, and the loop goes on until their clients have left or
 * SERVER_STOP_GRACE_MS passed. */
void
server_begin_stop(struct server *srv, int exit_code)
{
	if (srv->stopping)
		return;
	srv->stopping = 1;
	srv->exit_code = exit_code;
	srv->stop_by_ms = time_mono_ms() + SERVER_STOP_GRACE_MS;
	loop_del(&srv->listen_w);
}

/* Connections not yet authenticated: all, and those from source. */
static void
server_count_unauth(struct server *srv, const struct admission_key *source,
    int *total, int *from_source)
{
	*total = *from_source = 0;
	for (struct session *s = srv->sessions; s; s = s->next) {
		if (s->authed || s->dead)
			continue;
		(*total)++;
		if (memcmp(&s->source, source, sizeof(*source)) == 0)
			(*from_source)++;
	}
}

/* Make room at max-startups' FULL: drop the oldest handshake of the source
 * that holds the most (admission.h). */
static void
server_evict_busiest(struct server *srv)
{
	struct session *victim = NULL;
	int most = 0;

	for (struct session *s = srv->sessions; s; s = s->next) {
		int total, mine;

		if (s->authed || s->dead)
			continue;
		server_count_unauth(srv, &s->source, &total, &mine);
		if (mine > most || (mine == most && victim && s->num < victim->num)) {
			most = mine;
			victim = s;
		}
	}
	if (victim) {
		log_info("session %lu: handshake from %s dropped to make room "
		    "(max-startups; %d from that address)", victim->num,
		    victim->peer, most);
		victim->dead = 1;
	}
}

/* A number in [0, 100) for random early drop (xorshift: no need for more). */
static int
server_coin(struct server *srv)
{
	srv->rng ^= srv->rng << 13;
	srv->rng ^= srv->rng >> 7;
	srv->rng ^= srv->rng << 17;
	return (int)(srv->rng % 100);
}

/* Why a new connection from source is refused, or NULL to take it. */
static const char *
server_refusal(struct server *srv, const struct admission_key *source)
{
	enum admission_verdict v;
	int total, mine;

	if (srv->nsessions >= SERVER_MAX_SESSIONS)
		return "too many connections";
	if (!server_fds_left(srv, 0))
		return "short of file descriptors";
	server_count_unauth(srv, source, &total, &mine);
	v = admission_check(&srv->admission, source, time_mono_ms(), total,
	    mine, server_coin(srv));
	if (v == ADMIT_EVICT)
		server_evict_busiest(srv);
	return v == ADMIT || v == ADMIT_EVICT ? NULL : admission_reason(v);
}

/* Count a refusal not logged, by its reason. */
static void
server_count_refusal(struct server *srv, const char *why)
{
	for (int i = 0; i < SERVER_REFUSAL_KINDS; i++) {
		if (!srv->refused_quiet[i].why)
			srv->refused_quiet[i].why = why;
		if (srv->refused_quiet[i].why == why) {
			srv->refused_quiet[i].n++;
			return;
		}
	}
}

/* The refusals counted since the last line, as "50 REASON, 7 REASON"
 * into out, and how many in all; then counted anew. */
static unsigned long
server_refusal_tally(struct server *srv, char *out, size_t len)
{
	size_t used = 0;
	unsigned long total = 0;

	out[0] = '\0';
	for (int i = 0; i < SERVER_REFUSAL_KINDS; i++) {
		if (!srv->refused_quiet[i].n || used >= len)
			continue;
		total += srv->refused_quiet[i].n;
		used += (size_t)snprintf(out + used, len - used, "%s%lu %s",
		    used ? ", " : "", srv->refused_quiet[i].n,
		    srv->refused_quiet[i].why);
	}
	memset(srv->refused_quiet, 0, sizeof(srv->refused_quiet));
	return total;
}

/* One line a second at most, however fast connections are refused, with
 * the count of those not logged by reason (a flood must not flood the log,
 * and a burst must still say what was refused and why). */
static void
server_log_refusal(struct server *srv, const char *peer, const char *why)
{
	long long now = time_mono_ms();
	char tally[1024];
	unsigned long more;

	srv->stats.refused++;
	if (now - srv->refused_log_ms < 1000) {
		server_count_refusal(srv, why);
		return;
	}
	if ((more = server_refusal_tally(srv, tally, sizeof(tally))))
		log_warn("connection from %s refused: %s (and %lu more refused "
		    "since: %s)", peer, why, more, tally);
	else
		log_warn("connection from %s refused: %s", peer, why);
	srv->refused_log_ms = now;
}

/* Refusals counted in the last second and not yet logged: said once the
 * second is over even when no refusal follows, so that the log never
 * keeps a refusal, or its reason, to itself. */
static void
server_refusals_flush(struct server *srv)
{
	long long due = srv->refused_log_ms + 1000;
	char tally[1024];
	unsigned long more;

	if (!srv->refused_quiet[0].n)
		return;
	if (time_mono_ms() < due) {
		loop_wake_at(&srv->loop, due);
		return;
	}
	more = server_refusal_tally(srv, tally, sizeof(tally));
	log_warn("%lu more connections refused in the last second: %s", more,
	    tally);
	srv->refused_log_ms = time_mono_ms();
}

/* Out of fds (or memory): the listener rests a while instead of spinning
 * on accept. */
static void
server_accept_pause(struct server *srv, int err)
{
	log_warn("cannot accept connections: %s; pausing for %d ms",
	    strerror(err), SERVER_ACCEPT_PAUSE_MS);
	srv->accept_resume_ms = time_mono_ms() + SERVER_ACCEPT_PAUSE_MS;
	loop_want(&srv->listen_w, 0);
}

/* Accept one connection and take it or refuse it at once.  1 when there
 * may be more to accept, 0 when the queue is empty or accepting paused. */
static int
server_accept_one(struct server *srv)
{
	struct sockaddr_storage sa;
	socklen_t slen = sizeof(sa);
	char peer[INET6_ADDRSTRLEN + 1];
	struct admission_key source;
	const char *why;
	int fd;

	fd = accept4(ssh_bind_get_fd(srv->bind), (struct sockaddr *)&sa, &slen,
	    SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			server_accept_pause(srv, errno);
			return 0;
		}
		/* EAGAIN: empty; ECONNABORTED and the like: that one only. */
		return errno != EAGAIN && errno != EWOULDBLOCK;
	}
	/* Before anything counts, matches or logs it (netaddr.h). */
	netaddr_unmap(&sa);
	netaddr_host(&sa, peer, sizeof(peer));
	admission_key_of(&sa, &source);
	if ((why = server_refusal(srv, &source))) {
		server_log_refusal(srv, peer, why);
		close(fd);
		return 1;
	}
	session_accept(srv, fd, peer, &source);
	return 1;
}

/* Listener readable: accept what the kernel queued, a batch at a time so
 * that a flood of connections cannot keep the loop from its sessions;
 * what is left wakes the next poll at once. */
static void
server_listen_cb(struct watch *w, int revents)
{
	struct server *srv = w->arg;

	(void)revents;
	for (int i = 0; i < SERVER_ACCEPT_BATCH && server_accept_one(srv); i++)
		;
}

/* Key exchanges handed back by the handshake threads. */
static void
server_kex_cb(struct watch *w, int revents)
{
	struct server *srv = w->arg;
	struct kex_job *j;

	(void)revents;
	kexpool_ack(&srv->kexpool);
	while ((j = kexpool_collect(&srv->kexpool)))
		session_kex_done(j);
}

/* Listen again once an out-of-fds pause is over. */
static void
server_accept_resume(struct server *srv)
{
	if (!srv->accept_resume_ms)
		return;
	if (time_mono_ms() < srv->accept_resume_ms) {
		loop_wake_at(&srv->loop, srv->accept_resume_ms);
		return;
	}
	srv->accept_resume_ms = 0;
	loop_want(&srv->listen_w, POLLIN);
}

/* Signals: SIGTERM/SIGINT stop the server; SIGCHLD (it has no child) and
 * SIGHUP (the monitor's alone: reload.h) are read and ignored. */
static void
server_signal_cb(struct watch *w, int revents)
{
	struct server *srv = w->arg;
	struct signalfd_siginfo si;

	(void)revents;
	while (read(srv->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if ((si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) &&
		    !srv->stopping) {
			log_info("signal %u: stopping every session",
			    si.ssi_signo);
			server_begin_stop(srv, 0);
		}
	}
}

/* The admission rules from the settings (admission.h). */
static int
server_admission(struct server *srv)
{
	struct admission_cfg ac = {
		.rate = srv->cfg->per_source_rate,
		.per_source = srv->cfg->per_source_startups,
	};

	if (admission_parse_startups(srv->cfg->max_startups, &ac) < 0) {
		log_error("max-startups %s: use START:RATE:FULL, e.g. 20:30:100 "
		    "(1 <= START <= FULL, RATE a percentage)",
		    srv->cfg->max_startups);
		return -EINVAL;
	}
	srv->rng = (uint64_t)time_mono_ms() * 2654435761u ^ (uint64_t)getpid();
	if (!srv->rng)
		srv->rng = 1;
	return admission_init(&srv->admission, &ac);
}

/* See server.h. */
int
server_adopt(struct server *srv, const struct config *cfg, int listen_fd,
    ssh_key key)
{
	memset(srv, 0, sizeof(*srv));
	srv->cfg = cfg;
	srv->sigfd = -1;
	srv->mon_fd = srv->ev_fd = -1;
	monitor_ask_init(srv);
	if (!(srv->bind = ssh_bind_new())) {
		ssh_key_free(key);
		close(listen_fd);
		return -ENOMEM;
	}
	/* The bind owns the key from here, and the socket once it is set. */
	if (ssh_bind_options_set(srv->bind, SSH_BIND_OPTIONS_IMPORT_KEY,
	    key) < 0) {
		log_error("cannot use the host key: %s",
		    ssh_get_error(srv->bind));
		ssh_key_free(key);
		close(listen_fd);
		return -EINVAL;
	}
	ssh_bind_set_fd(srv->bind, listen_fd);
	if (compat_bind_setup(srv->bind) < 0)
		return -EINVAL;
	/* With a socket given, libssh only checks that it has a key. */
	if (ssh_bind_listen(srv->bind) < 0) {
		log_error("cannot serve the listener: %s",
		    ssh_get_error(srv->bind));
		return -EINVAL;
	}
	ssh_bind_set_blocking(srv->bind, 0);
	fd_set_cloexec(listen_fd, 1);
	fd_set_nonblock(listen_fd, 1);
	return 0;
}

/* The loop and the signals. */
static int
server_init_loop(struct server *srv)
{
	int r;

	if ((r = loop_init(&srv->loop)) < 0)
		return r;
	if ((r = loop_add_signals(&srv->loop, &srv->signal_w, &srv->sigfd,
	    server_signal_cb, srv)) < 0)
		log_error("cannot set up signals: %s", strerror(-r));
	return r;
}

/* See server.h. */
int
server_init_network(struct server *srv, int mon_fd, int ev_fd)
{
	char path[PATH_MAX + 32];
	int r;

	srv->mon_fd = mon_fd;
	srv->ev_fd = ev_fd;
	monitor_ask_init(srv);
	if ((r = server_admission(srv)) < 0 || (r = server_init_loop(srv)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/authorized_keys", srv->cfg->data_dir);
	if (!(srv->keys = authkeys_new(path)))
		return -ENOMEM;
	authkeys_refresh_fd(srv->keys, monitor_ask_authkeys(srv));
	if ((r = kexpool_start(&srv->kexpool, 0)) < 0)
		return r;
	log_info("%d handshake threads", srv->kexpool.n);
	loop_add(&srv->loop, &srv->kex_w, kexpool_fd(&srv->kexpool), POLLIN,
	    server_kex_cb, srv);
	loop_add(&srv->loop, &srv->listen_w, ssh_bind_get_fd(srv->bind), POLLIN,
	    server_listen_cb, srv);
	loop_add(&srv->loop, &srv->mon_w, ev_fd, POLLIN, monitor_ask_event,
	    srv);
	loop_sync(&srv->loop);
	return 0;
}

/* Work done after each poll, outside every callback. */
static void
server_turn(struct server *srv)
{
	struct session **pp;

	long long now;
	int all;

	monitor_ask_deliver(srv);
	now = time_mono_ms();
	all = srv->tick_all || srv->stopping;
	srv->tick_all = 0;
	for (struct session *s = srv->sessions; s; s = s->next) {
		if (all || session_due(s, now))
			session_tick(s);
		else if (s->wake_ms)
			loop_wake_at(&srv->loop, s->wake_ms);
	}
	for (pp = &srv->sessions; *pp;) {
		struct session *s = *pp;

		if (s->dead && s->in_kex) {
			/* A thread has it: it comes back, then goes. */
			kexpool_cancel(&srv->kexpool, &s->kex);
			pp = &s->next;
		} else if (s->dead) {
			*pp = s->next;
			srv->nsessions--;
			session_free(s);
		} else {
			pp = &s->next;
		}
	}
	http_relay_turn(srv);
	server_accept_resume(srv);
	server_refusals_flush(srv);
	net_stats_tick(srv);
	loop_trim_heap(&srv->trim_ms, SERVER_TRIM_MS);
	loop_sync(&srv->loop);
}

/* Close every session.  The rooms are the monitor's: it stops them when
 * it sees this process end. */
static void
server_stop(struct server *srv)
{
	long long until = time_mono_ms() + SERVER_STOP_FLUSH_MS, left;

	loop_del(&srv->listen_w);
	/* What libssh still holds for a socket (the goodbye, the exit) goes
	 * before the disconnect, within one bound for all sessions. */
	for (struct session *s = srv->sessions; s; s = s->next)
		if (s->authed && !s->dead && !s->in_kex &&
		    (left = until - time_mono_ms()) > 0)
			ssh_blocking_flush(s->ssh, (int)left);
	for (struct session *s = srv->sessions; s; s = s->next)
		s->dead = 1;
	server_turn(srv);
	log_info("stopped");
}

/* See server.h. */
int
server_run(struct server *srv)
{
	while (!srv->stopping || (server_stop_channels(srv) &&
	    time_mono_ms() < srv->stop_by_ms)) {
		int r;

		/* Asked again before every poll: a deadline is forgotten
		 * once the loop wakes (loop.h), and a wake for anything else
		 * would otherwise leave a stop waiting on its clients for
		 * ever. */
		if (srv->stopping)
			loop_wake_at(&srv->loop, srv->stop_by_ms);
		r = ssh_event_dopoll(srv->loop.event, loop_timeout(&srv->loop));

		if (r == SSH_ERROR && errno != EINTR && errno != 0) {
			/* A session's error surfaces here; its tick reaps it. */
		}
		server_turn(srv);
	}
	server_stop(srv);
	return srv->exit_code;
}

/* Free everything server_adopt and server_init_network made (after
 * server_run). */
void
server_destroy(struct server *srv)
{
	struct kex_job *j;

	/* The threads first: then no session is anyone's but ours. */
	kexpool_stop(&srv->kexpool);
	while ((j = kexpool_collect(&srv->kexpool)))
		((struct session *)j->owner)->in_kex = 0;
	loop_del(&srv->kex_w);
	kexpool_free(&srv->kexpool);
	while (srv->sessions) {
		struct session *s = srv->sessions;

		srv->sessions = s->next;
		session_free(s);
	}
	http_relay_free_all(srv);
	ask_queue_forget(&srv->asks);
	agentlink_cache_free(&srv->link_cache);
	tui_draw_cache_free(&srv->draw_cache);
	loop_destroy(&srv->loop);
	if (srv->bind)
		ssh_bind_free(srv->bind);
	ssh_key_free(srv->relay_key);
	if (srv->sigfd >= 0)
		close(srv->sigfd);
	if (srv->mon_fd >= 0)
		close(srv->mon_fd);
	if (srv->ev_fd >= 0)
		close(srv->ev_fd);
	authkeys_free(srv->keys);
	admission_free(&srv->admission);
}
