/*
 * test_sshd_addr_match.c: OpenSSH address pattern lists
 * (sshd/shared/addr_match.c), as from="..." uses them: wildcards, IPv4 and IPv6
 * networks, negation, IPv4-mapped clients (as networks and as wildcards), host
 * names that never match, and malformed lists; and the unmapping of an accepted
 * client's address (sshd/net/netaddr.c) that comes before any of it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "unit.h"
#include "../../sshd/shared/addr_match.h"
#include "../../sshd/net/netaddr.h"

static void
test_wildcards(void)
{
	CHECK_INT(addr_match_list("127.0.0.1", "127.0.0.1"), 1);
	CHECK_INT(addr_match_list("127.0.0.1", "127.0.0.*"), 1);
	CHECK_INT(addr_match_list("127.0.0.1", "127.0.0.?"), 1);
	CHECK_INT(addr_match_list("127.0.0.12", "127.0.0.?"), 0);
	CHECK_INT(addr_match_list("127.0.0.1", "*"), 1);
	CHECK_INT(addr_match_list("127.0.0.1", "10.*"), 0);
	CHECK_INT(addr_match_list("127.0.0.1", "1*7.*.1"), 1);
	CHECK_INT(addr_match_list("fe80::1", "FE80::*"), 1);
	/* A long run of stars stays cheap (no exponential backtracking). */
	CHECK_INT(addr_match_list("1111111111111111111111111111",
	    "*1*1*1*1*1*1*1*1*1*1*1*1*1*1*2"), 0);
}

static void
test_networks(void)
{
	CHECK_INT(addr_match_list("10.1.2.3", "10.0.0.0/8"), 1);
	CHECK_INT(addr_match_list("127.0.0.1", "10.0.0.0/8"), 0);
	CHECK_INT(addr_match_list("192.168.1.77", "192.168.1.64/26"), 1);
	CHECK_INT(addr_match_list("192.168.1.128", "192.168.1.64/26"), 0);
	CHECK_INT(addr_match_list("1.2.3.4", "0.0.0.0/0"), 1);
	CHECK_INT(addr_match_list("1.2.3.4", "1.2.3.4/32"), 1);
	CHECK_INT(addr_match_list("2001:db8::5", "2001:db8::/32"), 1);
	CHECK_INT(addr_match_list("2001:db9::5", "2001:db8::/32"), 0);
	CHECK_INT(addr_match_list("::1", "::1/128"), 1);
	CHECK_INT(addr_match_list("::1", "::1"), 1);
	/* Families never mix. */
	CHECK_INT(addr_match_list("::1", "0.0.0.0/0"), 0);
	CHECK_INT(addr_match_list("1.2.3.4", "::/0"), 0);
}

static void
test_mapped_client_is_ipv4(void)
{
	CHECK_INT(addr_match_list("::ffff:127.0.0.1", "127.0.0.0/8"), 1);
	CHECK_INT(addr_match_list("::ffff:10.0.0.1", "10.0.0.0/8"), 1);
	CHECK_INT(addr_match_list("::ffff:10.0.0.1", "127.0.0.0/8"), 0);
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "10.0.0.5"), 1);
}

/* Wildcards see the dotted IPv4 form too: a negation written for the
 * IPv4 address must refuse the mapped one (it let it in when wildcards
 * saw "::ffff:10.0.0.5"), and a positive one must admit it. */
static void
test_mapped_client_wildcards(void)
{
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "*,!10.0.0.*"), 0);
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "!10.0.0.?,*"), 0);
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "10.0.0.*"), 1);
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "10.0.0.?"), 1);
	CHECK_INT(addr_match_list("::FFFF:10.0.0.5", "10.0.0.*"), 1);
	/* The same address written in hex, and with every zero shown. */
	CHECK_INT(addr_match_list("::ffff:a00:5", "10.0.0.*"), 1);
	CHECK_INT(addr_match_list("0:0:0:0:0:ffff:10.0.0.5", "*,!10.*"), 0);
	/* The mapped text is never what is matched (as in OpenSSH). */
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "::ffff:*"), 0);
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "*:*"), 0);
	CHECK_INT(addr_match_list("::ffff:10.0.0.5", "*,!*:*"), 1);
	/* Other IPv6 addresses keep their own text. */
	CHECK_INT(addr_match_list("2001:db8::5", "2001:db8::*"), 1);
	CHECK_INT(addr_match_list("::10.0.0.5", "10.0.0.*"), 0);
}

