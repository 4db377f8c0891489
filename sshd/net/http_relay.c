/*
 * http_relay.c: the front's end of relayed HTTP (http_relay.h): one
 * socket from this host's atriumd-http to a channel asking for
 * atrium-http on the room's home.  Started by monitor_ask.c (the
 * monitor's http_relay event); every relay is moved on in each turn of
 * the server's loop (server.c), outside libssh's callbacks.
 *
 * Backpressure: the socket is read only as far as the home's window
 * allows (what is not read stays in the socket, and atriumd-http stops
 * writing into it), and the home's channel is read only once what came
 * before is written to the socket (what is not read stays in libssh,
 * which then stops growing the home's window).
 */
#include "http_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "chan_int.h"
#include "http_bridge.h"
#include "http_link.h"
#include "jsonl.h"
#include "libssh_compat.h"
#include "log.h"
#include "names.h"
#include "relay.h"
#include "server.h"
#include "session.h"
#include "util.h"

#define HTTP_RELAY_PASSES	8	/* of the relays in one turn */
/* While any relay is open, the relays are moved on again this often
 * even when no socket fired: a link's packets for one channel can sit in
 * libssh, read off the socket during another channel's call, after the
 * last pass (measured: 2 of 40 event streams opened through one front
 * waited for the next byte on the link, up to 15 s, without it).  It
 * costs nothing while no HTTP is relayed. */
#define HTTP_RELAY_RECHECK_MS	100

enum http_relay_step { HR_OPEN, HR_SUBSYSTEM, HR_UP, HR_DONE };

struct http_relay {
	struct server *srv;
	unsigned long num;		/* for the log */
	int fd;				/* to atriumd-http */
	struct watch w;			/* on fd */
	struct http_link *link;		/* shared (http_link.h) */
	ssh_channel ch;			/* atrium-http on the home */
	enum http_relay_step step;
	char down[HTTP_RELAY_BUF];	/* the home's bytes, not yet written */
	size_t down_len, down_off;

	int up_eof;			/* atriumd-http's EOF went to the home */
	struct http_relay *next;
};

/* The relayed identity and the home, from the monitor's event; 0 or
 * -EPROTO (a field missing or not of its form). */
static int
http_relay_fields(json_object *ev, struct relay_owner *o,
    struct relay_home *home)
{
	const char *room = json_get_string(ev, "room");
	const char *user = json_get_string(ev, "user");
	const char *fp = json_get_string(ev, "key");
	const char *addr = json_get_string(ev, "addr");
	const char *node = json_get_string(ev, "node");
	const char *home_addr = json_get_string(ev, "home");
	const char *hostkey = json_get_string(ev, "hostkey");

	if (!room || !room_name_valid(room) || !user || !user_name_valid(user)
	    || !fp || !addr || !node || !home_addr || !hostkey ||
	    strlen(fp) >= sizeof(o->fp) || strlen(addr) >= sizeof(o->peer) ||
	    strlen(node) >= sizeof(home->node) ||
	    strlen(home_addr) >= sizeof(home->addr) ||
	    strlen(hostkey) >= sizeof(home->hostkey))
		return -EPROTO;
	snprintf(o->room, sizeof(o->room), "%s", room);
	snprintf(o->user, sizeof(o->user), "%s", user);
	snprintf(o->fp, sizeof(o->fp), "%s", fp);
	snprintf(o->peer, sizeof(o->peer), "%s", addr);
	snprintf(home->node, sizeof(home->node), "%s", node);
	snprintf(home->addr, sizeof(home->addr), "%s", home_addr);
	snprintf(home->hostkey, sizeof(home->hostkey), "%s", hostkey);
	return 0;
}

/* Count the relays now. */
static int
http_relay_count(const struct server *srv)
{
	int n = 0;

	for (const struct http_relay *h = srv->http_relays; h; h = h->next)
		n++;
	return n;
}

/* The socket fired: the turn after the poll looks at every relay. */
static void
http_relay_ready(struct watch *w, int revents)
{
	(void)w;
	(void)revents;
}

/* See http_relay.h. */
int
http_relay_start(struct server *srv, json_object *ev, int fd)
{
	struct relay_owner o = { .srv = srv };
	struct relay_home home;
	struct http_relay *h;

	if (http_relay_fields(ev, &o, &home) < 0 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK) < 0 ||
	    http_relay_count(srv) >= HTTP_RELAY_MAX ||
	    !(h = calloc(1, sizeof(*h)))) {
		log_warn("an HTTP relay not started (a field not of its form, "
		    "%d relays already, or out of memory)", HTTP_RELAY_MAX);
		close(fd);
		return -EINVAL;
	}
	h->srv = srv;
	h->num = ++srv->next_id;
	h->fd = fd;
	if (!(h->link = http_link_get(srv, &o, &home))) {
		close(fd);
		free(h);
		return -ENOMEM;
	}
	loop_add(&srv->loop, &h->w, fd, 0, http_relay_ready, h);
	h->next = srv->http_relays;
	srv->http_relays = h;
	/* One info line per link (relay.c) and per request (atriumd-http's
	 * own): this one is the channel's, for debugging. */
	log_debug("http relay %lu: %s's HTTP for room '%s' from %s to %s (%s)",
	    h->num, o.user, o.room, o.peer, home.node, home.addr);
	return 0;
}

/* Open the channel and ask for the subsystem, a step per call while
 * libssh answers SSH_AGAIN.  -1 when the home refused it. */
