/*
 * undo_act.c: acting on the workspace's past (undo.h): undo and redo of
 * the agent's turns, and restore of a snapshot people named, each first
 * as a preview, then, confirmed, done or put to the people whose work it
 * takes back (consent.h).
 *
 * Undo restores the latest not yet undone turn's snapshot, after taking
 * redo-ID of the tree as it is (what a redo restores); repeated, it goes
 * back turn by turn.  Restore restores a named snapshot.  The preview
 * says what either changes (the diff of the tree against the snapshot it
 * restores) and whose own commands since that snapshot changed the
 * workspace, so that it takes them back too (room.db's audit, with
 * audit.wrote: a command that only read, such as `!cat`, names nobody;
 * undo.c's marks), and who prompted the agent's turns it takes back
 * (turns.user: whoever asks the agent owns what its turn changed, as
 * if they had typed it; the requester's own turns name nobody).  Only
 * someone who may manage the room may act (room_access_may_manage), and
 * never while a turn runs.
 *
 * Consent: when those people include others than the one who asked, a
 * confirmed request does not act: it asks them (consent_start), and
 * consent.c calls undo_consented once all agreed, which plans again and
 * acts only if the plan asks nobody new (someone who changed files while
 * the round waited would otherwise lose them unasked).  "force": true
 * acts at once, over them; the done event records it (forced, over).
 *
 * The redo target: the turn undone last, and only while nothing has
 * superseded the state its undo left.  Two things supersede it:
 *   - a later turn that wrote: recording its undo point forgets every
 *     pending redo (room_db_undo_mark), so such a turn is never picked
 *     (room_db_undo_target has the order);
 *   - any other change to the workspace since that undo, by anyone and
 *     any way (exec, sftp, sshfs, the shared terminal): the tree must
 *     still be exactly turn-ID, what the undo restored, by atrium-fs's
 *     diff (undo_unchanged), or the redo is refused.  Reading changes
 *     nothing; writing even the same bytes back does.
 * So a redo never throws away work done after the undo, and it asks
 * nobody: it takes nothing back.
 *
 * Blocking: the requests to atrium-fs are synchronous, on the loop, each
 * bounded (UNDO_ACT_TIMEOUT_S): a snapshot and a restore copy metadata
 * only, and acting on the past is a rare, deliberate act.
 */
#include "undo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "agent.h"
#include "conn.h"
#include "consent.h"
#include "jsonl.h"
#include "log.h"
#include "room_events.h"
#include "room_access_list.h"
#include "room_db.h"
#include "utf8.h"
#include "ws_snapshot.h"

#define UNDO_ACT_TIMEOUT_S 30

/* What an undo, redo or restore changes: the lists of the preview, the
 * request for consent and the done event. */
struct undo_plan {
	char what[8];			/* undo, redo, restore */
	int redo;			/* what is "redo" */
	char name[132];			/* restore's snapshot */
	struct room_db_undo target;	/* undo's and redo's turn */
	const char *restores;		/* the snapshot it restores */
	char since[40];			/* people's commands since then */
	json_object *added, *removed, *modified, *users, *ask;
	int more;
};

/* path fit for a terminal, on one line (malloc'd), or NULL: a name may
 * hold anything, and the lists and errors that name paths reach
 * terminals. */
static char *
undo_clean_path(const char *path)
{
	char *clean = utf8_clean_str(path);

	for (char *q = clean; q && *q; q++)
		if (*q == '\n' || *q == '\t')
			*q = '?';
	return clean;
}

/* A diff entry into the plan's lists.  A redo restores the snapshot
 * taken before the undo, so what the tree has that it lacks is what the
 * redo removes. */
static int
undo_plan_entry(void *arg, char kind, const char *path)
{
	struct undo_plan *p = arg;
	json_object *list = kind == 'M' ? p->modified :
	    (kind == 'A') != p->redo ? p->added : p->removed;
	char *clean = undo_clean_path(path);

	if (!clean)
		return -ENOMEM;
	json_object_array_add(list, json_object_new_string(clean));
	free(clean);
	return 0;
}

/* A person the audit names: into users, and into ask unless it is the
 * one who asks. */
struct undo_people {
	struct undo_plan *p;
	const char *requester;
};

/* 1 when list (an array of strings) holds name. */
static int
undo_list_has(json_object *list, const char *name)
{
	size_t n = json_object_array_length(list);

	for (size_t i = 0; i < n; i++)
		if (strcmp(json_object_get_string(
		    json_object_array_get_idx(list, i)), name) == 0)
			return 1;
	return 0;
}

