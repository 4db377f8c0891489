/*
 * test_agent_coro.c: coroutines (agent/coro.c): values live across
 * switches, many coroutines interleaved, deep stacks, reuse of kept
 * stacks, and the signal mask left alone by a switch.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../../agent/coro.h"
#include "unit.h"

struct counter {
	struct coro *co;
	int yields;		/* how many times to yield */
	long sum;		/* what the coroutine computed */
	int seen;		/* how far it got */
};

/* Keeps locals (some in callee-saved registers) across every yield. */
static void
count_body(void *arg)
{
	struct counter *k = arg;
	long a = 1, b = 0;

	for (int i = 0; i < k->yields; i++) {
		b += a * (i + 1);
		a = -a;
		k->seen = i + 1;
		coro_yield(k->co);
	}
	k->sum = b;
}

static void
test_resume_yield_keeps_locals(void)
{
	struct counter k = { .yields = 1000 };
	int n = 0;
	long want = 0, a = 1;

	k.co = coro_new(count_body, &k);
	CHECK(k.co != NULL);
	while (!coro_resume(k.co)) {
		n++;
		CHECK_INT(k.seen, n);
	}
	for (int i = 0; i < k.yields; i++, a = -a)
		want += a * (i + 1);
	CHECK_INT(n, 1000);
	CHECK_INT(k.sum, want);
	CHECK_INT(coro_resume(k.co), 1);	/* a done one stays done */
	coro_free(k.co);
}

static void
test_interleaved(void)
{
	struct counter k[5];
	int live = 5, rounds = 0;

	for (int i = 0; i < 5; i++) {
		memset(&k[i], 0, sizeof(k[i]));
		k[i].yields = 10 * (i + 1);
		k[i].co = coro_new(count_body, &k[i]);
		CHECK(k[i].co != NULL);
	}
	while (live > 0 && rounds++ < 1000) {
		live = 0;
		for (int i = 0; i < 5; i++)
			if (!coro_resume(k[i].co))
				live++;
	}
	for (int i = 0; i < 5; i++) {
		CHECK_INT(k[i].seen, 10 * (i + 1));
		coro_free(k[i].co);
	}
	CHECK_INT(live, 0);
}

/* Recurses depth frames deep, yielding at the bottom. */
static long
deep(struct coro *co, int depth)
{
	volatile char pad[512];

	pad[0] = (char)depth;
	if (depth == 0) {
		coro_yield(co);
		return pad[0];
	}
	return deep(co, depth - 1) + 1 + pad[0] - (char)depth;
}

struct deep_arg {
	struct coro *co;
	long got;
};

static void
deep_body(void *arg)
{
	struct deep_arg *d = arg;

	d->got = deep(d->co, 1000);	/* about 600 KiB of the stack */
}

static void
test_deep_stack(void)
{
	struct deep_arg d = { 0 };

	d.co = coro_new(deep_body, &d);
	CHECK(d.co != NULL);
	CHECK_INT(coro_resume(d.co), 0);
	CHECK_INT(coro_resume(d.co), 1);
	CHECK_INT(d.got, 1000);
	coro_free(d.co);
}

static void
test_stacks_reused(void)
{
	/* More than the kept spares, one after the other, and freed while
	 * suspended: each fresh coroutine starts from its own beginning. */
	for (int i = 0; i < 10; i++) {
		struct counter k = { .yields = 3 };

		k.co = coro_new(count_body, &k);
		CHECK(k.co != NULL);
		CHECK_INT(coro_resume(k.co), 0);
		CHECK_INT(k.seen, 1);
		if (i % 2) {
			coro_free(k.co);	/* discarded suspended */
			continue;
		}
		while (!coro_resume(k.co))
			;
		CHECK_INT(k.seen, 3);
		coro_free(k.co);
	}
}

static void
mask_body(void *arg)
{
	struct counter *k = arg;

	coro_yield(k->co);
	k->seen = 1;
}

static void
test_signal_mask_kept(void)
{
	struct counter k = { 0 };
	sigset_t set, old, now;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	k.co = coro_new(mask_body, &k);
	CHECK(k.co != NULL);
	CHECK_INT(coro_resume(k.co), 0);
	CHECK_INT(coro_resume(k.co), 1);
	sigprocmask(SIG_SETMASK, NULL, &now);
	CHECK(sigismember(&now, SIGUSR1));
	CHECK_INT(k.seen, 1);
	coro_free(k.co);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int
main(void)
{
	TEST(test_resume_yield_keeps_locals);
	TEST(test_interleaved);
	TEST(test_deep_stack);
	TEST(test_stacks_reused);
	TEST(test_signal_mask_kept);
	return unit_done("agent_coro");
}
