/*
 * access_record.c: the monitor's record of each room's access list
 * (access_record.h).  Called by monitor.c for each access decision (the
 * network process's sshd/net/room_access.c asks it), by room_list.c for
 * listings, by monitor_loop.c at start (the record's migration), by
 * room.c when an agent reports its list, and by room_transfer.c when an
 * import makes a room.
 *
 * Why a record of the monitor's own, and not room.db: room.db is the
 * agent's (its one writer), and the agent parses every hostile byte of
 * its room, so root must not parse room.db; and a cold room (no agent)
 * must still be decided on without starting it.  So the agent tells the
 * monitor its list at each start and after each change (agent/
 * room_access.c, on the watchdog's connection), and the monitor keeps
 * the last one here.  A subverted agent can only change its own room's
 * record, whose room it owns anyway; what it reports is checked like any
 * input (access_record_parse) before anything is written.
 *
 * The record can lag the agent by the time a report takes to arrive (a
 * loop turn of each process); the agent decides again at each hello
 * (agent/room_access_list.c), so a session that raced a change is judged by
 * the room itself, as before.
 *
 * Workload: a read per decision and per room listed (one small file:
 * open, read, parse); a write only when a report differs from the
 * record (rare: people change access by hand).
 */
#include "access_record.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access_db.h"
#include "jsonl.h"
#include "log.h"
#include "names.h"
#include "protocol.h"
#include "util.h"

/* The owner field: a valid name, or null/absent for none.  0 or -EINVAL. */
static int
record_owner(json_object *o, struct access_list *out)
{
	json_object *v;

	if (!json_object_object_get_ex(o, "owner", &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_string) ||
	    !user_name_valid(json_object_get_string(v)))
		return -EINVAL;
	snprintf(out->owner, sizeof(out->owner), "%s",
	    json_object_get_string(v));
	return 0;
}

/* The members field: an array of valid, distinct names, not the owner,
 * at most ACCESS_MAX_MEMBERS.  0 or -EINVAL. */
static int
record_members(json_object *o, struct access_list *out)
{
	json_object *arr;
	size_t n;

	if (!json_object_object_get_ex(o, "members", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		return -EINVAL;
	n = json_object_array_length(arr);
	if (n > ACCESS_MAX_MEMBERS)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		json_object *m = json_object_array_get_idx(arr, i);
		const char *name = json_object_is_type(m, json_type_string) ?
		    json_object_get_string(m) : NULL;

		if (!name || !user_name_valid(name) ||
		    strcmp(name, out->owner) == 0 ||
		    access_list_add(out, name) < 0)
			return -EINVAL;
	}
	return 0;
}

/* See access_record.h. */
int
access_record_parse(json_object *o, struct access_list *out)
{
	const char *vis = json_get_string(o, "visibility");

	access_list_init(out);
	if (!o || !vis || access_visibility_parse(vis, &out->visibility) < 0 ||
	    record_owner(o, out) < 0 || record_members(o, out) < 0) {
		access_list_init(out);
		return -EINVAL;
	}
	return 0;
}

/* See access_record.h. */
int
access_record_fields(json_object *o, const struct access_list *l)
{
	json_object *m = json_object_new_array();

	if (!m)
		return -ENOMEM;
	json_object_object_add(o, "owner", l->owner[0] ?
	    json_object_new_string(l->owner) : NULL);
	json_object_object_add(o, "visibility",
	    json_object_new_string(access_visibility_name(l->visibility)));
	for (int i = 0; i < l->nmembers; i++)
		json_object_array_add(m, json_object_new_string(l->members[i]));
	json_object_object_add(o, "members", m);
	return 0;
}

/* l as the record's JSON object (NULL when out of memory). */
static json_object *
record_json(const struct access_list *l)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "version",
	    json_object_new_int(ACCESS_RECORD_VERSION));
	if (access_record_fields(o, l) < 0) {
		json_object_put(o);
		return NULL;
	}
	return o;
}

