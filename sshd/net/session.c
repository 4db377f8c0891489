/*
 * session.c: SSH sessions (session.h).  Called by server.c: session_accept
 * when the listener is readable, session_tick after each poll,
 * session_free when a session is dead.  Its channels are channel.c's (their
 * transport) and chan_requests.c's (what each is for).
 *
 * Flow of a connection: accept, key exchange (on a handshake thread,
 * kexpool.h, until the client asks for ssh-userauth; session_kex_done
 * takes it back and sets the callbacks below), public-key auth against
 * authorized_keys (the SSH user name is the room), then channels.  A
 * channel's first request (exec, subsystem, shell) picks its kind; a bad
 * room name is refused at that point, after auth, so the user sees why on
 * stderr.
 *
 * Room access (room_access.h) is decided when a channel picks its kind,
 * before the room is started: a refused exec, sftp, atrium subsystem or
 * chat gets the reason on stderr and exit status 1.  The `rooms`
 * subsystem enters no room: it lists those the user may enter (any valid
 * room name will do as the SSH user: ssh -s x@HOST rooms); nor does
 * exec atrium-token (tokens for HTTP, whatever the SSH user names).
 *
 * In a cluster, a userauth whose user name begins with RELAY_USER_PREFIX
 * is another node relaying one of its sessions here (relay.h: the home's
 * half, relay_accept.c, decides); a session whose room lives on another
 * node is relayed there channel by channel (relay.c).
 *
 * The key's authorized_keys options (authkeys_opts.h) apply in two places:
 * from= and expiry-time= when the key is offered (session_user_for), and
 * no-pty and command= when a channel asks for a pty or picks its kind
 * (channel.c's chan_pty_cb, chan_requests.c's chan_forced).  The session
 * keeps its own copy of them, as the file may be re-read while it lives.
 */
#include "chan_int.h"

#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libssh_compat.h"
#include "log.h"
#include "monitor_ask.h"
#include "netaddr.h"
#include "relay.h"
#include "util.h"

#define SESSION_BANNER \
	"atrium: this key is not allowed in. To get access, ask the server's " \
	"operator to add your public key (~/.ssh/id_ed25519.pub) to " \
	"DATA/authorized_keys on the server.\r\n"

/* See chan_int.h. */
void
session_printable(const char *in, char *out, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; in[i] && j + 1 < len; i++)
		out[j++] = isprint((unsigned char)in[i]) ? in[i] : '?';
	out[j] = '\0';
}

/* --------------------------------------------------- session callbacks -- */

/* Open a session channel (the only kind atriumd serves). */
static ssh_channel
session_channel_open_cb(ssh_session ssh, void *ud)
{
	struct session *s = ud;
	struct chan *c;

	if (!s->authed)
		return NULL;
	if (s->nchans >= SESSION_MAX_CHANNELS || !server_fds_left(s->srv, 1)) {
		log_warn("session %lu: channel refused: %s", s->num,
		    s->nchans >= SESSION_MAX_CHANNELS ? "too many channels on "
		    "one connection" : "atriumd is short of file descriptors");
		return NULL;
	}
	if (!(c = chan_new(s, ssh)))
		return NULL;
	s->nchans++;
	phases_mark(&s->ph, PHASE_CHANNEL);
	c->next = s->chans;
	s->chans = c;
	return c->ch;
}

/* What a refused request asked for, for the log; NULL for requests not
 * worth a line (keepalives, and what libssh answers by itself). */
static const char *
session_refused_what(ssh_message msg, char *tmp, size_t len)
{
	int type = ssh_message_type(msg), sub = ssh_message_subtype(msg);

	if (type == SSH_REQUEST_CHANNEL_OPEN && sub == SSH_CHANNEL_DIRECT_TCPIP) {
		snprintf(tmp, len, "a connection to %s:%d",
		    ssh_message_channel_request_open_destination(msg),
		    ssh_message_channel_request_open_destination_port(msg));
		return tmp;
	}
	if (type == SSH_REQUEST_CHANNEL_OPEN)
		return sub == SSH_CHANNEL_X11 ? "an X11 channel" :
		    "a channel of another kind than session";
	if (type == SSH_REQUEST_GLOBAL &&
	    sub == SSH_GLOBAL_REQUEST_TCPIP_FORWARD) {
		snprintf(tmp, len, "remote port forwarding from %s:%d",
		    ssh_message_global_request_address(msg),
		    ssh_message_global_request_port(msg));
		return tmp;
	}
	if (type == SSH_REQUEST_CHANNEL && sub == SSH_CHANNEL_REQUEST_X11)
		return "X11 forwarding";
	return NULL;
}

