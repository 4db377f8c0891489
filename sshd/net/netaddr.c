/*
 * netaddr.c: client socket addresses (netaddr.h).  Called by server.c on
 * each accepted connection (its address for admission and the log) and
 * by session.c for SSH_CONNECTION.
 */
#include "netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* See netaddr.h. */
void
netaddr_unmap(struct sockaddr_storage *sa)
{
	struct sockaddr_in6 in6;
	struct sockaddr_in in;

	if (sa->ss_family != AF_INET6)
		return;
	memcpy(&in6, sa, sizeof(in6));
	if (!IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr))
		return;
	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = in6.sin6_port;
	memcpy(&in.sin_addr, in6.sin6_addr.s6_addr + 12, 4);
	memset(sa, 0, sizeof(*sa));
	memcpy(sa, &in, sizeof(in));
}

/* See netaddr.h. */
void
netaddr_host(const struct sockaddr_storage *sa, char *out, size_t len)
{
	struct sockaddr_storage a = *sa;
	const void *bytes = NULL;

	netaddr_unmap(&a);
	if (a.ss_family == AF_INET)
		bytes = &((const struct sockaddr_in *)&a)->sin_addr;
	else if (a.ss_family == AF_INET6)
		bytes = &((const struct sockaddr_in6 *)&a)->sin6_addr;
	if (!bytes || !inet_ntop(a.ss_family, bytes, out, (socklen_t)len))
		snprintf(out, len, "?");
}

/* See netaddr.h. */
unsigned
netaddr_port(const struct sockaddr_storage *sa)
{
	if (sa->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
}
