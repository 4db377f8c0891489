/*
 * chan_int.h: what session.c, channel.c and chan_requests.c share beyond
 * session.h, which is the kinds' view of a channel.
 */
#ifndef ATRIUMD_CHAN_INT_H
#define ATRIUMD_CHAN_INT_H

#include "session.h"

/* A channel of s on ssh with its transport callbacks and those of its
 * first request (chan_requests_bind) registered; not yet in s->chans.
 * NULL when out of memory. */
struct chan *chan_new(struct session *s, ssh_session ssh);

/* One channel's turn, after each poll: the room, input, the kind, output,
 * the exit. */
void chan_tick(struct chan *c);

/* Release a channel (outside callbacks). */
void chan_free(struct chan *c);

/* Set cb's exec, subsystem and shell request callbacks (chan_requests.c). */
void chan_requests_bind(struct ssh_channel_callbacks_struct *cb);

/* Copy text keeping printable ASCII only (names shown back to users). */
void session_printable(const char *in, char *out, size_t len);

#endif
