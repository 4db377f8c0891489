/*
 * room_list.h: the rooms a user may enter (room_list.c), for the monitor
 * and for `atriumd room list`.  Who may enter a room is common/access.h's
 * rule over the room's access record (access_record.h).
 */
#ifndef ATRIUMD_ROOM_LIST_H
#define ATRIUMD_ROOM_LIST_H

#include <json-c/json.h>

struct rooms;

#define ROOM_LIST_MAX	1000	/* rooms in one listing */

/* The rooms user (admin: every room) may enter among those in DATA, as a
 * `rooms` event (rooms: [{room, owner, visibility, members, state}], by
 * name); state comes from rs ("stopped" for all when rs is NULL: atriumd
 * is not running).  NULL when out of memory. */
json_object *room_list(const char *data, const struct rooms *rs,
    const char *user, int admin);

#endif
