/*
 * room_access_list.c: owner, members and visibility of the room
 * (room_access_list.h).
 *
 * atrium-agent is the only writer of room.db, so every change of the
 * access list is made here, stored, then announced to every member with
 * a stored `access` event (room_events.c's rule: persist, then announce).
 * atriumd decides entry before it starts a command from its record of the
 * list (below); this file decides again at each hello, with the list as
 * committed now, so a session that raced a change (or a chat reconnecting
 * after a restart) is judged by the room itself.
 *
 * Who a connection is comes only from its hello, which atriumd's monitor
 * writes as the connection's first line (requests.c takes no other):
 * user, admin (the key has atrium-admin) and may_create (the key's rooms=
 * allows this room's name), each from the monitor's own reading of
 * authorized_keys, never from the network process.  The list is read from room.db
 * for each decision: a few rows, and no copy to keep in step.
 *
 * atriumd's monitor keeps its own record of the list, for its decisions
 * while the room is cold (sshd/monitor/access_record.h): the agent reports
 * the list on each monitor connection as it starts (room_access_report)
 * and after each change, once it is committed, to every monitor
 * connection.
 *
 * Ending a user's sessions (a kick, a removal from a private room, or a
 * room made private) queues an `access_denied` event to each of its
 * connections and ends them once it is written (conn_end); atriumd shows
 * its message on the client's stderr and ends the channel with status 1.
 * Closing an exec connection kills its command (exec.c).
 *
 * Kick and remove are two things, as in IRC: a kick ends the person's
 * sessions and keeps them out for ROOM_KICK_SECONDS (config key
 * "kicked:USER", value "UNTIL BY": the Unix time it ends and who kicked;
 * kept in room.db so an agent restart does not lift it), and leaves the
 * membership as it was; remove takes the membership away, which ends the
 * sessions only where the room no longer lets the person in (private).
 * atriumd's monitor knows nothing of kicks: it may start a cold room for a
 * kicked person, whose hello this file then refuses.
 */
#include "room_access_list.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "access.h"
#include "agent.h"
#include "journal.h"
#include "jsonl.h"
#include "log.h"
#include "names.h"
#include "room_events.h"
#include "room_db.h"
#include "utf8.h"

/* The list as committed (and as written in this loop turn); on a read
 * error the room is treated as private with no members: fail closed. */
static void
room_access_load(struct agent *a, struct access_list *l)
{
	if (room_db_access_load(a->db, l) < 0) {
		access_list_init(l);
		l->visibility = ACCESS_PRIVATE;
	}
}

/* The members as a new JSON array. */
static json_object *
room_access_members(const struct access_list *l)
{
	json_object *arr = json_object_new_array();

	for (int i = 0; i < l->nmembers; i++)
		json_object_array_add(arr, json_object_new_string(l->members[i]));
	return arr;
}

/* The words /history finds a change by ("alice kicked bob (kick)"), into
 * out (len); "" for a change without them. */
static void
room_access_change_text(const struct access_list *l, const char *change,
    const char *user, const char *by, char *out, size_t len)
{
	by = by ? by : "someone";
	user = user ? user : "?";
	out[0] = '\0';
	if (strcmp(change, "invite") == 0)
		snprintf(out, len, "%s invited %s (invite)", by, user);
	else if (strcmp(change, "kick") == 0)
		snprintf(out, len, "%s kicked %s (kick)", by, user);
	else if (strcmp(change, "remove") == 0)
		snprintf(out, len, "%s removed %s (remove)", by, user);
	else if (strcmp(change, "visibility") == 0)
		snprintf(out, len, "%s made the room %s", by,
		    access_visibility_name(l->visibility));
}

/* An `access` event: the list now, and what changed (NULL for a query),
 * with a change's words for /history. */
