/*
 * access.c: room access decisions (access.h).  Pure functions over a
 * struct access_list; unit-tested (tests/unit/test_common_access.c).
 * Called by atriumd's network process (sshd/net/room_access.c) and
 * monitor (sshd/monitor/), and by agent/room_access_list.c.
 */
#include "access.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* See access.h. */
void
access_list_init(struct access_list *l)
{
	memset(l, 0, sizeof(*l));
	l->visibility = ACCESS_OPEN;
}

/* See access.h. */
int
access_is_member(const struct access_list *l, const char *user)
{
	if (!user || !user[0])
		return 0;
	if (strcmp(l->owner, user) == 0)
		return 1;
	for (int i = 0; i < l->nmembers; i++)
		if (strcmp(l->members[i], user) == 0)
			return 1;
	return 0;
}

/* See access.h. */
int
access_list_add(struct access_list *l, const char *user)
{
	if (!user || !user[0] || strlen(user) >= ACCESS_MAX_USER)
		return -EINVAL;
	if (access_is_member(l, user))
		return -EEXIST;
	if (l->nmembers == ACCESS_MAX_MEMBERS)
		return -ENOSPC;
	snprintf(l->members[l->nmembers++], ACCESS_MAX_USER, "%s", user);
	return 0;
}

/* See access.h. */
int
access_may_enter(const struct access_list *l, const char *user, int admin)
{
	return admin || l->visibility == ACCESS_OPEN ||
	    access_is_member(l, user);
}

/* See access.h. */
int
access_may_manage(const struct access_list *l, const char *user, int admin)
{
	return admin || (l->owner[0] && user && strcmp(l->owner, user) == 0);
}

/* See access.h. */
const char *
access_visibility_name(enum access_visibility v)
{
	return v == ACCESS_PRIVATE ? "private" : "open";
}

/* See access.h. */
int
access_visibility_parse(const char *text, enum access_visibility *out)
{
	if (!text)
		return -EINVAL;
	if (strcmp(text, "open") == 0 || strcmp(text, "public") == 0)
		*out = ACCESS_OPEN;
	else if (strcmp(text, "private") == 0)
		*out = ACCESS_PRIVATE;
	else
		return -EINVAL;
	return 0;
}

/* See access.h. */
void
access_refusal(const char *room, const char *user, const char *create_only,
    char *out, size_t len)
{
	int n = snprintf(out, len, "atrium: room '%s' does not exist or you "
	    "may not enter it. Check the name; if the room is private, ask "
	    "its owner (or the server's operator) to /invite %s in the "
	    "room's chat.", room, user);

	if (create_only && n >= 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, " Your key may create only "
		    "rooms matching \"%s\".", create_only);
}

/* See access.h. */
void
access_not_owner(const struct access_list *l, const char *what, char *out,
    size_t len)
{
	if (l->owner[0])
		snprintf(out, len, "only the room's owner (%s) or an admin may "
		    "%s", l->owner, what);
	else
		snprintf(out, len, "this room has no owner: only an admin may %s",
		    what);
}
