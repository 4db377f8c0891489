/*
 * test_sshd_listener.c: --listen's parsing and the every-address listener
 * (sshd/monitor/listener.c), and what accept reports through it: an IPv4 client
 * of the dual-stack socket, unmapped (sshd/net/netaddr.c), is plain IPv4.
 * Loopback only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "unit.h"
#include "../../sshd/monitor/listener.h"
#include "../../sshd/net/netaddr.h"

static void
test_parse(void)
{
	char addr[64], port[16];

	CHECK_INT(listener_parse(":2222", addr, sizeof(addr), port,
	    sizeof(port)), 0);
	CHECK_STR(addr, "");
	CHECK_STR(port, "2222");
	CHECK_INT(listener_parse("127.0.0.1:22", addr, sizeof(addr), port,
	    sizeof(port)), 0);
	CHECK_STR(addr, "127.0.0.1");
	CHECK_INT(listener_parse("[::1]:65535", addr, sizeof(addr), port,
	    sizeof(port)), 0);
	CHECK_STR(addr, "::1");
	CHECK_STR(port, "65535");
	CHECK_INT(listener_parse("[::]:1", addr, sizeof(addr), port,
	    sizeof(port)), 0);
	CHECK_STR(addr, "::");
	/* Ports libssh would have bent into another one, or into 22. */
	CHECK_INT(listener_parse(":99999", addr, sizeof(addr), port,
	    sizeof(port)), -EINVAL);
	CHECK_INT(listener_parse(":2222x", addr, sizeof(addr), port,
	    sizeof(port)), -EINVAL);
	CHECK_INT(listener_parse(":ssh", addr, sizeof(addr), port,
	    sizeof(port)), -EINVAL);
	CHECK_INT(listener_parse(":0", addr, sizeof(addr), port,
	    sizeof(port)), -EINVAL);
	CHECK_INT(listener_parse(":-1", addr, sizeof(addr), port,
	    sizeof(port)), -EINVAL);
	CHECK_INT(listener_parse("2222", addr, sizeof(addr), port,
	    sizeof(port)), -EINVAL);
	CHECK_INT(listener_parse("127.0.0.1:", addr, sizeof(addr), port,
	    sizeof(port)), -EINVAL);
}

/* A port free a moment ago (the kernel's pick for an ephemeral bind). */
static int
free_port(void)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET6, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin6_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Connect to loopback of family at port through l, accept, and give the
 * client's address as atriumd logs it. */
static void
connect_and_name(int l, int family, int port, char *host, size_t len)
{
	struct sockaddr_storage ss, peer;
	socklen_t plen = sizeof(peer);
	int c = socket(family, SOCK_STREAM, 0), a = -1;

	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons((unsigned short)port);
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((unsigned short)port);
		in6->sin6_addr = in6addr_loopback;
	}
	snprintf(host, len, "(no connection)");
	if (c >= 0 && connect(c, (struct sockaddr *)&ss, sizeof(ss)) == 0 &&
	    (a = accept(l, (struct sockaddr *)&peer, &plen)) >= 0) {
		netaddr_unmap(&peer);
		netaddr_host(&peer, host, len);
	}
	if (a >= 0)
		close(a);
	if (c >= 0)
		close(c);
}

static void
test_every_address_takes_both_families(void)
{
	char port[16], host[INET6_ADDRSTRLEN + 16];
	int l = -EADDRINUSE, p = -1;

	for (int i = 0; i < 5 && l == -EADDRINUSE; i++) {
		p = free_port();
		snprintf(port, sizeof(port), "%d", p);
		l = listener_open_dual(port, 4);
	}
	if (l == -EAFNOSUPPORT) {
		printf("test_sshd_listener: no IPv6 here; dual-stack not tried\n");
		return;
	}
	CHECK(l >= 0);
	if (l < 0)
		return;
	connect_and_name(l, AF_INET, p, host, sizeof(host));
	CHECK_STR(host, "127.0.0.1");
	connect_and_name(l, AF_INET6, p, host, sizeof(host));
	CHECK_STR(host, "::1");
	/* The port is taken now: a second one is refused, not shared. */
	CHECK_INT(listener_open_dual(port, 4), -EADDRINUSE);
	close(l);
}

int
main(void)
{
	TEST(test_parse);
	TEST(test_every_address_takes_both_families);
	return unit_done("test_sshd_listener");
}
