/*
 * relay.c: the front's half of the relay (relay.h): a session's link to
 * its room's home (one libssh client connection, made when its first
 * channel turns out to be remote) and the relay channel kind, which
 * repeats a channel on the home and carries its bytes both ways.
 *
 * Everything runs in the shared loop and never waits: the socket's
 * connect is watched for POLLOUT, then libssh's non-blocking calls
 * (ssh_connect, ssh_userauth_publickey, ssh_channel_open_session, each
 * channel request) are called again on each tick until they stop
 * answering SSH_AGAIN.  The link's session is in the loop's ssh_event and
 * counts its bytes into the front session's counters, so whatever moves
 * on it ticks the front session (session_due).
 *
 * Backpressure, both ways, as for any channel (session.h's rules): the
 * client's bytes are written to the home only within the home's window
 * (what is not taken stays in the front session's libssh, which then
 * stops growing the client's window), and the home's bytes are queued for
 * the client only while the channel's queue is under CHAN_PUMP_LOW (the
 * rest stays in the link's libssh, read out when the queue drains).
 */
#include "relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libssh/callbacks.h>

#include "chan_int.h"
#include "libssh_compat.h"
#include "log.h"
#include "util.h"

/* What leaves a relayed chat's terminal as the chat found it when the
 * home went in the middle: bracketed paste and mouse reports off (the
 * chat's CHAT_MODES_OFF, sshd/chat/chat.c), on a line of its own. */
#define RELAY_TERM_RESET	"\x1b[?2004l\x1b[?1006l\x1b[?1000l\r\n"

struct relay_link {
	struct relay_owner o;	/* who it relays for, and how to tick it */
	ssh_session ssh;	/* client to the home, once dialled */
	int fd;			/* the socket, until libssh owns it; -1 */
	struct watch w;		/* on fd while the connect is under way */
	int writable;		/* w fired: the connect finished */
	int in_event;		/* ssh is in the loop's event */
	enum link_step step;
	long long deadline_ms;	/* up by then, or down */
	int auth_tries;		/* refused authentications so far */
	long long retry_ms;	/* the next one not before then */
	struct relay_home home;
	char why[256];		/* why it is down */
};

enum rc_step { RC_OPEN, RC_PTY, RC_ENV, RC_REQUEST, RC_UP };

struct relay_chan {
	struct chan *c;
	ssh_channel rc;		/* the channel on the home */
	struct ssh_channel_callbacks_struct cb;
	enum rc_step step;
	int env_i;		/* next env request to repeat */
	int eof_sent;		/* the client's EOF went to the home */
	int resized;		/* a window change waits to be sent */
	int remote_eof, remote_closed;
	int got_exit;		/* exit-status or exit-signal came */
	int exit_code;
	char exit_signal[16];
	int done;		/* the exit was handed to the channel */
	int was_up;		/* a tick saw it RC_UP */
};

/* ---------------------------------------------------------- user name -- */

/* 1 when s is 1..max-1 bytes with neither space nor control byte. */
static int
relay_field_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

