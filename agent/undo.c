/*
 * undo.c: a turn's undo point, its retention, and the marks of people's
 * commands (undo.h).
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
 * Acting on these points (undo, redo, restore) is undo_act.c's.  What
 * this file adds for it: whether each person's command changed the
 * workspace (undo_mark_start/end, in the command's audit row), so that
 * an act asks only the people whose work it really takes back.
 *
 * Blocking: the requests to atrium-fs are synchronous, on the loop, each
 * bounded (UNDO_SNAPSHOT_TIMEOUT_S, UNDO_MARK_TIMEOUT_S): a snapshot
 * copies metadata only, and the count of changes is a counter's read.
 *
 * Retention: after each new undo point the automatic snapshots (turn-ID,
 * redo-ID) beyond the newest a->cfg.undo_keep turns, or older than
 * a->cfg.undo_max_age seconds, are dropped.  Snapshots people named are never
 * touched: they are not in turn_undo.
 *
 * Room for undo points.  Blocks that only snapshots keep count against the
 * workspace's quota (fs/engine/quota.c), so undo points could hold a room full.
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
#include "jsonl.h"
#include "log.h"
#include "room_events.h"
#include "room_db.h"
#include "ws_snapshot.h"

#define UNDO_SNAPSHOT_TIMEOUT_S 5
/* The count of changes is a counter's read: a daemon that takes longer is
 * busy, and the command is then counted as a change. */
#define UNDO_MARK_TIMEOUT_S 1
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

/* The count of changes of the room's workspace into *out: 0 or -errno. */
static int
undo_changes_now(struct agent *a, unsigned long long *out)
{
	char db[4200];
	int r = ws_snapshot_db(a->room_dir, db, sizeof(db));

	return r < 0 ? r : fsctl_changes(db, UNDO_MARK_TIMEOUT_S, out);
}

void
undo_mark_start(struct agent *a, struct undo_mark *m)
{
	m->known = undo_changes_now(a, &m->changes) == 0;
}

void
undo_mark_end(struct agent *a, const struct undo_mark *m, long long audit_id)
{
	unsigned long long now;
	int r;

	if (!m->known || undo_changes_now(a, &now) < 0)
		return;                 /* unknown: counted as a change */
	if ((r = room_db_audit_wrote(a->db, audit_id, now != m->changes)) < 0)
		log_error("audit row %lld: whether it changed the workspace "
		    "was not recorded: %s", audit_id, room_db_strerror(r));
}