/* Requests libssh leaves to us that atriumd does not serve (forwarding,
 * X11): logged, then refused by libssh's default reply (return 1).  Agent
 * forwarding is refused inside libssh, which reports it to nobody. */
static int
session_message_cb(ssh_session ssh, ssh_message msg, void *ud)
{
	struct session *s = ud;
	char tmp[INET6_ADDRSTRLEN + 300], shown[sizeof(tmp)];
	const char *what = session_refused_what(msg, tmp, sizeof(tmp));

	(void)ssh;
	if (what) {
		session_printable(what, shown, sizeof(shown));
		log_info("session %lu: %s asked for %s: refused (atriumd does "
		    "not forward)", s->num, s->user[0] ? s->user : s->peer,
		    shown);
	}
	return 1;
}

/* Send the "how to get access" banner once. */
static void
session_banner(struct session *s)
{
	ssh_string str;

	if (s->banner_sent)
		return;
	s->banner_sent = 1;
	if ((str = ssh_string_from_char(SESSION_BANNER))) {
		ssh_send_issue_banner(s->ssh, str);
		ssh_string_free(str);
	}
}

/* The user for key: from authorized_keys (whose options must allow this
 * client now: from=, expiry-time=), or with --open one made from the
 * fingerprint.  NULL when refused (why says why when the key is listed:
 * a key its options refuse stays refused under --open).  *opts: the
 * key's options, or NULL for none. */
static const char *
session_user_for(struct session *s, ssh_key key, char *tmp, size_t len,
    const struct authkey_opts **opts, char *why, size_t whylen)
{
	struct server *srv = s->srv;
	struct authkeys_found found;
	unsigned char *hash = NULL;
	size_t hlen = 0;
	int r;

	*opts = NULL;
	authkeys_refresh_fd(srv->keys, monitor_ask_authkeys(srv));
	r = authkeys_match(srv->keys, key, s->peer, time(NULL), &found);
	snprintf(why, whylen, "%s", found.why);
	if (r != 0) {
		*opts = found.opts;
		return found.user;
	}
	if (!srv->cfg->open)
		return NULL;
	if (ssh_get_publickey_hash(key, SSH_PUBLICKEY_HASH_SHA256, &hash,
	    &hlen) < 0 || hlen < 4)
		return NULL;
	snprintf(tmp, len, "guest-%02x%02x%02x%02x", hash[0], hash[1], hash[2],
	    hash[3]);
	ssh_clean_pubkey_hash(&hash);
	return tmp;
}

/* Remember the options of the key s authenticated with (a copy: the set
 * may be re-read while s lives).  0 or -ENOMEM. */
static int
session_keep_opts(struct session *s, const struct authkey_opts *opts)
{
	if (!opts)
		return 0;
	if (authkey_opts_copy(&s->opts, opts) < 0) {
		log_error("session %lu: out of memory for the key's options",
		    s->num);
		return -ENOMEM;
	}
	return 0;
}

/* Count a refused auth request; past SESSION_MAX_AUTH_FAILS the
 * connection is closed (at the next tick, outside callbacks). */
static int
session_auth_denied(struct session *s)
{
	if (++s->auth_fails == SESSION_MAX_AUTH_FAILS) {
		log_info("session %lu: %d refused authentications from %s; "
		    "closing", s->num, s->auth_fails, s->peer);
		s->dead = 1;
	}
	return SSH_AUTH_DENIED;
}

/* "none" and password requests: refused (public keys only), counted. */
static int
session_auth_none_cb(ssh_session ssh, const char *user, void *ud)
{
	(void)ssh; (void)user;
	return session_auth_denied(ud);
}

static int
session_auth_password_cb(ssh_session ssh, const char *user,
    const char *password, void *ud)
{
	(void)ssh; (void)user; (void)password;
	return session_auth_denied(ud);
}

/* Public-key auth: a probe (state NONE) is answered for listed keys, a
 * signed offer (VALID) logs the user in. */