/* See relay.h. */
int
relay_user_format(char *out, size_t len, const char *room, const char *user,
    const char *fp, const char *addr)
{
	int n = snprintf(out, len, "%s%s %s %s %s", RELAY_USER_PREFIX, room,
	    user, fp, addr);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Copy the next space-separated word of *p into out (size max); 0 or
 * -EINVAL. */
static int
relay_word(const char **p, char *out, size_t max)
{
	const char *end = strchr(*p, ' ');
	size_t n = end ? (size_t)(end - *p) : strlen(*p);

	if (n == 0 || n >= max)
		return -EINVAL;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n + (end ? 1 : 0);
	return relay_field_ok(out, max) ? 0 : -EINVAL;
}

/* See relay.h. */
int
relay_user_parse(const char *name, char room[80], char user[64],
    char fp[128], char addr[64])
{
	const char *p = name;
	unsigned char tmp[sizeof(struct in6_addr)];

	if (strncmp(p, RELAY_USER_PREFIX, strlen(RELAY_USER_PREFIX)) != 0 ||
	    name[strlen(name) - 1] == ' ')
		return -EINVAL;
	p += strlen(RELAY_USER_PREFIX);
	if (relay_word(&p, room, 80) < 0 || relay_word(&p, user, 64) < 0 ||
	    relay_word(&p, fp, 128) < 0 || relay_word(&p, addr, 64) < 0 ||
	    *p || strncmp(fp, "SHA256:", 7) != 0)
		return -EINVAL;
	/* The client's address as the front saw it: numeric only. */
	if (inet_pton(AF_INET, addr, tmp) != 1 &&
	    inet_pton(AF_INET6, addr, tmp) != 1)
		return -EINVAL;
	return 0;
}

/* --------------------------------------------------------------- link -- */

/* addr ("1.2.3.4:22", "[::1]:22") as a socket address.  0 or -EINVAL:
 * numeric only (the network process resolves no names). */
static int
relay_sockaddr(const char *addr, struct sockaddr_storage *sa, socklen_t *len)
{
	char host[64];
	const char *colon = strrchr(addr, ':');
	long port;
	char *end;

	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535)
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		host[strlen(host) - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*s6);
		return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1 ? 0 :
		    -EINVAL;
	}
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

	s4->sin_family = AF_INET;
	s4->sin_port = htons((uint16_t)port);
	*len = sizeof(*s4);
	return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -EINVAL;
}

/* The link is down: why (what, and detail when not NULL), logged once.
 * detail may be libssh's words, which quote what the other end sent
 * before its key was checked: shown to the user in printable ASCII
 * only. */
static void
relay_link_down(struct relay_link *l, const char *what, const char *detail)
{
	char shown[200];

	if (l->step == LINK_DOWN)
		return;
	session_printable(detail ? detail : "", shown, sizeof(shown));
	snprintf(l->why, sizeof(l->why), "%s%s%s", what, detail ? ": " : "",
	    shown);
	log_warn("%s %lu: relay to %s (%s): %s", l->o.what, l->o.num,
	    l->home.node,
	    l->home.addr, l->why);
	l->step = LINK_DOWN;
	loop_del(&l->w);
}

/* The connect finished (or failed): tick the owner. */
static void
relay_dial_cb(struct watch *w, int revents)
{
	struct relay_link *l = w->arg;

	(void)revents;
	l->writable = 1;
	loop_want(w, 0);
}

/* Start the TCP connect to the home.  0 or -errno (the link is down). */
static int
relay_dial(struct relay_link *l)
{
	struct sockaddr_storage sa;
	socklen_t len;

	if (relay_sockaddr(l->home.addr, &sa, &len) < 0) {
		relay_link_down(l, "not a numeric HOST:PORT", NULL);
		return -EINVAL;
	}
	l->fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (l->fd < 0 || (connect(l->fd, (struct sockaddr *)&sa, len) < 0 &&
	    errno != EINPROGRESS)) {
		int e = errno;

		relay_link_down(l, "cannot connect", strerror(e));
		return -e;
	}
	loop_add(&l->o.srv->loop, &l->w, l->fd, POLLOUT, relay_dial_cb, l);
	loop_mark(&l->w, l->o.poke);
	return 0;
}

/* The user name the home reads whom the link relays from. */
static int
relay_link_user(const struct relay_owner *o, char *out, size_t len)
{
	return relay_user_format(out, len, o->room, o->user, o->fp, o->peer);
}

/* The connected socket to libssh: a client session with cheap, modern
 * algorithms, no config file, in the loop's event.  0 or -1 (down). */
