/*
 * chat_feed.c: a room's feed, shared by this process's chat sessions in it
 * (chat_feed.h says what and why).  Called by chat.c; the feeds hang on
 * the server (srv->feeds), one per room with sessions, and go with the
 * last session that leaves.  Invariants: a ring entry holds a reference
 * to its parsed event; [head, tail) are the entries kept, absolute
 * indices (ring slot = index % CHAT_FEED_RING); every session's place is
 * at least the head unless it fell behind (then dropped_seq says whether
 * it missed something); a session is handed an event only while it takes
 * them (live, not paused), in seq order, each once (by its last_seq).
 */
#include "chat_feed.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_int.h"
#include "log.h"
#include "monitor_ask.h"
#include "server.h"
#include "session.h"
#include "util.h"

struct chat_feed_event {
	long long seq;
	json_object *obj;	/* a reference of ours */
	size_t len;		/* of its line, counted against the cap */
};

struct chat_feed {
	struct chat_feed *next;		/* in srv->feeds */
	struct server *srv;
	char room[80];
	struct agentlink link;		/* kind feed */
	int started;			/* its "feed" line came */
	int ended;			/* the agent closed it */
	long long start_seq;		/* that line's seq: events after it
					 * come here */
	long long dropped_seq;		/* the last event dropped from the
					 * ring (0: none) */
	struct chat_feed_event ring[CHAT_FEED_RING];
	unsigned long long head, tail;	/* kept: [head, tail) */
	size_t bytes;			/* of the lines kept */
	struct chat *subs;		/* the sessions on it */
};

/* Drop the oldest event kept. */
static void
chat_feed_pop(struct chat_feed *f)
{
	struct chat_feed_event *e = &f->ring[f->head++ % CHAT_FEED_RING];

	f->dropped_seq = e->seq;
	f->bytes -= e->len;
	json_object_put(e->obj);
	e->obj = NULL;
}

/* Free f and everything it keeps (no session is on it). */
static void
chat_feed_free(struct chat_feed *f)
{
	struct chat_feed **p = &f->srv->feeds;

	while (*p && *p != f)
		p = &(*p)->next;
	if (*p)
		*p = f->next;
	agentlink_close(&f->link);
	while (f->head < f->tail)
		chat_feed_pop(f);
	free(f);
}

/* Drop what every session on f has had, and what passes the caps. */
static void
chat_feed_trim(struct chat_feed *f)
{
	unsigned long long need = f->tail;

	for (struct chat *ch = f->subs; ch; ch = ch->feed_next)
		if (ch->feed_pos < need)
			need = ch->feed_pos;
	while (f->head < need)
		chat_feed_pop(f);
	while (f->head < f->tail && (f->tail - f->head > CHAT_FEED_RING - 1 ||
	    f->bytes > CHAT_FEED_BYTES))
		chat_feed_pop(f);
}

/* ch missed events the ring no longer holds: load them again from the
 * room's record as its join did (a history batch drawn as usual), and
 * take the feed's from after them. */
static void
chat_feed_rejoin(struct chat *ch)
{
	json_object *req = chat_req("history");

	log_info("session %lu: %s: fell behind room %s's feed; its record "
	    "is replayed since %lld", ch->c->s->num, ch->c->s->user,
	    ch->c->s->room, ch->last_seq);
	ch->feed_live = 0;
	ch->feed_welcome = ch->feed->start_seq;
	ch->feed_pos = ch->feed->tail;
	json_object_object_add(req, "since",
	    json_object_new_int64(ch->last_seq));
	if (chat_batch_ask(ch, CHAT_BATCH_JOIN, req) < 0)
		ch->reconnect = 1;	/* the link cannot take it: as a
					 * restart, which replays it */
}

/* See chat_feed.h. */
void
chat_feed_catch_up(struct chat *ch)
{
	struct chat_feed *f = ch->feed;

	if (!f || !ch->feed_live || ch->paused_ms || ch->denied ||
	    ch->reconnect)
		return;
	if (!f->started) {
		/* Refused before it began (its hello: the refusal is the
		 * member's own link's to say); one that ends so under a
		 * member whose own hello was taken: connect again. */
		if (f->ended)
			chat_link_lost(ch);
		return;
	}
	if (ch->feed_welcome < f->start_seq ||
	    (ch->feed_pos < f->head && f->dropped_seq > ch->last_seq)) {
		chat_feed_rejoin(ch);
		return;
	}
	if (ch->feed_pos < f->head)
		ch->feed_pos = f->head;
	while (ch->feed_pos < f->tail && !ch->paused_ms && !ch->denied &&
	    !ch->reconnect && ch->feed == f) {
		struct chat_feed_event *e =
		    &f->ring[ch->feed_pos++ % CHAT_FEED_RING];

		if (e->seq > ch->last_seq)
			chat_room_event(ch, e->obj);
	}
	ch->c->s->poke = 1;	/* its tick flushes and resumes */
}

