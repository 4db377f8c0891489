/*
 * room_access.h: atriumd's room access decisions for a session: may its
 * user enter the room it named (and create it, when it does not exist
 * yet), may it delete its room; which rooms it may list is the monitor's
 * answer (room_list.h).  The rules are common/access.h's, applied by the
 * monitor to its record (access_record.h) for the session's user and key
 * each time (monitor_ask_access): this side gets the decision, and the
 * room's owner and members only when the user may enter the room; who
 * the user is comes from authorized_keys (the key's line: atrium-admin,
 * rooms=), never from the client.
 */
#ifndef ATRIUMD_ROOM_ACCESS_H
#define ATRIUMD_ROOM_ACCESS_H

#include <json-c/json.h>

struct chan;
struct server;
struct session;

/* May c's session use its room for what ("exec", "chat"...)?  1 yes;
 * 0 refused: the reason is on the client's stderr (exit status 1) and
 * in the log. */
int room_access_admit(struct chan *c, const char *what);

/* c's room, asked only where it lives (use_look), exists on no node of
 * the cluster: refused as room_access_admit refuses a room that is not
 * there. */
void room_access_absent(struct chan *c);

/* Delete room (which must be s's room: the confirmation), when s's user
 * owns it or is an admin: its sessions end, its processes stop, its
 * directories go.  0 (deletion under way), or -errno with why in msg. */
int room_access_delete(struct server *srv, const struct session *s,
    const char *room, char *msg, size_t len);

/* atriumd's own request `delete` of the room protocol, for s (the chat
 * and the atrium subsystem both take it; `rooms`, the other, is asked of
 * the monitor without waiting: monitor_ask_rooms).  0 when req is not
 * delete; 1 when handled (*ev NULL); -1 when refused, with why in msg. */
int room_access_request(struct session *s, json_object *req,
    json_object **ev, char *msg, size_t len);

#endif
