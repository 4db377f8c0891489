/*
 * snapshots.c: named snapshots of the workspace for people (snapshots.h),
 * through atrium-fs's control socket (common/fsctl_client.h).
 *
 * A person's name is checked here as atrium-fs checks it (1..128 of
 * [A-Za-z0-9._:@+-], not starting with '-'), and may not start with
 * "turn-" or "redo-": those are the automatic snapshots of undo.c, which
 * retention drops; a named one is never dropped by the room.
 *
 * Restoring is undo_act.c's (undo_restore_request): like an undo it is
 * previewed first, refused while a turn runs, and asks the people whose
 * work it would take back.  A snapshot taken is a stored `snapshot`
 * event.  The requests block the loop for at most SNAPSHOTS_TIMEOUT_S
 * (metadata-only copies).
 */
#include "snapshots.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "conn.h"
#include "jsonl.h"
#include "log.h"
#include "room_events.h"
#include "room_access_list.h"
#include "undo.h"
#include "ws_snapshot.h"

#define SNAPSHOTS_TIMEOUT_S 30
#define SNAPSHOTS_NAME_MAX 128

/* 1 when name is one a person may give, else 0. */
static int
snapshots_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > SNAPSHOTS_NAME_MAX || name[0] == '-' ||
	    strncmp(name, "turn-", 5) == 0 || strncmp(name, "redo-", 5) == 0)
		return 0;
	return strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789._:@+-") == n;
}

/* What r from atrium-fs means for name, to c. */
static void
snapshots_failed(struct conn *c, const char *what, const char *name, int r)
{
	if (r == -EEXIST)
		room_error(c, NULL, "there is a snapshot named %s already: pick "
		    "another name", name);
	else if (r == -ENOENT)
		room_error(c, NULL, "there is no snapshot named %s: /snapshots "
		    "lists them", name);
	else if (r == -ECONNREFUSED)
		room_error(c, NULL, "this room's workspace takes no snapshots "
		    "(it is not an atrium-fs mount)");
	else
		room_error(c, NULL, "the %s of %s failed: %s", what, name,
		    strerror(-r));
}

/* A snapshot refused for the quota, with the figures, to c: a person's
 * snapshot is kept until someone drops it, so it must fit as if all it
 * names were deleted next (fs/engine/quota.c). */
static void
snapshots_no_room(struct conn *c, const char *name,
    const struct fsctl_usage *u)
{
	room_error(c, NULL, "snapshot %s would not fit in the room's quota: "
	    "%.1f MiB of %.1f MiB are used (%.1f MiB of it kept only by "
	    "snapshots) and it would keep %.1f MiB more (the files no other "
	    "snapshot holds); drop a snapshot (/snapshots lists them) or "
	    "delete files first", name, u->used / 1048576.0,
	    u->quota / 1048576.0, u->snap_only / 1048576.0,
	    u->keep / 1048576.0);
}

/* One snapshot into the list (arg). */
static int
snapshots_add(void *arg, const struct fsctl_snapshot *snap)
{
	json_object *s = json_object_new_object();
	time_t t = (time_t)(snap->created_ns / 1000000000);
	char when[32] = "-";
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	json_object_object_add(s, "name", json_object_new_string(snap->name));
	json_object_object_add(s, "time", json_object_new_string(when));
	json_object_object_add(s, "bytes", json_object_new_int64(
	    (int64_t)(snap->shared + snap->own)));
	json_object_object_add(s, "automatic", json_object_new_boolean(
	    !snapshots_name_ok(snap->name)));
	json_object_array_add(arg, s);
	return 0;
}

/* snapshots: the list to c. */
static void
snapshots_list(const char *db, struct conn *c)
{
	json_object *list = json_object_new_array(), *ev;
	int r = fsctl_list(db, SNAPSHOTS_TIMEOUT_S, snapshots_add, list);

	if (r < 0) {
		json_object_put(list);
		snapshots_failed(c, "listing", "the workspace", r);
		return;
	}
	ev = room_event_new("snapshots");
	json_object_object_add(ev, "snapshots", list);
	room_send(c, ev);
}

/* Record and announce a snapshot c took: a stored snapshot event (so it
 * shows in a replay and /history finds it), with the line the room shows.
 * A restore is undo_act.c's restore_done. */
static void
snapshots_record(struct agent *a, struct conn *c, const char *name)
{
	json_object *ev = room_event_new("snapshot");
	char text[300];
	int r;

	snprintf(text, sizeof(text), "%s took snapshot %s of the workspace",
	    c->user, name);
	json_object_object_add(ev, "action", json_object_new_string("take"));
	json_object_object_add(ev, "name", json_object_new_string(name));
	json_object_object_add(ev, "user", json_object_new_string(c->user));
	json_object_object_add(ev, "text", json_object_new_string(text));
	if ((r = room_emit(a, ev, 1)) < 0)
		room_unrecorded(c, NULL, "the record of this snapshot", r);
}

void
snapshots_request(struct agent *a, struct conn *c, const char *type,
    json_object *req)
{
	const char *name = json_get_string(req, "name");
	int restore = strcmp(type, "restore") == 0;
	struct fsctl_usage why;
	char db[4200];
	int r;

	if (ws_snapshot_db(a->room_dir, db, sizeof(db)) < 0) {
		room_error(c, NULL, "the room's path is too long");
		return;
	}
	if (strcmp(type, "snapshots") == 0) {
		snapshots_list(db, c);
		return;
	}
	if (!restore && !room_access_may_manage(a, c, "take a snapshot"))
		return;
	if (!snapshots_name_ok(name)) {
		room_error(c, NULL, "%s needs \"name\": 1 to %d letters, "
		    "digits and . _ : @ + - (not first), not starting with "
		    "turn- or redo- (the room's own)", type, SNAPSHOTS_NAME_MAX);
		return;
	}
	if (restore) {
		undo_restore_request(a, c, req, name);
		return;
	}
	r = fsctl_snapshot(db, 0, name, SNAPSHOTS_TIMEOUT_S, &why);
	if (r == -EDQUOT && why.quota) {
		snapshots_no_room(c, name, &why);
		return;
	}
	if (r < 0) {
		snapshots_failed(c, type, name, r);
		return;
	}
	log_info("%s took snapshot %s", c->user, name);
	snapshots_record(a, c, name);
}
