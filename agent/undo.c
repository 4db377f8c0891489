/*
 * undo.c: a turn's undo point, and undo and redo (undo.h).
 *
 * The undo point: before the first call of a turn that may write, the
 * workspace is snapshotted as turn-ID through atrium-fs's control socket
 * (common/fsctl_client.h) and the row in room.db's turn_undo names it, in the same
 * commit as the call's journal start.  A snapshot that already exists
 * (the agent died between taking it and that commit) is the same point
 * and is used.  A workspace that is not an atrium-fs mount has no
 * snapshots: the row then names none, and that turn cannot be undone.
 * Failing to snapshot does not stop the call: the turn goes on, logged,
 * without an undo point.
 *
 * Undo restores the latest not yet undone turn's snapshot, after taking
 * redo-ID of the tree as it is (what a redo restores); repeated, it goes
 * back turn by turn.  Before either, the preview says what it changes
 * (the diff of the tree against the snapshot it restores) and, for an
 * undo, whose own commands since the turn's first write it takes back
 * too (room.db's audit).  Only someone who may manage the room may do
 * either (room_access_may_manage), and never while a turn runs.
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
 * So a redo never throws away work done after the undo, and its preview
 * names nobody's commands: it takes none back.
 *
 * Blocking: the requests to atrium-fs are synchronous, on the loop, each
 * bounded (UNDO_SNAPSHOT_TIMEOUT_S, UNDO_RESTORE_TIMEOUT_S): a snapshot
 * and a restore copy metadata only, and an undo is a rare, deliberate act.
 *
 * Retention: after each new undo point the automatic snapshots (turn-ID,
 * redo-ID) beyond the newest a->cfg.undo_keep turns, or older than
 * a->cfg.undo_max_age seconds, are dropped.  Snapshots people named are never
 * touched: they are not in turn_undo.
 *
 * Room for undo points.  Blocks that only snapshots keep count against the
 * workspace's quota (fs/quota.c), so undo points could hold a room full.
 * Undo points are taken as "undo-snapshot": atrium-fs takes them even in a
 * full room (an undo needs its redo point most when the room is full),
 * and in exchange the agent drops them, oldest first, whenever the room
 * is full (less than UNDO_ROOM_FRACTION of the quota left) and snapshots
 * hold some of it, telling the room each time ("dropped the undo point of
 * turn N to make room").  It does so just before it takes a new undo
 * point: that is the one moment the agent itself is about to make the
 * room need more, it is already talking to atrium-fs then, and a write
 * refused earlier in a turn has already failed (its tool result says the
 * workspace is full), so dropping there would not save it.  atrium-fs
 * never drops a snapshot by itself: room.db's turn_undo names them, and
 * only the agent keeps the two in step.
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
#include "jsonl.h"
#include "log.h"
#include "room.h"
#include "room_access.h"
#include "room_db.h"
#include "utf8.h"
#include "ws_snapshot.h"

#define UNDO_SNAPSHOT_TIMEOUT_S 5
#define UNDO_RESTORE_TIMEOUT_S 30
/* The room is full, for dropping undo points, with less than 1/N of its
 * quota left. */
#define UNDO_ROOM_FRACTION 16

/* Take turn's snapshot into name (size bytes); 0, or -errno logged
 * (name then empty: the turn has no undo point). */
static int
undo_snapshot(struct agent *a, long long turn, char *name, size_t size)
{
	char db[4200];
	int r;

	snprintf(name, size, "turn-%lld", turn);
	if ((r = ws_snapshot_db(a->room_dir, db, sizeof(db))) == 0)
		r = fsctl_snapshot(db, 1, name, UNDO_SNAPSHOT_TIMEOUT_S, NULL);
	if (r == -EEXIST)                 /* taken before a crash: the same */
		r = 0;
	if (r == -ECONNREFUSED)
		log_info("turn %lld: the workspace is not an atrium-fs mount: "
		    "no undo point", turn);
	else if (r < 0)
		log_warn("turn %lld: the workspace could not be snapshotted (%s):"
		    " it cannot be undone", turn, strerror(-r));
	if (r < 0)
		name[0] = '\0';
	return r;
}

/* Drop turn's undo point snap (and its redo point) from db and room.db,
 * for why.  0 or -1 (logged). */
static int
undo_drop_point(struct agent *a, const char *db, long long turn,
    const char *snap, const char *why)
{
	char redo[64];
	int r = fsctl_request(db, "drop", snap, UNDO_SNAPSHOT_TIMEOUT_S);

	if (r < 0 && r != -ENOENT) {
		log_warn("%s: dropping snapshot %s: %s", why, snap, strerror(-r));
		return -1;
	}
	snprintf(redo, sizeof(redo), "redo-%lld", turn);
	fsctl_request(db, "drop", redo, UNDO_SNAPSHOT_TIMEOUT_S);
	if (room_db_undo_retire(a->db, turn) < 0)
		return -1;
	log_info("%s: dropped the undo point of turn %lld", why, turn);
	return 0;
}

