/*
 * test_fs_workers.c: fs/workers.c on a queue of requests of its own, the
 * way a program's requests reach a mount:
 *   - requests sent one after the other (each waiting for the last) are
 *     all served by one thread, with no other woken between them;
 *   - a request that cannot finish until a later one is served (as an
 *     lseek that has the kernel write pages back first) does not hold
 *     that one up: another worker takes it within a few ticks;
 *   - so does a request said to be slow, and one that came together with
 *     the later one, at once (with a tick too long to help);
 *   - closing the queue ends workers_run with every thread joined, and no
 *     more threads than asked for were started.
 * Under make unit-tsan too.
 */
#include "../../fs/workers.h"
#include "unit.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#define QMAX 64
#define SEQ_REQUESTS 2000
#define WAIT_FOR_LATER -1        /* a request served only after LATER's */
#define LATER -2
#define SLOW_WAIT -3             /* as WAIT_FOR_LATER, and said to be slow */

/* The queue, and what serving did. */
struct queue {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int req[QMAX];
	unsigned head, tail;
	int closed;
	unsigned served;
	int later_served;
	pthread_t threads[64];       /* distinct threads that served */
	unsigned nthreads;
	unsigned by_first;           /* requests served by threads[0] */
	pthread_t later_by, waiter_by;
};

static void *
q_buf_new(void *arg)
{
	(void)arg;
	return malloc(sizeof(int));
}

static void
q_buf_free(void *arg, void *buf)
{
	(void)arg;
	free(buf);
}

static int
q_take(void *arg, void *buf)
{
	struct queue *q = arg;
	int r = 1;

	pthread_mutex_lock(&q->lock);
	while (q->head == q->tail && !q->closed)
		pthread_cond_wait(&q->cond, &q->lock);
	if (q->head == q->tail)
		r = 0;
	else
		*(int *)buf = q->req[q->head++ % QMAX];
	pthread_mutex_unlock(&q->lock);
	return r;
}

/* Note which thread served, under q->lock. */
static void
q_note_thread(struct queue *q)
{
	pthread_t self = pthread_self();
	unsigned i;

	for (i = 0; i < q->nthreads; i++)
		if (pthread_equal(q->threads[i], self))
			break;
	if (i == q->nthreads && q->nthreads < 64)
		q->threads[q->nthreads++] = self;
	if (i == 0)
		q->by_first++;
}

static void
q_serve(void *arg, void *buf)
{
	struct queue *q = arg;
	int id = *(int *)buf;

	pthread_mutex_lock(&q->lock);
	q_note_thread(q);
	if (id == WAIT_FOR_LATER || id == SLOW_WAIT) {
		q->waiter_by = pthread_self();
		while (!q->later_served)
			pthread_cond_wait(&q->cond, &q->lock);
	} else if (id == LATER) {
		q->later_by = pthread_self();
		q->later_served = 1;
	}
	q->served++;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
}

static int
q_slow(void *arg, const void *buf)
{
	(void)arg;
	return *(const int *)buf == SLOW_WAIT;
}

static int
q_pending(void *arg)
{
	struct queue *q = arg;
	int r;

	pthread_mutex_lock(&q->lock);
	r = q->head != q->tail;
	pthread_mutex_unlock(&q->lock);
	return r;
}

static int
q_ended(void *arg)
{
	(void)arg;
	return 0;
}

/* Queue id, then wait until n requests in all have been served. */
static void
q_send_wait(struct queue *q, int id, unsigned n)
{
	pthread_mutex_lock(&q->lock);
	q->req[q->tail++ % QMAX] = id;
	pthread_cond_broadcast(&q->cond);
	while (q->served < n)
		pthread_cond_wait(&q->cond, &q->lock);
	pthread_mutex_unlock(&q->lock);
}

struct run {
	struct queue *q;
	unsigned max, tick_ms;
	int r;
};

static void *
run_main(void *arg)
{
	struct run *run = arg;
	struct workers_source src = { run->q, q_buf_new, q_buf_free, q_take,
	    q_serve, q_slow, q_pending, q_ended };

	run->r = workers_run(&src, run->max, run->tick_ms);
	return NULL;
}

static void
q_init(struct queue *q)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
}

