/*
 * netaddr.h: a client's socket address as atriumd matches, counts and
 * logs it.
 *
 * A dual-stack listener (an IPv6 socket that also takes IPv4, as the
 * default --listen :PORT is) reports an IPv4 client as the IPv4-mapped
 * IPv6 address ::ffff:a.b.c.d.  Every rule an operator writes names the
 * IPv4 address (from="10.0.0.*", a log search for 10.0.0.5), so such an
 * address is made plain IPv4 once, right after accept, before anything
 * matches, counts or logs it, as OpenSSH's sshd does
 * (ipv64_normalise_mapped).  Pure functions, no allocation.
 */
#ifndef ATRIUMD_NETADDR_H
#define ATRIUMD_NETADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* Turn an IPv4-mapped AF_INET6 address in sa into the AF_INET one it
 * stands for (port kept); any other address is left alone. */
void netaddr_unmap(struct sockaddr_storage *sa);

/* sa's numeric host ("10.0.0.5", "2001:db8::1") into out, after
 * netaddr_unmap; "?" for a family that has none. */
void netaddr_host(const struct sockaddr_storage *sa, char *out, size_t len);

/* sa's port (host order), 0 for a family that has none. */
unsigned netaddr_port(const struct sockaddr_storage *sa);

#endif
