/*
 * admission.c: the admission rules of admission.h.  Called by server.c for
 * every accepted TCP connection, before libssh sees a byte of it.
 *
 * Workload: one check per connection; a linear scan of at most
 * ADMISSION_SOURCES buckets is cheap next to a key exchange, and keeps the
 * table a plain array with no pointer to chase or hash to attack.
 */
#include "admission.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* See admission.h. */
int
admission_parse_startups(const char *text, struct admission_cfg *cfg)
{
	int start, drop, full, used = 0;

	if (sscanf(text, "%d:%d:%d%n", &start, &drop, &full, &used) != 3 ||
	    text[used] != '\0' || start < 1 || full < start || drop < 0 ||
	    drop > 100)
		return -EINVAL;
	cfg->start = start;
	cfg->drop = drop;
	cfg->full = full;
	return 0;
}

/* See admission.h. */
int
admission_init(struct admission *a, const struct admission_cfg *cfg)
{
	a->cfg = *cfg;
	a->used = 0;
	a->slots = calloc(ADMISSION_SOURCES, sizeof(*a->slots));
	return a->slots ? 0 : -ENOMEM;
}

/* See admission.h. */
void
admission_free(struct admission *a)
{
	free(a->slots);
	a->slots = NULL;
	a->used = 0;
}

/* See admission.h. */
void
admission_key_of(const struct sockaddr_storage *sa, struct admission_key *out)
{
	memset(out, 0, sizeof(*out));
	if (sa->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		memcpy(out->b, &in->sin_addr, 4);
	} else if (sa->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		const uint8_t *v = in6->sin6_addr.s6_addr;
		static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

		/* A v4-mapped address is its IPv4 source; others by /64,
		 * marked so that they never equal an IPv4 one. */
		if (memcmp(v, mapped, 12) == 0) {
			memcpy(out->b, v + 12, 4);
		} else {
			memcpy(out->b + 4, v, 8);
			out->b[15] = 6;
		}
	}
}

/* The bucket of key, made (or taken over from the source seen least
 * recently) with full tokens when there is none. */
static struct admission_bucket *
admission_bucket(struct admission *a, const struct admission_key *key,
    long long now_ms)
{
	struct admission_bucket *oldest = NULL, *b;

	for (int i = 0; i < a->used; i++) {
		b = &a->slots[i];
		if (memcmp(&b->key, key, sizeof(*key)) == 0)
			return b;
		if (!oldest || b->seen_ms < oldest->seen_ms)
			oldest = b;
	}
	b = a->used < ADMISSION_SOURCES ? &a->slots[a->used++] : oldest;
	b->key = *key;
	b->seen_ms = now_ms;
	b->milli_tokens = 2000LL * a->cfg.rate;
	return b;
}

/* Refill b for the time since it was seen; 1 when a token is there. */
static int
admission_refill(const struct admission *a, struct admission_bucket *b,
    long long now_ms)
{
	long long burst = 2000LL * a->cfg.rate;

	if (now_ms > b->seen_ms)
		b->milli_tokens += (now_ms - b->seen_ms) * a->cfg.rate;
	if (b->milli_tokens > burst)
		b->milli_tokens = burst;
	b->seen_ms = now_ms;
	return b->milli_tokens >= 1000;
}

/* Random early drop for a source that already has a handshake. */
static int
admission_drop_early(const struct admission_cfg *c, int total, int coin)
{
	int p;

	if (total < c->start)
		return 0;
	if (total >= c->full)
		return 1;
	p = c->drop + (100 - c->drop) * (total - c->start) /
	    (c->full - c->start);
	return coin < p;
}

/* See admission.h. */
enum admission_verdict
admission_check(struct admission *a, const struct admission_key *key,
    long long now_ms, int unauth_total, int unauth_source, int coin)
{
	const struct admission_cfg *c = &a->cfg;
	struct admission_bucket *b = NULL;
	enum admission_verdict v = ADMIT;

	if (c->per_source && unauth_source >= c->per_source)
		return REFUSE_SOURCE;
	if (c->rate && !admission_refill(a, b = admission_bucket(a, key,
	    now_ms), now_ms))
		return REFUSE_RATE;
	if (unauth_source > 0 && admission_drop_early(c, unauth_total, coin))
		return REFUSE_EARLY;
	if (unauth_total >= c->full)
		v = ADMIT_EVICT;
	if (b)
		b->milli_tokens -= 1000;
	return v;
}

/* See admission.h. */
const char *
admission_reason(enum admission_verdict v)
{
	switch (v) {
	case REFUSE_RATE:
		return "that address connects too often (per-source-rate)";
	case REFUSE_SOURCE:
		return "too many connections from that address not yet "
		    "authenticated (per-source-startups)";
	case REFUSE_EARLY:
		return "too many connections not yet authenticated "
		    "(max-startups)";
	default:
		return "admitted";
	}
}
