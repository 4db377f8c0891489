/*
 * session.c: SSH sessions and channels (session.h).  Called by server.c:
 * session_accept when the listener is readable, session_tick after each
 * poll, session_free when a session is dead.
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
 * room name will do as the SSH user: ssh -s x@HOST rooms).
 *
 * The key's authorized_keys options (authkeys_opts.h) apply in two places:
 * from= and expiry-time= when the key is offered (session_user_for), and
 * no-pty and command= when a channel asks for a pty or picks its kind
 * (chan_pty_cb, chan_forced).  The session keeps its own copy of them, as
 * the file may be re-read while it lives.
 */
#include "session.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "chat.h"
#include "jsonl.h"
#include "control.h"
#include "libssh_compat.h"
#include "log.h"
#include "names.h"
#include "room_access.h"
#include "agentlink.h"
#include "monitor_ask.h"
#include "stream.h"
#include "util.h"

#define SESSION_BANNER \
	"atrium: this key is not allowed in. To get access, ask the server's " \
	"operator to add your public key (~/.ssh/id_ed25519.pub) to " \
	"DATA/authorized_keys on the server.\r\n"

/* Copy text keeping printable ASCII only (names shown back to users). */
static void
session_printable(const char *in, char *out, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; in[i] && j + 1 < len; i++)
		out[j++] = isprint((unsigned char)in[i]) ? in[i] : '?';
	out[j] = '\0';
}

/* ---------------------------------------------------------------- chan -- */

/* Queue to stdout; -ENOBUFS (dropped) past CHAN_MAX_OUT. */
int
chan_write(struct chan *c, const void *p, size_t n)
{
	return buf_append(&c->out, p, n);
}

/* Queue to stderr; -ENOBUFS (dropped) past CHAN_MAX_OUT. */
int
chan_write_err(struct chan *c, const void *p, size_t n)
{
	return buf_append(&c->err, p, n);
}

/* See session.h. */
uint32_t
chan_can_write(struct chan *c)
{
	return compat_can_write(c->s->ssh, c->ch);
}

/* Write from b what the window allows; what libssh does not take stays in
 * b (a key re-exchange makes it take nothing: libssh_compat.c W1).  0, or
 * -1 on a channel error. */
static int
chan_flush_one(struct chan *c, struct buf *b, int is_err)
{
	while (b->len) {
		uint32_t w = chan_can_write(c);
		size_t n = b->len < w ? b->len : w;
		int r;

		if (n > CHAN_WRITE_CHUNK)
			n = CHAN_WRITE_CHUNK;
		if (n == 0)
			return 0;
		r = is_err ? sshio.write_stderr(c->ch, b->data, (uint32_t)n)
		    : sshio.write(c->ch, b->data, (uint32_t)n);
		if (r == SSH_AGAIN)
			return 0;	/* as 0: what later libssh may say */
		if (r < 0)
			return -1;
		if ((size_t)r > n)
			r = (int)n;	/* never trust a count past the ask */
		if (r == 0)
			return 0;
		buf_consume(b, (size_t)r);
	}
	return 0;
}

/* See session.h. */
size_t
chan_flush(struct chan *c)
{
	if (c->finished || c->closing || !sshio.is_open(c->ch))
		return 0;
	if (chan_flush_one(c, &c->out, 0) < 0 ||
	    chan_flush_one(c, &c->err, 1) < 0) {
		buf_reset(&c->out);
		buf_reset(&c->err);
		c->closing = 1;
	}
	return c->out.len + c->err.len;
}

/* See session.h. */
int
chan_pump_wants(const struct chan *c, int is_err)
{
	return (is_err ? &c->err : &c->out)->len < CHAN_PUMP_LOW && !c->closing;
}

