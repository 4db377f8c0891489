/*
 * test_sshd_ask_queue.c: the fronts' requests answered later
 * (sshd/shared/ask_queue.c), against a monitor played by the test on the
 * other end of a socketpair: answers go to the requests in the order they
 * were sent, whether read when the socket is readable or ahead of a
 * request waited for; a refusal reaches done as NULL where the owner
 * asks for that; a cancelled request's answer is dropped; a monitor that
 * is gone is reported once per failed call.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "unit.h"
#include "jsonl.h"
#include "../../sshd/shared/ask_queue.h"
#include "../../sshd/shared/privsep.h"

struct seen {
	int calls;		/* done callbacks */
	long long n[4];		/* each answer's "n", -1 for NULL */
	int lost;		/* lost callbacks */
};

static void
on_done(void *arg, json_object *ans)
{
	struct seen *s = arg;

	if (s->calls < 4)
		s->n[s->calls] = ans ? json_get_int(ans, "n", 0) : -1;
	s->calls++;
}

static void
on_lost(void *arg, int err)
{
	struct seen *s = arg;

	(void)err;
	s->lost++;
}

/* A request {"type":type}. */
static json_object *
req(const char *type)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string(type));
	return o;
}

/* The monitor's side: read one request (its type must be type) and
 * answer {"n":n}, with "errno" when refuse. */
static void
answer(int fd, const char *type, long long n, int refuse)
{
	json_object *in = NULL, *out = json_object_new_object();

	CHECK_INT(privsep_recv(fd, PRIVSEP_MAX_REQUEST, &in, NULL, NULL, 0), 0);
	CHECK_STR(json_get_string(in, "type"), type);
	json_object_put(in);
	json_object_object_add(out, "n", json_object_new_int64(n));
	if (refuse)
		json_object_object_add(out, "errno", json_object_new_int(EACCES));
	CHECK_INT(privsep_send(fd, out, NULL, 0), 0);
	json_object_put(out);
}

/* A queue on a loop and a socketpair: sv[1] is the monitor's end. */
static void
setup(struct loop *l, struct ask_queue *q, int sv[2], int flags,
    struct seen *s)
{
	memset(q, 0, sizeof(*q));
	memset(s, 0, sizeof(*s));
	CHECK_INT(loop_init(l), 0);
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	ask_queue_init(q, l, sv[0], flags, on_lost, s);
}

static void
teardown(struct loop *l, struct ask_queue *q, int sv[2])
{
	ask_queue_forget(q);
	loop_destroy(l);
	close(sv[0]);
	close(sv[1]);
}

/* Two queued requests, then one waited for: the waited one gets its own
 * answer, the queued ones theirs, in order, at the next delivery. */
static void
test_waited_after_queued(void)
{
	struct loop l;
	struct ask_queue q;
	struct seen s;
	json_object *ans = NULL;
	int sv[2];

	setup(&l, &q, sv, 0, &s);
	CHECK(ask_queue_later(&q, req("a"), on_done, &s) != NULL);
	CHECK(ask_queue_later(&q, req("b"), on_done, &s) != NULL);
	answer(sv[1], "a", 1, 0);
	answer(sv[1], "b", 2, 0);
	/* The waited request's answer is written before it is asked: the
	 * socket is a queue, and ask_queue_ask must read past a and b. */
	{
		json_object *out = json_object_new_object();

		json_object_object_add(out, "n", json_object_new_int(3));
		CHECK_INT(privsep_send(sv[1], out, NULL, 0), 0);
		json_object_put(out);
	}
	CHECK_INT(ask_queue_ask(&q, req("c"), &ans, NULL, NULL, 0), 0);
	CHECK_INT(json_get_int(ans, "n", 0), 3);
	json_object_put(ans);
	CHECK_INT(s.calls, 0);		/* handed over only at delivery */
	CHECK_INT(ask_queue_deliver(&q, 0), 2);
	CHECK_INT(s.calls, 2);
	CHECK_INT(s.n[0], 1);
	CHECK_INT(s.n[1], 2);
	CHECK_INT(s.lost, 0);
	teardown(&l, &q, sv);
}

/* Answers read when the socket is readable; a refusal reaches done as
 * NULL with ASK_QUEUE_REFUSAL_NULL; a cancelled one is dropped. */
static void
test_readable_refusal_cancel(void)
{
	struct loop l;
	struct ask_queue q;
	struct seen s;
	struct ask_pending *p;
	int sv[2];

	setup(&l, &q, sv, ASK_QUEUE_REFUSAL_NULL, &s);
	CHECK(ask_queue_later(&q, req("a"), on_done, &s) != NULL);
	CHECK((p = ask_queue_later(&q, req("b"), on_done, &s)) != NULL);
	CHECK(ask_queue_later(&q, req("c"), on_done, &s) != NULL);
	answer(sv[1], "a", 1, 1);
	answer(sv[1], "b", 2, 0);
	answer(sv[1], "c", 3, 0);
	ask_queue_cancel(p);
	CHECK_INT(q.w.want, POLLIN);	/* waiting for answers */
	for (int i = 0; i < 3; i++)
		q.w.fn(&q.w, POLLIN);
	CHECK_INT(q.w.want, 0);		/* none due: out of the poll set */
	CHECK_INT(ask_queue_deliver(&q, 0), 3);
	CHECK_INT(s.calls, 2);
	CHECK_INT(s.n[0], -1);		/* refused */
	CHECK_INT(s.n[1], 3);
	teardown(&l, &q, sv);
}

/* The monitor gone: a waited request fails and says so; the queued ones
 * are handed NULL when the owner delivers them all. */
static void
test_monitor_gone(void)
{
	struct loop l;
	struct ask_queue q;
	struct seen s;
	json_object *ans = NULL;
	int sv[2];

	setup(&l, &q, sv, 0, &s);
	CHECK(ask_queue_later(&q, req("a"), on_done, &s) != NULL);
	close(sv[1]);
	sv[1] = -1;
	CHECK(ask_queue_ask(&q, req("b"), &ans, NULL, NULL, 0) < 0);
	CHECK(ans == NULL);
	CHECK_INT(s.lost, 1);
	CHECK(ask_queue_later(&q, NULL, on_done, &s) == NULL);
	CHECK_INT(ask_queue_deliver(&q, 1), 1);
	CHECK_INT(s.calls, 1);
	CHECK_INT(s.n[0], -1);
	teardown(&l, &q, sv);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);	/* a gone peer is EPIPE, not a signal */
	TEST(test_waited_after_queued);
	TEST(test_readable_refusal_cancel);
	TEST(test_monitor_gone);
	return unit_done("test_sshd_ask_queue");
}