static json_object *
room_access_event(const struct access_list *l, const char *change,
    const char *user, const char *by)
{
	json_object *ev = room_event_new("access");
	char text[256];

	json_object_object_add(ev, "owner", l->owner[0] ?
	    json_object_new_string(l->owner) : NULL);
	json_object_object_add(ev, "visibility",
	    json_object_new_string(access_visibility_name(l->visibility)));
	json_object_object_add(ev, "members", room_access_members(l));
	if (change)
		json_object_object_add(ev, "change",
		    json_object_new_string(change));
	if (user)
		json_object_object_add(ev, "user", json_object_new_string(user));
	if (by)
		json_object_object_add(ev, "by", json_object_new_string(by));
	if (change) {
		room_access_change_text(l, change, user, by, text,
		    sizeof(text));
		if (text[0])
			json_object_object_add(ev, "text",
			    json_object_new_string(text));
	}
	return ev;
}

/* The list as committed, to report to atriumd's monitor: a monitor
 * connection's `access` line (not a room event: no seq, never stored).
 * NULL when it cannot be read (nothing is reported then: the monitor
 * keeps its record rather than learn a fail-closed list as the room's). */
static json_object *
room_access_report_line(struct agent *a)
{
	struct access_list l;
	json_object *ev;

	if (room_db_access_load(a->db, &l) < 0 ||
	    !(ev = json_object_new_object()))
		return NULL;
	json_object_object_add(ev, "type", json_object_new_string("access"));
	json_object_object_add(ev, "owner", l.owner[0] ?
	    json_object_new_string(l.owner) : NULL);
	json_object_object_add(ev, "visibility",
	    json_object_new_string(access_visibility_name(l.visibility)));
	json_object_object_add(ev, "members", room_access_members(&l));
	return ev;
}

/* See room_access_list.h. */
void
room_access_report(struct agent *a, struct conn *to)
{
	json_object *ev = room_access_report_line(a);

	for (struct conn *c = a->conns; ev && c; c = c->next)
		if (!c->closing && c->kind == CONN_MONITOR && (!to || c == to))
			conn_queue_event(c, ev);
	json_object_put(ev);
}

/* Store and announce the list after a change: it commits the change with
 * the event.  0, or -errno when room.db could not take them (the change is
 * rolled back with it and nobody is told; room_unrecorded).  Either way
 * the monitor is told the list as it now stands: a change committed
 * before (kick, visibility) stands even when its announcement fails. */
static int
room_access_announce_for(struct agent *a, const char *change,
    const char *user, const char *by, long long seconds, const char *reason)
{
	struct access_list l;
	json_object *ev;
	int r;

	room_access_load(a, &l);
	ev = room_access_event(&l, change, user, by);
	if (seconds > 0)
		json_object_object_add(ev, "seconds",
		    json_object_new_int64(seconds));
	if (reason && reason[0])
		json_object_object_add(ev, "reason",
		    json_object_new_string(reason));
	r = room_emit(a, ev, 1);
	room_access_report(a, NULL);
	return r;
}

static int
room_access_announce(struct agent *a, const char *change, const char *user,
    const char *by)
{
	return room_access_announce_for(a, change, user, by, 0, NULL);
}

/* Tell c why it is out, and end it once that is written. */
static void
room_access_deny(struct agent *a, struct conn *c, const char *msg,
    const char *owner)
{
	json_object *ev = room_event_new("access_denied");

	json_object_object_add(ev, "room", json_object_new_string(a->room));
	json_object_object_add(ev, "message", json_object_new_string(msg));
	json_object_object_add(ev, "owner", owner && owner[0] ?
	    json_object_new_string(owner) : NULL);
	room_send(c, ev);
	conn_end(c, "access denied");
}

/* End the connections of every user l no longer lets in (user: only
 * that one's, whoever else may stay), each with msg. */
static int
room_access_evict(struct agent *a, const struct access_list *l,
    const char *user, const char *msg)
{
	int n = 0;

	for (struct conn *c = a->conns; c; c = c->next) {
		/* atriumd's watchdog is no person: it stays, and keeps the
		 * monitor's record (room_access_report). */
		if (c->closing || c->ending || c->kind == CONN_NEW ||
		    c->kind == CONN_MONITOR || c->kind == CONN_FEED)
			continue;
		if (user ? strcmp(c->user, user) != 0 :
		    access_may_enter(l, c->user, c->admin))
			continue;
		log_info("%s: session ended (%s)", c->user, msg);
		room_access_deny(a, c, msg, l->owner);
		n++;
	}
	return n;
}

