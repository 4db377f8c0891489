/*
 * prefs.c: each person's chat settings in this room (prefs.h).  Stored in
 * room.db's config table under "pref.KEY.USER" (the user who set it in
 * the user column), so they need no table of their own and go wherever
 * the room goes (export, import).  A key the table below does not name is
 * refused, and so is a value outside its list: what is stored is always
 * one of the values listed, whatever a client sent.
 *
 *   key    values      default   what the chat does with it
 *   bell   on | off    on        BEL on a mention, an approval request, a
 *                                turn that ends while you look away
 */
#include "prefs.h"

#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "journal.h"
#include "jsonl.h"
#include "log.h"
#include "room_events.h"
#include "room_db.h"

struct pref {
	const char *key;
	const char *values[3];		/* NULL-terminated; the first is the
					 * default */
};

static const struct pref prefs[] = {
	{ "bell", { "on", "off", NULL } },
};

/* The table's row for key, or NULL. */
static const struct pref *
prefs_find(const char *key)
{
	for (size_t i = 0; key && i < sizeof(prefs) / sizeof(prefs[0]); i++)
		if (strcmp(prefs[i].key, key) == 0)
			return &prefs[i];
	return NULL;
}

/* The listed value equal to value, or NULL. */
static const char *
prefs_value(const struct pref *p, const char *value)
{
	for (int i = 0; value && p->values[i]; i++)
		if (strcmp(p->values[i], value) == 0)
			return p->values[i];
	return NULL;
}

/* user's value of p: stored, else the default (also when room.db cannot
 * be read: logged by room_db). */
static const char *
prefs_get(struct agent *a, const struct pref *p, const char *user)
{
	char key[128], value[32];
	const char *v;

	snprintf(key, sizeof(key), "pref.%s.%s", p->key, user);
	if (room_db_config_get(a->db, key, value, sizeof(value)) <= 0)
		return p->values[0];
	v = prefs_value(p, value);
	return v ? v : p->values[0];
}

/* Store user's value of p.  0 or -errno (nothing stored). */
static int
prefs_set(struct agent *a, const struct pref *p, const char *user,
    const char *value)
{
	char key[128];
	int r;

	snprintf(key, sizeof(key), "pref.%s.%s", p->key, user);
	/* What was written before is kept whatever happens here. */
	if ((r = journal_commit(a->journal)) < 0)
		return r;
	if ((r = room_db_config_set(a->db, key, value, user)) < 0) {
		journal_abort(a->journal, r);
		return r;
	}
	return journal_commit(a->journal);
}

void
prefs_request(struct agent *a, struct conn *c, json_object *req)
{
	const struct pref *p = prefs_find(json_get_string(req, "key"));
	const char *asked = json_get_string(req, "value"), *value;
	json_object *ev;
	int r;

	if (!p) {
		room_error(c, NULL, "pref needs \"key\": bell");
		return;
	}
	value = prefs_value(p, asked);
	if (asked && !value) {
		room_error(c, NULL, "%s is %s or %s", p->key, p->values[0],
		    p->values[1]);
		return;
	}
	if (value && (r = prefs_set(a, p, c->user, value)) < 0) {
		log_error("%s's %s not stored: %s", c->user, p->key,
		    room_db_strerror(r));
		room_error(c, NULL, "your %s setting was not stored (%s); "
		    "try again once room.db can be written", p->key,
		    room_db_strerror(r));
		return;
	}
	ev = room_event_new("pref");
	json_object_object_add(ev, "key", json_object_new_string(p->key));
	json_object_object_add(ev, "value", json_object_new_string(
	    value ? value : prefs_get(a, p, c->user)));
	json_object_object_add(ev, "changed", json_object_new_boolean(!!value));
	room_send(c, ev);
}

void
prefs_describe(struct agent *a, const char *user, json_object *ev)
{
	json_object *o = json_object_new_object();

	for (size_t i = 0; i < sizeof(prefs) / sizeof(prefs[0]); i++)
		json_object_object_add(o, prefs[i].key, json_object_new_string(
		    prefs_get(a, &prefs[i], user)));
	json_object_object_add(ev, "prefs", o);
}
