/*
 * test_sshd_loop.c: the watches of sshd/shared/loop.c on a real ssh_event.
 * loop_sync walks the watches only when a wish changed since the last
 * sync; every change of wish must still reach the poll set, also one made
 * after a sync that had nothing to do, and one that returns to what is
 * polled must leave it as it is.
 */
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "unit.h"
#include "log.h"
#include "../../sshd/shared/loop.h"

/* Counts calls, and takes what is readable. */
static void
on_ready(struct watch *w, int revents)
{
	int *calls = w->arg;
	char b[64];

	(void)revents;
	(*calls)++;
	if (read(w->fd, b, sizeof(b)) < 0)
		(*calls) += 1000;
}

/* Write a byte to the far end, sync, poll once (up to ms): calls made. */
static int
poke(struct loop *loop, int far, int *calls, int ms)
{
	int before = *calls;

	CHECK_INT(write(far, "x", 1), 1);
	loop_sync(loop);
	ssh_event_dopoll(loop->event, ms);
	return *calls - before;
}

static void
test_wishes_reach_the_poll_set(void)
{
	struct loop loop;
	struct watch w;
	int sv[2], calls = 0;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(loop_init(&loop), 0);
	loop_add(&loop, &w, sv[0], POLLIN, on_ready, &calls);
	CHECK_INT(poke(&loop, sv[1], &calls, 1000), 1);
	/* Nothing changed: the watch stays polled. */
	CHECK_INT(poke(&loop, sv[1], &calls, 1000), 1);
	/* Paused: out of the poll set (the byte waits). */
	loop_want(&w, 0);
	CHECK_INT(poke(&loop, sv[1], &calls, 50), 0);
	/* A sync with nothing to do, then the wish back: polled again. */
	loop_sync(&loop);
	loop_want(&w, POLLIN);
	loop_sync(&loop);
	CHECK_INT(ssh_event_dopoll(loop.event, 1000), SSH_OK);
	CHECK_INT(calls, 3);
	/* Changed and changed back before a sync: still polled. */
	loop_want(&w, 0);
	loop_want(&w, POLLIN);
	CHECK_INT(poke(&loop, sv[1], &calls, 1000), 1);
	CHECK_INT(calls, 4);
	loop_del(&w);
	loop_destroy(&loop);
	close(sv[0]);
	close(sv[1]);
}

int
main(void)
{
	log_set_level(LOG_ERROR);
	TEST(test_wishes_reach_the_poll_set);
	return unit_done("test_sshd_loop");
}