static int
relay_session(struct relay_link *l)
{
	static const char kex[] = "curve25519-sha256,"
	    "curve25519-sha256@libssh.org,ecdh-sha2-nistp256";
	char user[400];
	int err = 0, off = 0;
	socklen_t elen = sizeof(err);

	loop_del(&l->w);
	if (getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) {
		relay_link_down(l, "cannot connect", strerror(err ? err :
		    errno));
		return -1;
	}
	compat_socket_setup(l->fd);
	if (relay_link_user(&l->o, user, sizeof(user)) < 0 ||
	    !(l->ssh = ssh_new())) {
		relay_link_down(l, "out of memory", NULL);
		return -1;
	}
	if (ssh_options_set(l->ssh, SSH_OPTIONS_PROCESS_CONFIG, &off) < 0 ||
	    ssh_options_set(l->ssh, SSH_OPTIONS_HOST, l->home.node) < 0 ||
	    ssh_options_set(l->ssh, SSH_OPTIONS_USER, user) < 0 ||
	    ssh_options_set(l->ssh, SSH_OPTIONS_KEY_EXCHANGE, kex) < 0 ||
	    ssh_options_set(l->ssh, SSH_OPTIONS_FD, &l->fd) < 0) {
		relay_link_down(l, "cannot set up the client",
		    ssh_get_error(l->ssh));
		return -1;
	}
	l->fd = -1;		/* libssh's from here */
	ssh_set_blocking(l->ssh, 0);
	ssh_set_counters(l->ssh, l->o.io, NULL);
	l->step = LINK_KEX;
	return 0;
}

/* 1 when the home's host key is the one etcd lists for it. */
static int
relay_hostkey_ok(struct relay_link *l)
{
	char type[64];
	const char *sp = strchr(l->home.hostkey, ' ');
	ssh_key got = NULL, want = NULL;
	int ok;

	if (!sp || (size_t)(sp - l->home.hostkey) >= sizeof(type))
		return 0;
	memcpy(type, l->home.hostkey, (size_t)(sp - l->home.hostkey));
	type[sp - l->home.hostkey] = '\0';
	sp++;
	if (ssh_get_server_publickey(l->ssh, &got) < 0)
		return 0;
	ok = ssh_pki_import_pubkey_base64(sp, ssh_key_type_from_name(type),
	    &want) == SSH_OK && ssh_key_cmp(got, want, SSH_KEY_CMP_PUBLIC) == 0;
	ssh_key_free(got);
	ssh_key_free(want);
	return ok;
}

/* The key exchange, on each tick until done. */
static void
relay_link_kex(struct relay_link *l)
{
	int r = ssh_connect(l->ssh);

	if (!l->in_event && r != SSH_ERROR) {
		ssh_event_add_session(l->o.srv->loop.event, l->ssh);
		l->in_event = 1;
	}
	if (r == SSH_AGAIN)
		return;
	if (r != SSH_OK) {
		relay_link_down(l, "key exchange", ssh_get_error(l->ssh));
		return;
	}
	if (!relay_hostkey_ok(l)) {
		relay_link_down(l, "the host's key is not the one the cluster "
		    "lists for it; not relaying", NULL);
		return;
	}
	l->step = LINK_AUTH;
}

/* Authentication with this host's own key, on each tick until done.  A
 * refusal is tried again a few times: a home reads the cluster's nodes
 * now and then, and one that has not seen this node join yet reads them
 * again when it refuses it. */
static void
relay_link_auth(struct relay_link *l)
{
	long long now = time_mono_ms();
	int r;

	if (now < l->retry_ms) {
		l->o.wake_at(l->o.arg, l->retry_ms);
		return;
	}
	r = ssh_userauth_publickey(l->ssh, NULL, l->o.srv->relay_key);
	if (r == SSH_AUTH_AGAIN)
		return;
	if (r == SSH_AUTH_DENIED && ++l->auth_tries < RELAY_AUTH_TRIES) {
		l->retry_ms = now + RELAY_AUTH_RETRY_MS;
		l->o.wake_at(l->o.arg, l->retry_ms);
		return;
	}
	if (r != SSH_AUTH_SUCCESS) {
		relay_link_down(l, "the home refused this host's relay (is "
		    "this host a node of its cluster?)", NULL);
		return;
	}
	log_info("%s %lu: %s relayed to room '%s' on %s (%s)", l->o.what,
	    l->o.num, l->o.user, l->o.room, l->home.node, l->home.addr);
	l->step = LINK_UP;
}

