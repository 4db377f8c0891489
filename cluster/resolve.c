/*
 * resolve.c: advertised addresses as numbers (resolve.h), for the etcd
 * thread of cluster/node.c, which answers `use` for a room whose home is
 * another node with the address the front door dials.
 *
 * Rules:
 *  - A numeric HOST:PORT is copied as it is; only names are looked up.
 *  - The thread that asks also renews this node's lease: a resolver that
 *    hangs must not hold it, or every room of this host would be fenced
 *    for want of a renewal.  So names are asked of glibc's getaddrinfo_a,
 *    whose look-ups run on threads of glibc's own; a call waits for an
 *    answer as long as its caller allows (node.c: a quarter of the lease,
 *    as for an etcd request), RESOLVE_WAIT_MS at most, and a name still
 *    being looked up after that is answered -EAGAIN while its look-up
 *    goes on.
 *  - An answer is used for RESOLVE_TTL_S; then the name is asked again in
 *    the background and the old answer serves meanwhile.  A failure is
 *    kept RESOLVE_FAIL_S, so a name that does not resolve is not asked on
 *    every call.
 *  - The first address glibc gives (its order: RFC 6724, /etc/gai.conf)
 *    is the one dialled; the front dials one address.
 *  - At most RESOLVE_MAX names; the one answered longest ago makes room.
 *
 * Workload: a few names (one per node of the cluster), asked at each use
 * of a room that lives elsewhere; a linear scan is enough.
 */
#include "resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RESOLVE_FAIL_S	2	/* a failed look-up is kept this long */
#define RESOLVE_HOST_MAX 128	/* bytes of a name, with NUL */

/* One name: its look-up while one runs, and its last answer. */
struct rs_name {
	char host[RESOLVE_HOST_MAX];	/* the name (ar_name points here) */
	struct addrinfo hints;		/* cb.ar_request points here */
	struct gaicb cb;		/* the look-up, while pending */
	int pending;			/* cb is glibc's until it ends */
	char num[INET6_ADDRSTRLEN];	/* last answer, or "" */
	int err;			/* last failure (-errno), or 0 */
	int64_t at_s;			/* monotonic s of the last answer */
};

struct resolve {
	struct rs_name *names[RESOLVE_MAX];
	int n;
};

static int64_t
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

/* See resolve.h. */
struct resolve *
resolve_new(void)
{
	return calloc(1, sizeof(struct resolve));
}

/* Free e, unless glibc still writes into it (then it is left). */
static void
rs_name_free(struct rs_name *e)
{
	if (e->pending) {
		int c = gai_cancel(&e->cb);

		if (c == EAI_NOTCANCELED)
			return;		/* glibc's thread ends it: left */
		if (c == EAI_ALLDONE && gai_error(&e->cb) == 0 &&
		    e->cb.ar_result)
			freeaddrinfo(e->cb.ar_result);
	}
	free(e);
}

/* See resolve.h. */
void
resolve_free(struct resolve *r)
{
	if (!r)
		return;
	for (int i = 0; i < r->n; i++)
		rs_name_free(r->names[i]);
	free(r);
}

/* addr into its host (brackets of an IPv6 number taken off) and port.
 * 0 or -EINVAL. */
static int
rs_split(const char *addr, char *host, size_t hostlen, long *port)
{
	const char *colon = strrchr(addr, ':');
	const char *h = addr;
	size_t n;
	char *end;

	if (!colon || colon == addr)
		return -EINVAL;
	n = (size_t)(colon - addr);
	if (addr[0] == '[') {
		if (n < 3 || addr[n - 1] != ']')
			return -EINVAL;
		h = addr + 1;
		n -= 2;
	}
	if (n >= hostlen)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || *port < 1 || *port > 65535)
		return -EINVAL;
	return 0;
}

/* A numeric host and port as the relay dials them: "1.2.3.4:22",
 * "[::1]:22".  0, or -EINVAL when host is not a number, -ENAMETOOLONG. */
