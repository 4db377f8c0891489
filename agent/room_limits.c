/*
 * room_limits.c: the room's cgroup and the owner's lowered limits
 * (room_limits.h).  Called by agent_main.c once at start and once at exit, and
 * by requests.c for each `limits` request.
 *
 * The effective limits are computed in one place, reslimits_nest, from
 * the operator's settings and a->owner_limits; this file keeps
 * a->owner_limits, room.db and the room's group in step: a change is
 * written to the group first (so a value the kernel refuses, such as a
 * memory limit below what the room's commands hold now, is refused before
 * anything is stored), then stored with its event; when room.db cannot
 * take it, the group gets the old limits back.
 */
#include "room_limits.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "cgroup.h"
#include "config.h"
#include "fsctl_client.h"
#include "input_limits.h"
#include "jsonl.h"
#include "log.h"
#include "reslimits.h"
#include "room_events.h"
#include "room_access_list.h"
#include "room_db.h"
#include "spawner.h"
#include "ws_snapshot.h"

/* The lowest values an owner may set: below them a room cannot even start
 * a shell. */
#define ROOM_LIMITS_MIN_MEMORY	(16LL << 20)
#define ROOM_LIMITS_MIN_PIDS	8
#define ROOM_LIMITS_MIN_CPUS	10	/* thousandths: 0.01 CPU */
/* Seconds a query waits for atrium-fs's usage figures. */
#define ROOM_LIMITS_USAGE_TIMEOUT_S 2

/* The room's and each command's limits with owner's values (NULL: the
 * operator's alone). */
static void
room_limits_levels(struct agent *a, const struct reslimits *owner,
    struct reslimits *room, struct reslimits *cmd)
{
	struct reslimits total;

	reslimits_nest(&a->cfg, owner, &total, room, cmd);
}

static int room_limits_apply(struct agent *a, const struct reslimits *owner);

/* One of room.db's limit_* keys, 0 when unset or unreadable. */
static long long
room_limits_stored(struct agent *a, const char *key)
{
	char v[32];
	long long n;

	if (room_db_config_get(a->db, key, v, sizeof(v)) != 1 ||
	    sscanf(v, "%lld", &n) != 1 || n < 0)
		return 0;
	return n;
}

/* a->owner_limits from room.db. */
static void
room_limits_load(struct agent *a)
{
	a->owner_limits.memory = room_limits_stored(a, "limit_memory");
	a->owner_limits.pids = (int)room_limits_stored(a, "limit_pids");
	a->owner_limits.cpus = (int)room_limits_stored(a, "limit_cpus");
}

void
room_limits_prepare(struct agent *a)
{
	struct reslimits room, cmd;
	char missing[64], text[128];
	const char *why;
	int swept, r;

	room_limits_levels(a, NULL, &room, &cmd);
	a->sb.cg = &a->cg;
	a->sb.room_limits = room;
	a->sb.limits = cmd;
	if (cgroup_probe(&a->cg, a->cfg.cgroup_root, a->cfg.cgroup_parent) !=
	    CGROUP_ALL) {
		cgroup_missing(a->cg.have, missing, sizeof(missing));
		log_warn("cgroup controllers missing under %s: %s; %s",
		    a->cfg.cgroup_root, missing, a->cfg.no_limits ?
		    "commands run without those limits (--no-limits)" :
		    "commands will be refused");
	}
	swept = cgroup_sweep(&a->cg, a->room, getpid());
	if (swept)
		log_info("removed %d stale command cgroup(s) of this room",
		    swept);
	r = cgroup_make(&a->cg, a->room, &room, &a->room_cg);
	reslimits_format(&room, text, sizeof(text));
	if (r < 0)
		log_warn("cannot apply the room's limits (%s): %s", text,
		    strerror(-r));
	if (geteuid() == 0 && (r = cgroup_delegate(&a->cg, &a->room_cg,
	    a->sb.uid, a->sb.gid, &why)) < 0)
		log_warn("cannot hand the room's group to its uid (%s: %s): "
		    "commands will be refused", why, strerror(-r));
}

