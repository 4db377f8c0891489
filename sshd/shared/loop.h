/*
 * loop.h: fd watches on the one ssh_event that serves every session, so that
 * child pipes, agent sockets and signals share atriumd's single thread with
 * libssh.
 *
 * libssh's event only knows "add fd with events" and "remove fd".  A watch
 * records the events its owner wants; callbacks only change that wish
 * (loop_want) and loop_sync, run after each ssh_event_dopoll and never from
 * inside a callback, adds and removes the fds to match.  So no fd is ever
 * added to or removed from the poll set while libssh iterates over it, and
 * a watch that wants nothing (a paused producer) is out of the poll set and
 * cannot spin.
 *
 * loop_del may be called anywhere, callbacks included (a child reaped from
 * the signal callback, a pipe that fails inside its own callback): libssh
 * 0.10 frees a handle removed during ssh_event_dopoll and then touches it.
 * So the event polls through a slot the loop owns; loop_del only detaches
 * the watch from its slot (dispatch then skips it) and loop_sync removes
 * the slot's fd from the event, before adding any.  loop_sync walks the
 * watches only when a wish changed since the last one (loop->changed):
 * with a thousand members it runs after every poll, and most polls change
 * no wish.
 *
 * A watch may carry a mark (loop_mark), set each time it fires: the
 * network process ticks after a poll only the sessions whose marks are
 * set (or that have other work), not all of them.
 *
 * Timers are deadlines, not periodic ticks.  The owner of the loop runs
 * its work after every poll (server.c:server_turn in the network process,
 * monitor_loop.c:monitor_loop_turn in the monitor); each part of that work
 * that waits for a time asks for it with loop_wake_at (a room's start
 * deadline, an unauthenticated connection's, the agent's watchdog ping)
 * and loop_timeout turns the earliest of them into the next poll's
 * timeout.  Work that is polled rather than signalled by an fd (a channel
 * waiting for its room, output lingering after a command) asks for
 * loop_wake_soon, every LOOP_POLL_MS while it lasts.  A loop that nobody
 * asked to wake sleeps in poll until an fd is ready: an idle atriumd
 * makes no wake-ups at all.  The deadlines are asked for again after each
 * poll, so none is ever stale: nothing is to be cancelled.
 */
#ifndef ATRIUMD_LOOP_H
#define ATRIUMD_LOOP_H

#include <libssh/libssh.h>

struct loop;
struct watch;
struct loop_slot;

/* Called from inside ssh_event_dopoll with the poll revents. */
typedef void (*watch_fn)(struct watch *w, int revents);

struct watch {
	int fd;			/* -1 when not in use */
	short want;		/* POLLIN/POLLOUT the owner asks for */
	short have;		/* what the ssh_event currently polls */
	watch_fn fn;		/* owner's callback */
	void *arg;		/* owner's object */
	struct loop *loop;	/* NULL until loop_add */
	struct loop_slot *slot;	/* what the event polls for fd, while have */
	struct watch *next;	/* in loop->watches */
	int *mark;		/* set to 1 each time fn is called (its
				 * owner's "look at me": loop_mark), or NULL */
};

struct loop {
	ssh_event event;	/* the one event of the process */
	struct watch *watches;	/* every added watch */
	struct loop_slot *dead;	/* detached slots still in the event */
	long long next_ms;	/* earliest deadline asked for since the last
				 * loop_timeout (monotonic ms), 0: none */
	int changed;		/* a watch's wish may differ from what the
				 * event polls: loop_sync has work */
};

/* How often polled work (loop_wake_soon) is looked at. */
#define LOOP_POLL_MS	100

/* Make the loop.  0 or -ENOMEM. */
int loop_init(struct loop *l);

/* Remove every watch and free the event. */
void loop_destroy(struct loop *l);

/* Start watching fd (want: POLLIN/POLLOUT, possibly 0). */
void loop_add(struct loop *l, struct watch *w, int fd, short want,
    watch_fn fn, void *arg);

/* Have the loop set *mark to 1 each time w fires (NULL: nothing), so that
 * the owner of many watches can tell which of its parts have work after a
 * poll without looking at all of them.  Set after loop_add. */
void loop_mark(struct watch *w, int *mark);

/* Change the wished events; takes effect at the next loop_sync. */
void loop_want(struct watch *w, short want);

/* Block SIGCHLD, SIGTERM, SIGINT and SIGHUP, ignore SIGPIPE, and watch the
 * blocked ones on a signalfd (into *fd) with fn.  0 or -errno. */
int loop_add_signals(struct loop *l, struct watch *w, int *fd, watch_fn fn,
    void *arg);

/* Stop watching (anywhere, callbacks included).  The fd is not closed and
 * may be closed at once.  Safe on a watch that was never added. */
void loop_del(struct watch *w);

/* Wake the loop at when_ms (monotonic) at the latest; 0 asks nothing. */
void loop_wake_at(struct loop *l, long long when_ms);

/* Wake the loop within LOOP_POLL_MS: for work that is polled. */
void loop_wake_soon(struct loop *l);

/* Give the free pages inside the heap back to the system, at most every
 * every_ms (*last_ms: when it was last done): after a burst (a command's
 * output shown to a thousand members) the heap holds tens of megabytes
 * of free space between live blocks, which malloc returns only from its
 * top.  A few milliseconds each time.  Both processes call it between
 * polls. */
void loop_trim_heap(long long *last_ms, long long every_ms);

/* The next poll's timeout in ms: until the earliest deadline asked for
 * (0 when past), or -1 (sleep until an fd is ready) when none was.  Forgets
 * the deadlines: they are asked for again after the poll. */
int loop_timeout(struct loop *l);

/* Bring the poll set in line with every watch's wish (outside callbacks). */
void loop_sync(struct loop *l);

#endif