/* See session.h. */
int
chan_pump(struct chan *c, int fd, int is_err)
{
	struct buf *q = is_err ? &c->err : &c->out;
	char *space;
	ssize_t n;

	if (!chan_pump_wants(c, is_err))
		return -EAGAIN;
	if (!(space = buf_tail(q, CHAN_PUMP_READ)))
		return -errno;
	do {
		n = read(fd, space, CHAN_PUMP_READ);
	} while (n < 0 && errno == EINTR);
	if (n > 0) {
		buf_added(q, (size_t)n);
		return 1;
	}
	if (n == 0 || errno == EIO)
		return 0;	/* EIO: a pty master whose command is gone */
	return -errno;
}

/* Remember the exit; chan_try_finish sends it once the queues are out. */
void
chan_exit(struct chan *c, int code, const char *sig)
{
	if (c->finish)
		return;
	c->finish = 1;
	c->exit_code = code;
	snprintf(c->exit_signal, sizeof(c->exit_signal), "%s", sig ? sig : "");
}

/* A message on stderr (CR LF on a pty), then exit status 1. */
void
chan_refuse(struct chan *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg) - 2, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(msg) - 3)
		n = (int)sizeof(msg) - 3;
	/* With a pty the client's terminal wants CR LF. */
	memcpy(msg + n, c->pty ? "\r\n" : "\n", c->pty ? 3 : 2);
	chan_write_err(c, msg, strlen(msg));
	chan_exit(c, 1, NULL);
}

/* Poll the room each tick until it is ready or failed. */
void
chan_wait_room(struct chan *c)
{
	c->waiting_room = 1;
}

/* Process-wide unique id "ssh-N". */
void
chan_new_id(struct chan *c, char *out, size_t len)
{
	snprintf(out, len, "ssh-%lu", ++c->s->srv->next_id);
}

/* Send the exit, EOF and close once everything queued is out. */
static void
chan_try_finish(struct chan *c)
{
	if (!c->finish || c->finished || c->closing)
		return;
	if (chan_flush(c))
		return;
	if (c->exit_signal[0])
		ssh_channel_request_send_exit_signal(c->ch, c->exit_signal, 0,
		    "", "");
	else
		ssh_channel_request_send_exit_status(c->ch, c->exit_code);
	phases_mark(&c->s->ph, PHASE_EXIT);
	ssh_channel_send_eof(c->ch);
	ssh_channel_close(c->ch);
	c->finished = 1;
	c->closing = 1;
}

/* Move everything libssh holds for c into inpend (see CHAN_MAX_INPEND).
 * 1 when something moved, 0 when nothing was held, -1 when c is closing. */
static int
chan_take_held(struct chan *c)
{
	int n = compat_take_held(c->ch, &c->inpend, CHAN_MAX_INPEND);

	if (n >= 0)
		return n > 0;
	if (n == -EMSGSIZE)
		log_warn("session %lu: the client sent more than %d bytes past "
		    "its window; closing the connection", c->s->num,
		    CHAN_MAX_INPEND);
	else
		log_error("session %lu: cannot take the client's input: %s; "
		    "closing the connection", c->s->num, strerror(-n));
	c->closing = 1;
	c->s->dead = 1;
	return -1;
}

/* Take input from libssh's buffer while the kind accepts it; report EOF
 * once every byte before it was taken. */
static void
chan_drain_input(struct chan *c)
{
	while (c->ops && !c->closing) {
		size_t used;
		int r;

		if (c->inpend.len) {
			used = c->ops->input(c, c->inpend.data, c->inpend.len);
			buf_consume(&c->inpend, used);
			if (c->inpend.len)
				return;
		}
		if (!c->in_blocked)
			break;
		if ((r = chan_take_held(c)) < 0)
			return;
		if (r == 0) {
			c->in_blocked = 0;
			break;
		}
	}
	if (c->ops && c->in_eof && !c->in_blocked && !c->inpend.len &&
	    !c->eof_done && !c->closing) {
		c->eof_done = 1;
		if (c->ops->eof)
			c->ops->eof(c);
	}
}

