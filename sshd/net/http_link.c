/*
 * http_link.c: links to rooms' homes shared by relayed HTTP
 * (http_link.h).  Used by http_relay.c; ticked by it in each turn of the
 * server's loop, outside libssh's callbacks.
 */
#include "http_link.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "server.h"
#include "util.h"

struct http_link {
	struct server *srv;
	struct relay_owner o;		/* whom it relays (for matching) */
	struct relay_home home;
	struct relay_link *link;
	int poke;			/* its socket fired (every turn looks) */
	struct ssh_counter_struct io;	/* its bytes */
	int users;			/* relays on it now */
	long long idle_ms;		/* unused since then; 0 while used */
	struct http_link *next;		/* in srv->http_links */
};

/* A link's deadline: the loop wakes by then. */
static void
http_link_wake(void *arg, long long when_ms)
{
	struct http_link *l = arg;

	loop_wake_at(&l->srv->loop, when_ms);
}

/* 1 when l relays o to home and may take one more channel. */
static int
http_link_fits(const struct http_link *l, const struct relay_owner *o,
    const struct relay_home *home)
{
	return l->users < HTTP_LINK_CHANNELS && !relay_link_is_down(l->link) &&
	    strcmp(l->o.room, o->room) == 0 && strcmp(l->o.user, o->user) == 0
	    && strcmp(l->o.fp, o->fp) == 0 && strcmp(l->o.peer, o->peer) == 0
	    && strcmp(l->home.node, home->node) == 0 &&
	    strcmp(l->home.addr, home->addr) == 0 &&
	    strcmp(l->home.hostkey, home->hostkey) == 0;
}

/* See http_link.h. */
struct http_link *
http_link_get(struct server *srv, const struct relay_owner *o,
    const struct relay_home *home)
{
	struct http_link *l;

	for (l = srv->http_links; l; l = l->next)
		if (http_link_fits(l, o, home)) {
			l->users++;
			l->idle_ms = 0;
			return l;
		}
	if (!(l = calloc(1, sizeof(*l))))
		return NULL;
	l->srv = srv;
	l->o = *o;
	l->o.what = "http link";
	l->o.num = ++srv->next_id;
	l->o.poke = &l->poke;
	l->o.io = &l->io;
	l->o.wake_at = http_link_wake;
	l->o.arg = l;
	l->home = *home;
	if (!(l->link = relay_link_new(&l->o, home))) {
		free(l);
		return NULL;
	}
	l->users = 1;
	l->next = srv->http_links;
	srv->http_links = l;
	return l;
}

/* See http_link.h. */
struct relay_link *
http_link_relay(struct http_link *l)
{
	return l->link;
}

/* See http_link.h. */
void
http_link_put(struct http_link *l)
{
	if (--l->users == 0) {
		l->idle_ms = time_mono_ms();
		loop_wake_at(&l->srv->loop, l->idle_ms + HTTP_LINK_IDLE_MS);
	}
}

/* See http_link.h. */
void
http_link_tick_all(struct server *srv)
{
	for (struct http_link *l = srv->http_links; l; l = l->next)
		relay_link_tick(l->link);
}

/* See http_link.h. */
unsigned long long
http_link_bytes_in(const struct server *srv)
{
	unsigned long long n = 0;

	for (const struct http_link *l = srv->http_links; l; l = l->next)
		n += l->io.in_bytes;
	return n;
}

/* See http_link.h. */
void
http_link_reap(struct server *srv)
{
	struct http_link **pp = &srv->http_links;
	long long now = time_mono_ms();

	while (*pp) {
		struct http_link *l = *pp;

		if (l->users == 0 && (relay_link_is_down(l->link) ||
		    now - l->idle_ms >= HTTP_LINK_IDLE_MS)) {
			*pp = l->next;
			relay_link_close(l->link);
			free(l);
		} else {
			pp = &l->next;
		}
	}
}

/* See http_link.h. */
void
http_link_free_all(struct server *srv)
{
	while (srv->http_links) {
		struct http_link *l = srv->http_links;

		srv->http_links = l->next;
		relay_link_close(l->link);
		free(l);
	}
}
