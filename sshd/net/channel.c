/*
 * channel.c: one session channel's transport, the chan_* calls of
 * session.h: its output queues, written within the client's window; input
 * left in libssh while its kind cannot take it; the exit, EOF and close
 * once everything queued is out; and libssh's channel callbacks for data,
 * EOF, close, signal, pty, window size and environment.
 *
 * What a channel is for is decided by its first request, in
 * chan_requests.c; what it then does is its kind's (stream.c, control.c,
 * chat.c), which reach the client only through these calls.  session.c
 * makes a channel when the client opens one (chan_new), turns it after
 * each poll (chan_tick) and frees it, outside any callback, once it is
 * closing (chan_free).
 */
#include "chan_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentlink.h"
#include "libssh_compat.h"
#include "log.h"
#include "monitor_ask.h"
#include "relay.h"
#include "room_access.h"
#include "user_cap.h"
#include "util.h"

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

/* See session.h. */
void
chan_end(struct chan *c, const char *msg)
{
	/* An exit already asked for but not sent (a command the stop just
	 * killed) still gets the reason before it. */
	if (!c->ops || c->ended || c->finished || c->closing)
		return;
	c->ended = 1;
	if (c->ops->end)
		c->ops->end(c, msg);
	else
		chan_refuse(c, "%s", msg);
	chan_wake_soon(c);	/* the tick sends it, then the exit */
}

/* Poll the room each tick until it is ready or failed. */
void
chan_wait_room(struct chan *c)
{
	c->waiting_room = 1;
	chan_wake_soon(c);	/* asked then, and so on while it waits */
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
	struct relay_home home;
	char why[256];
	int rc;

	rc = monitor_ask_use(c->s, !c->use_look, why, sizeof(why), &home);
	if (rc == 0)
		return;
	c->waiting_room = 0;
	if (rc == MONITOR_ASK_REMOTE && c->s->relayed) {
		/* Relayed here by a node that took this host for the home:
		 * relayed on, two nodes that disagree would pass it back and
		 * forth.  The home is moving; the client's next try finds it. */
		log_info("session %lu: room %s is not here but on %s: not "
		    "relaying a relayed session on", c->s->num, c->s->room,
		    home.node);
		chan_refuse(c, "%s", RELAY_MOVING_MSG);
	} else if (rc == MONITOR_ASK_REMOTE) {
		relay_chan_start(c, &home);
	} else if (rc == MONITOR_ASK_ABSENT) {
		room_access_absent(c);
	} else if (rc == 1) {
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
    const struct monitor_hello *h,
    void (*on_line)(void *, json_object *, const char *, size_t),
    void (*on_end)(void *), void *arg)
{
	int r;

	c->link = l;
	r = agentlink_attach(l, &c->s->srv->loop, monitor_ask_agent(c->s, h),
	    on_line, on_end, arg);
	if (r == 0)
		loop_mark(&l->w, &c->s->poke);	/* its lines: a tick */
	return r;
}

/* See session.h. */
int
chan_start_agent(struct chan *c, struct agentlink *l,
    const struct monitor_hello *h,
    void (*on_line)(void *, json_object *, const char *, size_t),
    void (*on_end)(void *), void *arg)
{
	int r = chan_connect_agent(c, l, h, on_line, on_end, arg);

	if (r == 0) {
		c->connect_tries = 0;
		return 0;
	}
	if (++c->connect_tries < CHAN_MAX_CONNECT) {
		chan_wait_room(c);	/* the agent is restarting */
		return 1;
	}
	return r;
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
	session_wake_at(c->s, when_ms);
}

/* See session.h. */
void
chan_wake_soon(struct chan *c)
{
	session_wake_at(c->s, time_mono_ms() + LOOP_POLL_MS);
}

/* See chan_int.h. */
void
chan_tick(struct chan *c)
{
	user_cap_sync(c);
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

/* See chan_int.h. */
void
chan_free(struct chan *c)
{
	ask_queue_cancel(c->rooms_ask);
	if (c->ops && c->ops->free)
		c->ops->free(c);
	user_cap_release(c);
	ssh_remove_channel_callbacks(c->ch, &c->cb);
	if (!c->finished && ssh_channel_is_open(c->ch))
		ssh_channel_close(c->ch);
	ssh_channel_free(c->ch);
	for (int i = 0; i < c->nenv; i++)
		free(c->env[i]);
	free(c->req_arg);
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

/* See chan_int.h. */
struct chan *
chan_new(struct session *s, ssh_session ssh)
{
	struct chan *c;

	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	if (!(c->ch = ssh_channel_new(ssh))) {
		free(c);
		return NULL;
	}
	c->s = s;
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
	chan_requests_bind(&c->cb);
	ssh_callbacks_init(&c->cb);
	ssh_set_channel_callbacks(c->ch, &c->cb);
	return c;
}