void
room_limits_open(struct agent *a)
{
	struct reslimits room, cmd;
	char text[128];
	int r = 0;

	room_limits_load(a);
	if (a->owner_limits.memory || a->owner_limits.pids ||
	    a->owner_limits.cpus)
		r = room_limits_apply(a, &a->owner_limits);
	room_limits_levels(a, &a->owner_limits, &room, &cmd);
	reslimits_format(&room, text, sizeof(text));
	if (r < 0)
		log_warn("cannot apply the room's limits (%s): %s", text,
		    strerror(-r));
	else
		log_info("room limits: %s", text);
}

/* One level's limits as JSON: memory in bytes, pids, cpus as a number of
 * CPUs; null where there is none. */
static json_object *
room_limits_json(const struct reslimits *l)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "memory", l->memory > 0 ?
	    json_object_new_int64(l->memory) : NULL);
	json_object_object_add(o, "pids", l->pids > 0 ?
	    json_object_new_int(l->pids) : NULL);
	json_object_object_add(o, "cpus", l->cpus > 0 ?
	    json_object_new_double(l->cpus / 1000.0) : NULL);
	return o;
}

/* Bytes of the file path-wal as the disk holds them (0: none). */
static long long
room_limits_wal(const char *path)
{
	char wal[4300];
	struct stat sb;

	if ((size_t)snprintf(wal, sizeof(wal), "%s-wal", path) >= sizeof(wal) ||
	    stat(wal, &sb) < 0)
		return 0;
	return (long long)sb.st_size;
}

/* What the room stores against its quotas, for a query's text: the
 * workspace's used bytes (live, and kept only by snapshots) and its
 * database's WAL, and room.db's with its WAL.  Asked of atrium-fs with a
 * short bound, on the loop (as undo.c does): a daemon that does not
 * answer leaves the workspace's part out. */
static void
room_limits_storage(struct agent *a, char *out, size_t size)
{
	struct fsctl_usage u;
	long long db_cap = input_limits_db_cap(a);
	char db[4200], ws[256] = "";
	size_t n;

	if (ws_snapshot_db(a->room_dir, db, sizeof(db)) == 0 &&
	    fsctl_usage(db, ROOM_LIMITS_USAGE_TIMEOUT_S, &u) == 0 && u.quota)
		snprintf(ws, sizeof(ws), "workspace %.1f of %.1f MiB (live %.1f, "
		    "kept only by snapshots %.1f; its WAL %.1f besides); ",
		    u.used / 1048576.0, u.quota / 1048576.0,
		    (u.used - u.snap_only) / 1048576.0, u.snap_only / 1048576.0,
		    room_limits_wal(db) / 1048576.0);
	n = (size_t)snprintf(out, size, "; storage: %sroom.db %.1f MiB (WAL "
	    "%.1f)", ws, input_limits_db_used(a) / 1048576.0,
	    room_db_wal_bytes(a->db) / 1048576.0);
	if (db_cap > 0 && n < size)
		snprintf(out + n, size - n, " of %.1f MiB", db_cap / 1048576.0);
}

/* A `limits` event: the room's limits now, the operator's maximum, and
 * who changed them (by: NULL for a query, whose text also says what the
 * room stores against its quotas). */
static json_object *
room_limits_event(struct agent *a, const char *by)
{
	struct reslimits room, max, cmd;
	json_object *ev = room_event_new("limits"), *now;
	char t1[128], t2[128], store[320] = "", text[900];

	room_limits_levels(a, &a->owner_limits, &room, &cmd);
	room_limits_levels(a, NULL, &max, &cmd);
	now = room_limits_json(&room);
	json_object_object_foreach(now, k, v)
		json_object_object_add(ev, k, json_object_get(v));
	json_object_put(now);
	json_object_object_add(ev, "max", room_limits_json(&max));
	if (by)
		json_object_object_add(ev, "by", json_object_new_string(by));
	reslimits_format(&room, t1, sizeof(t1));
	reslimits_format(&max, t2, sizeof(t2));
	if (by)
		snprintf(text, sizeof(text), "%s set the room's limits: %s "
		    "(the operator's maximum: %s)", by, t1, t2);
	else {
		room_limits_storage(a, store, sizeof(store));
		snprintf(text, sizeof(text), "limits of this room: %s (the "
		    "operator's maximum: %s)%s; the owner may lower them: "
		    "/limits memory SIZE pids N cpus N", t1, t2, store);
	}
	json_object_object_add(ev, "text", json_object_new_string(text));
	return ev;
}

