/*
 * test_sshd_relay.c: the user name a cluster's front authenticates a
 * relay with (sshd/net/relay.c, relay.h): what the front writes, the home
 * reads back field for field, and the home refuses every name that is
 * not exactly one (a field missing or extra, a space or control byte in
 * one, a fingerprint that is not SHA256, an address that is not
 * numeric, a field too long).
 */
#include <errno.h>
#include <string.h>

#include "unit.h"
#include "../../sshd/net/relay.h"

#define FP "SHA256:7Mh8/OcXC1zPAPY4cO/bi9uwDVqdTqNxm19+NGInbt8"

static int
parse(const char *name)
{
	char room[80], user[64], fp[128], addr[64];

	return relay_user_parse(name, room, user, fp, addr);
}

static void
test_round_trip(void)
{
	char name[400], room[80], user[64], fp[128], addr[64];

	CHECK_INT(relay_user_format(name, sizeof(name), "demo", "alice", FP,
	    "2001:db8::7"), 0);
	CHECK_STR(name, "atrium-relay demo alice " FP " 2001:db8::7");
	CHECK_INT(relay_user_parse(name, room, user, fp, addr), 0);
	CHECK_STR(room, "demo");
	CHECK_STR(user, "alice");
	CHECK_STR(fp, FP);
	CHECK_STR(addr, "2001:db8::7");
	CHECK_INT(relay_user_format(name, 20, "demo", "alice", FP,
	    "127.0.0.1"), -ENAMETOOLONG);
}

static void
test_refused(void)
{
	char longname[600];

	CHECK_INT(parse("atrium-relay demo alice " FP " 127.0.0.1"), 0);
	CHECK_INT(parse("demo alice " FP " 127.0.0.1"), -EINVAL);
	CHECK_INT(parse("atrium-relay demo alice " FP), -EINVAL);
	CHECK_INT(parse("atrium-relay demo alice " FP " 127.0.0.1 x"), -EINVAL);
	CHECK_INT(parse("atrium-relay demo  alice " FP " 127.0.0.1"), -EINVAL);
	CHECK_INT(parse("atrium-relay demo alice " FP " 127.0.0.1 "), -EINVAL);
	CHECK_INT(parse("atrium-relay demo al\x1bice " FP " 127.0.0.1"),
	    -EINVAL);
	CHECK_INT(parse("atrium-relay demo alice MD5:00:11 127.0.0.1"),
	    -EINVAL);
	CHECK_INT(parse("atrium-relay demo alice " FP " localhost"), -EINVAL);
	CHECK_INT(parse("atrium-relay demo alice " FP " 127.0.0.1\t"),
	    -EINVAL);
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "atrium-relay ", 13);
	longname[sizeof(longname) - 1] = '\0';
	CHECK_INT(parse(longname), -EINVAL);
}

int
main(void)
{
	TEST(test_round_trip);
	TEST(test_refused);
	return unit_done("test_sshd_relay");
}
