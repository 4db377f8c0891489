/*
 * coro.c: coroutines (coro.h).  Each has an mmap'd stack of CORO_STACK
 * bytes with a guard page below it, so an overflow faults instead of
 * corrupting the heap.
 *
 * Switching.  ucontext's swapcontext saves and restores the signal mask,
 * one rt_sigprocmask system call per switch: a file tool call made about
 * two dozen of them, a visible part of a step's time.  So ucontext is used
 * once per coroutine, to get onto its new stack (makecontext, then
 * setcontext from coro_resume); every later switch is _setjmp/_longjmp,
 * which save and restore registers only.  That is sound here because the
 * loop's thread never changes its signal mask while a coroutine is
 * suspended, and every jump lands in a frame that is still live: the
 * resumer's coro_resume (it has not returned while the coroutine runs) or
 * the coroutine's own coro_yield (it has not returned while suspended).
 * glibc's fortified longjmp (__longjmp_chk) refuses any jump to a lower
 * stack address unless on the signal stack, which a jump onto a coroutine's
 * stack usually is: this one file is built without _FORTIFY_SOURCE (it
 * calls no other function that fortification covers).
 *
 * Under AddressSanitizer every switch is announced
 * (__sanitizer_start_switch_fiber / finish), as ASan needs to know which
 * stack is live; ASan may print one "doesn't fully support
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
#undef _FORTIFY_SOURCE	/* before any header: see "Switching" above */
#include "coro.h"

#include <setjmp.h>
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
	ucontext_t boot;		/* the first switch onto the stack */
	jmp_buf self;			/* where the coroutine yielded */
	jmp_buf caller;			/* where coro_resume was called */
	int started;			/* boot has been used */
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
	_longjmp(c->caller, 1);
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
	if (coro_getcontext(&c->boot) < 0) {
		coro_free(c);
		return NULL;
	}
	c->boot.uc_stack.ss_sp = c->map + page;
	c->boot.uc_stack.ss_size = CORO_STACK;
	c->boot.uc_link = NULL;
	c->fn = fn;
	c->arg = arg;
	p = (uintptr_t)c;
	makecontext(&c->boot, (void (*)(void))coro_entry, 2,
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

/* Jump to where c is to go on: onto its fresh stack the first time (the
 * one switch that costs a system call), else into its coro_yield. */
static void __attribute__((noreturn))
coro_enter(struct coro *c)
{
	if (!c->started) {
		c->started = 1;
		setcontext(&c->boot);
		abort();	/* setcontext returns only on failure */
	}
	_longjmp(c->self, 1);
}

int
coro_resume(struct coro *c)
{
	if (c->done)
		return 1;
	coro_asan_start(&c->caller_fake, c->boot.uc_stack.ss_sp,
	    c->boot.uc_stack.ss_size);
	if (_setjmp(c->caller) == 0)
		coro_enter(c);
	coro_asan_finish(c->caller_fake, NULL, NULL);
	return c->done;
}

void
coro_yield(struct coro *c)
{
	coro_asan_start(&c->own_fake, c->caller_bottom, c->caller_size);
	if (_setjmp(c->self) == 0)
		_longjmp(c->caller, 1);
	coro_asan_finish(c->own_fake, &c->caller_bottom, &c->caller_size);
}