/* The accepted socket address, before anything sees it. */
static void
test_netaddr_unmaps(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
	char host[INET6_ADDRSTRLEN];

	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(40022);
	CHECK(inet_pton(AF_INET6, "::ffff:10.0.0.5", &in6->sin6_addr) == 1);
	netaddr_host(&ss, host, sizeof(host));
	CHECK_STR(host, "10.0.0.5");
	netaddr_unmap(&ss);
	CHECK_INT(ss.ss_family, AF_INET);
	CHECK_INT((int)netaddr_port(&ss), 40022);
	netaddr_host(&ss, host, sizeof(host));
	CHECK_STR(host, "10.0.0.5");

	memset(&ss, 0, sizeof(ss));
	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(22);
	CHECK(inet_pton(AF_INET6, "2001:db8::5", &in6->sin6_addr) == 1);
	netaddr_unmap(&ss);
	CHECK_INT(ss.ss_family, AF_INET6);
	netaddr_host(&ss, host, sizeof(host));
	CHECK_STR(host, "2001:db8::5");
	CHECK_INT((int)netaddr_port(&ss), 22);

	memset(&ss, 0, sizeof(ss));
	ss.ss_family = AF_UNIX;
	netaddr_host(&ss, host, sizeof(host));
	CHECK_STR(host, "?");
	CHECK_INT((int)netaddr_port(&ss), 0);
}

static void
test_negation(void)
{
	/* A negated entry that matches refuses whatever else matches. */
	CHECK_INT(addr_match_list("127.0.0.1", "!127.0.0.1,*"), 0);
	CHECK_INT(addr_match_list("127.0.0.1", "*,!127.0.0.1"), 0);
	CHECK_INT(addr_match_list("127.0.0.1", "!10.0.0.0/8,127.0.0.0/8"), 1);
	CHECK_INT(addr_match_list("10.0.0.1", "!10.0.0.0/8,*"), 0);
	CHECK_INT(addr_match_list("127.0.0.1", "!127.*,*"), 0);
	/* A negation alone allows nothing. */
	CHECK_INT(addr_match_list("127.0.0.1", "!10.0.0.0/8"), 0);
}

static void
test_host_names_never_match(void)
{
	char name[64];

	CHECK_INT(addr_match_list("127.0.0.1", "localhost"), 0);
	CHECK_INT(addr_match_list("127.0.0.1", "*.example.com"), 0);
	CHECK_INT(addr_match_list("127.0.0.1", "localhost,127.0.0.1"), 1);
	CHECK_INT(addr_match_check("localhost,127.0.0.1", name, sizeof(name)), 1);
	CHECK_STR(name, "localhost");
	CHECK_INT(addr_match_check("10.0.0.0/8,!*.evil.org", name, sizeof(name)),
	    1);
	CHECK_STR(name, "*.evil.org");
	CHECK_INT(addr_match_check("10.0.0.0/8,::1,fe80::*,192.168.?.1", name,
	    sizeof(name)), 0);
}

static void
test_malformed(void)
{
	char name[64], big[ADDR_MATCH_MAX_LIST + 2];

	CHECK_INT(addr_match_list("10.0.0.1", "10.0.0.1/8"), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", "10.0.0.0/33"), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", "10.0.0.0/"), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", "10.0.0.0/x"), -EINVAL);
	CHECK_INT(addr_match_list("::1", "::1/129"), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", "a/8"), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", ""), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", ","), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", "10.0.0.1,"), -EINVAL);
	CHECK_INT(addr_match_list("10.0.0.1", "!"), -EINVAL);
	CHECK_INT(addr_match_check("1.2.3.4,,5.6.7.8", name, sizeof(name)),
	    -EINVAL);
	memset(big, '*', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(addr_match_list("10.0.0.1", big), -EINVAL);
	big[ADDR_MATCH_MAX_LIST] = '\0';
	CHECK_INT(addr_match_list("10.0.0.1", big), 1);
}

static void
test_entry_count_bound(void)
{
	char list[ADDR_MATCH_MAX_LIST + 1] = "";

	for (int i = 0; i < ADDR_MATCH_MAX_ENTRIES; i++)
		strcat(list, i ? ",1.2.3.4" : "1.2.3.4");
	CHECK_INT(addr_match_list("1.2.3.4", list), 1);
	strcat(list, ",1.2.3.4");
	CHECK_INT(addr_match_list("1.2.3.4", list), -EINVAL);
}

int
main(void)
{
	TEST(test_wildcards);
	TEST(test_networks);
	TEST(test_mapped_client_is_ipv4);
	TEST(test_mapped_client_wildcards);
	TEST(test_netaddr_unmaps);
	TEST(test_negation);
	TEST(test_host_names_never_match);
	TEST(test_malformed);
	TEST(test_entry_count_bound);
	return unit_done("test_sshd_addr_match");
}