/* Drop the automatic snapshots retention no longer keeps. */
static void
undo_retention(struct agent *a)
{
	char db[4200], snap[160], before[40];
	time_t t = time(NULL) - a->cfg.undo_max_age;
	long long turn;
	struct tm tm;

	if (ws_snapshot_db(a->room_dir, db, sizeof(db)) < 0 ||
	    !gmtime_r(&t, &tm))
		return;
	strftime(before, sizeof(before), "%Y-%m-%dT%H:%M:%S.000Z", &tm);
	while (room_db_undo_expired(a->db, a->cfg.undo_keep, before, &turn, snap,
	    sizeof(snap)) == 1)
		if (undo_drop_point(a, db, turn, snap, "retention") < 0)
			return;
}

/* 1 when the workspace of db is full (see the head) and snapshots hold
 * some of it, else 0 (also when its figures cannot be had). */
static int
undo_room_full(const char *db)
{
	struct fsctl_usage u;

	if (fsctl_usage(db, UNDO_SNAPSHOT_TIMEOUT_S, &u) < 0 || !u.quota ||
	    !u.snap_only)
		return 0;
	return u.used + u.quota / UNDO_ROOM_FRACTION >= u.quota;
}

/* While the room is full, drop undo points oldest first and tell the
 * room (see the head). */
static void
undo_make_room(struct agent *a)
{
	char db[4200], snap[160];
	long long turn;

	if (ws_snapshot_db(a->room_dir, db, sizeof(db)) < 0)
		return;
	while (undo_room_full(db) &&
	    room_db_undo_expired(a->db, 0, "", &turn, snap, sizeof(snap)) == 1) {
		if (undo_drop_point(a, db, turn, snap, "quota") < 0)
			return;
		room_notice(a, "dropped the undo point of turn %lld to make room "
		    "(the workspace is at its quota)", turn);
	}
}

int
undo_before_write(struct agent *a, long long turn, int step, int idx,
    const char *tool)
{
	char name[64] = "";
	int s, i, r = room_db_undo_get(a->db, turn, &s, &i);

	if (r == 0) {
		undo_make_room(a);
		undo_snapshot(a, turn, name, sizeof(name));
	}
	r = room_db_undo_mark(a->db, turn, step, idx, tool,
	    name[0] ? name : NULL);
	if (r < 0)
		log_error("turn %lld: its undo point could not be recorded: %s",
		    turn, room_db_strerror(r));
	else if (name[0])
		undo_retention(a);      /* counts the point just recorded */
	return r;
}