/* Ask the monitor for the room; start the kind or refuse. */
static void
chan_poll_room(struct chan *c)
{
	char why[256];
	int rc;

	rc = monitor_ask_use(c->s->srv, c->s->room, c->s->user, why,
	    sizeof(why));
	if (rc == 0)
		return;
	c->waiting_room = 0;
	if (rc == 1) {
		phases_mark(&c->s->ph, PHASE_ROOM);
		c->ops->start(c);
	} else if (rc == MONITOR_ASK_REFUSED) {
		log_info("session %lu: %s: room %s not created: %s", c->s->num,
		    c->s->user, c->s->room, why);
		chan_refuse(c, "atrium: room '%s' not created: %s", c->s->room,
		    why);
	} else {
		chan_refuse(c, "atrium: room '%s' could not start: %s. Try again "
		    "in a moment; if it persists, tell the server's operator.",
		    c->s->room, why);
	}
}

/* See session.h. */
int
chan_connect_agent(struct chan *c, struct agentlink *l,
    void (*on_line)(void *, json_object *, const char *, size_t),
    void (*on_end)(void *), void *arg)
{
	c->link = l;
	return agentlink_attach(l, &c->s->srv->loop,
	    monitor_ask_agent(c->s->srv, c->s->room), on_line, on_end, arg);
}

/* Refuse a channel whose maximum packet would hang or crawl libssh's
 * writes; nothing is ever written to it.  1 when c may be used. */
static int
chan_vet(struct chan *c)
{
	long mp = compat_remote_maxpacket(c->s->ssh, c->ch);

	c->vetted = 1;
	if (mp < 0 || mp >= CHAN_MIN_PACKET)
		return 1;
	log_warn("session %lu: channel refused: the client's maximum packet "
	    "is %ld bytes (at least %d needed)", c->s->num, mp,
	    CHAN_MIN_PACKET);
	c->closing = 1;		/* chan_flush and the kinds never write */
	return 0;
}

/* See session.h. */
void
chan_wake_at(struct chan *c, long long when_ms)
{
	loop_wake_at(&c->s->srv->loop, when_ms);
}

/* See session.h. */
void
chan_wake_soon(struct chan *c)
{
	loop_wake_soon(&c->s->srv->loop);
}

/* One channel's turn. */
static void
chan_tick(struct chan *c)
{
	if (c->closing || (!c->vetted && !chan_vet(c)))
		return;
	if (c->waiting_room && !c->finish) {
		chan_poll_room(c);
		if (c->waiting_room)
			chan_wake_soon(c);	/* asked again */
	}
	chan_drain_input(c);
	if (c->ops && c->ops->tick && !c->closing)
		c->ops->tick(c);
	chan_flush(c);
	chan_try_finish(c);
	/* An idle channel keeps small queues, whatever a burst grew. */
	buf_shrink(&c->out, CHAN_KEEP);
	buf_shrink(&c->err, CHAN_KEEP);
	buf_shrink(&c->inpend, CHAN_KEEP);
}

/* Release a channel (outside callbacks). */
static void
chan_free(struct chan *c)
{
	if (c->ops && c->ops->free)
		c->ops->free(c);
	ssh_remove_channel_callbacks(c->ch, &c->cb);
	if (!c->finished && ssh_channel_is_open(c->ch))
		ssh_channel_close(c->ch);
	ssh_channel_free(c->ch);
	for (int i = 0; i < c->nenv; i++)
		free(c->env[i]);
	buf_free(&c->out);
	buf_free(&c->err);
	buf_free(&c->inpend);
	free(c);
}

/* -------------------------------------------------- channel callbacks -- */

