/*
 * room_list.c: the rooms a user may enter, as the room protocol's `rooms`
 * event (room_list.h).  Called by monitor.c (the network process's
 * `rooms` request), ctl.c (the operator socket's listing) and room_cli.c
 * (`atriumd room list` while atriumd is stopped: no rooms, nothing
 * recorded).  It reads DATA/rooms and each room's access record, which
 * only root may do: it runs in the monitor, never in the network process.
 *
 * Workload: one scandir and one small file per room, at most
 * ROOM_LIST_MAX rooms listed; the caller decides whether that may run on
 * its loop.
 */
#include "room_list.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "access.h"
#include "access_record.h"
#include "names.h"
#include "room.h"

#define ROOM_LIST_PATH	(PATH_MAX + 320)	/* DATA/rooms/ROOM */

/* One room of a listing. */
static json_object *
room_list_entry(const struct rooms *rs, const char *room,
    const struct access_list *l)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "room", json_object_new_string(room));
	access_record_fields(o, l);
	json_object_object_add(o, "state", json_object_new_string(
	    rs && rooms_running(rs, room) ? "running" : "stopped"));
	return o;
}

/* Only the names of rooms. */
static int
room_list_filter(const struct dirent *d)
{
	return room_name_valid(d->d_name);
}

/* See room_list.h. */
json_object *
room_list(const char *data, const struct rooms *rs, const char *user,
    int admin)
{
	json_object *ev = json_object_new_object(), *arr;
	char dir[ROOM_LIST_PATH];
	struct dirent **names = NULL;
	struct access_list l;
	int n, listed = 0;

	if (!ev || !(arr = json_object_new_array())) {
		json_object_put(ev);
		return NULL;
	}
	json_object_object_add(ev, "type", json_object_new_string("rooms"));
	snprintf(dir, sizeof(dir), "%s/rooms", data);
	n = scandir(dir, &names, room_list_filter, alphasort);
	for (int i = 0; i < n; i++) {
		const char *room = names[i]->d_name;

		snprintf(dir, sizeof(dir), "%s/rooms/%s", data, room);
		if (listed < ROOM_LIST_MAX &&
		    !(rs && rooms_deleting(rs, room)) &&
		    access_record_get(dir, rs != NULL, &l) == 0 &&
		    access_may_enter(&l, user, admin)) {
			json_object_array_add(arr, room_list_entry(rs, room,
			    &l));
			listed++;
		}
		free(names[i]);
	}
	free(names);
	json_object_object_add(ev, "rooms", arr);
	if (listed == ROOM_LIST_MAX)
		json_object_object_add(ev, "truncated",
		    json_object_new_boolean(1));
	return ev;
}
