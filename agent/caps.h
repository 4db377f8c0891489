/*
 * caps.h: the room's caps on the model's work (caps.c): steps (model
 * requests) per turn and tokens (input plus output) per UTC day.  The
 * operator sets them (--max-steps, default 50; --max-tokens-per-day,
 * default none); the room's owner (or an admin) may lower them for the
 * room, never raise them: the `caps` request.  The lowered values live
 * in room.db's config table (cap_max_steps, cap_max_tokens_per_day;
 * "0": the operator's), so they survive restarts.
 */
#ifndef ATRIUM_AGENT_CAPS_H
#define ATRIUM_AGENT_CAPS_H

#include <json-c/json.h>

struct agent;
struct conn;

/* The owner's lowered values from room.db into a (0 where none). */
void caps_load(struct agent *a);

/* Model requests a turn may make here. */
int caps_max_steps(const struct agent *a);

/* Tokens the room may use in a UTC day; 0: no cap. */
long long caps_max_tokens_per_day(const struct agent *a);

/* 1 when the room has used its tokens for today (UTC), else 0. */
int caps_day_spent(struct agent *a);

/* A `caps` line from c.  Without max_steps or max_tokens_per_day: a
 * `caps` event to c alone.  With them (owner or admin only): checked
 * against the operator's, stored and announced to every member with a
 * stored `caps` event.  Errors go to c. */
void caps_request(struct agent *a, struct conn *c, json_object *req);

#endif