/* See relay.h. */
void
relay_link_tick(struct relay_link *l)
{
	if (l->step != LINK_UP && l->step != LINK_DOWN &&
	    time_mono_ms() > l->deadline_ms)
		relay_link_down(l, "no answer in time", NULL);
	if (l->step == LINK_DIAL && l->writable)
		relay_session(l);
	if (l->step == LINK_KEX)
		relay_link_kex(l);
	if (l->step == LINK_AUTH)
		relay_link_auth(l);
	if (l->step == LINK_UP &&
	    (ssh_get_status(l->ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR)))
		relay_link_down(l, "the home closed the connection", NULL);
	if (l->step != LINK_UP && l->step != LINK_DOWN)
		l->o.wake_at(l->o.arg, l->deadline_ms + 1);
}

/* See relay.h. */
struct relay_link *
relay_link_new(const struct relay_owner *o, const struct relay_home *home)
{
	struct relay_link *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->o = *o;
	l->fd = -1;
	l->w.fd = -1;
	l->home = *home;
	l->deadline_ms = time_mono_ms() + RELAY_CONNECT_MS;
	relay_dial(l);
	return l;
}

/* session_wake_at for a session's link. */
static void
relay_session_wake(void *arg, long long when_ms)
{
	session_wake_at(arg, when_ms);
}

/* s's link to home, made (and dialled) when s has none.  NULL when out
 * of memory. */
static struct relay_link *
relay_link_get(struct session *s, const struct relay_home *home)
{
	struct relay_owner o = {
		.srv = s->srv, .what = "session", .num = s->num,
		.poke = &s->poke, .io = &s->io, .wake_at = relay_session_wake,
		.arg = s,
	};

	if (s->relay)
		return s->relay;
	snprintf(o.room, sizeof(o.room), "%s", s->room);
	snprintf(o.user, sizeof(o.user), "%s", s->user);
	snprintf(o.fp, sizeof(o.fp), "%s", s->fp);
	snprintf(o.peer, sizeof(o.peer), "%s", s->peer);
	s->relay = relay_link_new(&o, home);
	return s->relay;
}

/* See relay.h. */
int
relay_link_due(const struct session *s)
{
	const struct relay_link *l = s->relay;

	return l && l->ssh && l->step != LINK_DOWN &&
	    (ssh_get_status(l->ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR)) != 0;
}

/* See relay.h. */
void
relay_link_close(struct relay_link *l)
{
	if (!l)
		return;
	loop_del(&l->w);
	if (l->fd >= 0)
		close(l->fd);
	if (l->ssh) {
		if (l->in_event)
			ssh_event_remove_session(l->o.srv->loop.event, l->ssh);
		ssh_disconnect(l->ssh);
		ssh_free(l->ssh);
	}
	free(l);
}

/* See relay.h. */
void
relay_link_free(struct session *s)
{
	relay_link_close(s->relay);
	s->relay = NULL;
}

/* See relay.h. */
ssh_session
relay_link_ssh(const struct relay_link *l, const char **why)
{
	*why = l->why;
	if (l->step == LINK_DOWN)
		return NULL;
	return l->step == LINK_UP ? l->ssh : NULL;
}

/* See relay.h. */
int
relay_link_is_down(const struct relay_link *l)
{
	return l->step == LINK_DOWN;
}

/* ------------------------------------------------- the home's channel -- */

/* The home's bytes: queued for the client while the queue has room; the
 * rest stays in libssh (relay_chan_pull reads it later). */
