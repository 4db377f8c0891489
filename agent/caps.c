/*
 * caps.c: the room's caps on steps per turn and tokens per day (caps.h).
 * Called by agent_main.c at start (caps_load), by turn_errors.c (turn_capped)
 * before each model request, and by requests.c for each `caps` request.
 *
 * Invariant: the effective cap is the lower of the operator's and the
 * owner's, where 0 means "none" for the owner (and for the operator's
 * daily tokens); an owner's value above the operator's is refused, so the
 * owner can only ever lower a cap.
 */
#include "caps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "jsonl.h"
#include "log.h"
#include "room_events.h"
#include "room_access_list.h"
#include "room_db.h"
#include "util.h"

#define CAPS_MAX_VALUE	(1LL << 50)	/* above any real day's tokens */

/* One of room.db's cap_* keys, 0 when unset or unreadable. */
static long long
caps_stored(struct agent *a, const char *key)
{
	char v[32];
	long long n;

	if (room_db_config_get(a->db, key, v, sizeof(v)) != 1 ||
	    sscanf(v, "%lld", &n) != 1 || n < 0 || n > CAPS_MAX_VALUE)
		return 0;
	return n;
}

void
caps_load(struct agent *a)
{
	a->owner_max_steps = (int)caps_stored(a, "cap_max_steps");
	a->owner_max_tokens = caps_stored(a, "cap_max_tokens_per_day");
}

/* The lower of two caps where 0 is none. */
static long long
caps_lower(long long op, long long owner)
{
	if (op <= 0)
		return owner;
	return owner > 0 && owner < op ? owner : op;
}

int
caps_max_steps(const struct agent *a)
{
	return (int)caps_lower(a->cfg.max_steps > 0 ? a->cfg.max_steps : 50,
	    a->owner_max_steps);
}

long long
caps_max_tokens_per_day(const struct agent *a)
{
	return caps_lower(a->cfg.max_tokens_per_day, a->owner_max_tokens);
}

int
caps_day_spent(struct agent *a)
{
	long long cap = caps_max_tokens_per_day(a), in = 0, out = 0;

	if (cap <= 0)
		return 0;
	room_db_usage_today(a->db, &in, &out);
	return in + out >= cap;
}

/* A `caps` event: the caps now, the operator's, and who changed them (by:
 * NULL for a query). */
static json_object *
caps_event(struct agent *a, const char *by)
{
	json_object *ev = room_event_new("caps"), *max;
	long long tok = caps_max_tokens_per_day(a);
	long long optok = a->cfg.max_tokens_per_day;
	char text[512], t1[32], t2[32];

	json_object_object_add(ev, "max_steps",
	    json_object_new_int(caps_max_steps(a)));
	json_object_object_add(ev, "max_tokens_per_day", tok > 0 ?
	    json_object_new_int64(tok) : NULL);
	max = json_object_new_object();
	json_object_object_add(max, "max_steps",
	    json_object_new_int(a->cfg.max_steps));
	json_object_object_add(max, "max_tokens_per_day", optok > 0 ?
	    json_object_new_int64(optok) : NULL);
	json_object_object_add(ev, "max", max);
	snprintf(t1, sizeof(t1), tok > 0 ? "%lld" : "no cap", tok);
	snprintf(t2, sizeof(t2), optok > 0 ? "%lld" : "no cap", optok);
	if (by) {
		json_object_object_add(ev, "by", json_object_new_string(by));
		snprintf(text, sizeof(text), "%s set the room's caps: %d steps "
		    "per turn, %s tokens per day (the operator's: %d, %s)", by,
		    caps_max_steps(a), t1, a->cfg.max_steps, t2);
	} else {
		snprintf(text, sizeof(text), "caps of this room: %d steps per "
		    "turn, %s tokens per day (UTC) (the operator's: %d, %s); the "
		    "owner may lower them: /caps steps N tokens N",
		    caps_max_steps(a), t1, a->cfg.max_steps, t2);
	}
	json_object_object_add(ev, "text", json_object_new_string(text));
	return ev;
}

/* One field of req: a whole number above 0, or "max" (0: the operator's).
 * 1 found, 0 absent, -EINVAL with the reason in err. */
static int
caps_field(json_object *req, const char *key, long long op, long long *out,
    char *err, size_t errlen)
{
	json_object *v;
	const char *text;
	char *end;

	if (!json_object_object_get_ex(req, key, &v))
		return 0;
	text = v ? json_object_get_string(v) : "max";
	*out = 0;
	if (strcmp(text, "max") == 0)
		return 1;
	errno = 0;
	*out = json_object_is_type(v, json_type_int) ||
	    json_object_is_type(v, json_type_string) ?
	    strtoll(text, &end, 10) : -1;
	if (*out <= 0 || errno || *end || *out > CAPS_MAX_VALUE) {
		snprintf(err, errlen, "caps: %s must be a whole number above "
		    "0, or \"max\" for the operator's", key);
		return -EINVAL;
	}
	if (op > 0 && *out > op) {
		snprintf(err, errlen, "caps: %s %lld is above this room's "
		    "maximum of %lld, set by the operator: the owner may lower "
		    "the room's caps, never raise them", key, *out, op);
		return -EINVAL;
	}
	return 1;
}

/* Store the owner's caps with a stored `caps` event by user.  0 or -errno
 * (the caller restores a's old values). */
static int
caps_store(struct agent *a, const char *user)
{
	char v[2][32];
	int r;

	snprintf(v[0], sizeof(v[0]), "%d", a->owner_max_steps);
	snprintf(v[1], sizeof(v[1]), "%lld", a->owner_max_tokens);
	if ((r = room_db_config_set(a->db, "cap_max_steps", v[0], user)) < 0 ||
	    (r = room_db_config_set(a->db, "cap_max_tokens_per_day", v[1],
	    user)) < 0)
		return r;
	return room_emit(a, caps_event(a, user), 1);
}

/* See caps.h. */
void
caps_request(struct agent *a, struct conn *c, json_object *req)
{
	const char *id = json_get_string(req, "id");
	long long steps = a->owner_max_steps, tok = a->owner_max_tokens;
	int old_steps = a->owner_max_steps, rs = 0, rt = 0, r;
	long long old_tok = a->owner_max_tokens;
	char err[256];

	if ((json_object_object_get_ex(req, "max_steps", NULL) ||
	    json_object_object_get_ex(req, "max_tokens_per_day", NULL)) &&
	    !room_access_may_manage(a, c, "change the room's caps"))
		return;
	if ((rs = caps_field(req, "max_steps", a->cfg.max_steps, &steps, err,
	    sizeof(err))) < 0 || (rt = caps_field(req, "max_tokens_per_day",
	    a->cfg.max_tokens_per_day, &tok, err, sizeof(err))) < 0) {
		room_error(c, id, "%s", err);
		return;
	}
	if (rs == 0 && rt == 0) {
		room_send(c, caps_event(a, NULL));
		return;
	}
	a->owner_max_steps = (int)steps;
	a->owner_max_tokens = tok;
	if ((r = caps_store(a, c->user)) < 0) {
		a->owner_max_steps = old_steps;
		a->owner_max_tokens = old_tok;
		room_unrecorded(c, id, "the change of the room's caps", r);
		return;
	}
	log_info("%s set the room's caps: %d steps, %lld tokens a day",
	    c->user, caps_max_steps(a), caps_max_tokens_per_day(a));
}
