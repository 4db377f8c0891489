/*
 * room_access_list.h: the room's access list as atrium-agent keeps it: who
 * owns the room, who is a member, whether it is open or private
 * (common/access.h decides; room.db's access table and config key
 * "visibility" hold it) and who is kept out for a while by a kick
 * (config key "kicked:USER").  Called by requests.c at each hello and for the
 * requests invite, kick, remove, visibility and access, and by
 * settings.c before a config change.
 */
#ifndef ATRIUM_AGENT_ROOM_ACCESS_H
#define ATRIUM_AGENT_ROOM_ACCESS_H

#include <json-c/json.h>

struct agent;
struct conn;

/* At hello (c->user and c->admin set, c still CONN_NEW): claim the room
 * for c->user when it has no owner and the hello says the key may create
 * it (may_create), then decide entry.  0 when c may enter; -EACCES when
 * not: an access_denied event is queued to c and c ends once it is sent. */
int room_access_hello(struct agent *a, struct conn *c, json_object *req);

/* Report the access list as committed to atriumd's monitor: an `access`
 * line (owner, visibility, members; no seq) to the monitor connection to,
 * or to every one when to is NULL.  Nothing when room.db cannot be read. */
void room_access_report(struct agent *a, struct conn *to);

/* Add the room's owner and visibility to ev (welcome). */
void room_access_describe(struct agent *a, json_object *ev);

/* How long a kick keeps its person out of the room. */
#define ROOM_KICK_SECONDS	300
#define ROOM_KICK_REASON	201	/* bytes of a kick's reason, and NUL */

/* invite, kick, remove, visibility, access: 1 when type was one of them
 * (handled, answered or refused with an error), 0 otherwise. */
int room_access_request(struct agent *a, struct conn *c, const char *type,
    json_object *req);

/* May c change the room's settings?  1, or 0 with an error sent to c
 * naming the owner. */
int room_access_may_manage(struct agent *a, struct conn *c,
    const char *what);

#endif