static int
rs_format(const char *host, long port, char *out, size_t len)
{
	unsigned char tmp[sizeof(struct in6_addr)];
	int n;

	if (inet_pton(AF_INET, host, tmp) == 1)
		n = snprintf(out, len, "%s:%ld", host, port);
	else if (inet_pton(AF_INET6, host, tmp) == 1)
		n = snprintf(out, len, "[%s]:%ld", host, port);
	else
		return -EINVAL;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Start e's look-up in the background. */
static void
rs_start(struct rs_name *e)
{
	struct gaicb *list[1] = { &e->cb };
	int rc;

	memset(&e->hints, 0, sizeof(e->hints));
	e->hints.ai_family = AF_UNSPEC;
	e->hints.ai_socktype = SOCK_STREAM;
	memset(&e->cb, 0, sizeof(e->cb));
	e->cb.ar_name = e->host;
	e->cb.ar_request = &e->hints;
	rc = getaddrinfo_a(GAI_NOWAIT, list, 1, NULL);
	if (rc == 0) {
		e->pending = 1;
		return;
	}
	e->num[0] = '\0';
	e->err = rc == EAI_MEMORY ? -ENOMEM : -EIO;
	e->at_s = mono_s();
}

/* The first address of a finished look-up into e->num (or e->err). */
static void
rs_take(struct rs_name *e, int rc)
{
	struct addrinfo *ai;

	e->pending = 0;
	e->at_s = mono_s();
	e->num[0] = '\0';
	e->err = rc == EAI_NONAME || rc == EAI_NODATA ||
	    rc == EAI_ADDRFAMILY ? -ENOENT : rc ? -EIO : -ENOENT;
	if (rc != 0)
		return;
	for (ai = e->cb.ar_result; ai; ai = ai->ai_next) {
		const void *a = ai->ai_family == AF_INET ?
		    (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr :
		    ai->ai_family == AF_INET6 ?
		    (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr :
		    NULL;

		if (a && inet_ntop(ai->ai_family, a, e->num, sizeof(e->num))) {
			e->err = 0;
			break;
		}
	}
	freeaddrinfo(e->cb.ar_result);
	e->cb.ar_result = NULL;
}

/* Has e's look-up ended?  Waits up to wait_ms for it. */
static void
rs_poll(struct rs_name *e, int wait_ms)
{
	const struct gaicb *list[1] = { &e->cb };
	struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000L };
	int rc;

	if (wait_ms > 0)
		gai_suspend(list, 1, &ts);	/* EAI_AGAIN: timed out */
	rc = gai_error(&e->cb);
	if (rc != EAI_INPROGRESS)
		rs_take(e, rc);
}

/* host's entry, made (and its look-up started) when there is none.
 * NULL when every entry is being looked up (-EBUSY) or out of memory. */
static struct rs_name *
rs_entry(struct resolve *r, const char *host)
{
	struct rs_name *e = NULL;
	int i, old = -1;

	for (i = 0; i < r->n; i++) {
		if (strcmp(r->names[i]->host, host) == 0)
			return r->names[i];
		if (!r->names[i]->pending && (old < 0 ||
		    r->names[i]->at_s < r->names[old]->at_s))
			old = i;
	}
	if (r->n < RESOLVE_MAX) {
		if (!(e = calloc(1, sizeof(*e))))
			return NULL;
		r->names[r->n++] = e;
	} else if (old >= 0) {
		e = r->names[old];
		memset(e, 0, sizeof(*e));
	} else {
		return NULL;
	}
	snprintf(e->host, sizeof(e->host), "%s", host);
	rs_start(e);
	return e;
}

/* 1 when e's last answer (or failure) is to be asked again. */
static int
rs_stale(const struct rs_name *e)
{
	int64_t age = mono_s() - e->at_s;

	return !e->pending && age >= (e->num[0] ? RESOLVE_TTL_S :
	    RESOLVE_FAIL_S);
}

/* See resolve.h. */
int
resolve_addr(struct resolve *r, const char *addr, int wait_ms, char *out,
    size_t len)
{
	char host[RESOLVE_HOST_MAX];
	struct rs_name *e;
	long port;
	int rc;

	out[0] = '\0';
	if ((rc = rs_split(addr, host, sizeof(host), &port)) < 0)
		return rc;
	if ((rc = rs_format(host, port, out, len)) != -EINVAL)
		return rc;	/* a number, as it is */
	if (!(e = rs_entry(r, host)))
		return r->n < RESOLVE_MAX ? -ENOMEM : -EBUSY;
	if (rs_stale(e))
		rs_start(e);
	if (e->pending)
		rs_poll(e, e->num[0] ? 0 : wait_ms < RESOLVE_WAIT_MS ?
		    wait_ms : RESOLVE_WAIT_MS);
	if (e->num[0])
		return rs_format(e->num, port, out, len);
	return e->pending ? -EAGAIN : e->err;
}