static int
relay_rc_data(ssh_session ssh, ssh_channel ch, void *data, uint32_t len,
    int is_stderr, void *ud)
{
	struct relay_chan *r = ud;
	struct buf *q = is_stderr ? &r->c->err : &r->c->out;
	size_t take = len < CHAN_PUMP_READ ? len : CHAN_PUMP_READ;

	(void)ssh; (void)ch;
	if (r->c->closing)
		return (int)len;	/* the client is gone: dropped */
	if (q->len >= CHAN_PUMP_LOW || buf_append(q, data, take) < 0)
		return 0;
	r->c->s->poke = 1;
	return (int)take;
}

static void
relay_rc_eof(ssh_session ssh, ssh_channel ch, void *ud)
{
	(void)ssh; (void)ch;
	((struct relay_chan *)ud)->remote_eof = 1;
	((struct relay_chan *)ud)->c->s->poke = 1;
}

static void
relay_rc_close(ssh_session ssh, ssh_channel ch, void *ud)
{
	(void)ssh; (void)ch;
	((struct relay_chan *)ud)->remote_closed = 1;
	((struct relay_chan *)ud)->c->s->poke = 1;
}

static void
relay_rc_exit_status(ssh_session ssh, ssh_channel ch, int code, void *ud)
{
	struct relay_chan *r = ud;

	(void)ssh; (void)ch;
	r->got_exit = 1;
	r->exit_code = code;
}

static void
relay_rc_exit_signal(ssh_session ssh, ssh_channel ch, const char *sig,
    int core, const char *msg, const char *lang, void *ud)
{
	struct relay_chan *r = ud;

	(void)ssh; (void)ch; (void)core; (void)msg; (void)lang;
	r->got_exit = 1;
	/* Passed on to the client: letters only. */
	snprintf(r->exit_signal, sizeof(r->exit_signal), "%s", sig ? sig : "");
	for (char *p = r->exit_signal; *p; p++)
		if ((*p < 'A' || *p > 'Z') && (*p < '0' || *p > '9'))
			*p = '\0';
	if (!r->exit_signal[0])
		snprintf(r->exit_signal, sizeof(r->exit_signal), "KILL");
}

/* The home's channel, with its callbacks.  0 or -ENOMEM. */
static int
relay_rc_new(struct relay_chan *r, struct relay_link *l)
{
	if (!(r->rc = ssh_channel_new(l->ssh)))
		return -ENOMEM;
	r->cb.size = sizeof(r->cb);
	r->cb.userdata = r;
	r->cb.channel_data_function = relay_rc_data;
	r->cb.channel_eof_function = relay_rc_eof;
	r->cb.channel_close_function = relay_rc_close;
	r->cb.channel_exit_status_function = relay_rc_exit_status;
	r->cb.channel_exit_signal_function = relay_rc_exit_signal;
	ssh_callbacks_init(&r->cb);
	ssh_set_channel_callbacks(r->rc, &r->cb);
	return 0;
}

/* One env request repeated: 1 when sent (or refused: the home's own
 * rules apply), 0 while pending. */
static int
relay_env_one(struct relay_chan *r, const char *env)
{
	char name[80];
	const char *eq = strchr(env, '=');
	int rc;

	if (!eq || (size_t)(eq - env) >= sizeof(name))
		return 1;
	memcpy(name, env, (size_t)(eq - env));
	name[eq - env] = '\0';
	rc = ssh_channel_request_env(r->rc, name, eq + 1);
	return rc != SSH_AGAIN;
}

/* The request that picked the channel's kind, repeated: SSH_OK,
 * SSH_AGAIN or SSH_ERROR. */
static int
relay_request(struct relay_chan *r)
{
	struct chan *c = r->c;

	if (c->req_kind == 'e')
		return ssh_channel_request_exec(r->rc, c->req_arg);
	if (c->req_kind == 's')
		return ssh_channel_request_subsystem(r->rc, c->req_arg);
	return ssh_channel_request_shell(r->rc);
}

