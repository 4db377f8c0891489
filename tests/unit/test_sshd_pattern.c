/*
 * test_sshd_pattern.c: OpenSSH wildcard patterns and pattern lists
 * (sshd/shared/pattern.c), and the authorized_keys options built on them and on
 * access: rooms="..." (which rooms a key may create) and atrium-admin
 * (sshd/shared/authkeys_opts.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "unit.h"
#include "../../sshd/shared/authkeys.h"
#include "../../sshd/shared/pattern.h"

#define KEY "AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyBlobForParsingOnly0123456789abc"

static void
test_wildcards(void)
{
	CHECK_INT(pattern_match("proj-1", "proj-*", 0), 1);
	CHECK_INT(pattern_match("proj-", "proj-*", 0), 1);
	CHECK_INT(pattern_match("proj", "proj-*", 0), 0);
	CHECK_INT(pattern_match("a1b", "a?b", 0), 1);
	CHECK_INT(pattern_match("ab", "a?b", 0), 0);
	CHECK_INT(pattern_match("xaaay", "*a*a*y", 0), 1);
	CHECK_INT(pattern_match("PROJ", "proj", 0), 0);
	CHECK_INT(pattern_match("PROJ", "proj", 1), 1);
	CHECK_INT(pattern_match("", "*", 0), 1);
	CHECK_INT(pattern_match("", "", 0), 1);
	CHECK_INT(pattern_match("a", "", 0), 0);
}

static void
test_lists(void)
{
	CHECK_INT(pattern_list_match("team-a", "team-*,demo"), 1);
	CHECK_INT(pattern_list_match("demo", "team-*,demo"), 1);
	CHECK_INT(pattern_list_match("other", "team-*,demo"), 0);
	/* A negated match refuses, wherever it is. */
	CHECK_INT(pattern_list_match("team-admin", "team-*,!team-admin"), 0);
	CHECK_INT(pattern_list_match("team-admin", "!team-admin,team-*"), 0);
	CHECK_INT(pattern_list_match("team-b", "!team-admin,team-*"), 1);
	/* Negations alone match nothing. */
	CHECK_INT(pattern_list_match("x", "!y"), 0);
}

static void
test_malformed_lists(void)
{
	char big[PATTERN_MAX_LIST + 2];
	char many[PATTERN_MAX_LIST] = "";

	CHECK_INT(pattern_list_check(""), -EINVAL);
	CHECK_INT(pattern_list_check("a,,b"), -EINVAL);
	CHECK_INT(pattern_list_check(",a"), -EINVAL);
	CHECK_INT(pattern_list_check("a,"), -EINVAL);
	CHECK_INT(pattern_list_check("!"), -EINVAL);
	CHECK_INT(pattern_list_match("a", "a,,"), -EINVAL);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(pattern_list_check(big), -EINVAL);
	for (int i = 0; i < PATTERN_MAX_ENTRIES; i++)
		strcat(many, i ? ",a" : "a");
	CHECK_INT(pattern_list_check(many), 0);
	strcat(many, ",a");
	CHECK_INT(pattern_list_check(many), -EINVAL);
}

/* Parse an options field; its result, *o filled. */
static int
opts(const char *field, struct authkey_opts *o)
{
	static char store[1024];

	snprintf(store, sizeof(store), "%s", field);
	return authkey_opts_parse(store, o);
}

static void
test_admin_option(void)
{
	struct authkey_opts o;
	struct authkeys_line l;
	char line[512];

	CHECK_INT(opts("atrium-admin", &o), 0);
	CHECK_INT(o.admin, 1);
	CHECK_INT(opts("ATRIUM-ADMIN,restrict", &o), 0);
	CHECK_INT(o.admin, 1);
	CHECK_INT(opts("restrict", &o), 0);
	CHECK_INT(o.admin, 0);
	CHECK_INT(opts("atrium-admin=\"yes\"", &o), -EINVAL);
	CHECK(strstr(o.error, "takes no value") != NULL);
	snprintf(line, sizeof(line), "atrium-admin ssh-ed25519 " KEY " root@x");
	CHECK_INT(authkeys_parse_line(line, &l), 1);
	CHECK_INT(l.opts.admin, 1);
	CHECK_STR(l.user, "root");
	/* An admin may create any room, rooms= or not. */
	CHECK_INT(opts("atrium-admin,rooms=\"a-*\"", &o), 0);
	CHECK_INT(authkey_opts_may_create(&o, "zzz"), 1);
}

static void
test_rooms_option(void)
{
	struct authkey_opts o, copy;

	CHECK_INT(opts("", &o), 0);
	CHECK(o.rooms == NULL);
	CHECK_INT(authkey_opts_may_create(&o, "anything"), 1);
	CHECK_INT(opts("rooms=\"bob-*,!bob-secret\",no-pty", &o), 0);
	CHECK_STR(o.rooms, "bob-*,!bob-secret");
	CHECK_INT(authkey_opts_may_create(&o, "bob-1"), 1);
	CHECK_INT(authkey_opts_may_create(&o, "bob-secret"), 0);
	CHECK_INT(authkey_opts_may_create(&o, "alice"), 0);
	CHECK_INT(authkey_opts_copy(&copy, &o), 0);
	CHECK(copy.rooms != o.rooms);
	CHECK_STR(copy.rooms, "bob-*,!bob-secret");
	CHECK_INT(authkey_opts_may_create(&copy, "bob-2"), 1);
	authkey_opts_free(&copy);
	CHECK(copy.rooms == NULL);
	CHECK_INT(opts("rooms=\"a\",rooms=\"b\"", &o), -EINVAL);
	CHECK(strstr(o.error, "given twice") != NULL);
	CHECK_INT(opts("rooms=\"a,,b\"", &o), -EINVAL);
	CHECK(strstr(o.error, "not a valid pattern list") != NULL);
	CHECK_INT(opts("rooms=\"\"", &o), -EINVAL);
	CHECK_INT(opts("rooms", &o), -EINVAL);
}

int
main(void)
{
	TEST(test_wildcards);
	TEST(test_lists);
	TEST(test_malformed_lists);
	TEST(test_admin_option);
	TEST(test_rooms_option);
	return unit_done("test_sshd_pattern");
}