/* Client bytes: give them to the kind now, or leave them in libssh. */
static int
chan_data_cb(ssh_session ssh, ssh_channel ch, void *data, uint32_t len,
    int is_stderr, void *ud)
{
	struct chan *c = ud;
	size_t used;

	(void)ssh; (void)ch;
	if (c->closing || is_stderr)
		return (int)len;	/* nothing reads a client's stderr */
	compat_nudge_rx(&c->s->nudge, len, time_mono_ms());
	if (len > CHAN_MAX_UNREAD) {
		log_warn("session %lu: the client sent %u bytes past its "
		    "window; closing the connection", c->s->num, len);
		c->closing = 1;
		c->s->dead = 1;
		return (int)len;
	}
	if (!c->ops || c->in_blocked || c->inpend.len) {
		c->in_blocked = 1;
		return 0;
	}
	used = c->ops->input(c, data, len);
	if (used < len)
		c->in_blocked = 1;
	return (int)used;
}

/* Client EOF: reported to the kind once its input is all taken. */
static void
chan_eof_cb(ssh_session ssh, ssh_channel ch, void *ud)
{
	struct chan *c = ud;

	(void)ssh; (void)ch;
	c->in_eof = 1;
}

/* Client closed the channel: reap it at the next tick. */
static void
chan_close_cb(ssh_session ssh, ssh_channel ch, void *ud)
{
	struct chan *c = ud;

	(void)ssh; (void)ch;
	c->closing = 1;
}

/* A "signal" request: the kind passes it on. */
static void
chan_signal_cb(ssh_session ssh, ssh_channel ch, const char *sig, void *ud)
{
	struct chan *c = ud;

	(void)ssh; (void)ch;
	if (c->ops && c->ops->signal && !c->closing)
		c->ops->signal(c, sig);
}

/* pty-req: remember TERM and size (before the kind is chosen). */
static int
chan_pty_cb(ssh_session ssh, ssh_channel ch, const char *term, int cols,
    int rows, int pxw, int pxh, void *ud)
{
	struct chan *c = ud;

	(void)ssh; (void)ch; (void)pxw; (void)pxh;
	if (c->ops)
		return -1;
	if (c->s->opts.no_pty) {
		/* The command still runs, without a terminal. */
		log_info("session %lu: %s: pty refused (the key has restrict "
		    "or no-pty)", c->s->num, c->s->user);
		return -1;
	}
	c->pty = 1;
	snprintf(c->term, sizeof(c->term), "%s", term ? term : "");
	c->cols = cols > 0 && cols < 10000 ? cols : 80;
	c->rows = rows > 0 && rows < 10000 ? rows : 24;
	return 0;
}

/* window-change: new size to the kind. */
static int
chan_winch_cb(ssh_session ssh, ssh_channel ch, int cols, int rows, int pxw,
    int pxh, void *ud)
{
	struct chan *c = ud;

	(void)ssh; (void)ch; (void)pxw; (void)pxh;
	c->cols = cols > 0 && cols < 10000 ? cols : c->cols;
	c->rows = rows > 0 && rows < 10000 ? rows : c->rows;
	if (c->ops && c->ops->resize && !c->closing)
		c->ops->resize(c);
	return 0;
}

/* Keep NAME=VALUE for the command's environment (names checked). */
static int
chan_env_cb(ssh_session ssh, ssh_channel ch, const char *name,
    const char *value, void *ud)
{
	struct chan *c = ud;
	char *e;

	(void)ssh; (void)ch;
	if (c->nenv >= CHAN_MAX_ENV || !name[0] || strlen(name) > 64 ||
	    strlen(value) > 4096)
		return -1;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return -1;
	if (asprintf(&e, "%s=%s", name, value) < 0)
		return -1;
	c->env[c->nenv++] = e;
	return 0;
}

/* Shared by exec, subsystem and shell: is this request allowed to pick
 * the channel's kind?  Refuses bad room names with a message.  1 to go
 * on, 0 when refused (request still accepted so the client sees why), -1
 * to reject the request. */