/* What an undo or redo changes: the lists of the preview and the answer. */
struct undo_plan {
	int redo;
	struct room_db_undo target;
	json_object *added, *removed, *modified, *users;
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

static int
undo_plan_user(void *arg, const char *user)
{
	json_object_array_add(((struct undo_plan *)arg)->users,
	    json_object_new_string(user));
	return 0;
}

/* The snapshot p restores: redo-ID for a redo, turn-ID for an undo. */
static const char *
undo_plan_restores(const struct undo_plan *p)
{
	return p->redo ? p->target.redo : p->target.snapshot;
}

static void
undo_plan_free(struct undo_plan *p)
{
	json_object_put(p->added);
	json_object_put(p->removed);
	json_object_put(p->modified);
	json_object_put(p->users);
}

/* r, atrium-fs's answer to a diff against snap for p, logged and to c. */
static void
undo_diff_failed(struct conn *c, const struct undo_plan *p,
    const char *snap, int r)
{
	log_warn("%s of turn %lld: diff against %s: %s", p->redo ? "redo" :
	    "undo", p->target.turn, snap, strerror(-r));
	room_error(c, NULL, "the workspace could not be compared with "
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
 * (its turn-ID snapshot), else -1 with the error sent to c, naming a
 * change a redo would throw away. */
static int
undo_unchanged(const char *db, struct conn *c, struct undo_plan *p)
{
	struct undo_changes ch = { "", 0 };
	char *first;
	int more = 0, r;

	r = fsctl_diff(db, p->target.snapshot, UNDO_RESTORE_TIMEOUT_S,
	    undo_changes_entry, &ch, &more);
	if (r < 0) {
		undo_diff_failed(c, p, p->target.snapshot, r);
		return -1;
	}
	if (ch.n == 0 && !more)
		return 0;
	first = undo_clean_path(ch.first);
	room_error(c, NULL, "there is nothing to redo: the workspace changed "
	    "since the agent's turn %lld was undone (%s%s), and a redo would "
	    "throw that change away", p->target.turn, first ? first : "?",
	    ch.n > 1 || more ? " and more" : "");
	free(first);
	return -1;
}

/* Fill p for an undo (redo 0) or a redo.  0, or -1 with an error sent
 * to c. */
static int
undo_plan(struct agent *a, struct conn *c, int redo, struct undo_plan *p)
{
	char db[4200];
	int r;

	memset(p, 0, sizeof(*p));
	p->redo = redo;
	p->added = json_object_new_array();
	p->removed = json_object_new_array();
	p->modified = json_object_new_array();
	p->users = json_object_new_array();
	if ((r = room_db_undo_target(a->db, redo, &p->target)) <= 0) {
		room_error(c, NULL, r < 0 ? "room.db could not be read" :
		    redo ? "there is nothing to redo" :
		    "there is no turn of the agent's to undo");
		return -1;
	}
	if (ws_snapshot_db(a->room_dir, db, sizeof(db)) < 0) {
		room_error(c, NULL, "the room's path is too long");
		return -1;
	}
	if (redo && undo_unchanged(db, c, p) < 0)
		return -1;
	r = fsctl_diff(db, undo_plan_restores(p), UNDO_RESTORE_TIMEOUT_S,
	    undo_plan_entry, p, &p->more);
	if (r < 0) {
		undo_diff_failed(c, p, undo_plan_restores(p), r);
		return -1;
	}
	/* A redo takes back nobody's changes: there are none to take. */
	if (!redo && room_db_undo_people(a->db, p->target.since,
	    undo_plan_user, p) < 0) {
		room_error(c, NULL, "room.db could not be read");
		return -1;
	}
	return 0;
}

/* The event for p: type undo_preview, undo_done, redo_preview, redo_done. */
static json_object *
undo_event(struct undo_plan *p, const char *what)
{
	char type[32];
	json_object *ev;

	snprintf(type, sizeof(type), "%s_%s", p->redo ? "redo" : "undo", what);
	ev = room_event_new(type);
	json_object_object_add(ev, "turn", json_object_new_int64(p->target.turn));
	json_object_object_add(ev, "added", json_object_get(p->added));
	json_object_object_add(ev, "removed", json_object_get(p->removed));
	json_object_object_add(ev, "modified", json_object_get(p->modified));
	json_object_object_add(ev, "users", json_object_get(p->users));
	if (p->more)
		json_object_object_add(ev, "truncated",
		    json_object_new_boolean(1));
	return ev;
}

/* undo_done or redo_done: the lists and who did it. */
static json_object *
undo_done_event(struct undo_plan *p, const char *user)
{
	json_object *ev = undo_event(p, "done");

	json_object_object_add(ev, "user", json_object_new_string(user));
	return ev;
}

/* Restore what p says, snapshotting the tree first for an undo (so that
 * a redo can come back).  0 or -errno (logged). */
static int
undo_apply(struct agent *a, struct undo_plan *p, char *redo, size_t size)
{
	long long turn = p->target.turn;
	char db[4200];
	int r;

	if ((r = ws_snapshot_db(a->room_dir, db, sizeof(db))) < 0)
		return r;
	if (!p->redo) {
		snprintf(redo, size, "redo-%lld", turn);
		r = fsctl_request(db, "drop", redo, UNDO_SNAPSHOT_TIMEOUT_S);
		if (r == 0 || r == -ENOENT)
			r = fsctl_snapshot(db, 1, redo, UNDO_RESTORE_TIMEOUT_S,
			    NULL);
		if (r < 0) {
			log_warn("undo of turn %lld: snapshot %s: %s", turn, redo,
			    strerror(-r));
			return r;
		}
	}
	r = fsctl_request(db, "restore", undo_plan_restores(p),
	    UNDO_RESTORE_TIMEOUT_S);
	if (r < 0)
		log_warn("%s of turn %lld: restoring %s: %s", p->redo ? "redo" :
		    "undo", turn, undo_plan_restores(p), strerror(-r));
	return r;
}

void
undo_request(struct agent *a, struct conn *c, json_object *req, int redo)
{
	struct undo_plan p;
	char redo_name[64] = "";
	int r;

	if (!room_access_may_manage(a, c, redo ? "redo a turn" :
	    "undo a turn"))
		return;
	if (a->turn) {
		room_error(c, NULL, "the agent is working: %s once its turn has "
		    "ended (or stop it)", redo ? "redo" : "undo");
		return;
	}
	if (undo_plan(a, c, redo, &p) < 0) {
		undo_plan_free(&p);
		return;
	}
	if (!json_get_bool(req, "confirm", 0)) {
		room_send(c, undo_event(&p, "preview"));
		undo_plan_free(&p);
		return;
	}
	log_info("%s %s turn %lld", c->user, redo ? "redoes" : "undoes",
	    p.target.turn);
	if ((r = undo_apply(a, &p, redo_name, sizeof(redo_name))) < 0)
		room_error(c, NULL, "the %s failed: %s; the workspace is as it "
		    "was", redo ? "redo" : "undo", strerror(-r));
	else if ((r = room_db_undo_set(a->db, p.target.turn, !redo,
	    redo ? NULL : redo_name)) < 0 ||
	    (r = room_emit(a, undo_done_event(&p, c->user), 1)) < 0)
		room_unrecorded(c, NULL, redo ? "your redo" : "your undo", r);
	undo_plan_free(&p);
}
