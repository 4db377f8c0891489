/*
 * coro.h: coroutines (coro.c) for the file tools, so that a tool is
 * straight-line code whose every I/O operation suspends it until the loop
 * delivers the completion: the loop never blocks on the workspace (a slow
 * or hung FUSE mount stalls one tool call, not the room).
 *
 * Single-threaded: a coroutine is resumed only from the loop's own stack,
 * never from another coroutine.
 */
#ifndef ATRIUM_AGENT_CORO_H
#define ATRIUM_AGENT_CORO_H

#include <stddef.h>

#define CORO_STACK	(1024 * 1024)	/* bytes of stack each, mapped lazily */

struct coro;
typedef void coro_fn(void *arg);

/* A coroutine that will run fn(arg) on its own stack when first resumed.
 * NULL on ENOMEM. */
struct coro *coro_new(coro_fn *fn, void *arg);

/* Free it.  It must not be running; a suspended one is discarded with its
 * stack (whatever its frames held is not released).  NULL is fine. */
void coro_free(struct coro *c);

/* Run c until it yields or fn returns.  1 when fn has returned, 0 when it
 * yielded. */
int coro_resume(struct coro *c);

/* From inside c: suspend, back to the coro_resume that ran it. */
void coro_yield(struct coro *c);

#endif