static int
undo_plan_user(void *arg, const char *user)
{
	struct undo_people *w = arg;

	if (undo_list_has(w->p->users, user))
		return 0;
	json_object_array_add(w->p->users, json_object_new_string(user));
	if (strcmp(user, w->requester) != 0)
		json_object_array_add(w->p->ask, json_object_new_string(user));
	return 0;
}

/* A person who prompted a turn the act takes back: their work as much as
 * a command of their own (the one who asks the agent owns what the turn
 * changed), named unless it is the requester, whose own turn the
 * preview already names. */
static int
undo_plan_prompter(void *arg, const char *user)
{
	struct undo_people *w = arg;

	return strcmp(user, w->requester) == 0 ? 0 : undo_plan_user(arg, user);
}

static void
undo_plan_free(struct undo_plan *p)
{
	json_object_put(p->added);
	json_object_put(p->removed);
	json_object_put(p->modified);
	json_object_put(p->users);
	json_object_put(p->ask);
}

/* r, atrium-fs's answer to a diff against snap for p, logged and into
 * why. */
static void
undo_diff_failed(const struct undo_plan *p, const char *snap, int r,
    char *why, size_t len)
{
	log_warn("%s: diff against %s: %s", p->what, snap, strerror(-r));
	snprintf(why, len, "the workspace could not be compared with "
	    "snapshot %s (%s); is it mounted?", snap, strerror(-r));
}

/* The first change undo_unchanged found, and how many. */
struct undo_changes {
	char first[256];
	long long n;
};

/* A diff entry into the undo_changes at arg. */
static int
undo_changes_entry(void *arg, char kind, const char *path)
{
	struct undo_changes *ch = arg;

	(void)kind;
	if (ch->n++ == 0)
		snprintf(ch->first, sizeof(ch->first), "%s", path);
	return 0;
}

/* For a redo: 0 when the tree is still what the undo of p's turn left
 * (its turn-ID snapshot), else -1 with why naming a change a redo would
 * throw away. */
static int
undo_unchanged(const char *db, struct undo_plan *p, char *why, size_t len)
{
	struct undo_changes ch = { "", 0 };
	char *first;
	int more = 0, r;

	r = fsctl_diff(db, p->target.snapshot, UNDO_ACT_TIMEOUT_S,
	    undo_changes_entry, &ch, &more);
	if (r < 0) {
		undo_diff_failed(p, p->target.snapshot, r, why, len);
		return -1;
	}
	if (ch.n == 0 && !more)
		return 0;
	first = undo_clean_path(ch.first);
	snprintf(why, len, "there is nothing to redo: the workspace changed "
	    "since the agent's turn %lld was undone (%s%s), and a redo would "
	    "throw that change away", p->target.turn, first ? first : "?",
	    ch.n > 1 || more ? " and more" : "");
	free(first);
	return -1;
}

/* The time snapshot arg->name was taken, as room.db stamps times. */
struct undo_taken {
	const char *name;
	char when[40];
};

