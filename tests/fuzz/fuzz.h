/*
 * fuzz.h: what the libFuzzer entry points in tests/fuzz/ share: split plans
 * for feeding one input at many boundaries, and a check that aborts (so
 * libFuzzer records the input) when an invariant breaks.
 *
 * Each target feeds the same bytes whole, one byte at a time and in pieces
 * whose lengths come from a hash of the input, then compares the results:
 * a stream parser must not care where its input was cut.  Seeds stay plain
 * documentation-shaped files because no byte of the input is spent on the
 * plan.
 */
#ifndef ATRIUM_FUZZ_H
#define ATRIUM_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Abort with the broken invariant when cond is false. */
#define FUZZ_CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, \
		    __LINE__, #cond); \
		abort(); \
	} \
} while (0)

enum fuzz_plan { FUZZ_WHOLE, FUZZ_BYTES, FUZZ_RANDOM, FUZZ_NPLANS };

/* Where a plan stands in one input. */
struct fuzz_split {
	enum fuzz_plan plan;
	uint64_t rng;		/* xorshift state, from the input's hash */
	size_t max_chunk;	/* no piece is longer (0: no limit) */
};

/* FNV-1a of the input: the seed of the random plan. */
static inline uint64_t
fuzz_hash(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h | 1;
}

/* Start a plan over input (p, n); pieces never pass max_chunk (0: any). */
static inline void
fuzz_split_init(struct fuzz_split *s, enum fuzz_plan plan, const uint8_t *p,
    size_t n, size_t max_chunk)
{
	s->plan = plan;
	s->rng = fuzz_hash(p, n);
	s->max_chunk = max_chunk;
}

/* Length of the next piece, 1..left (left > 0).  The random plan favours
 * short pieces, which is where boundary bugs live. */
static inline size_t
fuzz_split_next(struct fuzz_split *s, size_t left)
{
	size_t len;

	switch (s->plan) {
	case FUZZ_BYTES:
		len = 1;
		break;
	case FUZZ_RANDOM:
		s->rng ^= s->rng << 13;
		s->rng ^= s->rng >> 7;
		s->rng ^= s->rng << 17;
		len = (s->rng & 3) == 0 ? (size_t)(s->rng >> 8) % 512 + 1 :
		    (size_t)(s->rng >> 8) % 8 + 1;
		break;
	default:
		len = left;
		break;
	}
	if (s->max_chunk && len > s->max_chunk)
		len = s->max_chunk;
	return len < left ? len : left;
}

/* A NUL-terminated copy of the input (so ASan still sees its true end);
 * the caller frees it. */
static inline char *
fuzz_cstring(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (!s)
		abort();
	for (size_t i = 0; i < n; i++)
		s[i] = (char)p[i];
	s[n] = '\0';
	return s;
}

#endif