/* See access_record.h. */
int
access_record_read(const char *room_dir, struct access_list *out)
{
	char path[PATH_MAX + 80], *text = NULL;
	const char *err = NULL;
	json_object *o;
	size_t len;
	int fd, r;

	access_list_init(out);
	snprintf(path, sizeof(path), "%s/%s", room_dir, ACCESS_RECORD_NAME);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		log_error("%s: %s", path, strerror(errno));
		return -EIO;
	}
	r = read_small_fd(fd, ACCESS_RECORD_MAX, &text, &len);
	close(fd);
	if (r < 0) {
		log_error("%s: %s", path, strerror(-r));
		return -EIO;
	}
	while (len > 0 && text[len - 1] == '\n')
		len--;
	o = jsonl_parse_object(text, len, &err);
	free(text);
	if (!o || json_get_int(o, "version", 0) != ACCESS_RECORD_VERSION ||
	    access_record_parse(o, out) < 0) {
		log_error("%s: not a room access record (%s); the room is "
		    "refused until its agent reports its list again", path,
		    err ? err : "bad field");
		json_object_put(o);
		return -EIO;
	}
	json_object_put(o);
	return 0;
}

/* 1 when a and b say the same. */
static int
record_same(const struct access_list *a, const struct access_list *b)
{
	if (strcmp(a->owner, b->owner) != 0 || a->visibility != b->visibility ||
	    a->nmembers != b->nmembers)
		return 0;
	for (int i = 0; i < a->nmembers; i++)
		if (strcmp(a->members[i], b->members[i]) != 0)
			return 0;
	return 1;
}

/* See access_record.h. */
int
access_record_write(const char *room_dir, const struct access_list *l)
{
	struct access_list now;
	json_object *o;
	const char *text;
	char *line;
	int r;

	if (access_record_read(room_dir, &now) == 0 && record_same(&now, l))
		return 0;
	if (!(o = record_json(l)))
		return -ENOMEM;
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	if (!text || asprintf(&line, "%s\n", text) < 0) {
		json_object_put(o);
		return -ENOMEM;
	}
	json_object_put(o);
	r = write_file_atomic(room_dir, ACCESS_RECORD_NAME, line, strlen(line),
	    0600, 1);
	free(line);
	if (r < 0) {
		log_error("%s/%s: cannot write the room's access record: %s",
		    room_dir, ACCESS_RECORD_NAME, strerror(-r));
		return r;
	}
	return 1;
}

/* A room without a record: see access_record.h. */
static void
record_missing(const char *room_dir, int migrate, struct access_list *out)
{
	char path[PATH_MAX + 80];
	struct stat sb;

	access_list_init(out);
	snprintf(path, sizeof(path), "%s/%s", room_dir, ROOM_DB_NAME);
	if (lstat(path, &sb) < 0) {
		if (errno == ENOENT)
			return;		/* being made: open, no owner */
	} else if (S_ISREG(sb.st_mode) && sb.st_uid == 0 &&
	    access_db_read(room_dir, out) == 0) {
		if (migrate && access_record_write(room_dir, out) > 0)
			log_info("%s: access list recorded from room.db (made "
			    "before %s existed)", room_dir, ACCESS_RECORD_NAME);
		return;
	}
	access_list_init(out);
	out->visibility = ACCESS_PRIVATE;
}

/* Only the names of rooms. */
static int
record_room_filter(const struct dirent *d)
{
	return room_name_valid(d->d_name);
}

/* See access_record.h. */
void
access_record_migrate(const char *data)
{
	char dir[PATH_MAX + 80];
	struct dirent **names = NULL;
	struct access_list l;
	int n;

	snprintf(dir, sizeof(dir), "%s/rooms", data);
	n = scandir(dir, &names, record_room_filter, alphasort);
	for (int i = 0; i < n; i++) {
		snprintf(dir, sizeof(dir), "%s/rooms/%s", data,
		    names[i]->d_name);
		access_record_get(dir, 1, &l);
		free(names[i]);
	}
	free(names);
}

/* See access_record.h. */
int
access_record_get(const char *room_dir, int migrate, struct access_list *out)
{
	int r = access_record_read(room_dir, out);

	if (r == -ENOENT) {
		record_missing(room_dir, migrate, out);
		return 0;
	}
	return r;
}
