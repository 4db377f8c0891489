/*
 * chat_feed.h: one connection per room to the room's agent, shared by this
 * process's chat sessions in that room, on which the agent writes each
 * room event once (its hello's kind is "feed"; agent/conn.h CONN_FEED).
 * A chat session that joins through a feed says "feed" in its own hello:
 * its own connection then carries only what is its own (the welcome, the
 * replays it asked for, replies, exec_done, access_denied), and the
 * room's events, which every member gets alike, come from the feed, read
 * and parsed once for all of them.  With 1,000 members a line was written
 * 1,000 times by the agent and read 1,000 times here; now once.
 *
 * Order.  The feed's events wait in a ring (CHAT_FEED_RING events, at most
 * CHAT_FEED_BYTES of lines) until every session of the room has them.
 * Each session has its place in the ring: it takes the ring's events in
 * seq order, from the first one after its welcome's seq (its hello's
 * replay ends there), and only once its join replay was drawn (the join
 * batch's synced), so no live line lands inside the history; a session
 * takes none while it is paused for its client (chat.c's head: its
 * frames wait), and catches up from its place when it resumes.  So a
 * member whose terminal stopped reading costs the others nothing: the
 * feed is never paused for one.  A session whose place fell out of the
 * ring (the ring was full: it stayed paused too long, or its welcome
 * came before the feed began) connects again with since (as after an
 * agent restart), which replays what it missed from the room's record.
 *
 * No room state lives here that a restart would lose: the ring is what
 * the agent already sent, and the agent's record is the truth.  When the
 * feed ends (the agent restarted), every session on it is told as its
 * own link's end tells it, and reconnects; the first to come back makes
 * a new feed.  A session the feed cannot be made for (the monitor or the
 * agent refused it) joins without one and gets the room's events on its
 * own connection, as before.
 */
#ifndef ATRIUMD_CHAT_FEED_H
#define ATRIUMD_CHAT_FEED_H

#include <json-c/json.h>
#include <stddef.h>

#include "agentlink.h"

#define CHAT_FEED_RING	4096			/* events kept, a power of 2 */
#define CHAT_FEED_BYTES	(4 * 1024 * 1024)	/* of their lines, at most */

struct chat;
struct chat_feed;

/* Join ch's room's feed, making it (and its connection) when the room has
 * none yet.  0, or -errno when there is no feed to join (ch then joins
 * without one). */
int chat_feed_join(struct chat *ch);

/* Leave the feed (nothing when ch is on none); the last to leave closes
 * it.  Not inside the feed's own callbacks. */
void chat_feed_leave(struct chat *ch);

/* ch's welcome came, carrying seq: its place is after it. */
void chat_feed_welcome(struct chat *ch, long long seq);

/* ch's join replay was drawn: it takes the room's events from now on. */
void chat_feed_live(struct chat *ch);

/* Hand ch the events it has not had, while it takes them (not paused,
 * not leaving); a place that fell out of the ring makes it reconnect. */
void chat_feed_catch_up(struct chat *ch);

#endif