/* Parse one field's value (a string or a number; null or "max": back to
 * the operator's, 0).  0, or -EINVAL. */
static int
room_limits_value(const char *key, json_object *v, long long *out)
{
	const char *text = v ? json_object_get_string(v) : NULL;
	char *end;
	int cpus;

	*out = 0;
	if (!v || strcmp(text, "max") == 0)
		return 0;
	if (!json_object_is_type(v, json_type_string) &&
	    !json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double))
		return -EINVAL;
	if (strcmp(key, "memory") == 0)
		return config_parse_size(text, out);
	if (strcmp(key, "cpus") == 0) {
		if (config_parse_cpus(text, &cpus) < 0)
			return -EINVAL;
		*out = cpus;
		return 0;
	}
	errno = 0;
	*out = strtoll(text, &end, 10);
	return errno || end == text || *end || *out < 0 || *out > 1 << 30 ?
	    -EINVAL : 0;
}

/* room_limits_value, with an explicit 0 refused: "no limit" is not the
 * owner's to give, and "max" says "the operator's" plainly. */
static int
room_limits_value_nonzero(const char *key, json_object *v, long long *out)
{
	int r = room_limits_value(key, v, out);

	if (r == 0 && *out == 0 && v && strcmp(json_object_get_string(v),
	    "max") != 0)
		return -EINVAL;
	return r;
}

/* The value v for key as the user wrote it: "1.0 GiB", "200", "0.5". */
static void
room_limits_show(const char *key, long long v, char *out, size_t outlen)
{
	if (strcmp(key, "memory") == 0 && v >= 1LL << 30)
		snprintf(out, outlen, "%.1f GiB", (double)v / (1 << 30));
	else if (strcmp(key, "memory") == 0)
		snprintf(out, outlen, "%.0f MiB", (double)v / (1 << 20));
	else if (strcmp(key, "cpus") == 0)
		snprintf(out, outlen, "%g", v / 1000.0);
	else
		snprintf(out, outlen, "%lld", v);
}

/* Check v (key's new value, 0: the operator's) against the operator's
 * max and the floor.  0, or -EINVAL with the reason in err. */
static int
room_limits_check(const char *key, long long v, long long max, long long min,
    char *err, size_t errlen)
{
	char a[32], b[32];

	if (v == 0)
		return 0;
	room_limits_show(key, v, a, sizeof(a));
	if (max > 0 && v > max) {
		room_limits_show(key, max, b, sizeof(b));
		snprintf(err, errlen, "%s %s is above this room's maximum of "
		    "%s, set by the operator: the owner may lower the room's "
		    "limits, never raise them; ask for at most %s", key, a, b,
		    b);
		return -EINVAL;
	}
	if (v < min) {
		room_limits_show(key, min, b, sizeof(b));
		snprintf(err, errlen, "%s %s is too low: at least %s", key, a,
		    b);
		return -EINVAL;
	}
	return 0;
}

/* The owner's new limits from req, starting from the current ones, into
 * out.  1 when req names at least one, 0 when none (a query), -EINVAL
 * with the reason in err. */
static int
room_limits_parse(struct agent *a, json_object *req, struct reslimits *out,
    char *err, size_t errlen)
{
	static const char *const keys[] = { "memory", "pids", "cpus" };
	const long long mins[] = { ROOM_LIMITS_MIN_MEMORY,
	    ROOM_LIMITS_MIN_PIDS, ROOM_LIMITS_MIN_CPUS };
	struct reslimits max, cmd;
	long long v, maxv;
	json_object *jv;
	int any = 0;

	*out = a->owner_limits;
	room_limits_levels(a, NULL, &max, &cmd);
	for (int i = 0; i < 3; i++) {
		if (!json_object_object_get_ex(req, keys[i], &jv))
			continue;
		any = 1;
		if (room_limits_value_nonzero(keys[i], jv, &v) < 0) {
			snprintf(err, errlen, "limits: %s must be %s, or \"max\" "
			    "for the operator's", keys[i], i == 0 ? "a size "
			    "(bytes, or with K, M or G: \"512M\")" : i == 1 ?
			    "a whole number of processes" : "a number of CPUs "
			    "(\"0.5\")");
			return -EINVAL;
		}
		maxv = i == 0 ? max.memory : i == 1 ? max.pids : max.cpus;
		if (room_limits_check(keys[i], v, maxv, mins[i], err,
		    errlen) < 0)
			return -EINVAL;
		if (i == 0)
			out->memory = v;
		else if (i == 1)
			out->pids = (int)v;
		else
			out->cpus = (int)v;
	}
	return any;
}