static int
http_relay_open(struct http_relay *h, ssh_session ssh)
{
	int rc;

	if (h->step == HR_OPEN) {
		if (!h->ch && !(h->ch = ssh_channel_new(ssh)))
			return -1;
		if ((rc = ssh_channel_open_session(h->ch)) == SSH_AGAIN)
			return 0;
		if (rc != SSH_OK)
			return -1;
		h->step = HR_SUBSYSTEM;
	}
	if (h->step == HR_SUBSYSTEM) {
		rc = ssh_channel_request_subsystem(h->ch,
		    HTTP_BRIDGE_SUBSYSTEM);
		if (rc == SSH_AGAIN)
			return 0;
		if (rc != SSH_OK)
			return -1;
		h->step = HR_UP;
	}
	return 0;
}

/* atriumd-http's bytes to the home, within its window. */
static void
http_relay_up(struct http_relay *h, ssh_session ssh)
{
	char chunk[CHAN_WRITE_CHUNK];

	while (!h->up_eof) {
		uint32_t room = compat_can_write(ssh, h->ch);
		size_t want = room < sizeof(chunk) ? room : sizeof(chunk);
		ssize_t n;

		if (want == 0)
			break;
		n = recv(h->fd, chunk, want, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0) {
			ssh_channel_send_eof(h->ch);
			h->up_eof = 1;
			break;
		}
		if (ssh_channel_write(h->ch, chunk, (uint32_t)n) != n) {
			h->step = HR_DONE;
			break;
		}
	}
}

/* The home's bytes to atriumd-http, one buffer at a time.  1 when the
 * home's side is over and every byte of it written. */
static int
http_relay_down(struct http_relay *h)
{
	char why[512], shown[512];
	int n;

	for (;;) {
		if (h->down_off < h->down_len) {
			ssize_t w = send(h->fd, h->down + h->down_off,
			    h->down_len - h->down_off,
			    MSG_DONTWAIT | MSG_NOSIGNAL);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return 0;
			if (w < 0)
				return 1;	/* atriumd-http went */
			h->down_off += (size_t)w;
			continue;
		}
		h->down_off = h->down_len = 0;
		n = ssh_channel_read_nonblocking(h->ch, h->down,
		    sizeof(h->down), 0);
		if (n > 0) {
			h->down_len = (size_t)n;
			continue;
		}
		/* The home's refusal, if any, is its stderr: logged. */
		if ((n = ssh_channel_read_nonblocking(h->ch, why,
		    sizeof(why) - 1, 1)) > 0) {
			why[n] = '\0';
			why[strcspn(why, "\r\n")] = '\0';
			session_printable(why, shown, sizeof(shown));
			log_warn("http relay %lu: the home says: %s", h->num,
			    shown);
		}
		return ssh_channel_is_eof(h->ch) || ssh_channel_is_closed(h->ch);
	}
}

/* Watch the socket for what can move now. */
static void
http_relay_want(struct http_relay *h, ssh_session ssh)
{
	short want = 0;

	if (h->step == HR_UP && !h->up_eof && compat_can_write(ssh, h->ch) > 0)
		want |= POLLIN;
	if (h->down_off < h->down_len)
		want |= POLLOUT;
	loop_want(&h->w, want);
}

/* One relay's turn. */
static void
http_relay_tick(struct http_relay *h)
{
	const char *why = "";
	ssh_session ssh;

	if (relay_link_is_down(http_link_relay(h->link))) {
		h->step = HR_DONE;	/* relay.c logged why */
		return;
	}
	if (!(ssh = relay_link_ssh(http_link_relay(h->link), &why)))
		return;
	if (h->step != HR_UP && http_relay_open(h, ssh) < 0) {
		log_warn("http relay %lu: the room's host refused it", h->num);
		h->step = HR_DONE;
		return;
	}
	if (h->step != HR_UP)
		return;
	http_relay_up(h, ssh);
	if (h->step == HR_UP && http_relay_down(h))
		h->step = HR_DONE;
	if (h->step == HR_UP)
		http_relay_want(h, ssh);
}

/* Free h (outside libssh's callbacks): atriumd-http sees its socket
 * close. */
static void
http_relay_free(struct http_relay *h)
{
	loop_del(&h->w);
	close(h->fd);
	if (h->ch) {
		if (ssh_channel_is_open(h->ch))
			ssh_channel_close(h->ch);
		ssh_channel_free(h->ch);
	}
	http_link_put(h->link);
	free(h);
}

/* Every relay moved on once. */
static void
http_relay_pass(struct server *srv)
{
	struct http_relay **pp = &srv->http_relays;

	http_link_tick_all(srv);
	while (*pp) {
		struct http_relay *h = *pp;

		if (h->step != HR_DONE)
			http_relay_tick(h);
		if (h->step == HR_DONE) {
			*pp = h->next;
			http_relay_free(h);
		} else {
			pp = &h->next;
		}
	}
}

/* See http_relay.h.  The channels of a link share its socket: a relay's
 * read may take from it the answer to another's request, or another's
 * data, and keep it in libssh where no poll sees it.  So the relays are
 * moved on again while a pass read anything from a link; past
 * HTTP_RELAY_PASSES (bytes keep coming), the next turn goes on at once. */
void
http_relay_turn(struct server *srv)
{
	unsigned long long before;
	int passes = 0;

	do {
		before = http_link_bytes_in(srv);
		http_relay_pass(srv);
	} while (http_link_bytes_in(srv) != before &&
	    ++passes < HTTP_RELAY_PASSES);
	if (passes == HTTP_RELAY_PASSES)
		loop_wake_at(&srv->loop, time_mono_ms());
	else if (srv->http_relays)
		loop_wake_at(&srv->loop, time_mono_ms() +
		    HTTP_RELAY_RECHECK_MS);
	http_link_reap(srv);
}

/* See http_relay.h. */
void
http_relay_free_all(struct server *srv)
{
	while (srv->http_relays) {
		struct http_relay *h = srv->http_relays;

		srv->http_relays = h->next;
		http_relay_free(h);
	}
	http_link_free_all(srv);
}