/* Hand every session on f what it takes now, then trim. */
static void
chat_feed_deliver(struct chat_feed *f)
{
	struct chat *ch, *next;

	for (ch = f->subs; ch; ch = next) {
		next = ch->feed_next;
		chat_feed_catch_up(ch);
	}
	chat_feed_trim(f);
}

/* A line on the feed: its "feed" start, then the room's events. */
static void
chat_feed_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct chat_feed *f = arg;
	const char *type = json_get_string(obj, "type");
	long long seq = json_get_int(obj, "seq", 0);
	struct chat_feed_event *e;

	(void)line;
	if (!f->started) {
		if (type && strcmp(type, "feed") == 0) {
			f->started = 1;
			f->start_seq = seq;
			chat_feed_deliver(f);
		} else {
			/* access_denied, or an error: it ends; nobody new
			 * joins it meanwhile. */
			log_warn("room %s: feed refused (%s)", f->room,
			    type ? type : "untyped");
			f->ended = 1;
		}
		return;
	}
	/* Only the room's events come here: stamped, none a replay. */
	if (!type || seq <= 0 || json_get_bool(obj, "replay", 0)) {
		log_warn("room %s: feed: an unstamped or replayed %s line "
		    "dropped", f->room, type ? type : "untyped");
		return;
	}
	if (f->tail - f->head >= CHAT_FEED_RING - 1)
		chat_feed_pop(f);
	e = &f->ring[f->tail++ % CHAT_FEED_RING];
	e->seq = seq;
	e->obj = json_object_get(obj);
	e->len = len;
	f->bytes += len;
	chat_feed_deliver(f);
}

/* The agent closed the feed (it restarted, or ended it): every session
 * on it is told as its own link's end tells it, and connects again. */
static void
chat_feed_end(void *arg)
{
	struct chat_feed *f = arg;

	log_info("room %s: the feed ended", f->room);
	f->ended = 1;
	for (struct chat *ch = f->subs; ch; ch = ch->feed_next)
		if (f->started)
			chat_link_lost(ch);
		else
			chat_feed_catch_up(ch);	/* only a live one is told */
}

/* A new feed for s's room, connected; NULL with *err. */
static struct chat_feed *
chat_feed_open(struct session *s, int *err)
{
	const struct monitor_hello h = { .kind = "feed", .since = -1 };
	struct chat_feed *f = calloc(1, sizeof(*f));

	if (!f) {
		*err = -ENOMEM;
		return NULL;
	}
	f->srv = s->srv;
	snprintf(f->room, sizeof(f->room), "%s", s->room);
	agentlink_init(&f->link);
	if ((*err = agentlink_attach(&f->link, &s->srv->loop,
	    monitor_ask_agent(s, &h), chat_feed_line, chat_feed_end, f)) < 0) {
		log_warn("session %lu: room %s: no feed (%s): its chat gets "
		    "the room's events on its own connection", s->num,
		    s->room, strerror(-*err));
		agentlink_close(&f->link);
		free(f);
		return NULL;
	}
	f->next = s->srv->feeds;
	s->srv->feeds = f;
	return f;
}

/* See chat_feed.h. */
int
chat_feed_join(struct chat *ch)
{
	struct session *s = ch->c->s;
	struct chat_feed *f = s->srv->feeds;
	int err = 0;

	while (f && (f->ended || strcmp(f->room, s->room) != 0))
		f = f->next;
	if (!f && !(f = chat_feed_open(s, &err)))
		return err;
	ch->feed = f;
	ch->feed_pos = f->tail;	/* what came before is before its hello */
	ch->feed_live = 0;
	ch->feed_welcome = -1;
	ch->feed_prev = NULL;
	ch->feed_next = f->subs;
	if (f->subs)
		f->subs->feed_prev = ch;
	f->subs = ch;
	return 0;
}

/* See chat_feed.h. */
void
chat_feed_leave(struct chat *ch)
{
	struct chat_feed *f = ch->feed;

	if (!f)
		return;
	if (ch->feed_prev)
		ch->feed_prev->feed_next = ch->feed_next;
	else
		f->subs = ch->feed_next;
	if (ch->feed_next)
		ch->feed_next->feed_prev = ch->feed_prev;
	ch->feed = NULL;
	ch->feed_next = ch->feed_prev = NULL;
	if (!f->subs)
		chat_feed_free(f);
	else
		chat_feed_trim(f);
}

/* See chat_feed.h. */
void
chat_feed_welcome(struct chat *ch, long long seq)
{
	if (ch->feed && ch->feed_welcome < 0)
		ch->feed_welcome = seq;
}

/* See chat_feed.h. */
void
chat_feed_live(struct chat *ch)
{
	if (!ch->feed || ch->feed_live)
		return;
	ch->feed_live = 1;
	chat_feed_catch_up(ch);
}
