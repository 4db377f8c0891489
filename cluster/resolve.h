/*
 * resolve.h: a node's advertised address (HOST:PORT, HOST a name or a
 * number) as the numeric address the front door dials.  The network
 * process resolves no names (sshd/net/relay.c dials numbers only: its
 * seccomp has no room for a resolver, and it never waits), so the
 * monitor's etcd thread resolves a home's address before `use` answers
 * with it (cluster/node.c).  resolve.c has the rules.
 *
 * One struct resolve is used by one thread (node.c's etcd thread).
 */
#ifndef ATRIUM_CLUSTER_RESOLVE_H
#define ATRIUM_CLUSTER_RESOLVE_H

#include <stddef.h>

#define RESOLVE_WAIT_MS	1000	/* the longest a call may wait for a name */
#define RESOLVE_TTL_S	30	/* an answer is asked again after this */
#define RESOLVE_MAX	64	/* names kept */

struct resolve;

/* A cache of names and their answers; NULL when out of memory. */
struct resolve *resolve_new(void);

/* Free it (NULL is fine).  A look-up glibc cannot cancel is left to end
 * on its own (its few bytes are not freed). */
void resolve_free(struct resolve *r);

/* addr ("host:22", "10.0.0.1:22", "[fd00::1]:22") as a numeric address
 * in out ("10.0.0.1:22", "[fd00::1]:22").  A number is copied at once; a
 * name is looked up, waiting wait_ms at most (up to RESOLVE_WAIT_MS).
 * 0; -EINVAL (not HOST:PORT), -ENOENT (the name has no address), -EAGAIN
 * (still being looked up: ask again soon), -EBUSY (too many names being
 * looked up), -ENAMETOOLONG (out too small), -EIO (the resolver
 * failed). */
int resolve_addr(struct resolve *r, const char *addr, int wait_ms, char *out,
    size_t len);

#endif
