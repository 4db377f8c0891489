/*
 * addr_match.h: OpenSSH's address pattern lists, as from="..." in
 * authorized_keys uses them (sshd(8) PATTERNS, AUTHORIZED_KEYS FILE
 * FORMAT):
 *
 *   list   = entry *( "," entry )
 *   entry  = [ "!" ] ( ADDRESS "/" MASKLEN | ADDRESS | WILDCARD )
 *
 * ADDRESS/MASKLEN is an IPv4 or IPv6 network (no host bits may be set
 * past MASKLEN); WILDCARD matches the address's text with '*' (any run)
 * and '?' (one character), case-insensitively.  A negated entry that
 * matches refuses at once, whatever else matches; otherwise a positive
 * entry must match.
 *
 * atriumd does no DNS: matching is against the client's numeric address,
 * so an entry that can only be a host name ("*.example.com") never
 * matches.  addr_match_check finds such entries so the loader can say so.
 * Pure functions, no allocation.
 */
#ifndef ATRIUMD_ADDR_MATCH_H
#define ATRIUMD_ADDR_MATCH_H

#include <stddef.h>

#define ADDR_MATCH_MAX_LIST	1024	/* bytes in a list */
#define ADDR_MATCH_MAX_ENTRIES	64	/* entries in a list */

/* Does the numeric address addr ("192.0.2.7", "::1") match list?  An
 * IPv4-mapped IPv6 address counts as its IPv4 one, for networks and
 * wildcards alike: "::ffff:10.0.0.5" is matched as "10.0.0.5".  1 yes,
 * 0 no, -EINVAL when the list is malformed (empty entry, bad mask, host
 * bits past the mask, too long). */
int addr_match_list(const char *addr, const char *list);

/* Check list's syntax.  0 when valid; 1 when valid and an entry is a host
 * name (which never matches), copied into name; -EINVAL when malformed. */
int addr_match_check(const char *list, char *name, size_t len);

#endif
