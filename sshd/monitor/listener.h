/*
 * listener.h: the listening socket that --listen [ADDR]:PORT names.
 *
 *   :PORT          every address, IPv6 and IPv4: one IPv6 socket with
 *                  IPV6_V6ONLY off, whatever net.ipv6.bindv6only says;
 *                  IPv4 clients arrive as ::ffff:a.b.c.d and are made
 *                  plain IPv4 at accept (netaddr.h).  A host without IPv6
 *                  (socket(AF_INET6) refused) gets 0.0.0.0:PORT instead.
 *   ADDR:PORT      that address only, bound by libssh (ssh_bind_listen):
 *   [ADDR]:PORT    127.0.0.1, [::1], 0.0.0.0 (IPv4 only), [::] (IPv6,
 *                  and IPv4 too unless net.ipv6.bindv6only is 1).
 *
 * Called once, as root, before atriumd splits (monitor_loop.c: monitor_loop_listen).
 */
#ifndef ATRIUMD_LISTENER_H
#define ATRIUMD_LISTENER_H

#include <stddef.h>

/* Split "[ADDR]:PORT" into addr (brackets removed; "" for every address)
 * and port.  0, or -EINVAL when malformed, too long, or PORT is not a
 * decimal number from 1 to 65535. */
int listener_parse(const char *listen, char *addr, size_t alen, char *port,
    size_t plen);

/* A socket listening on every address, IPv6 and IPv4, at port (numeric),
 * with backlog: the fd (close-on-exec), -EAFNOSUPPORT when the host has no
 * IPv6 (use IPv4 alone; nothing logged), or -errno with the reason
 * logged. */
int listener_open_dual(const char *port, int backlog);

/* A non-blocking socket listening on addr (numeric, not "") at port, with
 * backlog, bound by hand (atriumd-http's --http-listen, which libssh does
 * not bind): the fd (close-on-exec), or -errno with the reason logged. */
int listener_open_addr(const char *addr, const char *port, int backlog);

#endif
