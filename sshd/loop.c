/*
 * loop.c: the watches of loop.h.  Called by every part of atriumd that owns
 * an fd (server, rooms, sessions).  Invariant: w->have is exactly what the
 * ssh_event polls for w->fd (0: not in the event).
 */
#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <stddef.h>

#include "log.h"

/* Trampoline from libssh to the watch's owner; always 0 (keep polling). */
static int
loop_dispatch(socket_t fd, int revents, void *userdata)
{
	struct watch *w = userdata;

	(void)fd;
	if (w->fn)
		w->fn(w, revents);
	return 0;
}

/* 0, or -ENOMEM when libssh cannot make an event. */
int
loop_init(struct loop *l)
{
	l->watches = NULL;
	l->event = ssh_event_new();
	return l->event ? 0 : -ENOMEM;
}

/* Remove every watch from the event, then free it. */
void
loop_destroy(struct loop *l)
{
	while (l->watches)
		loop_del(l->watches);
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
	w->next = l->watches;
	l->watches = w;
}

/* Record the wish; never touches the event (we may be inside a callback). */
void
loop_want(struct watch *w, short want)
{
	w->want = want;
}

/* Unlink w and drop its fd from the event. */
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
	if (w->have)
		ssh_event_remove_fd(l->event, w->fd);
	w->have = 0;
	w->loop = NULL;
	w->next = NULL;
}

/* Re-register each watch whose wish changed. */
void
loop_sync(struct loop *l)
{
	for (struct watch *w = l->watches; w; w = w->next) {
		if (w->want == w->have)
			continue;
		if (w->have)
			ssh_event_remove_fd(l->event, w->fd);
		w->have = 0;
		if (w->want) {
			if (ssh_event_add_fd(l->event, w->fd, w->want,
			    loop_dispatch, w) != SSH_OK) {
				log_error("cannot poll fd %d", w->fd);
				continue;
			}
			w->have = w->want;
		}
	}
}