/* The config key that holds user's kick. */
static void
room_access_kick_key(const char *user, char *key, size_t len)
{
	snprintf(key, len, "kicked:%s", user);
}

/* Seconds user is still kept out by a kick (0: none), and who kicked
 * (into by). */
static long long
room_access_kick_left(struct agent *a, const char *user, char *by,
    size_t len)
{
	char key[80], val[128], *end;
	long long until, now = (long long)time(NULL);

	room_access_kick_key(user, key, sizeof(key));
	if (room_db_config_get(a->db, key, val, sizeof(val)) != 1)
		return 0;
	until = strtoll(val, &end, 10);
	snprintf(by, len, "%s", *end == ' ' ? end + 1 : "the owner");
	return until > now ? until - now : 0;
}

/* "5 minutes", "1 minute", "40 seconds": how long secs is, rounded up. */
static void
room_access_duration(long long secs, char *out, size_t len)
{
	long long min = (secs + 59) / 60;

	if (secs < 60)
		snprintf(out, len, "%lld second%s", secs, secs == 1 ? "" : "s");
	else
		snprintf(out, len, "%lld minute%s", min, min == 1 ? "" : "s");
}

/* At hello, for someone the list lets in: refused while a kick keeps
 * them out (never the owner).  0, or -EACCES with c told why. */
static int
room_access_kicked_out(struct agent *a, struct conn *c,
    const struct access_list *l)
{
	char by[64], left[32], msg[300];
	long long secs;

	if (strcmp(l->owner, c->user) == 0 ||
	    !(secs = room_access_kick_left(a, c->user, by, sizeof(by))))
		return 0;
	room_access_duration(secs, left, sizeof(left));
	snprintf(msg, sizeof(msg), "atrium: %s kicked you from room '%s'; you "
	    "may come back in %s", by, a->room, left);
	log_info("%s refused: kicked by %s, %lld s left", c->user, by, secs);
	room_access_deny(a, c, msg, NULL);
	return -EACCES;
}

/* See room_access_list.h. */
int
room_access_hello(struct agent *a, struct conn *c, json_object *req)
{
	struct access_list l;
	char msg[512];

	room_access_load(a, &l);
	if (!l.owner[0] && json_get_bool(req, "may_create", 0) &&
	    room_db_access_set(a->db, c->user, "owner", NULL) == 0) {
		/* Not recorded (full disk): the room stays without an owner
		 * and open; the next person to come may claim it. */
		if (room_access_announce(a, "owner", c->user, NULL) == 0)
			log_info("%s owns the room (its first user)", c->user);
		room_access_load(a, &l);
	}
	if (access_may_enter(&l, c->user, c->admin))
		return room_access_kicked_out(a, c, &l);
	/* An outsider: the owner is not named (access.h). */
	access_refusal(a->room, c->user, NULL, msg, sizeof(msg));
	log_info("%s refused: the room is private and %s is not a member",
	    c->user, c->user);
	room_access_deny(a, c, msg, NULL);
	return -EACCES;
}

/* See room_access_list.h. */
void
room_access_describe(struct agent *a, json_object *ev)
{
	struct access_list l;

	room_access_load(a, &l);
	json_object_object_add(ev, "owner", l.owner[0] ?
	    json_object_new_string(l.owner) : NULL);
	json_object_object_add(ev, "visibility",
	    json_object_new_string(access_visibility_name(l.visibility)));
}

/* See room_access_list.h. */
int
room_access_may_manage(struct agent *a, struct conn *c, const char *what)
{
	struct access_list l;
	char msg[256];

	room_access_load(a, &l);
	if (access_may_manage(&l, c->user, c->admin))
		return 1;
	access_not_owner(&l, what, msg, sizeof(msg));
	log_info("%s may not %s: refused", c->user, what);
	room_error(c, NULL, "%s", msg);
	return 0;
}

