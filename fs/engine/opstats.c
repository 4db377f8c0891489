/*
 * opstats.c: counts and latency of a mount's requests (opstats.h).
 * Relaxed atomics only: each figure is a counter on its own, and no
 * reader needs them to agree with each other at an instant.
 */
#include "opstats.h"

#include <time.h>

const uint64_t opstats_bucket_ns[OPSTATS_BUCKETS] = FSSTATS_BUCKET_NS;
const char *const opstats_kind_names[OPSTATS_KINDS] = FSSTATS_KIND_NAMES;

uint64_t
opstats_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
opstats_note(struct opstats *s, enum opstats_kind kind, uint64_t ns)
{
	int b = 0;

	if ((unsigned)kind >= OPSTATS_KINDS)
		return;
	while (b < OPSTATS_BUCKETS && ns > opstats_bucket_ns[b])
		b++;
	if (b < OPSTATS_BUCKETS)
		atomic_fetch_add_explicit(&s->k[kind].bucket[b], 1,
		    memory_order_relaxed);
	atomic_fetch_add_explicit(&s->k[kind].sum_ns, ns,
	    memory_order_relaxed);
	atomic_fetch_add_explicit(&s->k[kind].count, 1, memory_order_relaxed);
}

void
opstats_read(struct opstats *s, enum opstats_kind kind,
    struct opstats_kind_figures *out)
{
	out->count = atomic_load_explicit(&s->k[kind].count,
	    memory_order_relaxed);
	out->sum_ns = atomic_load_explicit(&s->k[kind].sum_ns,
	    memory_order_relaxed);
	for (int b = 0; b < OPSTATS_BUCKETS; b++)
		out->bucket[b] = atomic_load_explicit(&s->k[kind].bucket[b],
		    memory_order_relaxed);
}
