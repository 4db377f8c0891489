/*
 * tsan_canary.c: a data race on purpose.  make unit-tsan runs it first and
 * fails when it passes: proof that a ThreadSanitizer report fails the run
 * (the build is instrumented, the options and run_unit.sh catch it).
 * Without TSan it exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static int shared_counter;

static void *
bump(void *arg)
{
	shared_counter++;       /* unlocked: the race TSan must report */
	return arg;
}

int
main(void)
{
	pthread_t t;
	int r = pthread_create(&t, NULL, bump, NULL);

	if (r != 0) {
		/* No thread, no race: unit-tsan then fails, and says this. */
		fprintf(stderr, "tsan_canary: no thread: %s\n", strerror(r));
		return 0;
	}
	shared_counter++;
	pthread_join(t, NULL);
	printf("tsan_canary: %d\n", shared_counter);
	return 0;
}