/* Write the room's limits with owner's values into its group and the
 * sandbox template.  0, or -errno from the kernel (the template is then
 * unchanged). */
static int
room_limits_apply(struct agent *a, const struct reslimits *owner)
{
	struct reslimits room, cmd;
	int r;

	room_limits_levels(a, owner, &room, &cmd);
	/* The room's group is root's: the spawner writes it, computing the
	 * levels again from the operator's settings (spawner.h). */
	r = spawner_relimit(a->spawner, owner);
	if (r == -ENOTSUP && a->cfg.no_limits)
		r = 0;	/* the operator runs commands without them */
	if (r < 0)
		return r;
	a->sb.room_limits = room;
	a->sb.limits = cmd;
	return 0;
}

/* Store owner's values in room.db, with a stored `limits` event by user.
 * 0 or -errno (nothing stored, nobody told). */
static int
room_limits_store(struct agent *a, const struct reslimits *owner,
    const char *user)
{
	char v[3][32];
	int r;

	snprintf(v[0], sizeof(v[0]), "%lld", owner->memory);
	snprintf(v[1], sizeof(v[1]), "%d", owner->pids);
	snprintf(v[2], sizeof(v[2]), "%d", owner->cpus);
	if ((r = room_db_config_set(a->db, "limit_memory", v[0], user)) < 0 ||
	    (r = room_db_config_set(a->db, "limit_pids", v[1], user)) < 0 ||
	    (r = room_db_config_set(a->db, "limit_cpus", v[2], user)) < 0)
		return r;
	return room_emit(a, room_limits_event(a, user), 1);
}

/* A change of limits by c: apply, store, announce; undo what was applied
 * when it cannot be stored. */
static void
room_limits_change(struct agent *a, struct conn *c, const char *id,
    const struct reslimits *owner)
{
	struct reslimits old = a->owner_limits;
	char text[128];
	int r;

	if ((r = room_limits_apply(a, owner)) < 0) {
		room_error(c, id, "the room's limits were not changed: %s",
		    r == -EBUSY ? "its commands use more memory than that now; "
		    "stop some and try again" : r == -ENOTSUP ? "this server "
		    "cannot apply cgroup limits (atriumd's log says why)" :
		    strerror(-r));
		return;
	}
	a->owner_limits = *owner;
	if ((r = room_limits_store(a, owner, c->user)) < 0) {
		a->owner_limits = old;
		room_limits_apply(a, &old);
		room_unrecorded(c, id, "the change of the room's limits", r);
		return;
	}
	reslimits_format(&a->sb.room_limits, text, sizeof(text));
	log_info("%s set the room's limits: %s", c->user, text);
}

/* See room_limits.h. */
void
room_limits_request(struct agent *a, struct conn *c, json_object *req)
{
	const char *id = json_get_string(req, "id");
	struct reslimits owner;
	char err[512];
	int r;

	/* Who may comes first: a member learns who the owner is. */
	if ((json_object_object_get_ex(req, "memory", NULL) ||
	    json_object_object_get_ex(req, "pids", NULL) ||
	    json_object_object_get_ex(req, "cpus", NULL)) &&
	    !room_access_may_manage(a, c, "change the room's limits"))
		return;
	r = room_limits_parse(a, req, &owner, err, sizeof(err));
	if (r < 0) {
		room_error(c, id, "%s", err);
		return;
	}
	if (r == 0) {
		room_send(c, room_limits_event(a, NULL));
		return;
	}
	room_limits_change(a, c, id, &owner);
}


void
room_limits_close(struct agent *a)
{
	if (spawner_close_room(a->spawner, a->sock_dev, a->sock_ino) < 0)
		log_debug("the room's group is left to the next start's sweep");
}
