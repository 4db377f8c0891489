/*
 * room_access.c: atriumd's room access decisions (room_access.h).  Called
 * by session.c when a channel asks for exec, a subsystem or the chat
 * (room_access_admit, before the room is started), and for the `rooms`
 * and `delete` requests of the chat and the atrium subsystem.  These
 * decisions spare the monitor and the agent requests that would be
 * refused, and give the client its words; they are not the only guard:
 * the monitor decides again from its own reading of the key's line
 * (monitor_identity.h), and writes the agent's hello itself.
 *
 * Every decision reads the room's access record, the monitor's own file
 * that the room's agent keeps current (access_record.h says why that, and
 * not room.db or a question to the agent), and the key options the
 * session authenticated with.  The network process cannot read DATA: the
 * monitor reads the record for it (monitor_ask_access, monitor_ask_rooms)
 * and lists rooms itself (room_list.h).  The room's name is the only thing
 * the client chooses, and it only says which list applies.
 *
 * A room that does not exist yet is created by its first use; a key with
 * rooms="PATTERNS" may create only rooms whose name matches, so such a
 * use is refused here before anything is made.  The creator becomes the
 * owner when its agent gets the first hello (may_create, which the
 * monitor writes).
 *
 * What a refused client reads names no owner and is the same for a
 * private room and for one that does not exist (room_access_refuse): a
 * key outside a room learns from it neither whose the room is nor that
 * it is there (a key that may create the room still sees a taken name
 * refused instead of made, which nothing can hide).  The log keeps both
 * for the operator.
 */
#include "room_access.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "jsonl.h"
#include "log.h"
#include "monitor_ask.h"
#include "server.h"
#include "session.h"

/* Refuse c's request in its room: a room that does not exist and one
 * that is private get the same words (access_refusal), so that only the
 * log, for the operator, says which it was and who owns the room. */
static void
room_access_refuse(struct chan *c)
{
	char msg[1024];

	access_refusal(c->s->room, c->s->user, c->s->opts.rooms, msg,
	    sizeof(msg));
	chan_refuse(c, "%s", msg);
}

/* The first use of a room: may this key create it?  1, or 0 refused. */
static int
room_access_admit_new(struct chan *c, const char *what)
{
	struct session *s = c->s;

	if (authkey_opts_may_create(&s->opts, s->room))
		return 1;
	log_info("session %lu: %s refused %s in room '%s': it does not exist "
	    "and the key may create only rooms=\"%s\"", s->num, s->user, what,
	    s->room, s->opts.rooms);
	room_access_refuse(c);
	return 0;
}

/* See room_access.h. */
int
room_access_admit(struct chan *c, const char *what)
{
	struct session *s = c->s;
	struct access_list l;
	int r = monitor_ask_access(s->srv, s->room, &l);

	if (r == 0)
		return room_access_admit_new(c, what);
	if (r < 0) {
		log_warn("session %lu: %s refused %s in room '%s': its access "
		    "list cannot be read", s->num, s->user, what, s->room);
		chan_refuse(c, "atrium: cannot read who may enter room '%s' "
		    "now; try again in a moment, and tell the server's operator "
		    "if it persists.", s->room);
		return 0;
	}
	if (access_may_enter(&l, s->user, s->opts.admin))
		return 1;
	log_info("session %lu: %s refused %s in room '%s': private, owner %s, "
	    "not a member", s->num, s->user, what, s->room,
	    l.owner[0] ? l.owner : "(none)");
	room_access_refuse(c);
	return 0;
}

/* See room_access.h. */
int
room_access_delete(struct server *srv, const struct session *s,
    const char *room, char *msg, size_t len)
{
	struct access_list l;
	char bye[256];

	if (!room || strcmp(room, s->room) != 0) {
		snprintf(msg, len, "to delete this room, name it: \"%s\" (a "
		    "session deletes only its own room)", s->room);
		return -EINVAL;
	}
	if (monitor_ask_access(srv, room, &l) <= 0) {
		snprintf(msg, len, "cannot read who owns room '%s' now; try "
		    "again", room);
		return -EIO;
	}
	if (!access_may_manage(&l, s->user, s->opts.admin)) {
		access_not_owner(&l, "delete it", msg, len);
		log_info("session %lu: %s may not delete room '%s': refused",
		    s->num, s->user, room);
		return -EPERM;
	}
	log_info("session %lu: %s deletes room '%s'", s->num, s->user, room);
	snprintf(bye, sizeof(bye), "atrium: room '%s' was deleted by %s",
	    room, s->user);
	server_end_room(srv, room, bye);
	return monitor_ask_delete(s);
}

/* See room_access.h. */
int
room_access_request(struct session *s, json_object *req, json_object **ev,
    char *msg, size_t len)
{
	const char *type = json_get_string(req, "type");

	*ev = NULL;
	if (!type || strcmp(type, "delete") != 0)
		return 0;
	return room_access_delete(s->srv, s, json_get_string(req, "room"), msg,
	    len) < 0 ? -1 : 1;
}
