/*
 * listener.c: the listening socket of --listen (listener.h).
 *
 * Why atriumd binds ":PORT" itself rather than leaving it to libssh:
 * ssh_bind_listen binds the one address it is given, and "every address"
 * given as 0.0.0.0 left IPv6 clients out, while "::" alone would follow
 * net.ipv6.bindv6only and so differ from host to host.  An IPv6 socket
 * with IPV6_V6ONLY cleared takes both families on any Linux host that has
 * IPv6; libssh then uses it as given (ssh_bind_set_fd).
 */
#include "listener.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"

/* A port as --listen takes it: decimal, 1 to 65535.  libssh's own
 * parsing would take "2222x" as 2222, wrap 99999 around to 34463 and
 * leave port 22 for "ssh", so the text is checked here first. */
static int
listener_port_ok(const char *port)
{
	char *end;
	unsigned long n;

	if (!isdigit((unsigned char)port[0]))
		return 0;
	errno = 0;
	n = strtoul(port, &end, 10);
	return !*end && !errno && n >= 1 && n <= 65535;
}

/* See listener.h. */
int
listener_parse(const char *listen, char *addr, size_t alen, char *port,
    size_t plen)
{
	const char *colon = strrchr(listen, ':');
	size_t n;

	if (!colon || !colon[1])
		return -EINVAL;
	n = (size_t)(colon - listen);
	if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
		listen++;
		n -= 2;
	}
	if (n >= alen || strlen(colon + 1) >= plen ||
	    !listener_port_ok(colon + 1))
		return -EINVAL;
	snprintf(addr, alen, "%.*s", (int)n, listen);
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

/* in6addr_any at port (listener_parse checked it).  0 or -EINVAL
 * (logged). */
static int
listener_any6(const char *port, struct sockaddr_in6 *out)
{
	struct addrinfo hints = {
		.ai_family = AF_INET6,
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
	}, *ai = NULL;
	int r = getaddrinfo(NULL, port, &hints, &ai);

	if (r != 0 || !ai || ai->ai_addrlen != sizeof(*out)) {
		log_error("--listen :%s: no IPv6 wildcard address for that "
		    "port (%s)", port, r ? gai_strerror(r) : "none");
		if (ai)
			freeaddrinfo(ai);
		return -EINVAL;
	}
	memcpy(out, ai->ai_addr, sizeof(*out));
	freeaddrinfo(ai);
	return 0;
}

/* Set the options of a dual-stack listener on fd: both families, and the
 * port reusable at once after a restart (as libssh's own bind does). */
static int
listener_options(int fd)
{
	int off = 0, on = 1;

	if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		return -errno;
	return 0;
}

/* See listener.h. */
int
listener_open_dual(const char *port, int backlog)
{
	struct sockaddr_in6 sa;
	int fd, r;

	if ((r = listener_any6(port, &sa)) < 0)
		return r;
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 && errno == EAFNOSUPPORT)
		return -EAFNOSUPPORT;
	if (fd < 0) {
		r = -errno;
		log_error("--listen :%s: cannot make an IPv6 socket: %s", port,
		    strerror(-r));
		return r;
	}
	if ((r = listener_options(fd)) < 0) {
		log_error("--listen :%s: cannot make an IPv6 and IPv4 socket: "
		    "%s", port, strerror(-r));
		close(fd);
		return r;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, backlog) < 0) {
		r = -errno;
		close(fd);
		/* IPv6 turned off on every interface: the host has none. */
		if (r == -EADDRNOTAVAIL)
			return -EAFNOSUPPORT;
		log_error("cannot listen on :%s: %s%s", port, strerror(-r),
		    r == -EADDRINUSE ? " (is another server on that port?)" :
		    "");
		return r;
	}
	return fd;
}

/* See listener.h. */
int
listener_open_addr(const char *addr, const char *port, int backlog)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV,
	}, *ai = NULL;
	int on = 1, fd, r = getaddrinfo(addr, port, &hints, &ai);

	if (r != 0 || !ai) {
		log_error("%s:%s: not a numeric address and port (%s)", addr,
		    port, r ? gai_strerror(r) : "none");
		if (ai)
			freeaddrinfo(ai);
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
	    sizeof(on)) < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
	    listen(fd, backlog) < 0) {
		r = -errno;
		log_error("cannot listen on %s:%s: %s%s", addr, port,
		    strerror(-r), r == -EADDRINUSE ? " (is another server on "
		    "that port?)" : "");
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return r;
	}
	freeaddrinfo(ai);
	return fd;
}
