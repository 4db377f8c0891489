/*
 * coro.c: coroutines on ucontext (coro.h).  Each has an mmap'd stack of
 * CORO_STACK bytes with a guard page below it, so an overflow faults instead
 * of corrupting the heap.  Under AddressSanitizer every switch is announced
 * (__sanitizer_start_switch_fiber / finish), as ASan needs to know which
 * stack is live; ASan still prints one "doesn't fully support
 * makecontext/swapcontext" warning per process, which is expected.
 *
 * Stacks are kept for reuse (at most CORO_SPARE): the file tools make one
 * or two coroutines per tool call, and unmapping a stack in a process with
 * other threads (io_uring's workers share the address space) flushes the
 * TLB of every CPU they ran on, which cost more than the rest of a step.
 * A kept stack holds only the pages its last user touched.  The spares are
 * process-wide allocator state, like malloc's, used from the loop's thread
 * only (coro.h: single-threaded).
 */
#include "coro.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define CORO_ASAN 1
#else
#define CORO_ASAN 0
#endif

#define CORO_SPARE	2	/* stacks kept for reuse */

/* Unused stacks (map of CORO_STACK + one guard page), loop thread only. */
static struct {
	char *map[CORO_SPARE];
	int n;
} coro_spare;

struct coro {
	ucontext_t ctx;			/* the coroutine's own context */
	ucontext_t caller;		/* where coro_resume was called */
	char *map;			/* guard page + stack */
	size_t map_len;
	coro_fn *fn;
	void *arg;
	int done;			/* fn has returned */
	/* ASan bookkeeping: the resumer's stack, fake stacks saved */
	const void *caller_bottom;
	size_t caller_size;
	void *caller_fake;
	void *own_fake;
};

/* Tell ASan we are about to switch to the stack [bottom, bottom+size);
 * save (NULL: this stack is finished) keeps our fake stack. */
static void
coro_asan_start(void **save, const void *bottom, size_t size)
{
#if CORO_ASAN
	__sanitizer_start_switch_fiber(save, bottom, size);
#else
	(void)save, (void)bottom, (void)size;
#endif
}

/* Tell ASan the switch has happened; old stack bounds go to bottom/size. */
static void
coro_asan_finish(void *fake, const void **bottom, size_t *size)
{
#if CORO_ASAN
	__sanitizer_finish_switch_fiber(fake, bottom, size);
#else
	(void)fake, (void)bottom, (void)size;
#endif
}

/* makecontext passes ints: the coroutine's address in two halves. */
static void
coro_entry(unsigned int hi, unsigned int lo)
{
	struct coro *c = (struct coro *)(((uintptr_t)hi << 32) | lo);

	coro_asan_finish(NULL, &c->caller_bottom, &c->caller_size);
	c->fn(c->arg);
	c->done = 1;
	coro_asan_start(NULL, c->caller_bottom, c->caller_size);
	setcontext(&c->caller);
	abort();	/* setcontext does not return */
}

/* getcontext in a frame of its own: it returns twice, which would put
 * coro_new's locals at risk. */
static int __attribute__((noinline))
coro_getcontext(ucontext_t *ctx)
{
	return getcontext(ctx);
}

struct coro *
coro_new(coro_fn *fn, void *arg)
{
	struct coro *c = calloc(1, sizeof(*c));
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uintptr_t p;

	if (!c)
		return NULL;
	c->map_len = CORO_STACK + page;
	if (coro_spare.n > 0) {
		c->map = coro_spare.map[--coro_spare.n];
	} else {
		c->map = mmap(NULL, c->map_len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
		    -1, 0);
		if (c->map == MAP_FAILED) {
			free(c);
			return NULL;
		}
		mprotect(c->map, page, PROT_NONE);
	}
	if (coro_getcontext(&c->ctx) < 0) {
		coro_free(c);
		return NULL;
	}
	c->ctx.uc_stack.ss_sp = c->map + page;
	c->ctx.uc_stack.ss_size = CORO_STACK;
	c->ctx.uc_link = NULL;
	c->fn = fn;
	c->arg = arg;
	p = (uintptr_t)c;
	makecontext(&c->ctx, (void (*)(void))coro_entry, 2,
	    (unsigned int)(p >> 32), (unsigned int)(p & 0xffffffffu));
	return c;
}

void
coro_free(struct coro *c)
{
	if (!c)
		return;
	if (c->map && c->map != MAP_FAILED) {
		if (coro_spare.n < CORO_SPARE && !CORO_ASAN)
			coro_spare.map[coro_spare.n++] = c->map;
		else
			munmap(c->map, c->map_len);
	}
	free(c);
}

int
coro_resume(struct coro *c)
{
	if (c->done)
		return 1;
	coro_asan_start(&c->caller_fake, c->ctx.uc_stack.ss_sp,
	    c->ctx.uc_stack.ss_size);
	swapcontext(&c->caller, &c->ctx);
	coro_asan_finish(c->caller_fake, NULL, NULL);
	return c->done;
}

void
coro_yield(struct coro *c)
{
	coro_asan_start(&c->own_fake, c->caller_bottom, c->caller_size);
	swapcontext(&c->ctx, &c->caller);
	coro_asan_finish(c->own_fake, &c->caller_bottom, &c->caller_size);
}
