/*
 * input_limits.h: what a member's input may cost the room: room.db's cap
 * and a per-user rate (agent/input_limits.c).
 */
#ifndef ATRIUM_INPUT_LIMITS_H
#define ATRIUM_INPUT_LIMITS_H

#include <json-c/json.h>

struct agent;
struct conn;

/* A request req of type from c that stores what it brings (chat,
 * prompt, exec): 0 when it may go on, -1 when refused (an error naming
 * its id, with "refused": type and, when it was owed a turn, "no_turn",
 * sent to c). */
int input_limits_admit(struct agent *a, struct conn *c, const char *type,
    json_object *req);

/* What input_limits_admit promised the request being handled, handed to
 * what will store it later (a shared exec's result): the bytes, to give
 * back with input_limits_release once stored. */
long long input_limits_take(struct agent *a);

/* The request being handled is done: what it was promised and did not
 * take is given back (it has stored what it brought). */
void input_limits_settle(struct agent *a);

/* Give back n bytes taken with input_limits_take. */
void input_limits_release(struct agent *a, long long n);

/* room.db's cap in bytes (0: none) and what it holds now. */
long long input_limits_db_cap(const struct agent *a);
long long input_limits_db_used(struct agent *a);

/* At start, with room.db open: keep its WAL near an eighth of the cap, as
 * the WAL counts against it. */
void input_limits_open(struct agent *a);

/* Free the room's buckets (at exit). */
void input_limits_free(struct agent *a);

#endif
