/*
 * loop.c: the watches of loop.h.  Called by every part of atriumd that owns
 * an fd (server, rooms, sessions).  Invariants: w->have is exactly what the
 * ssh_event polls for w->fd (0: not in the event), through w->slot; a slot
 * on loop->dead has no watch and its fd leaves the event at the next
 * loop_sync, before any fd is added (libssh removes by fd number, and the
 * number may have been reused).
 */
#include "loop.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/signalfd.h>

#include "log.h"
#include "util.h"

struct loop_slot {
	struct watch *w;	/* NULL once detached */
	int fd;
	struct loop_slot *next;	/* in loop->dead */
};

/* Trampoline from libssh to the watch's owner; always 0 (keep polling). */
static int
loop_dispatch(socket_t fd, int revents, void *userdata)
{
	struct loop_slot *slot = userdata;
	struct watch *w = slot->w;

	(void)fd;
	if (w && w->mark)
		*w->mark = 1;
	if (w && w->fn)
		w->fn(w, revents);
	return 0;
}

/* Detach w from its slot; the slot's fd leaves the event at loop_sync. */
static void
loop_detach(struct loop *l, struct watch *w)
{
	if (!w->slot)
		return;
	w->slot->w = NULL;
	w->slot->next = l->dead;
	l->dead = w->slot;
	w->slot = NULL;
	w->have = 0;
}

/* Take the detached slots' fds out of the event (outside callbacks). */
static void
loop_bury(struct loop *l)
{
	while (l->dead) {
		struct loop_slot *slot = l->dead;

		l->dead = slot->next;
		ssh_event_remove_fd(l->event, slot->fd);
		free(slot);
	}
}

/* 0, or -ENOMEM when libssh cannot make an event. */
int
loop_init(struct loop *l)
{
	l->watches = NULL;
	l->dead = NULL;
	l->changed = 0;
	l->next_ms = time_mono_ms();	/* the first turn runs at once */
	l->event = ssh_event_new();
	return l->event ? 0 : -ENOMEM;
}

/* Remove every watch from the event, then free it. */
void
loop_destroy(struct loop *l)
{
	while (l->watches)
		loop_del(l->watches);
	loop_bury(l);
	if (l->event)
		ssh_event_free(l->event);
	l->event = NULL;
}

/* Register w; it joins the poll set at the next loop_sync. */
void
loop_add(struct loop *l, struct watch *w, int fd, short want, watch_fn fn,
    void *arg)
{
	w->fd = fd;
	w->want = want;
	w->have = 0;
	w->fn = fn;
	w->arg = arg;
	w->loop = l;
	w->slot = NULL;
	w->mark = NULL;
	w->next = l->watches;
	l->watches = w;
	l->changed = 1;
}

/* See loop.h. */
void
loop_mark(struct watch *w, int *mark)
{
	w->mark = mark;
}

/* Record the wish; never touches the event (we may be inside a callback). */
void
loop_want(struct watch *w, short want)
{
	w->want = want;
	if (want != w->have && w->loop)
		w->loop->changed = 1;
}

/* Unlink w; its fd leaves the event at the next loop_sync. */
void
loop_del(struct watch *w)
{
	struct loop *l = w->loop;

	if (!l)
		return;
	for (struct watch **pp = &l->watches; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	loop_detach(l, w);
	w->loop = NULL;
	w->next = NULL;
}

/* Re-register each watch whose wish changed: removals first.  A watch
 * libssh would not take stays changed, and is tried again next time. */
void
loop_sync(struct loop *l)
{
	int failed = 0;

	if (!l->changed) {
		loop_bury(l);
		return;
	}
	for (struct watch *w = l->watches; w; w = w->next)
		if (w->want != w->have)
			loop_detach(l, w);
	loop_bury(l);
	for (struct watch *w = l->watches; w; w = w->next) {
		struct loop_slot *slot;

		if (w->want == w->have || !w->want)
			continue;
		if (!(slot = calloc(1, sizeof(*slot))) ||
		    ssh_event_add_fd(l->event, w->fd, w->want, loop_dispatch,
		    slot) != SSH_OK) {
			free(slot);
			log_error("cannot poll fd %d", w->fd);
			failed = 1;
			continue;
		}
		slot->w = w;
		slot->fd = w->fd;
		w->slot = slot;
		w->have = w->want;
	}
	l->changed = failed;
}

/* See loop.h. */
void
loop_wake_at(struct loop *l, long long when_ms)
{
	if (when_ms > 0 && (!l->next_ms || when_ms < l->next_ms))
		l->next_ms = when_ms;
}

/* See loop.h. */
void
loop_wake_soon(struct loop *l)
{
	loop_wake_at(l, time_mono_ms() + LOOP_POLL_MS);
}

/* See loop.h. */
int
loop_timeout(struct loop *l)
{
	long long left;

	if (!l->next_ms)
		return -1;
	left = l->next_ms - time_mono_ms();
	l->next_ms = 0;
	if (left <= 0)
		return 0;
	return left > INT_MAX ? INT_MAX : (int)left;
}

int
loop_add_signals(struct loop *l, struct watch *w, int *fd, watch_fn fn,
    void *arg)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	signal(SIGPIPE, SIG_IGN);
	*fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (*fd < 0)
		return -errno;
	loop_add(l, w, *fd, POLLIN, fn, arg);
	return 0;
}

void
loop_trim_heap(long long *last_ms, long long every_ms)
{
	long long now = time_mono_ms();

	if (now - *last_ms < every_ms)
		return;
	*last_ms = now;
	malloc_trim(0);
}