static int
session_auth_pubkey_cb(ssh_session ssh, const char *room, ssh_key key,
    char state, void *ud)
{
	struct session *s = ud;
	char tmp[64], fp[128], why[300];
	const struct authkey_opts *opts;
	const char *user;

	(void)ssh;
	if (room && strncmp(room, RELAY_USER_PREFIX,
	    strlen(RELAY_USER_PREFIX)) == 0)
		return relay_accept_auth(s, room, key, state) == SSH_AUTH_SUCCESS
		    ? SSH_AUTH_SUCCESS : session_auth_denied(s);
	authkeys_fingerprint(key, fp, sizeof(fp));
	/* The monitor knows a session's key by its fingerprint only
	 * (monitor_identity.h): a key without one cannot act. */
	user = fp[0] == '?' ? NULL : session_user_for(s, key, tmp, sizeof(tmp),
	    &opts, why, sizeof(why));
	if (!user) {
		if (state == SSH_PUBLICKEY_STATE_VALID ||
		    state == SSH_PUBLICKEY_STATE_NONE)
			log_info("session %lu: key %s refused (from %s)%s%s",
			    s->num, fp, s->peer, why[0] ? ": " : "", why);
		session_banner(s);
		return session_auth_denied(s);
	}
	if (state == SSH_PUBLICKEY_STATE_NONE)
		return SSH_AUTH_SUCCESS;
	if (state != SSH_PUBLICKEY_STATE_VALID || session_keep_opts(s, opts) < 0)
		return session_auth_denied(s);
	s->authed = 1;
	phases_mark(&s->ph, PHASE_AUTH);
	snprintf(s->user, sizeof(s->user), "%s", user);
	snprintf(s->fp, sizeof(s->fp), "%s", fp);
	session_printable(room ? room : "", s->room, sizeof(s->room));
	log_info("session %lu: %s authenticated with %s for room '%s'%s%s%s",
	    s->num, s->user, fp, s->room, s->opts.command ? " (forced command)"
	    : "", s->opts.no_pty ? " (no pty)" : "", s->opts.from ?
	    " (from= matched)" : "");
	return SSH_AUTH_SUCCESS;
}

/* ------------------------------------------------------------ session -- */

/* An address and port as SSH_CONNECTION writes them ("::1 2222"); an
 * IPv4 client of a dual-stack listener as plain IPv4 (netaddr.h). */
static void
session_sockaddr_text(const struct sockaddr_storage *sa, char *out,
    size_t len)
{
	char host[INET6_ADDRSTRLEN];

	netaddr_host(sa, host, sizeof(host));
	snprintf(out, len, "%s %u", host, netaddr_port(sa));
}

/* SSH_CONNECTION for fd: "CLIENT PORT SERVER PORT", as sshd(8) sets it. */
static void
session_addresses(struct session *s, int fd)
{
	struct sockaddr_storage peer = { 0 }, local = { 0 };
	socklen_t plen = sizeof(peer), llen = sizeof(local);
	char p[INET6_ADDRSTRLEN + 8], l[INET6_ADDRSTRLEN + 8];

	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &llen) < 0) {
		s->connection[0] = '\0';
		return;
	}
	session_sockaddr_text(&peer, p, sizeof(p));
	session_sockaddr_text(&local, l, sizeof(l));
	snprintf(s->connection, sizeof(s->connection), "%s %s", p, l);
}

/* See session.h. */
int
session_accept(struct server *srv, int fd, const char *peer,
    const struct admission_key *source)
{
	struct session *s = calloc(1, sizeof(*s));

	if (!s || !(s->ssh = ssh_new())) {
		free(s);
		close(fd);
		return -ENOMEM;
	}
	phases_mark(&s->ph, PHASE_ACCEPT);
	s->srv = srv;
	s->num = ++srv->next_id;
	snprintf(s->peer, sizeof(s->peer), "%s", peer);
	s->source = *source;
	compat_socket_setup(fd);
	session_addresses(s, fd);
	if (ssh_bind_accept_fd(srv->bind, s->ssh, fd) != SSH_OK) {
		log_warn("session %lu: accept: %s", s->num,
		    ssh_get_error(srv->bind));
		/* The session owns the socket once libssh took it. */
		if (ssh_get_fd(s->ssh) != fd)
			close(fd);
		ssh_free(s->ssh);
		free(s);
		return -EIO;
	}
	if (compat_session_setup(s->ssh) < 0) {
		ssh_free(s->ssh);
		free(s);
		return -EINVAL;
	}
	ssh_set_blocking(s->ssh, 0);
	ssh_set_counters(s->ssh, &s->io, NULL);
	ssh_set_auth_methods(s->ssh, SSH_AUTH_METHOD_PUBLICKEY);
	s->deadline_ms = time_mono_ms() + SERVER_AUTH_TIMEOUT_MS;
	/* The key exchange runs on a handshake thread (kexpool.h), which
	 * hands the session back to session_kex_done. */
	s->kex.ssh = s->ssh;
	s->kex.deadline_ms = s->deadline_ms;
	s->kex.owner = s;
	if (kexpool_submit(&srv->kexpool, &s->kex) < 0) {
		log_warn("session %lu: connection from %s refused: every "
		    "handshake thread is full", s->num, s->peer);
		ssh_free(s->ssh);
		free(s);
		return -EAGAIN;
	}
	s->in_kex = 1;
	s->next = srv->sessions;
	srv->sessions = s;
	srv->nsessions++;
	log_info("session %lu: connection from %s", s->num, s->peer);
	return 0;
}

