/*
 * access.h: who may enter a room and who may manage it.  Pure decisions
 * on a room's access list, shared by atriumd (before it starts a command
 * for a session: sshd/net/room_access.c) and atrium-agent (at each hello
 * and each request that changes the room: agent/room_access_list.c), so both
 * sides decide alike.  The list itself lives in room.db (atrium-agent(8),
 * ROOM.DB); nothing here reads or keeps it.
 *
 *   open      any authorized user may enter (the default)
 *   private   the owner, the members and admins only
 *
 * The owner (who created the room) and admins (keys with the
 * authorized_keys option atrium-admin) manage it: members, visibility,
 * the model, provider and approval policy, deletion.  A room with no
 * owner (made before owners were recorded, and nobody claimed it) can be
 * managed by admins only.
 */
#ifndef ATRIUM_ACCESS_H
#define ATRIUM_ACCESS_H

#include <stddef.h>

#define ACCESS_MAX_MEMBERS	256	/* members of one room */
#define ACCESS_MAX_USER		64	/* bytes of a user name, with NUL */

enum access_visibility { ACCESS_OPEN, ACCESS_PRIVATE };

struct access_list {
	char owner[ACCESS_MAX_USER];	/* "" when the room has none */
	enum access_visibility visibility;
	int nmembers;			/* members[0 .. nmembers) */
	char members[ACCESS_MAX_MEMBERS][ACCESS_MAX_USER];	/* not the owner */
};

/* An empty list: no owner, open, no members. */
void access_list_init(struct access_list *l);

/* Add user as a member (not the owner, no duplicate).  0, -EEXIST when
 * already there, -ENOSPC past ACCESS_MAX_MEMBERS, -EINVAL for a name too
 * long. */
int access_list_add(struct access_list *l, const char *user);

/* 1 when user is the owner or a member. */
int access_is_member(const struct access_list *l, const char *user);

/* May user (admin: the key has atrium-admin) enter the room?  1 or 0. */
int access_may_enter(const struct access_list *l, const char *user,
    int admin);

/* May user change members, visibility, settings, or delete it?  1 or 0. */
int access_may_manage(const struct access_list *l, const char *user,
    int admin);

/* "open" or "private". */
const char *access_visibility_name(enum access_visibility v);

/* Parse "open" / "private" (also "public" for open).  0 or -EINVAL. */
int access_visibility_parse(const char *text, enum access_visibility *out);

/* The refusal for user at a room it may not enter, or may not create,
 * for the client's stderr.  The same words either way, and no owner
 * named: a key learns nothing about a room it is not in beyond what it
 * cannot help learning (a key that may create the room sees it refused
 * rather than made).  create_only: the key's rooms= patterns, said so
 * when given (NULL: not a rooms= key). */
void access_refusal(const char *room, const char *user,
    const char *create_only, char *out, size_t len);

/* The refusal for user asking to manage a room it does not own. */
void access_not_owner(const struct access_list *l, const char *what,
    char *out, size_t len);

#endif