static int
chan_begin(struct chan *c)
{
	char shown[80];

	phases_mark(&c->s->ph, PHASE_REQUEST);
	if (c->ops || c->finish)
		return -1;
	if (!room_name_valid(c->s->room)) {
		session_printable(c->s->room, shown, sizeof(shown));
		chan_refuse(c, "atrium: '%s' is not a room name: use 1-63 "
		    "characters of a-z, 0-9 and '-', starting with a letter "
		    "or digit (ssh -p PORT ROOM@HOST)", shown);
		return 0;
	}
	return 1;
}

/* The key's command="..." in place of what the client asked (asked: the
 * command, the subsystem's name, or NULL for a shell), as sshd does.
 * The request's result for libssh: 0, or -1 when out of memory. */
static int
chan_forced(struct chan *c, const char *what, const char *asked)
{
	int r;

	log_info("session %lu: %s in %s: %s replaced by the key's forced "
	    "command", c->s->num, c->s->user, c->s->room, what);
	r = stream_open_forced(c, c->s->opts.command, asked);
	if (r == -E2BIG)
		chan_refuse(c, "atrium: this key has a forced command, and the "
		    "command asked for is longer than %d bytes, the most "
		    "SSH_ORIGINAL_COMMAND can pass on", STREAM_MAX_ORIGINAL);
	return r == -ENOMEM ? -1 : 0;
}

/* The room archive commands, which atriumd runs itself rather than in
 * the sandbox: 'e' for atrium-export, 'i' for atrium-import, else 0. */
static int
chan_archive_kind(const char *command)
{
	return strcmp(command, "atrium-export") == 0 ? 'e' :
	    strcmp(command, "atrium-import") == 0 ? 'i' : 0;
}

/* exec request: a command in the sandbox, or a room archive.  Whoever
 * may enter the room may export it; whoever may create it, while it does
 * not exist, may import it (the monitor checks the rest). */
static int
chan_exec_cb(ssh_session ssh, ssh_channel ch, const char *command, void *ud)
{
	struct chan *c = ud;
	int r = chan_begin(c), kind = chan_archive_kind(command);

	(void)ssh; (void)ch;
	if (r <= 0)
		return r;
	if (!room_access_admit(c, kind == 'e' ? "export" : kind == 'i' ?
	    "import" : "exec"))
		return 0;
	if (c->s->opts.command)
		return chan_forced(c, "exec", command);
	if (kind) {
		log_info("session %lu: %s in %s: %s", c->s->num, c->s->user,
		    c->s->room, command);
		return stream_open_archive(c, kind == 'i') < 0 ? -1 : 0;
	}
	log_info("session %lu: %s in %s: exec", c->s->num, c->s->user,
	    c->s->room);
	return stream_open(c, command) < 0 ? -1 : 0;
}

/* subsystem rooms: one `rooms` line (the rooms the user may enter), then
 * exit status 0.  Under a forced command, the command runs instead. */
static int
chan_rooms(struct chan *c)
{
	json_object *ev;
	struct buf line;
	int r = chan_begin(c);

	if (r <= 0)
		return r;
	if (c->s->opts.command)	/* it runs in the room: admitted first */
		return room_access_admit(c, "subsystem rooms") ?
		    chan_forced(c, "subsystem rooms", "rooms") : 0;
	log_info("session %lu: %s: subsystem rooms", c->s->num, c->s->user);
	if (!(ev = monitor_ask_rooms(c->s->srv, c->s->user,
	    c->s->opts.admin)))
		return -1;
	buf_init(&line, CHAN_MAX_OUT);
	if (jsonl_format(&line, ev) == 0)
		chan_write(c, line.data, line.len);
	buf_free(&line);
	json_object_put(ev);
	chan_exit(c, 0, NULL);
	return 0;
}