/* Why a handshake thread gave a session back unready, for the log. */
static void
session_kex_failed(struct session *s, const struct kex_job *j)
{
	if (j->result == -ETIMEDOUT)
		log_info("session %lu: no authentication in %d s; closing",
		    s->num, SERVER_AUTH_TIMEOUT_MS / 1000);
	else if (j->result == -ECONNRESET)
		log_info("session %lu: %s closed during the key exchange%s%s%s",
		    s->num, s->peer, j->why[0] ? " (" : "", j->why,
		    j->why[0] ? ")" : "");
	else
		log_warn("session %lu: key exchange with %s failed: %s", s->num,
		    s->peer, j->why[0] ? j->why : strerror(-j->result));
}

/* See session.h. */
void
session_kex_done(struct kex_job *j)
{
	struct session *s = j->owner;

	s->in_kex = 0;
	if (j->start_us)
		phases_set(&s->ph, PHASE_KEX_START, j->start_us);
	if (j->done_us)
		phases_set(&s->ph, PHASE_KEX_DONE, j->done_us);
	phases_mark(&s->ph, PHASE_KEX_BACK);
	s->poke = 1;
	if (s->dead)
		return;		/* cancelled: reaped at this turn's end */
	if (j->result < 0) {
		session_kex_failed(s, j);
		s->dead = 1;
		return;
	}
	s->cb.size = sizeof(s->cb);
	s->cb.userdata = s;
	s->cb.auth_pubkey_function = session_auth_pubkey_cb;
	s->cb.auth_none_function = session_auth_none_cb;
	s->cb.auth_password_function = session_auth_password_cb;
	s->cb.channel_open_request_session_function = session_channel_open_cb;
	ssh_callbacks_init(&s->cb);
	ssh_set_server_callbacks(s->ssh, &s->cb);
	ssh_set_message_callback(s->ssh, session_message_cb, s);
	ssh_event_add_session(s->srv->loop.event, s->ssh);
	s->in_event = 1;
}

/* 1 when libssh's error says its packet filter rejected a connection
 * protocol message (RFC 4254: 80-127), which happens only during a key
 * exchange. */
static int
session_rejected_in_kex(const char *why)
{
	const char *p = strstr(why, "rejected packet (type ");
	int type;

	return p && sscanf(p, "rejected packet (type %d)", &type) == 1 &&
	    type >= 80 && type <= 127;
}

/* The connection is gone: say so, and why when libssh ended it. */
static void
session_closed(struct session *s)
{
	const char *why = ssh_get_error(s->ssh);
	const char *who = s->user[0] ? s->user : s->peer;

	s->dead = 1;
	if (!(ssh_get_status(s->ssh) & SSH_CLOSED_ERROR) || !why || !why[0])
		why = NULL;
	/* libssh_compat.c W7: a client that sends channel data during a key
	 * re-exchange breaks RFC 4253 7.1, and libssh ends the connection. */
	if (why && session_rejected_in_kex(why))
		log_warn("session %lu: %s: connection ended: %s (the client sent "
		    "a channel message during a key re-exchange, which RFC 4253 "
		    "7.1 forbids; asyncssh before 2.14 does this: raise its "
		    "rekey limit or upgrade it)", s->num, who, why);
	else
		log_info("session %lu: %s closed%s%s%s", s->num, who,
		    why ? " (" : "", why ? why : "", why ? ")" : "");
}

