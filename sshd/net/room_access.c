/*
 * room_access.c: atriumd's room access decisions (room_access.h).  Called
 * by chan_requests.c when a channel asks for exec, a subsystem or the chat
 * (room_access_admit, before the room is started), and for the `rooms`
 * and `delete` requests of the chat (sshd/chat/chat.c) and the atrium
 * subsystem (control.c).  These
 * decisions spare the monitor and the agent requests that would be
 * refused, and give the client its words; they are not the only guard:
 * the monitor decides again from its own reading of the key's line
 * (monitor_identity.h), and writes the agent's hello itself.
 *
 * Every decision is the monitor's (monitor_ask_access): it reads the
 * room's access record, its own file that the room's agent keeps current
 * (access_record.h says why that, and not room.db or a question to the
 * agent), and its own parse of the key's line, and answers for the
 * session's user and key whether the room exists and whether that user
 * may enter, manage or create it.  The room's owner and members come
 * with the answer only for a user who may enter: the network process
 * cannot read DATA, and does not learn who is in a private room unless
 * the session it asks for is.  The room's name is the only thing the
 * client chooses, and it only says which room is asked about.
 *
 * A room that does not exist yet is created by its first use in the chat
 * (or an atrium-import; any use with --exec-creates-rooms): a command,
 * sftp or the atrium subsystem naming it is refused with how to name a
 * room.  A key with rooms="PATTERNS" may create only rooms whose name
 * matches (the monitor's may_create), so such a use is refused here
 * before anything is made.  The creator becomes the
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

/* 1 when what, by a key that may_create the room, makes it. */
static int
room_access_makes(const struct chan *c, int may_create, const char *what)
{
	return may_create && (strcmp(what, "chat") == 0 ||
	    strcmp(what, "import") == 0 || c->s->srv->cfg->exec_creates_rooms);
}

/* Refuse what in a room that is not there, which it does not make. */
static void
room_access_refuse_new(struct chan *c, int may_create, const char *what)
{
	struct session *s = c->s;

	if (may_create) {
		/* Only the chat (and an import) makes a room: a command, sftp
		 * or a program naming a room that is not there is more often
		 * a mistake (a typo, or no ROOM@ at all, for which OpenSSH
		 * sends the local login name) than a wish for a new empty
		 * room.  --exec-creates-rooms brings back the old way. */
		log_info("session %lu: %s refused %s in room '%s': it does not "
		    "exist, and only the chat creates a room", s->num,
		    s->user, what, s->room);
		chan_refuse(c, "atrium: there is no room '%s'.  The SSH user "
		    "names the room: ssh -p PORT ROOM@HOST COMMAND (without "
		    "ROOM@, ssh sends your local login name).  ssh -s -p PORT "
		    "HOST rooms lists the rooms you may enter; ssh -t -p PORT "
		    "NEWROOM@HOST opens a new room's chat, which creates it.",
		    s->room);
		return;
	}
	log_info("session %lu: %s refused %s in room '%s': it does not exist "
	    "and the key may create only rooms=\"%s\"", s->num, s->user, what,
	    s->room, s->opts.rooms ? s->opts.rooms : "");
	room_access_refuse(c);
}

/* The first use of a room: may this key create it (the monitor's
 * reading of its rooms=)?  1, or 0 refused.  On a cluster's host a room
 * that is not here may live on another node: a use that would not make
 * it asks only where it lives (use_look), and its home decides; one that
 * would make it claims it (the chat, as on a single host). */
static int
room_access_admit_new(struct chan *c, const struct monitor_access *a,
    const char *what)
{
	if (room_access_makes(c, a->may_create, what))
		return 1;
	if (a->cluster) {
		c->use_look = 1;
		c->look_may_create = a->may_create;
		snprintf(c->look_what, sizeof(c->look_what), "%s", what);
		return 1;
	}
	room_access_refuse_new(c, a->may_create, what);
	return 0;
}

/* See room_access.h. */
void
room_access_absent(struct chan *c)
{
	room_access_refuse_new(c, c->look_may_create, c->look_what);
}

/* See room_access.h. */
int
room_access_admit(struct chan *c, const char *what)
{
	struct session *s = c->s;
	struct monitor_access a;
	int r = monitor_ask_access(s, what, &a);

	if (r == 0)
		return room_access_admit_new(c, &a, what);
	if (r == -EACCES) {
		log_info("session %lu: %s refused %s in room '%s': %s", s->num,
		    s->user, what, s->room, a.why);
		chan_refuse(c, "atrium: room '%s': %s", s->room, a.why);
		return 0;
	}
	if (r < 0) {
		log_warn("session %lu: %s refused %s in room '%s': its access "
		    "list cannot be read", s->num, s->user, what, s->room);
		chan_refuse(c, "atrium: cannot read who may enter room '%s' "
		    "now; try again in a moment, and tell the server's operator "
		    "if it persists.", s->room);
		return 0;
	}
	if (a.may_enter)
		return 1;
	log_info("session %lu: %s refused %s in room '%s': private, not a "
	    "member", s->num, s->user, what, s->room);
	room_access_refuse(c);
	return 0;
}

/* See room_access.h. */
int
room_access_delete(struct server *srv, const struct session *s,
    const char *room, char *msg, size_t len)
{
	struct monitor_access a;
	char bye[256];

	if (!room || strcmp(room, s->room) != 0) {
		snprintf(msg, len, "to delete this room, name it: \"%s\" (a "
		    "session deletes only its own room)", s->room);
		return -EINVAL;
	}
	if (monitor_ask_access(s, "delete", &a) <= 0) {
		snprintf(msg, len, "cannot read who owns room '%s' now; try "
		    "again", room);
		return -EIO;
	}
	if (!a.may_manage) {
		if (a.may_enter)
			access_not_owner(&a.list, "delete it", msg, len);
		else
			snprintf(msg, len, "only the room's owner or an admin "
			    "may delete it");
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