/* Open the channel on the home and repeat the client's requests, a step
 * per call while libssh answers SSH_AGAIN.  -1 when the home refused. */
static int
relay_chan_setup(struct relay_chan *r, struct relay_link *l)
{
	struct chan *c = r->c;
	int rc;

	if (r->step == RC_OPEN) {
		if (!r->rc && relay_rc_new(r, l) < 0)
			return -1;
		if ((rc = ssh_channel_open_session(r->rc)) == SSH_AGAIN)
			return 0;
		if (rc != SSH_OK)
			return -1;
		r->step = c->pty ? RC_PTY : RC_ENV;
	}
	if (r->step == RC_PTY) {
		rc = ssh_channel_request_pty_size(r->rc, c->term[0] ? c->term :
		    "dumb", c->cols, c->rows);
		if (rc == SSH_AGAIN)
			return 0;
		r->step = RC_ENV;	/* refused: the home's no-pty, say */
	}
	while (r->step == RC_ENV && r->env_i < c->nenv) {
		if (!relay_env_one(r, c->env[r->env_i]))
			return 0;
		r->env_i++;
	}
	r->step = RC_REQUEST;
	if ((rc = relay_request(r)) == SSH_AGAIN)
		return 0;
	if (rc != SSH_OK)
		return -1;
	r->step = RC_UP;
	return 0;
}

/* Read what libssh holds of the home's output into the channel's queues
 * while they have room. */
static void
relay_chan_pull(struct relay_chan *r)
{
	for (int is_err = 0; is_err < 2; is_err++) {
		struct buf *q = is_err ? &r->c->err : &r->c->out;

		while (q->len < CHAN_PUMP_LOW && !r->c->closing) {
			char *space = buf_tail(q, CHAN_PUMP_READ);
			int n;

			if (!space)
				break;
			n = ssh_channel_read_nonblocking(r->rc, space,
			    CHAN_PUMP_READ, is_err);
			if (n <= 0)
				break;
			buf_added(q, (size_t)n);
		}
	}
}

/* The client's EOF and window changes, once the home's channel is up. */
static void
relay_chan_forward(struct relay_chan *r)
{
	struct chan *c = r->c;

	if (c->eof_done && !r->eof_sent && !r->remote_closed) {
		ssh_channel_send_eof(r->rc);
		r->eof_sent = 1;
	}
	if (r->resized && c->pty) {
		ssh_channel_change_pty_size(r->rc, c->cols, c->rows);
		r->resized = 0;
	}
}

/* The home's channel ended: the client gets its exit once every byte
 * of the home's is queued. */
static void
relay_chan_finish(struct relay_chan *r)
{
	struct chan *c = r->c;

	if (r->done || !r->remote_closed)
		return;
	if (ssh_channel_poll(r->rc, 0) > 0 || ssh_channel_poll(r->rc, 1) > 0)
		return;		/* held still: the next tick */
	r->done = 1;
	chan_exit(c, r->got_exit && !r->exit_signal[0] ? r->exit_code :
	    r->got_exit ? 0 : 1, r->exit_signal[0] ? r->exit_signal : NULL);
}

/* The link is down under the channel: why, and exit status 1. */
static void
relay_chan_lost(struct relay_chan *r, struct relay_link *l)
{
	struct chan *c = r->c;

	r->done = 1;
	if (r->step == RC_UP) {
		/* The home went while the room was in use: it moves. */
		if (c->pty && c->req_kind == 'h')
			chan_write(c, RELAY_TERM_RESET,
			    strlen(RELAY_TERM_RESET));
		chan_refuse(c, RELAY_MOVING_MSG);
		return;
	}
	chan_refuse(c, "atrium: room '%s' lives on %s, which cannot be "
	    "reached now (%s); try again in a moment", c->s->room,
	    l->home.node, l->why);
}