/* The "user" of an invite, kick or remove, checked.  NULL with an error sent. */
static const char *
room_access_target(struct conn *c, json_object *req, const char *type)
{
	const char *user = json_get_string(req, "user");

	if (!user || !user_name_valid(user) || strcmp(user, "agent") == 0) {
		room_error(c, NULL, "%s needs \"user\": the name of a person "
		    "(1-32 of A-Z a-z 0-9 . _ -), as the server's "
		    "authorized_keys names them", type);
		return NULL;
	}
	return user;
}

/* invite: make user a member. */
static void
room_access_invite(struct agent *a, struct conn *c, json_object *req)
{
	const char *user = room_access_target(c, req, "invite");
	struct access_list l;
	int r;

	if (!user || !room_access_may_manage(a, c, "invite people"))
		return;
	room_access_load(a, &l);
	if (access_is_member(&l, user)) {
		room_error(c, NULL, "%s is already %s of this room", user,
		    strcmp(l.owner, user) == 0 ? "the owner" : "a member");
		return;
	}
	if (l.nmembers >= ACCESS_MAX_MEMBERS) {
		room_error(c, NULL, "cannot add %s: a room has at most %d "
		    "members", user, ACCESS_MAX_MEMBERS);
		return;
	}
	if ((r = room_db_access_set(a->db, user, "member", c->user)) < 0 ||
	    (r = room_access_announce(a, "invite", user, c->user)) < 0) {
		room_unrecorded(c, NULL, "the invitation", r);
		return;
	}
	log_info("%s invited %s", c->user, user);
}

/* Is user in the room now: has it a connection here? */
static int
room_access_present(struct agent *a, const char *user)
{
	for (struct conn *c = a->conns; c; c = c->next)
		if (!c->closing && !c->ending && c->kind != CONN_NEW &&
		    c->kind != CONN_MONITOR && c->kind != CONN_FEED &&
		    strcmp(c->user, user) == 0)
			return 1;
	return 0;
}

/* A kick's optional "reason", cleaned as people's lines are (it reaches
 * terminals): into out, "" for none.  0, or -1 with an error sent. */
static int
room_access_reason(struct conn *c, json_object *req, char *out, size_t len)
{
	const char *raw = json_get_string(req, "reason");
	char *clean;

	out[0] = '\0';
	if (!raw)
		return 0;
	if (strlen(raw) >= len || !(clean = utf8_clean_str(raw))) {
		room_error(c, NULL, "a kick's reason is at most %zu bytes",
		    len - 1);
		return -1;
	}
	snprintf(out, len, "%s", clean);
	free(clean);
	return 0;
}

/* kick: end user's sessions here and keep them out for
 * ROOM_KICK_SECONDS; the membership stays.  An optional reason goes to
 * them and to the room, as IRC's does. */
static void
room_access_kick(struct agent *a, struct conn *c, json_object *req)
{
	const char *user = room_access_target(c, req, "kick");
	char key[80], val[128], msg[600], left[32], reason[ROOM_KICK_REASON],
	    why[ROOM_KICK_REASON + 4];
	struct access_list l;
	int ended, r;

	if (!user || !room_access_may_manage(a, c, "kick people") ||
	    room_access_reason(c, req, reason, sizeof(reason)) < 0)
		return;
	room_access_load(a, &l);
	if (strcmp(l.owner, user) == 0) {
		room_error(c, NULL, "%s owns this room and cannot be kicked",
		    user);
		return;
	}
	if (!room_access_present(a, user)) {
		room_error(c, NULL, "%s is not in this room; /remove takes a "
		    "membership away", user);
		return;
	}
	/* On disk before anyone is sent away. */
	room_access_kick_key(user, key, sizeof(key));
	snprintf(val, sizeof(val), "%lld %s", (long long)time(NULL) +
	    ROOM_KICK_SECONDS, c->user);
	if ((r = room_db_config_set(a->db, key, val, c->user)) < 0 ||
	    (r = journal_commit(a->journal)) < 0) {
		room_unrecorded(c, NULL, "the kick", r);
		return;
	}
	room_access_duration(ROOM_KICK_SECONDS, left, sizeof(left));
	snprintf(why, sizeof(why), reason[0] ? " (%s)" : "%s", reason);
	snprintf(msg, sizeof(msg), "atrium: %s kicked you from room '%s'%s; "
	    "you may come back in %s", c->user, a->room, why, left);
	ended = room_access_evict(a, &l, user, msg);
	log_info("%s kicked %s (%d session(s) ended)", c->user, user, ended);
	if ((r = room_access_announce_for(a, "kick", user, c->user,
	    ROOM_KICK_SECONDS, reason)) < 0)
		room_unrecorded(c, NULL, "the announcement of the kick (it is "
		    "done)", r);
}