/* subsystem request: sftp, atrium or rooms; others are rejected. */
static int
chan_subsystem_cb(ssh_session ssh, ssh_channel ch, const char *name, void *ud)
{
	struct chan *c = ud;
	int r;

	(void)ssh; (void)ch;
	if (strcmp(name, "rooms") == 0)
		return chan_rooms(c);
	if (strcmp(name, "sftp") != 0 && strcmp(name, "atrium") != 0)
		return -1;
	if ((r = chan_begin(c)) <= 0)
		return r;
	if (!room_access_admit(c, strcmp(name, "sftp") == 0 ? "sftp" :
	    "the atrium subsystem"))
		return 0;
	if (c->s->opts.command)	/* sshd's forced command overrides these too */
		return chan_forced(c, strcmp(name, "sftp") == 0 ?
		    "subsystem sftp" : "subsystem atrium", name);
	log_info("session %lu: %s in %s: subsystem %s", c->s->num, c->s->user,
	    c->s->room, name);
	r = strcmp(name, "sftp") == 0 ? stream_open(c, NULL) : control_open(c);
	return r < 0 ? -1 : 0;
}

/* shell request: the chat. */
static int
chan_shell_cb(ssh_session ssh, ssh_channel ch, void *ud)
{
	struct chan *c = ud;
	int r = chan_begin(c);

	(void)ssh; (void)ch;
	if (r <= 0)
		return r;
	if (!room_access_admit(c, "chat"))
		return 0;
	if (c->s->opts.command)
		return chan_forced(c, "shell", NULL);
	log_info("session %lu: %s in %s: chat", c->s->num, c->s->user,
	    c->s->room);
	return chat_open(c) < 0 ? -1 : 0;
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
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	if (!(c->ch = ssh_channel_new(ssh))) {
		free(c);
		return NULL;
	}
	c->s = s;
	s->nchans++;
	phases_mark(&s->ph, PHASE_CHANNEL);
	c->cols = 80;
	c->rows = 24;
	buf_init(&c->out, CHAN_MAX_OUT);
	buf_init(&c->err, CHAN_MAX_OUT);
	buf_init(&c->inpend, CHAN_MAX_INPEND);
	c->cb.size = sizeof(c->cb);
	c->cb.userdata = c;
	c->cb.channel_data_function = chan_data_cb;
	c->cb.channel_eof_function = chan_eof_cb;
	c->cb.channel_close_function = chan_close_cb;
	c->cb.channel_signal_function = chan_signal_cb;
	c->cb.channel_pty_request_function = chan_pty_cb;
	c->cb.channel_pty_window_change_function = chan_winch_cb;
	c->cb.channel_env_request_function = chan_env_cb;
	c->cb.channel_exec_request_function = chan_exec_cb;
	c->cb.channel_subsystem_request_function = chan_subsystem_cb;
	c->cb.channel_shell_request_function = chan_shell_cb;
	ssh_callbacks_init(&c->cb);
	ssh_set_channel_callbacks(c->ch, &c->cb);
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
	authkeys_fingerprint(key, fp, sizeof(fp));
	user = session_user_for(s, key, tmp, sizeof(tmp), &opts, why,
	    sizeof(why));
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

/* An address and port as SSH_CONNECTION writes them ("::1 2222"). */
static void
session_sockaddr_text(const struct sockaddr_storage *sa, char *out,
    size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(out, len, "%s %u", host, port);
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
session_tick(struct session *s)
{
	struct chan **pp;

	if (s->dead || s->in_kex)
		return;		/* in_kex: the thread keeps the deadline */
	if (!s->authed)
		loop_wake_at(&s->srv->loop, s->deadline_ms + 1);
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
	loop_wake_at(&s->srv->loop, compat_nudge_tick(&s->nudge, s->ssh,
	    time_mono_ms()));
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
	if (ssh_get_status(s->ssh) & (SSH_CLOSED | SSH_CLOSED_ERROR))
		session_closed(s);
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
	if (s->in_event)
		ssh_event_remove_session(s->srv->loop.event, s->ssh);
	ssh_disconnect(s->ssh);
	ssh_free(s->ssh);
	authkey_opts_free(&s->opts);
	free(s);
}