/* ------------------------------------------------------ the relay kind -- */

/* The client's bytes to the home, within its window. */
static size_t
relay_input(struct chan *c, const char *p, size_t n)
{
	struct relay_chan *r = c->kind;
	struct relay_link *l = c->s->relay;
	size_t used = 0;

	if (r->done || r->remote_closed)
		return n;		/* nobody reads them */
	if (r->step != RC_UP || !l || l->step != LINK_UP)
		return 0;		/* relay_tick wakes the channel then */
	while (used < n) {
		uint32_t w = compat_can_write(l->ssh, r->rc);
		size_t k = n - used < w ? n - used : w;
		int wr;

		if (k > CHAN_WRITE_CHUNK)
			k = CHAN_WRITE_CHUNK;
		if (k == 0)
			break;
		wr = ssh_channel_write(r->rc, p + used, (uint32_t)k);
		if (wr <= 0)
			break;		/* 0: a key re-exchange (W1) */
		used += (size_t)wr < k ? (size_t)wr : k;
	}
	return used;
}

static void
relay_eof(struct chan *c)
{
	chan_wake_soon(c);	/* relay_chan_forward sends it */
}

static void
relay_resize(struct chan *c)
{
	((struct relay_chan *)c->kind)->resized = 1;
	chan_wake_soon(c);
}

static void
relay_signal(struct chan *c, const char *sig)
{
	struct relay_chan *r = c->kind;

	if (r->step == RC_UP && !r->remote_closed)
		ssh_channel_request_send_signal(r->rc, sig);
}

static void
relay_tick(struct chan *c)
{
	struct relay_chan *r = c->kind;
	struct relay_link *l = c->s->relay;

	if (r->done || !l)
		return;
	relay_link_tick(l);
	if (l->step == LINK_DOWN && r->remote_closed) {
		relay_chan_finish(r);	/* it ended before the link did */
		return;
	}
	if (l->step == LINK_DOWN) {
		relay_chan_lost(r, l);
		return;
	}
	if (l->step != LINK_UP)
		return;
	if (r->step != RC_UP && relay_chan_setup(r, l) < 0) {
		r->done = 1;
		chan_refuse(c, "atrium: room '%s': its host refused the "
		    "session", c->s->room);
		return;
	}
	if (r->step != RC_UP)
		return;
	if (!r->was_up) {
		/* What the client sent meanwhile waits in libssh: drained
		 * at the next turn, at once. */
		r->was_up = 1;
		chan_wake_at(c, time_mono_ms());
	}
	relay_chan_pull(r);
	relay_chan_forward(r);
	relay_chan_finish(r);
}

static void
relay_free(struct chan *c)
{
	struct relay_chan *r = c->kind;

	if (r->rc) {
		ssh_remove_channel_callbacks(r->rc, &r->cb);
		if (ssh_channel_is_open(r->rc))
			ssh_channel_close(r->rc);
		ssh_channel_free(r->rc);
	}
	free(r);
	c->kind = NULL;
}

static const struct chan_ops relay_ops = {
	.name = "relay",
	.input = relay_input,
	.eof = relay_eof,
	.tick = relay_tick,
	.resize = relay_resize,
	.signal = relay_signal,
	.free = relay_free,
};

/* See relay.h. */
int
relay_chan_start(struct chan *c, const struct relay_home *home)
{
	struct relay_chan *r = calloc(1, sizeof(*r));

	if (!r || !relay_link_get(c->s, home)) {
		free(r);
		chan_refuse(c, "atrium: out of memory");
		return -ENOMEM;
	}
	if (c->ops && c->ops->free)
		c->ops->free(c);
	/* What the local kind queued (the chat's first frame) is not the
	 * room's: the home draws its own. */
	buf_reset(&c->out);
	buf_reset(&c->err);
	r->c = c;
	c->kind = r;
	c->ops = &relay_ops;
	chan_wake_soon(c);
	return 0;
}