static int
undo_taken_entry(void *arg, const struct fsctl_snapshot *s)
{
	struct undo_taken *t = arg;
	time_t sec = (time_t)(s->created_ns / 1000000000);
	struct tm tm;

	if (strcmp(s->name, t->name) != 0 || !gmtime_r(&sec, &tm))
		return 0;
	strftime(t->when, sizeof(t->when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(t->when + strlen(t->when), sizeof(t->when) - strlen(t->when),
	    ".%03lldZ", (s->created_ns / 1000000) % 1000);
	return 1;                       /* found: stop */
}

/* Fill what p restores and since when for a restore of p->name.  0, or
 * -1 with why. */
static int
undo_plan_restore(const char *db, struct undo_plan *p, char *why,
    size_t len)
{
	struct undo_taken t = { p->name, "" };
	int r = fsctl_list(db, UNDO_ACT_TIMEOUT_S, undo_taken_entry, &t);

	if (r < 0 && r != -ECANCELED) {
		snprintf(why, len, r == -ECONNREFUSED ? "this room's workspace "
		    "takes no snapshots (it is not an atrium-fs mount)" :
		    "the snapshots could not be listed: %s", strerror(-r));
		return -1;
	}
	if (!t.when[0]) {
		snprintf(why, len, "there is no snapshot named %s: /snapshots "
		    "lists them", p->name);
		return -1;
	}
	p->restores = p->name;
	snprintf(p->since, sizeof(p->since), "%s", t.when);
	return 0;
}

/* Find what p acts on: its turn (undo, redo) or snapshot (restore).  0,
 * or -1 with why. */
static int
undo_plan_target(struct agent *a, const char *db, struct undo_plan *p,
    char *why, size_t len)
{
	int r;

	if (strcmp(p->what, "restore") == 0)
		return undo_plan_restore(db, p, why, len);
	if ((r = room_db_undo_target(a->db, p->redo, &p->target)) <= 0) {
		snprintf(why, len, "%s", r < 0 ? "room.db could not be read" :
		    p->redo ? "there is nothing to redo" :
		    "there is no turn of the agent's to undo");
		return -1;
	}
	if (p->redo && undo_unchanged(db, p, why, len) < 0)
		return -1;
	p->restores = p->redo ? p->target.redo : p->target.snapshot;
	snprintf(p->since, sizeof(p->since), "%s", p->target.since);
	return 0;
}

/* Fill p for what (undo, redo, restore of name), asked by requester.
 * 0, or -1 with why (len bytes). */
static int
undo_plan(struct agent *a, const char *what, const char *name,
    const char *requester, struct undo_plan *p, char *why, size_t len)
{
	struct undo_people w = { p, requester };
	char db[4200];
	int r;

	memset(p, 0, sizeof(*p));
	snprintf(p->what, sizeof(p->what), "%s", what);
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
	p->redo = strcmp(what, "redo") == 0;
	p->added = json_object_new_array();
	p->removed = json_object_new_array();
	p->modified = json_object_new_array();
	p->users = json_object_new_array();
	p->ask = json_object_new_array();
	if (ws_snapshot_db(a->room_dir, db, sizeof(db)) < 0) {
		snprintf(why, len, "the room's path is too long");
		return -1;
	}
	if (undo_plan_target(a, db, p, why, len) < 0)
		return -1;
	r = fsctl_diff(db, p->restores, UNDO_ACT_TIMEOUT_S, undo_plan_entry,
	    p, &p->more);
	if (r < 0) {
		undo_diff_failed(p, p->restores, r, why, len);
		return -1;
	}
	/* A redo takes back nobody's changes: there are none to take. */
	if (!p->redo && (room_db_undo_people(a->db, p->since, undo_plan_user,
	    &w) < 0 || room_db_undo_prompters(a->db, p->since,
	    undo_plan_prompter, &w) < 0)) {
		snprintf(why, len, "room.db could not be read");
		return -1;
	}
	return 0;
}

/* The event for p: type WHAT_SUFFIX (undo_preview, restore_done...). */
static json_object *
undo_event(struct undo_plan *p, const char *suffix)
{
	char type[32];
	json_object *ev;

	snprintf(type, sizeof(type), "%s_%s", p->what, suffix);
	ev = room_event_new(type);
	if (p->name[0])
		json_object_object_add(ev, "name",
		    json_object_new_string(p->name));
	else
		json_object_object_add(ev, "turn",
		    json_object_new_int64(p->target.turn));
	json_object_object_add(ev, "added", json_object_get(p->added));
	json_object_object_add(ev, "removed", json_object_get(p->removed));
	json_object_object_add(ev, "modified", json_object_get(p->modified));
	json_object_object_add(ev, "users", json_object_get(p->users));
	if (p->more)
		json_object_object_add(ev, "truncated",
		    json_object_new_boolean(1));
	return ev;
}

/* The preview: the lists, whom a confirmation would ask and for how
 * long, and "force" when the request forces it (so that the client
 * confirms it so, and says that it acts over the people asked). */
static json_object *
undo_preview_event(struct agent *a, struct undo_plan *p, int force)
{
	json_object *ev = undo_event(p, "preview");

	json_object_object_add(ev, "ask", json_object_get(p->ask));
	json_object_object_add(ev, "seconds",
	    json_object_new_int(a->approval_timeout));
	if (force)
		json_object_object_add(ev, "force", json_object_new_boolean(1));
	return ev;
}

/* head, the names of list joined by ", ", then tail, into out (len);
 * nothing when list is empty. */
static void
undo_done_names(json_object *list, const char *head, const char *tail,
    char *out, size_t len)
{
	size_t n = list ? json_object_array_length(list) : 0, used;

	if (!n || len == 0)
		return;
	used = (size_t)snprintf(out, len, "%s", head);
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%s",
		    i ? ", " : "", json_object_get_string(
		    json_object_array_get_idx(list, i)));
	if (used < len)
		snprintf(out + used, len - used, "%s", tail);
}

/* The done event: the lists, who acted, and how the others' work went:
 * forced over it (over: who was not asked), or agreed (agreed: who). */
static json_object *
undo_done_event(struct undo_plan *p, const char *user, int forced,
    json_object *agreed)
{
	json_object *ev = undo_event(p, "done");
	char text[1024];
	int n;

	/* The words /history finds it by, as the chat shows them: who
	 * agreed, or over whose work it was forced. */
	if (p->name[0])
		n = snprintf(text, sizeof(text), "%s restored the workspace to "
		    "snapshot %s", user, p->name);
	else
		n = snprintf(text, sizeof(text), "%s %s the agent's turn %lld",
		    user, strcmp(p->what, "redo") == 0 ? "redid" : "undid",
		    (long long)p->target.turn);
	if (n > 0 && (size_t)n < sizeof(text))
		undo_done_names(forced ? p->ask : agreed, forced ?
		    ", forced over the work of " : ", as ", forced ? "" :
		    " agreed", text + n, sizeof(text) - (size_t)n);
	json_object_object_add(ev, "user", json_object_new_string(user));
	json_object_object_add(ev, "text", json_object_new_string(text));
	if (forced) {
		json_object_object_add(ev, "forced", json_object_new_boolean(1));
		json_object_object_add(ev, "over", json_object_get(p->ask));
	}
	if (agreed && json_object_array_length(agreed))
		json_object_object_add(ev, "agreed", json_object_get(agreed));
	return ev;
}

/* Restore what p says, snapshotting the tree first for an undo (so that
 * a redo can come back) into redo.  0 or -errno (logged). */
static int
undo_apply(struct agent *a, struct undo_plan *p, char *redo, size_t size)
{
	int undo = strcmp(p->what, "undo") == 0;
	char db[4200];
	int r;

	if ((r = ws_snapshot_db(a->room_dir, db, sizeof(db))) < 0)
		return r;
	if (undo) {
		snprintf(redo, size, "redo-%lld", p->target.turn);
		r = fsctl_request(db, "drop", redo, UNDO_ACT_TIMEOUT_S);
		if (r == 0 || r == -ENOENT)
			r = fsctl_snapshot(db, 1, redo, UNDO_ACT_TIMEOUT_S,
			    NULL);
		if (r < 0) {
			log_warn("undo of turn %lld: snapshot %s: %s",
			    p->target.turn, redo, strerror(-r));
			return r;
		}
	}
	r = fsctl_request(db, "restore", p->restores, UNDO_ACT_TIMEOUT_S);
	if (r < 0)
		log_warn("%s: restoring %s: %s", p->what, p->restores,
		    strerror(-r));
	return r;
}

/* Act on p for user, and tell the room (forced, agreed: see
 * undo_done_event).  0, or -1 with why (the workspace as it was, or
 * changed and not recorded). */
static int
undo_act(struct agent *a, struct undo_plan *p, const char *user,
    int forced, json_object *agreed, char *why, size_t len)
{
	char redo_name[64] = "";
	int r;

	if (p->name[0])
		log_info("%s: %s snapshot %s%s", user, p->what, p->name,
		    forced ? " (forced)" : "");
	else
		log_info("%s: %s turn %lld%s", user, p->what, p->target.turn,
		    forced ? " (forced)" : "");
	if ((r = undo_apply(a, p, redo_name, sizeof(redo_name))) < 0) {
		snprintf(why, len, "the %s failed: %s; the workspace is as it "
		    "was", p->what, strerror(-r));
		return -1;
	}
	if ((!p->name[0] && (r = room_db_undo_set(a->db, p->target.turn,
	    !p->redo, p->redo ? NULL : redo_name)) < 0) ||
	    (r = room_emit(a, undo_done_event(p, user, forced, agreed), 1)) < 0) {
		snprintf(why, len, "the %s was done, but room.db could not "
		    "record it (%s)", p->what, room_db_strerror(r));
		return -1;
	}
	return 0;
}

/* May c act now?  1, or 0 with the reason sent to c. */
static int
undo_may(struct agent *a, struct conn *c, const char *what)
{
	char doing[32];

	snprintf(doing, sizeof(doing), "%s %s", what,
	    strcmp(what, "restore") == 0 ? "a snapshot" : "a turn");
	if (!room_access_may_manage(a, c, doing))
		return 0;
	if (a->turn) {
		room_error(c, NULL, "the agent is working: %s once its turn has "
		    "ended (or stop it)", what);
		return 0;
	}
	return 1;
}

/* c forces p while a round waits: that round ends, forced when it waits
 * for the same act, else cancelled by this one. */
static void
undo_end_waiting(struct agent *a, struct conn *c, const struct undo_plan *p)
{
	const struct consent_action *w = consent_waiting(a);
	char why[128];

	if (strcmp(w->what, p->what) == 0 && strcmp(w->name, p->name) == 0) {
		consent_end(a, "forced", c->user, NULL);
		return;
	}
	snprintf(why, sizeof(why), "%s forced a /%s meanwhile: ask again",
	    c->user, p->what);
	consent_end(a, "cancelled", NULL, why);
}

/* A confirmed p from c: act, ask, or end a waiting round by force. */
static void
undo_confirmed(struct agent *a, struct conn *c, struct undo_plan *p,
    int force)
{
	struct consent_action act = { .turn = p->target.turn };
	int asks = json_object_array_length(p->ask) > 0;
	json_object *preview;
	char why[512];

	if (asks && !force) {
		snprintf(act.what, sizeof(act.what), "%s", p->what);
		snprintf(act.name, sizeof(act.name), "%s", p->name);
		snprintf(act.user, sizeof(act.user), "%s", c->user);
		preview = undo_preview_event(a, p, 0);
		consent_start(a, c, &act, preview);
		json_object_put(preview);
		return;
	}
	if (force && consent_waiting(a))
		undo_end_waiting(a, c, p);
	else if (consent_waiting(a)) {
		room_error(c, NULL, "a /%s waits for the yes of the people it "
		    "asked: wait for its end, or force this one with /%s !",
		    consent_waiting(a)->what, p->what);
		return;
	}
	if (undo_act(a, p, c->user, force && asks, NULL, why, sizeof(why)) < 0)
		room_error(c, NULL, "%s", why);
}

/* An undo, redo or restore (of name) request from c: the preview, or,
 * with "confirm", the act or the round of consent. */
static void
undo_handle(struct agent *a, struct conn *c, json_object *req,
    const char *what, const char *name)
{
	struct undo_plan p;
	char why[512];

	if (!undo_may(a, c, what))
		return;
	if (undo_plan(a, what, name, c->user, &p, why, sizeof(why)) < 0)
		room_error(c, NULL, "%s", why);
	else if (!json_get_bool(req, "confirm", 0))
		room_send(c, undo_preview_event(a, &p,
		    json_get_bool(req, "force", 0)));
	else
		undo_confirmed(a, c, &p, json_get_bool(req, "force", 0));
	undo_plan_free(&p);
}

void
undo_request(struct agent *a, struct conn *c, json_object *req, int redo)
{
	undo_handle(a, c, req, redo ? "redo" : "undo", NULL);
}

void
undo_restore_request(struct agent *a, struct conn *c, json_object *req,
    const char *name)
{
	undo_handle(a, c, req, "restore", name);
}

/* 1 when every name in list is in agreed or is user. */
static int
undo_all_in(json_object *list, json_object *agreed, const char *user)
{
	size_t n = json_object_array_length(list);

	for (size_t i = 0; i < n; i++) {
		const char *who = json_object_get_string(
		    json_object_array_get_idx(list, i));
		size_t m = json_object_array_length(agreed), j;

		for (j = 0; j < m && strcmp(who, json_object_get_string(
		    json_object_array_get_idx(agreed, j))) != 0; j++)
			;
		if (j == m && strcmp(who, user) != 0)
			return 0;
	}
	return 1;
}

int
undo_consented(struct agent *a, const struct consent_action *act,
    json_object *agreed, char *why, size_t len)
{
	struct undo_plan p;
	int r = -1;

	if (a->turn) {
		snprintf(why, len, "the agent started a turn meanwhile: ask again "
		    "with /%s once it has ended", act->what);
		return -1;
	}
	if (undo_plan(a, act->what, act->name, act->user, &p, why, len) < 0)
		;
	else if (!act->name[0] && p.target.turn != act->turn)
		snprintf(why, len, "the turn to %s is no longer turn %lld: ask "
		    "again with /%s", act->what, act->turn, act->what);
	else if (!undo_all_in(p.ask, agreed, act->user))
		snprintf(why, len, "someone else changed files while the "
		    "request waited: ask again with /%s", act->what);
	else
		r = undo_act(a, &p, act->user, 0, agreed, why, len);
	undo_plan_free(&p);
	return r;
}