/* Close the queue and join the runner: workers_run must return 0. */
static void
q_close(struct queue *q, pthread_t runner, struct run *run)
{
	pthread_mutex_lock(&q->lock);
	q->closed = 1;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	pthread_join(runner, NULL);
	CHECK_INT(run->r, 0);
	pthread_cond_destroy(&q->cond);
	pthread_mutex_destroy(&q->lock);
}

/* One program's requests in sequence: one thread serves them all (the
 * tick is long, so that a preempted serve is not taken for a stuck one). */
static void
test_sequence_stays_on_one_thread(void)
{
	struct queue q;
	struct run run = { &q, 16, 500, -1 };
	pthread_t runner;

	q_init(&q);
	CHECK_INT(pthread_create(&runner, NULL, run_main, &run), 0);
	for (unsigned i = 0; i < SEQ_REQUESTS; i++)
		q_send_wait(&q, (int)i, i + 1);
	CHECK_INT(q.served, SEQ_REQUESTS);
	CHECK_INT(q.nthreads, 1);
	CHECK_INT(q.by_first, SEQ_REQUESTS);
	q_close(&q, runner, &run);
}

/* A request that waits for a later one does not hold it up. */
static void
test_stuck_request_does_not_block_the_next(void)
{
	struct queue q;
	struct run run = { &q, 4, 2, -1 };
	pthread_t runner;

	q_init(&q);
	CHECK_INT(pthread_create(&runner, NULL, run_main, &run), 0);
	q_send_wait(&q, 1, 1);
	pthread_mutex_lock(&q.lock);
	q.req[q.tail++ % QMAX] = WAIT_FOR_LATER;
	pthread_cond_broadcast(&q.cond);
	pthread_mutex_unlock(&q.lock);
	usleep(20000);               /* it is being served, stuck */
	q_send_wait(&q, LATER, 3);   /* hangs (the test times out) if held up */
	CHECK_INT(q.later_served, 1);
	CHECK(!pthread_equal(q.later_by, q.waiter_by));
	CHECK(q.nthreads >= 2 && q.nthreads <= 4);
	q_close(&q, runner, &run);
}

/* Send first (without waiting), then LATER; both must be served, by
 * two threads, with no tick to help. */
static void
check_served_together(int first, int together)
{
	struct queue q;
	struct run run = { &q, 4, 100000, -1 };
	pthread_t runner;

	q_init(&q);
	CHECK_INT(pthread_create(&runner, NULL, run_main, &run), 0);
	pthread_mutex_lock(&q.lock);
	q.req[q.tail++ % QMAX] = first;
	if (together)
		q.req[q.tail++ % QMAX] = LATER;
	pthread_cond_broadcast(&q.cond);
	pthread_mutex_unlock(&q.lock);
	if (!together) {
		usleep(20000);
		q_send_wait(&q, LATER, 2);
	}
	pthread_mutex_lock(&q.lock);
	while (q.served < 2)
		pthread_cond_wait(&q.cond, &q.lock);
	pthread_mutex_unlock(&q.lock);
	CHECK(!pthread_equal(q.later_by, q.waiter_by));
	q_close(&q, runner, &run);
}

static void
test_slow_request_hands_the_turn_on(void)
{
	check_served_together(SLOW_WAIT, 0);
}

static void
test_requests_that_come_together_are_served_together(void)
{
	check_served_together(WAIT_FOR_LATER, 1);
}

/* Many requests at once on at most 2 threads: all served, 2 threads. */
static void
test_thread_cap(void)
{
	struct queue q;
	struct run run = { &q, 2, 1, -1 };
	pthread_t runner;

	q_init(&q);
	CHECK_INT(pthread_create(&runner, NULL, run_main, &run), 0);
	pthread_mutex_lock(&q.lock);
	for (int i = 0; i < 40; i++)
		q.req[q.tail++ % QMAX] = i;
	pthread_cond_broadcast(&q.cond);
	while (q.served < 40)
		pthread_cond_wait(&q.cond, &q.lock);
	pthread_mutex_unlock(&q.lock);
	CHECK(q.nthreads >= 1 && q.nthreads <= 2);
	q_close(&q, runner, &run);
}

int
main(void)
{
	/* A hang is a failure, not a stuck make check. */
	alarm(60);
	TEST(test_sequence_stays_on_one_thread);
	TEST(test_stuck_request_does_not_block_the_next);
	TEST(test_slow_request_hands_the_turn_on);
	TEST(test_requests_that_come_together_are_served_together);
	TEST(test_thread_cap);
	return unit_done("test_fs_workers");
}