/* remove: take user's membership away; in a room that then keeps them
 * out, their sessions end too. */
static void
room_access_remove(struct agent *a, struct conn *c, json_object *req)
{
	const char *user = room_access_target(c, req, "remove");
	struct access_list l;
	char msg[300];
	int ended = 0, r = 0;

	if (!user || !room_access_may_manage(a, c, "remove people"))
		return;
	room_access_load(a, &l);
	if (strcmp(l.owner, user) == 0) {
		room_error(c, NULL, "%s owns this room and cannot be removed",
		    user);
		return;
	}
	if (!access_is_member(&l, user)) {
		room_error(c, NULL, "%s is not a member of this room%s", user,
		    room_access_present(a, user) ? "; /kick sends them out" :
		    "");
		return;
	}
	/* On disk before anyone is sent away. */
	if ((r = room_db_access_remove(a->db, user)) < 0 ||
	    (r = journal_commit(a->journal)) < 0) {
		room_unrecorded(c, NULL, "the removal", r);
		return;
	}
	snprintf(msg, sizeof(msg), "atrium: %s removed you from room '%s', "
	    "which is private", c->user, a->room);
	room_access_load(a, &l);
	if (l.visibility != ACCESS_OPEN)
		ended = room_access_evict(a, &l, NULL, msg);
	log_info("%s removed %s (%d session(s) ended)", c->user, user, ended);
	if ((r = room_access_announce(a, "remove", user, c->user)) < 0)
		room_unrecorded(c, NULL, "the announcement of the removal "
		    "(it is done)", r);
}

/* visibility: open or private; going private ends the sessions of people
 * it no longer lets in. */
static void
room_access_visibility(struct agent *a, struct conn *c, json_object *req)
{
	const char *v = json_get_string(req, "visibility");
	enum access_visibility vis;
	struct access_list l;
	char msg[300];
	int r;

	if (access_visibility_parse(v, &vis) < 0) {
		room_error(c, NULL, "visibility needs \"visibility\": \"open\" "
		    "(any authorized user may enter) or \"private\" (the owner "
		    "and members only)");
		return;
	}
	if (!room_access_may_manage(a, c, "change who may enter"))
		return;
	/* On disk before anyone is sent away. */
	if ((r = room_db_config_set(a->db, "visibility",
	    access_visibility_name(vis), c->user)) < 0 ||
	    (r = journal_commit(a->journal)) < 0) {
		room_unrecorded(c, NULL, "the change of visibility", r);
		return;
	}
	log_info("%s made the room %s", c->user, access_visibility_name(vis));
	room_access_load(a, &l);
	snprintf(msg, sizeof(msg), "atrium: %s made room '%s' private, and "
	    "you are not a member", c->user, a->room);
	if (vis == ACCESS_PRIVATE)
		room_access_evict(a, &l, NULL, msg);
	if ((r = room_access_announce(a, "visibility", NULL, c->user)) < 0)
		room_unrecorded(c, NULL, "the announcement of the change of "
		    "visibility (it is done)", r);
}

/* See room_access_list.h. */
int
room_access_request(struct agent *a, struct conn *c, const char *type,
    json_object *req)
{
	struct access_list l;

	if (strcmp(type, "invite") == 0) {
		room_access_invite(a, c, req);
	} else if (strcmp(type, "kick") == 0) {
		room_access_kick(a, c, req);
	} else if (strcmp(type, "remove") == 0) {
		room_access_remove(a, c, req);
	} else if (strcmp(type, "visibility") == 0) {
		room_access_visibility(a, c, req);
	} else if (strcmp(type, "access") == 0) {
		room_access_load(a, &l);
		room_send(c, room_access_event(&l, NULL, NULL, NULL));
	} else {
		return 0;
	}
	return 1;
}
