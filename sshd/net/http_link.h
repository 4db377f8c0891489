/*
 * http_link.h: the links to rooms' homes that relayed HTTP shares
 * (http_relay.h).  A link (relay.h) authenticates one identity for one
 * room (the relay's user name says whom it relays, from where), so
 * relays of the same token's user, key, client address and room to the
 * same home share one: a page's many requests cost one connection and
 * one key exchange, not one each, and a home's per-source limits see one
 * client.  A link carries HTTP_LINK_CHANNELS relays at most (the home
 * takes 32 channels a connection); one left unused for HTTP_LINK_IDLE_MS
 * is closed, and so is one that went down, once no relay uses it.
 */
#ifndef ATRIUMD_HTTP_LINK_H
#define ATRIUMD_HTTP_LINK_H

#include "relay.h"

#define HTTP_LINK_CHANNELS	16
#define HTTP_LINK_IDLE_MS	30000

struct server;
struct http_link;

/* A link for o to home: a shared one that is up or coming up with room
 * for a channel, or a new one.  Counted as used until http_link_put.
 * NULL when out of memory. */
struct http_link *http_link_get(struct server *srv,
    const struct relay_owner *o, const struct relay_home *home);

/* Its relay link (relay.h's calls). */
struct relay_link *http_link_relay(struct http_link *l);

/* One relay no longer uses l. */
void http_link_put(struct http_link *l);

/* Each turn: every link moved on (before the relays use them). */
void http_link_tick_all(struct server *srv);

/* The bytes every link has read from its socket so far.  libssh reads
 * a link's socket for whichever of its channels asks, and keeps what it
 * read for the others: a turn in which this grew may have left a
 * channel's answer in libssh with no event to say so (http_relay.c). */
unsigned long long http_link_bytes_in(const struct server *srv);

/* Each turn, after the relays: close the links idle too long, or down
 * and unused. */
void http_link_reap(struct server *srv);

/* Close every link (the process stops; no relay is left). */
void http_link_free_all(struct server *srv);

#endif
