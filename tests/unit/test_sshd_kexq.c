/*
 * test_sshd_kexq.c: the bounded queue that hands handshakes between the
 * main loop and the handshake threads (sshd/net/kexq.c): order, the bound,
 * and no job lost or doubled with threads pushing and popping at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "unit.h"
#include "../../sshd/net/kexq.h"

/* First in, first out; empty gives NULL; the links are cleared. */
static void
test_fifo(void)
{
	struct kex_job j[3];
	struct kexq q;

	CHECK_INT(kexq_init(&q, 8), 0);
	CHECK(kexq_pop(&q) == NULL);
	for (int i = 0; i < 3; i++)
		CHECK_INT(kexq_push(&q, &j[i]), 0);
	CHECK_INT(kexq_len(&q), 3);
	for (int i = 0; i < 3; i++) {
		struct kex_job *got = kexq_pop(&q);

		CHECK(got == &j[i]);
		CHECK(got && got->next == NULL);
	}
	CHECK(kexq_pop(&q) == NULL);
	CHECK_INT(kexq_len(&q), 0);
	/* Usable again once emptied. */
	CHECK_INT(kexq_push(&q, &j[1]), 0);
	CHECK(kexq_pop(&q) == &j[1]);
	kexq_destroy(&q);
}

/* Past cap a push is refused and leaves the queue as it was. */
static void
test_bounded(void)
{
	struct kex_job j[4];
	struct kexq q;

	CHECK_INT(kexq_init(&q, 3), 0);
	for (int i = 0; i < 3; i++)
		CHECK_INT(kexq_push(&q, &j[i]), 0);
	CHECK_INT(kexq_push(&q, &j[3]), -EAGAIN);
	CHECK_INT(kexq_len(&q), 3);
	CHECK(kexq_pop(&q) == &j[0]);
	CHECK_INT(kexq_push(&q, &j[3]), 0);
	CHECK(kexq_pop(&q) == &j[1]);
	CHECK(kexq_pop(&q) == &j[2]);
	CHECK(kexq_pop(&q) == &j[3]);
	CHECK(kexq_pop(&q) == NULL);
	kexq_destroy(&q);
}

#define PRODUCERS	4
#define PER_PRODUCER	20000

struct race {
	struct kexq *q;
	struct kex_job *jobs;	/* this producer's */
	int *seen;		/* per job, counted by the consumer */
};

/* Push every job, retrying while the queue is full. */
static void *
race_produce(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < PER_PRODUCER; i++)
		while (kexq_push(r->q, &r->jobs[i]) == -EAGAIN)
			;
	return NULL;
}

/* Several threads push into a small queue while this one pops: every job
 * comes out exactly once, and each producer's jobs in its order. */
static void
test_threads(void)
{
	struct kex_job *jobs = calloc(PRODUCERS * PER_PRODUCER, sizeof(*jobs));
	int *seen = calloc(PRODUCERS * PER_PRODUCER, sizeof(*seen));
	int last[PRODUCERS], got = 0, order_ok = 1;
	pthread_t th[PRODUCERS];
	struct race r[PRODUCERS];
	struct kexq q;

	CHECK(jobs && seen);
	if (!jobs || !seen)
		return;
	CHECK_INT(kexq_init(&q, 16), 0);
	for (int p = 0; p < PRODUCERS; p++) {
		r[p] = (struct race){ &q, jobs + p * PER_PRODUCER, seen };
		last[p] = -1;
		CHECK_INT(pthread_create(&th[p], NULL, race_produce, &r[p]), 0);
	}
	while (got < PRODUCERS * PER_PRODUCER) {
		struct kex_job *j = kexq_pop(&q);
		long idx;

		if (!j)
			continue;
		CHECK_INT(kexq_len(&q) <= 16, 1);
		idx = j - jobs;
		seen[idx]++;
		if (idx % PER_PRODUCER <= last[idx / PER_PRODUCER])
			order_ok = 0;
		last[idx / PER_PRODUCER] = (int)(idx % PER_PRODUCER);
		got++;
	}
	for (int p = 0; p < PRODUCERS; p++)
		pthread_join(th[p], NULL);
	for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++)
		CHECK_INT(seen[i], 1);
	CHECK(order_ok);
	CHECK(kexq_pop(&q) == NULL);
	kexq_destroy(&q);
	free(jobs);
	free(seen);
}

int
main(void)
{
	TEST(test_fifo);
	TEST(test_bounded);
	TEST(test_threads);
	return unit_done("sshd_kexq");
}
