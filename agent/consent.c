/*
 * consent.c: a round of consent for an undo, redo or restore
 * (consent.h): who is asked, who agreed, the timer, and the stored
 * events that tell the room how it went.
 *
 * The events, all stored (so that a reconnect or /history shows the
 * round as it went live), each with a "text" in the words the chat shows,
 * which /history searches:
 *   consent_request  id, action, turn or name, user (who asked), users
 *                    (who must agree), the preview's lists, seconds
 *   consent_answer   id, user, approve
 *   consent_end      id, action, result: "agreed" (after the action's
 *                    own done event), "refused" (user), "timeout" (users:
 *                    who did not answer), "forced" (user: the owner who
 *                    acted anyway), "cancelled" (text: why)
 * An answer is taken only from a person asked, once; a refusal ends the
 * round at once, since one no is enough to keep one's work.
 *
 * room.db's config key "consent_open" names the round that waits ("ID
 * ACTION", "" when none), written in the commit of its request and of its
 * end: an agent that restarts with one named (consent_resume) ends it as
 * cancelled, so that no request stays open in the history for ever.
 */
#include "consent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "conn.h"
#include "jsonl.h"
#include "log.h"
#include "loop_uring.h"
#include "room_events.h"
#include "room_db.h"
#include "undo.h"

#define CONSENT_KEY "consent_open"

struct consent {
	struct consent_action act;
	char id[32];
	json_object *ask;	/* names asked */
	json_object *agreed;	/* of them, those who said yes */
	long long timer;
};

/* 1 when list (an array of strings) holds name. */
static int
consent_has(json_object *list, const char *name)
{
	size_t n = list ? json_object_array_length(list) : 0;

	for (size_t i = 0; i < n; i++)
		if (strcmp(json_object_get_string(
		    json_object_array_get_idx(list, i)), name) == 0)
			return 1;
	return 0;
}

/* The names of ask that are not in agreed, a new array. */
static json_object *
consent_missing(const struct consent *k)
{
	json_object *out = json_object_new_array();
	size_t n = json_object_array_length(k->ask);

	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(k->ask, i);

		if (!consent_has(k->agreed, json_object_get_string(v)))
			json_object_array_add(out, json_object_get(v));
	}
	return out;
}

static void
consent_drop(struct agent *a)
{
	struct consent *k = a->consent;

	if (!k)
		return;
	if (k->timer > 0)
		loop_del_timer(a->loop, k->timer);
	json_object_put(k->ask);
	json_object_put(k->agreed);
	free(k);
	a->consent = NULL;
}

void
consent_free(struct agent *a)
{
	consent_drop(a);
}

/* Store and announce ev, the end of round id, in one commit with room.db
 * saying that no round waits any more.  Logged on failure. */
static void
consent_record_end(struct agent *a, const char *id, json_object *ev)
{
	int r = room_db_config_set(a->db, CONSENT_KEY, "", "agent");

	if (r < 0)
		log_error("consent %s: its end was not noted: %s", id,
		    room_db_strerror(r));
	if ((r = room_emit(a, ev, 1)) < 0)
		log_error("consent %s: its end was not recorded: %s", id,
		    room_db_strerror(r));
}

