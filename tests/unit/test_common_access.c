/*
 * test_common_access.c: room access decisions (common/access.c): who may
 * enter an open and a private room, who may manage it (owner, admin, a
 * room without owner), the member list's bounds, visibility names and
 * the refusal texts users read.
 */
#include <errno.h>

#include "unit.h"
#include "../../common/access.h"

/* A private room of alice with member bob. */
static void
private_room(struct access_list *l)
{
	access_list_init(l);
	snprintf(l->owner, sizeof(l->owner), "alice");
	l->visibility = ACCESS_PRIVATE;
	CHECK_INT(access_list_add(l, "bob"), 0);
}

static void
test_open_room_lets_everyone_in(void)
{
	struct access_list l;

	access_list_init(&l);
	CHECK_INT(l.visibility, ACCESS_OPEN);
	CHECK_INT(access_may_enter(&l, "eve", 0), 1);
	snprintf(l.owner, sizeof(l.owner), "alice");
	CHECK_INT(access_may_enter(&l, "eve", 0), 1);
}

static void
test_private_room_owner_members_admins(void)
{
	struct access_list l;

	private_room(&l);
	CHECK_INT(access_may_enter(&l, "alice", 0), 1);
	CHECK_INT(access_may_enter(&l, "bob", 0), 1);
	CHECK_INT(access_may_enter(&l, "eve", 0), 0);
	CHECK_INT(access_may_enter(&l, "eve", 1), 1);
	CHECK_INT(access_may_enter(&l, "", 0), 0);
	CHECK_INT(access_may_enter(&l, NULL, 0), 0);
	CHECK_INT(access_may_enter(&l, "Bob", 0), 0);	/* names are exact */
}

static void
test_manage_owner_and_admin_only(void)
{
	struct access_list l;

	private_room(&l);
	CHECK_INT(access_may_manage(&l, "alice", 0), 1);
	CHECK_INT(access_may_manage(&l, "bob", 0), 0);
	CHECK_INT(access_may_manage(&l, "eve", 1), 1);
	l.owner[0] = '\0';		/* no owner: admins only */
	CHECK_INT(access_may_manage(&l, "alice", 0), 0);
	CHECK_INT(access_may_manage(&l, "", 0), 0);
	CHECK_INT(access_may_manage(&l, "x", 1), 1);
}

static void
test_member_list_bounds(void)
{
	struct access_list l;
	char name[16];

	private_room(&l);
	CHECK_INT(access_list_add(&l, "bob"), -EEXIST);
	CHECK_INT(access_list_add(&l, "alice"), -EEXIST);	/* the owner */
	CHECK_INT(access_list_add(&l, ""), -EINVAL);
	CHECK_INT(access_list_add(&l, "x234567890123456789012345678901234567890"
	    "12345678901234567890123456"), -EINVAL);
	for (int i = 1; i < ACCESS_MAX_MEMBERS; i++) {
		snprintf(name, sizeof(name), "u%d", i);
		CHECK_INT(access_list_add(&l, name), 0);
	}
	CHECK_INT(l.nmembers, ACCESS_MAX_MEMBERS);
	CHECK_INT(access_list_add(&l, "one-more"), -ENOSPC);
	CHECK_INT(access_is_member(&l, "u255"), 1);
}

static void
test_visibility_names(void)
{
	enum access_visibility v = ACCESS_PRIVATE;

	CHECK_INT(access_visibility_parse("open", &v), 0);
	CHECK_INT(v, ACCESS_OPEN);
	CHECK_INT(access_visibility_parse("private", &v), 0);
	CHECK_INT(v, ACCESS_PRIVATE);
	CHECK_INT(access_visibility_parse("public", &v), 0);
	CHECK_INT(v, ACCESS_OPEN);
	CHECK_INT(access_visibility_parse("Private", &v), -EINVAL);
	CHECK_INT(access_visibility_parse(NULL, &v), -EINVAL);
	CHECK_STR(access_visibility_name(ACCESS_PRIVATE), "private");
	CHECK_STR(access_visibility_name(ACCESS_OPEN), "open");
}

static void
test_refusal_texts(void)
{
	struct access_list l;
	char msg[512];

	/* An outsider learns neither the owner nor whether the room is
	 * there: one text for a private room and for a missing one. */
	access_refusal("proj", "eve", NULL, msg, sizeof(msg));
	CHECK_STR(msg, "atrium: room 'proj' does not exist or you may not "
	    "enter it. Check the name; if the room is private, ask its owner "
	    "(or the server's operator) to /invite eve in the room's chat.");
	CHECK(strstr(msg, "alice") == NULL);
	access_refusal("proj", "eve", "eve-*", msg, sizeof(msg));
	CHECK(strstr(msg, "does not exist or you may not enter it") != NULL);
	CHECK(strstr(msg, " Your key may create only rooms matching "
	    "\"eve-*\".") != NULL);
	access_refusal("proj", "eve", "eve-*", msg, 40);
	CHECK_INT(strlen(msg), 39);

	private_room(&l);
	access_not_owner(&l, "delete it", msg, sizeof(msg));
	CHECK_STR(msg, "only the room's owner (alice) or an admin may delete it");
	l.owner[0] = '\0';
	access_not_owner(&l, "delete it", msg, sizeof(msg));
	CHECK(strstr(msg, "only an admin may delete it") != NULL);
}

int
main(void)
{
	TEST(test_open_room_lets_everyone_in);
	TEST(test_private_room_owner_members_admins);
	TEST(test_manage_owner_and_admin_only);
	TEST(test_member_list_bounds);
	TEST(test_visibility_names);
	TEST(test_refusal_texts);
	return unit_done("test_common_access");
}
