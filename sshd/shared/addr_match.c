/*
 * addr_match.c: OpenSSH address pattern lists (addr_match.h).  Called by
 * authkeys_opts.c: addr_match_check when a from= option is parsed,
 * addr_match_list at each authentication with such a key.
 *
 * The client's address is normalised first: an IPv4-mapped IPv6 address
 * (::ffff:a.b.c.d, how a dual-stack listener reports an IPv4 client) is
 * its IPv4 address for networks and wildcards alike, as OpenSSH's sshd
 * has it.  Each entry is then tried as ADDRESS[/MASKLEN] (inet_pton), as
 * OpenSSH's addr_match_list prefers CIDR, and only when that fails as a
 * wildcard on the address's text.  Lists are short (a few entries), so
 * every call splits its own copy; the wildcards are pattern.c's.
 */
#include "addr_match.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"

/* An address of either family: family AF_INET (4 bytes used) or AF_INET6. */
struct addr_match_addr {
	int family;
	unsigned char a[16];
};

/* Parse a numeric address; with map, an IPv4-mapped IPv6 one becomes
 * IPv4 (a dual-stack listener reports IPv4 clients so).  0 or -EINVAL. */
static int
addr_match_parse(const char *text, struct addr_match_addr *out, int map)
{
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	    0xff, 0xff };

	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, text, out->a) == 1) {
		out->family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, text, out->a) != 1)
		return -EINVAL;
	out->family = AF_INET6;
	if (map && memcmp(out->a, mapped, sizeof(mapped)) == 0) {
		memmove(out->a, out->a + 12, 4);
		memset(out->a + 4, 0, 12);
		out->family = AF_INET;
	}
	return 0;
}

/* Bits in an address of family. */
static unsigned
addr_match_bits(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* Entry as ADDRESS[/MASKLEN]: 0 with *net and *masklen set, 1 when the
 * entry is not an address (try it as a wildcard), -EINVAL for a bad mask
 * or host bits set past it (OpenSSH refuses those too). */
static int
addr_match_cidr(const char *entry, struct addr_match_addr *net,
    unsigned *masklen)
{
	char host[64];
	const char *slash = strchr(entry, '/');
	size_t n = slash ? (size_t)(slash - entry) : strlen(entry);
	char *end;
	unsigned long m;

	if (n >= sizeof(host))
		return 1;
	memcpy(host, entry, n);
	host[n] = '\0';
	if (addr_match_parse(host, net, 0) < 0)
		return 1;
	*masklen = addr_match_bits(net->family);
	if (!slash)
		return 0;
	if (!isdigit((unsigned char)slash[1]))
		return -EINVAL;
	m = strtoul(slash + 1, &end, 10);
	if (*end || m > *masklen)
		return -EINVAL;
	*masklen = (unsigned)m;
	for (unsigned i = *masklen; i < addr_match_bits(net->family); i++)
		if (net->a[i / 8] & (0x80 >> (i % 8)))
			return -EINVAL;
	return 0;
}

/* Is a inside net/masklen? */
static int
addr_match_net(const struct addr_match_addr *a,
    const struct addr_match_addr *net, unsigned masklen)
{
	if (a->family != net->family)
		return 0;
	for (unsigned i = 0; i < masklen; i++) {
		unsigned bit = 0x80 >> (i % 8);

		if ((a->a[i / 8] & bit) != (net->a[i / 8] & bit))
			return 0;
	}
	return 1;
}

/* Could entry (valid, not negated) match a numeric address at all?  A
 * network can; a wildcard only when it holds nothing but hex digits,
 * '.', ':' and wildcards; anything else is a host name. */
static int
addr_match_is_hostname(const char *entry)
{
	struct addr_match_addr net;
	unsigned masklen;

	if (addr_match_cidr(entry, &net, &masklen) == 0)
		return 0;
	return entry[strspn(entry, "0123456789abcdefABCDEF.:*?")] != '\0';
}

/* Copy list and cut it into entries.  Count, or -EINVAL. */
static int
addr_match_split(const char *list, char *copy, char **entries)
{
	size_t n = strlen(list);
	int count = 0;
	char *save = NULL, *e;

	if (n == 0 || n > ADDR_MATCH_MAX_LIST)
		return -EINVAL;
	memcpy(copy, list, n + 1);
	/* strtok_r would skip empty entries, which OpenSSH refuses. */
	if (copy[0] == ',' || copy[n - 1] == ',' || strstr(copy, ",,"))
		return -EINVAL;
	for (e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		if (count == ADDR_MATCH_MAX_ENTRIES)
			return -EINVAL;
		entries[count++] = e;
	}
	return count;
}

/* One entry against addr (may be NULL: syntax only).  1 match, 0 not,
 * -EINVAL malformed.  *neg says whether the entry was negated. */
static int
addr_match_entry(const char *entry, const struct addr_match_addr *a,
    const char *text, int *neg)
{
	struct addr_match_addr net;
	unsigned masklen;
	int r;

	*neg = entry[0] == '!';
	entry += *neg;
	if (*entry == '\0')
		return -EINVAL;
	r = addr_match_cidr(entry, &net, &masklen);
	if (r < 0)
		return r;
	if (r == 0)
		return a && addr_match_net(a, &net, masklen);
	if (strchr(entry, '/'))
		return -EINVAL;	/* neither a network nor a pattern */
	return text && pattern_match(text, entry, 1);
}

/* The text wildcards see: an IPv4-mapped address as its dotted IPv4
 * form, so that "10.0.0.*" and "!10.0.0.*" mean the same whether the
 * client came to an IPv4 or a dual-stack listener (a pattern written for
 * the mapped text would otherwise be the only one that matched, and a
 * negation meant to refuse would let the client in).  Any other address
 * is matched as given. */
static const char *
addr_match_text(const char *addr, const struct addr_match_addr *a,
    int have, char *buf, size_t len)
{
	if (have && a->family == AF_INET && strchr(addr, ':') &&
	    inet_ntop(AF_INET, a->a, buf, (socklen_t)len))
		return buf;
	return addr;
}

/* See addr_match.h. */
int
addr_match_list(const char *addr, const char *list)
{
	char copy[ADDR_MATCH_MAX_LIST + 1], *entries[ADDR_MATCH_MAX_ENTRIES];
	char v4[INET_ADDRSTRLEN];
	struct addr_match_addr a;
	int n = addr_match_split(list, copy, entries), positive = 0;
	int have = addr_match_parse(addr, &a, 1) == 0;
	const char *text = addr_match_text(addr, &a, have, v4, sizeof(v4));

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int neg, r = addr_match_entry(entries[i], have ? &a : NULL,
		    text, &neg);

		if (r < 0)
			return r;
		if (r && neg)
			return 0;
		positive |= r;
	}
	return positive;
}

/* See addr_match.h. */
int
addr_match_check(const char *list, char *name, size_t len)
{
	char copy[ADDR_MATCH_MAX_LIST + 1], *entries[ADDR_MATCH_MAX_ENTRIES];
	int n = addr_match_split(list, copy, entries), found = 0;

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		int neg;
		const char *e = entries[i];

		if (addr_match_entry(e, NULL, NULL, &neg) < 0)
			return -EINVAL;
		e += neg;
		if (!found && addr_match_is_hostname(e)) {
			snprintf(name, len, "%s", e);
			found = 1;
		}
	}
	return found;
}
