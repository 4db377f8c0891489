/*
 * admission.h: whether a new TCP connection may start an SSH handshake.
 *
 * Three rules, each a setting (atriumd(8) LIMITS):
 *   per-source rate     a token bucket per source (an IPv4 address, or an
 *                       IPv6 /64): per_source_rate connections a second,
 *                       bursts of twice that.
 *   per-source startups at most per_source_startups connections not yet
 *                       authenticated from one source.
 *   max-startups        START:RATE:FULL, as sshd_config(5)'s MaxStartups,
 *                       made fair: past START unauthenticated connections
 *                       a source that already has one is refused with
 *                       probability RATE% rising linearly to 100% at FULL;
 *                       a source with none is always let in, and at FULL
 *                       the oldest handshake of the source holding the
 *                       most is dropped to make room.  So a few addresses
 *                       holding idle connections cannot lock out a user
 *                       who comes from anywhere else.
 *
 * Pure: the caller passes the time, a random number and the counts of
 * unauthenticated connections; the table of buckets is bounded
 * (ADMISSION_SOURCES, least recently seen replaced).
 */
#ifndef ATRIUMD_ADMISSION_H
#define ATRIUMD_ADMISSION_H

#include <stdint.h>
#include <sys/socket.h>

#define ADMISSION_SOURCES	4096	/* sources whose rate is remembered */

struct admission_cfg {
	int rate;		/* connections a second per source; 0: no limit */
	int per_source;		/* unauthenticated per source; 0: no limit */
	int start, drop, full;	/* max-startups START:RATE:FULL */
};

/* A source: an IPv4 address, or an IPv6 /64 (16 bytes either way). */
struct admission_key {
	uint8_t b[16];
};

enum admission_verdict {
	ADMIT,			/* go ahead */
	ADMIT_EVICT,		/* go ahead, after dropping the oldest
				 * handshake of the busiest source */
	REFUSE_RATE,		/* this source connects too often */
	REFUSE_SOURCE,		/* this source has too many handshakes */
	REFUSE_EARLY,		/* random early drop */
};

struct admission_bucket {
	struct admission_key key;
	long long seen_ms;	/* last refill */
	long long milli_tokens;	/* tokens x 1000 */
};

struct admission {
	struct admission_cfg cfg;
	struct admission_bucket *slots;	/* ADMISSION_SOURCES of them */
	int used;
};

/* Parse "START:RATE:FULL" into cfg.  0, or -EINVAL when malformed or
 * not 1 <= START <= FULL and 0 <= RATE <= 100. */
int admission_parse_startups(const char *text, struct admission_cfg *cfg);

/* Make the table.  0 or -ENOMEM. */
int admission_init(struct admission *a, const struct admission_cfg *cfg);
void admission_free(struct admission *a);

/* The source of a peer address. */
void admission_key_of(const struct sockaddr_storage *sa,
    struct admission_key *out);

/* Decide on a connection from key at now_ms.  unauth_total and
 * unauth_source count the connections not yet authenticated, overall and
 * from key; coin is a random number in [0, 100).  Takes a token when it
 * admits. */
enum admission_verdict admission_check(struct admission *a,
    const struct admission_key *key, long long now_ms, int unauth_total,
    int unauth_source, int coin);

/* Text for a verdict, for the log. */
const char *admission_reason(enum admission_verdict v);

#endif
