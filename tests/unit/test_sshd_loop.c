/*
 * test_sshd_loop.c: the watches of sshd/shared/loop.c on a real ssh_event.
 * loop_sync walks the watches only when a wish changed since the last
 * sync; every change of wish must still reach the poll set, also one made
 * after a sync that had nothing to do, and one that returns to what is
 * polled must leave it as it is.  A marked watch tells its owner that it
 * fired (the network process ticks only the sessions whose watches did),
 * and only when it fired.
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

static void
test_a_watch_marks_its_owner_when_it_fires(void)
{
	struct loop loop;
	struct watch a, b;
	int sa[2], sb[2], calls = 0, mark_a = 0, mark_b = 0;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sa), 0);
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sb), 0);
	CHECK_INT(loop_init(&loop), 0);
	loop_add(&loop, &a, sa[0], POLLIN, on_ready, &calls);
	loop_add(&loop, &b, sb[0], POLLIN, on_ready, &calls);
	loop_mark(&a, &mark_a);
	loop_mark(&b, &mark_b);
	/* Only the watch that fired marks its owner. */
	CHECK_INT(poke(&loop, sa[1], &calls, 1000), 1);
	CHECK_INT(mark_a, 1);
	CHECK_INT(mark_b, 0);
	/* The owner clears it; a poll with nothing ready sets nothing. */
	mark_a = 0;
	loop_sync(&loop);
	ssh_event_dopoll(loop.event, 20);
	CHECK_INT(mark_a, 0);
	CHECK_INT(mark_b, 0);
	CHECK_INT(poke(&loop, sb[1], &calls, 1000), 1);
	CHECK_INT(mark_a, 0);
	CHECK_INT(mark_b, 1);
	/* A watch added again has no mark until its owner sets one. */
	loop_del(&b);
	loop_sync(&loop);
	loop_add(&loop, &b, sb[0], POLLIN, on_ready, &calls);
	mark_b = 0;
	CHECK_INT(poke(&loop, sb[1], &calls, 1000), 1);
	CHECK_INT(mark_b, 0);
	loop_del(&a);
	loop_del(&b);
	loop_destroy(&loop);
	for (int i = 0; i < 2; i++) {
		close(sa[i]);
		close(sb[i]);
	}
}

int
main(void)
{
	log_set_level(LOG_ERROR);
	TEST(test_wishes_reach_the_poll_set);
	TEST(test_a_watch_marks_its_owner_when_it_fires);
	return unit_done("test_sshd_loop");
}