/* See session.h. */
void
session_wake_at(struct session *s, long long when_ms)
{
	if (when_ms <= 0)
		return;
	loop_wake_at(&s->srv->loop, when_ms);
	if (!s->wake_ms || when_ms < s->wake_ms)
		s->wake_ms = when_ms;
}

/* Bytes libssh moved on s's socket so far, both ways. */
static uint64_t
session_io(const struct session *s)
{
	return s->io.in_bytes + s->io.out_bytes;
}

/* 1 while bytes are on their way through s in either direction: output
 * queued for a channel or held by libssh, input held for a kind.  Such
 * a session is ticked every turn, as every session once was: libssh
 * 0.10 can be left wanting to write with its socket out of the poll's
 * POLLOUT, and a tick's calls into it are what set the poll right. */
static int
session_in_flight(const struct session *s)
{
	if (sshio.pending(s->ssh))
		return 1;
	for (const struct chan *c = s->chans; c; c = c->next)
		if (c->out.len || c->err.len || c->inpend.len || c->in_blocked)
			return 1;
	return 0;
}

/* See session.h. */
int
session_due(const struct session *s, long long now_ms)
{
	if (s->dead || s->in_kex)
		return 0;	/* the reaper's, or the handshake thread's */
	if (!s->authed || s->poke || session_io(s) != s->io_seen)
		return 1;
	if ((s->wake_ms && now_ms >= s->wake_ms) || session_in_flight(s))
		return 1;
	/* A socket closed under libssh moves no byte. */
	return (ssh_get_status(s->ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0 ||
	    relay_link_due(s);
}

/* Reap the channels that are closing. */
static void
session_reap_chans(struct session *s)
{
	struct chan **pp;

	for (pp = &s->chans; *pp;) {
		struct chan *c = *pp;

		if (c->closing) {
			*pp = c->next;
			s->nchans--;
			chan_free(c);
		} else {
			pp = &c->next;
		}
	}
}

/* The tick proper: timeouts, channels, reaping. */
static void
session_turn(struct session *s)
{
	if (!s->authed)
		session_wake_at(s, s->deadline_ms + 1);
	if (!s->authed && time_mono_ms() > s->deadline_ms) {
		log_info("session %lu: no authentication in %d s; closing",
		    s->num, SERVER_AUTH_TIMEOUT_MS / 1000);
		s->dead = 1;
		return;
	}
	if (!s->authed && ssh_get_error_code(s->ssh) == SSH_FATAL) {
		/* libssh_compat.c W9: a signature it refused, unanswered. */
		log_info("session %lu: authentication from %s refused: %s; "
		    "closing", s->num, s->peer, ssh_get_error(s->ssh));
		s->dead = 1;
		return;
	}
	for (struct chan *c = s->chans; c; c = c->next)
		chan_tick(c);
	session_wake_at(s, compat_nudge_tick(&s->nudge, s->ssh,
	    time_mono_ms()));
	session_reap_chans(s);
	if (ssh_get_status(s->ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR))
		session_closed(s);
}

/* See session.h. */
void
session_tick(struct session *s)
{
	if (s->dead || s->in_kex)
		return;		/* in_kex: the thread keeps the deadline */
	/* Deadlines still ahead stay (one asked from a callback, before
	 * this tick); those passed are asked again by what still needs
	 * them. */
	if (s->wake_ms && s->wake_ms <= time_mono_ms())
		s->wake_ms = 0;
	/* Counted before the tick: a tick that wrote (or read) bytes is
	 * followed by one more, which moves what the write made room for
	 * (a frame queued behind those bytes); one that moved nothing waits
	 * for news. */
	s->io_seen = session_io(s);
	s->poke = 0;
	session_turn(s);
	if (session_io(s) != s->io_seen)
		session_wake_at(s, time_mono_ms());	/* no sleep before it */
}

/* See session.h. */
void
session_free(struct session *s)
{
	char times[400];

	phases_mark(&s->ph, PHASE_CLOSE);
	log_debug("session %lu phases from %s (ms): %s", s->num, s->peer,
	    phases_format(&s->ph, times, sizeof(times)));
	while (s->chans) {
		struct chan *c = s->chans;

		s->chans = c->next;
		chan_free(c);
	}
	relay_link_free(s);
	if (s->in_event)
		ssh_event_remove_session(s->srv->loop.event, s->ssh);
	ssh_disconnect(s->ssh);
	ssh_free(s->ssh);
	authkey_opts_free(&s->opts);
	free(s);
}