/* The names of list (an array of strings) as "a, b" into out (len). */
static void
consent_names(json_object *list, char *out, size_t len)
{
	size_t n = list ? json_object_array_length(list) : 0, used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && used + 1 < len; i++) {
		int w = snprintf(out + used, len - used, "%s%s", i ? ", " : "",
		    json_object_get_string(json_object_array_get_idx(list, i)));

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* The words of a round's end that /history finds it by, as the chat shows
 * them, into out (len); "" when the end says nothing of its own (agreed:
 * the done event says it).  cancelled keeps why alone, which the chat
 * shows after "the /undo was cancelled: ". */
static void
consent_end_text(const struct consent *k, const char *result,
    const char *user, json_object *users, const char *why, char *out,
    size_t len)
{
	char names[512];

	out[0] = '\0';
	consent_names(users, names, sizeof(names));
	if (strcmp(result, "refused") == 0)
		snprintf(out, len, "the /%s was cancelled: %s refused; nothing "
		    "was changed", k->act.what, user ? user : "someone");
	else if (strcmp(result, "timeout") == 0)
		snprintf(out, len, "the /%s was cancelled: %s did not answer in "
		    "time; nothing was changed", k->act.what, names[0] ? names :
		    "someone");
	else if (strcmp(result, "forced") == 0)
		snprintf(out, len, "%s forced the /%s without waiting for the "
		    "yes of the people asked", user ? user : "the owner",
		    k->act.what);
	else if (why)
		snprintf(out, len, "%s", why);
}

/* Announce the end of the round with result, then forget it. */
static void
consent_finish(struct agent *a, const char *result, const char *user,
    json_object *users, const char *why)
{
	struct consent *k = a->consent;
	json_object *ev = room_event_new("consent_end");
	char text[768];

	json_object_object_add(ev, "id", json_object_new_string(k->id));
	json_object_object_add(ev, "action", json_object_new_string(
	    k->act.what));
	json_object_object_add(ev, "result", json_object_new_string(result));
	if (user)
		json_object_object_add(ev, "user", json_object_new_string(user));
	consent_end_text(k, result, user, users, why, text, sizeof(text));
	if (users)
		json_object_object_add(ev, "users", users);
	if (text[0])
		json_object_object_add(ev, "text", json_object_new_string(text));
	log_info("consent %s for %s by %s: %s%s%s", k->id, k->act.what,
	    k->act.user, result, why ? ": " : "", why ? why : "");
	consent_record_end(a, k->id, ev);
	consent_drop(a);
}

void
consent_end(struct agent *a, const char *result, const char *user,
    const char *why)
{
	if (a->consent)
		consent_finish(a, result, user, NULL, why);
}

const struct consent_action *
consent_waiting(struct agent *a)
{
	return a->consent ? &a->consent->act : NULL;
}

/* The time ran out: the round ends, naming who did not answer. */
static long
consent_timeout(struct loop *l, long long id, void *arg)
{
	struct agent *a = arg;

	(void)l;
	(void)id;
	if (a->consent) {
		a->consent->timer = 0;
		consent_finish(a, "timeout", NULL, consent_missing(a->consent),
		    NULL);
	}
	return LOOP_NOMORE;
}

/* Copy key of from into to, when from has it. */
static void
consent_copy(json_object *to, json_object *from, const char *key)
{
	json_object *v;

	if (json_object_object_get_ex(from, key, &v))
		json_object_object_add(to, key, json_object_get(v));
}

/* The consent_request event of k, with preview's lists. */
static json_object *
consent_request_event(struct agent *a, const struct consent *k,
    json_object *preview)
{
	static const char *const lists[] = {
		"added", "removed", "modified", "truncated",
	};
	json_object *ev = room_event_new("consent_request");
	char names[512], text[768];

	json_object_object_add(ev, "id", json_object_new_string(k->id));
	json_object_object_add(ev, "action", json_object_new_string(
	    k->act.what));
	if (k->act.name[0])
		json_object_object_add(ev, "name", json_object_new_string(
		    k->act.name));
	else
		json_object_object_add(ev, "turn", json_object_new_int64(
		    k->act.turn));
	json_object_object_add(ev, "user", json_object_new_string(k->act.user));
	json_object_object_add(ev, "users", json_object_get(k->ask));
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		consent_copy(ev, preview, lists[i]);
	json_object_object_add(ev, "seconds", json_object_new_int(
	    a->approval_timeout));
	/* The words /history finds the question by. */
	consent_names(k->ask, names, sizeof(names));
	if (k->act.name[0])
		snprintf(text, sizeof(text), "%s asks %s to agree to /%s "
		    "snapshot %s", k->act.user, names, k->act.what, k->act.name);
	else
		snprintf(text, sizeof(text), "%s asks %s to agree to /%s the "
		    "agent's turn %lld", k->act.user, names, k->act.what,
		    (long long)k->act.turn);
	json_object_object_add(ev, "text", json_object_new_string(text));
	return ev;
}

int
consent_start(struct agent *a, struct conn *c,
    const struct consent_action *act, json_object *preview)
{
	struct consent *k;
	json_object *ask = NULL;
	struct timespec ts;
	char open[64];
	int r;

	if (a->consent) {
		room_error(c, NULL, "a /%s waits for the yes of the people it "
		    "asked: wait for its end, or force this one with /%s !",
		    a->consent->act.what, act->what);
		return -1;
	}
	if (!(k = calloc(1, sizeof(*k)))) {
		room_error(c, NULL, "out of memory: nobody was asked");
		return -1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(k->id, sizeof(k->id), "consent-%lld%03ld",
	    (long long)ts.tv_sec, ts.tv_nsec / 1000000);
	k->act = *act;
	json_object_object_get_ex(preview, "ask", &ask);
	k->ask = ask ? json_object_get(ask) : json_object_new_array();
	k->agreed = json_object_new_array();
	a->consent = k;
	snprintf(open, sizeof(open), "%s %s", k->id, act->what);
	if ((r = room_db_config_set(a->db, CONSENT_KEY, open, act->user)) < 0 ||
	    (r = room_emit(a, consent_request_event(a, k, preview), 1)) < 0) {
		room_unrecorded(c, NULL, "your request for consent", r);
		consent_drop(a);
		return -1;
	}
	k->timer = loop_add_timer(a->loop, (long)a->approval_timeout * 1000,
	    consent_timeout, a);
	if (k->timer < 0)
		log_error("consent %s: no timer: it waits until answered",
		    k->id);
	log_info("%s asks for consent to %s (%s)", act->user, act->what, k->id);
	return 0;
}

/* Everyone asked agreed: act, then end the round. */
static void
consent_all_agreed(struct agent *a)
{
	struct consent *k = a->consent;
	char why[512];

	if (undo_consented(a, &k->act, k->agreed, why, sizeof(why)) < 0)
		consent_finish(a, "cancelled", NULL, NULL, why);
	else
		consent_finish(a, "agreed", NULL, NULL, NULL);
}

/* c's answer approve to the waiting round, recorded. */
static void
consent_take(struct agent *a, struct conn *c, int approve)
{
	struct consent *k = a->consent;
	json_object *ev = room_event_new("consent_answer");
	char text[160];
	int r;

	json_object_object_add(ev, "id", json_object_new_string(k->id));
	json_object_object_add(ev, "user", json_object_new_string(c->user));
	json_object_object_add(ev, "approve", json_object_new_boolean(approve));
	snprintf(text, sizeof(text), "%s %s the /%s", c->user, approve ?
	    "agreed to" : "refused", k->act.what);
	json_object_object_add(ev, "text", json_object_new_string(text));
	if ((r = room_emit(a, ev, 1)) < 0) {
		room_unrecorded(c, NULL, "your answer", r);
		return;
	}
	if (!approve) {
		consent_finish(a, "refused", c->user, NULL, NULL);
		return;
	}
	json_object_array_add(k->agreed, json_object_new_string(c->user));
	if (json_object_array_length(k->agreed) >=
	    json_object_array_length(k->ask))
		consent_all_agreed(a);
}

void
consent_request(struct agent *a, struct conn *c, json_object *req)
{
	const char *id = json_get_string(req, "id");
	struct consent *k = a->consent;

	if (!k || !id || strcmp(id, k->id) != 0) {
		room_error(c, NULL, "that request for consent is not "
		    "waiting: it has ended%s", id ? "" : " (no \"id\")");
		return;
	}
	if (!consent_has(k->ask, c->user)) {
		room_error(c, NULL, "this /%s does not ask you: it takes back "
		    "none of your changes", k->act.what);
		return;
	}
	if (consent_has(k->agreed, c->user)) {
		room_error(c, NULL, "you have agreed already");
		return;
	}
	consent_take(a, c, json_get_bool(req, "approve", 0));
}

void
consent_resume(struct agent *a)
{
	char open[64], id[32], what[8];
	json_object *ev;

	if (room_db_config_get(a->db, CONSENT_KEY, open, sizeof(open)) != 1 ||
	    sscanf(open, "%31s %7s", id, what) != 2)
		return;
	ev = room_event_new("consent_end");
	json_object_object_add(ev, "id", json_object_new_string(id));
	json_object_object_add(ev, "action", json_object_new_string(what));
	json_object_object_add(ev, "result", json_object_new_string(
	    "cancelled"));
	json_object_object_add(ev, "text", json_object_new_string("the room's "
	    "agent restarted while it waited; nothing was changed"));
	log_info("consent %s: ended by the restart", id);
	consent_record_end(a, id, ev);
}
