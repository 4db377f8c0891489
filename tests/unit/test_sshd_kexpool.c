/*
 * test_sshd_kexpool.c: the handshake threads (sshd/net/kexpool.c) with real
 * libssh on both ends of a socketpair: a client's key exchange done on a
 * thread and its authentication then served by another (as atriumd's main
 * loop does); a client that goes, one that stays silent past the deadline,
 * a cancelled one, the bound, and a stop that hands everything back.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <libssh/server.h>

#include "unit.h"
#include "util.h"
#include "../../sshd/net/kexpool.h"

static ssh_bind test_bind;

/* A listener-less bind with a fresh ed25519 host key. */
static int
make_bind(void)
{
	ssh_key key = NULL;

	if (ssh_pki_generate(SSH_KEYTYPE_ED25519, 0, &key) != SSH_OK)
		return -1;
	test_bind = ssh_bind_new();
	if (ssh_bind_options_set(test_bind, SSH_BIND_OPTIONS_IMPORT_KEY,
	    key) != SSH_OK)
		return -1;
	return 0;
}

/* A server session on fd, non-blocking, for a job ending at deadline. */
static void
job_on(struct kex_job *j, int fd, long long deadline_ms)
{
	memset(j, 0, sizeof(*j));
	j->ssh = ssh_new();
	CHECK_INT(ssh_bind_accept_fd(test_bind, j->ssh, fd), SSH_OK);
	ssh_set_blocking(j->ssh, 0);
	j->deadline_ms = deadline_ms;
}

/* The next job handed back, waiting up to ms; NULL when none came. */
static struct kex_job *
wait_back(struct kexpool *p, int ms)
{
	long long until = time_mono_ms() + ms;
	struct kex_job *j;

	for (;;) {
		struct pollfd pfd = { .fd = kexpool_fd(p), .events = POLLIN };

		kexpool_ack(p);
		if ((j = kexpool_collect(p)))
			return j;
		if (time_mono_ms() >= until)
			return NULL;
		poll(&pfd, 1, (int)(until - time_mono_ms()));
	}
}

struct client {
	int fd;
	int auth;		/* ssh_userauth_none's answer */
};

/* An ordinary libssh client: connect, then ask to log in with "none". */
static void *
client_main(void *arg)
{
	struct client *c = arg;
	ssh_session s = ssh_new();
	long timeout = 10;

	ssh_options_set(s, SSH_OPTIONS_FD, &c->fd);
	ssh_options_set(s, SSH_OPTIONS_HOST, "kexpool-test");
	ssh_options_set(s, SSH_OPTIONS_USER, "room");
	ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &timeout);
	c->auth = SSH_AUTH_ERROR;
	if (ssh_connect(s) == SSH_OK)
		c->auth = ssh_userauth_none(s, NULL);
	ssh_disconnect(s);
	ssh_free(s);
	return NULL;
}

static int
auth_none_ok(ssh_session s, const char *user, void *ud)
{
	(void)s; (void)user;
	*(int *)ud = 1;
	return SSH_AUTH_SUCCESS;
}

/* The key exchange on a thread; authentication here, on the session the
 * thread handed back. */
static void
test_handshake_then_auth_elsewhere(void)
{
	struct ssh_server_callbacks_struct cb = { 0 };
	struct client c;
	struct kex_job j, *back;
	struct kexpool p;
	pthread_t th;
	ssh_event ev;
	int sv[2], authed = 0;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(kexpool_start(&p, 2), 0);
	job_on(&j, sv[0], time_mono_ms() + 10000);
	ssh_set_auth_methods(j.ssh, SSH_AUTH_METHOD_NONE);
	c.fd = sv[1];
	CHECK_INT(pthread_create(&th, NULL, client_main, &c), 0);
	CHECK_INT(kexpool_submit(&p, &j), 0);
	back = wait_back(&p, 10000);
	CHECK(back == &j);
	CHECK_INT(j.result, 0);
	cb.size = sizeof(cb);
	cb.userdata = &authed;
	cb.auth_none_function = auth_none_ok;
	ssh_callbacks_init(&cb);
	ssh_set_server_callbacks(j.ssh, &cb);
	ev = ssh_event_new();
	ssh_event_add_session(ev, j.ssh);
	for (int i = 0; i < 100 && !authed; i++)
		ssh_event_dopoll(ev, 100);
	CHECK(authed);
	pthread_join(th, NULL);
	CHECK_INT(c.auth, SSH_AUTH_SUCCESS);
	ssh_event_remove_session(ev, j.ssh);
	ssh_event_free(ev);
	ssh_free(j.ssh);
	kexpool_stop(&p);
	kexpool_free(&p);
}

/* A client that goes, a silent one past its deadline, a cancelled one:
 * each comes back with its reason. */
static void
test_failures_come_back(void)
{
	struct kex_job gone, silent, cancelled, *back;
	int a[2], b[2], c[2];
	struct kexpool p;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, c), 0);
	CHECK_INT(kexpool_start(&p, 1), 0);
	job_on(&gone, a[0], time_mono_ms() + 60000);
	job_on(&silent, b[0], time_mono_ms() + 300);
	job_on(&cancelled, c[0], time_mono_ms() + 60000);
	CHECK_INT(kexpool_submit(&p, &gone), 0);
	CHECK_INT(kexpool_submit(&p, &silent), 0);
	CHECK_INT(kexpool_submit(&p, &cancelled), 0);
	close(a[1]);
	CHECK((back = wait_back(&p, 5000)) == &gone);
	/* Closed or cut short, depending on when the thread looked. */
	CHECK(gone.result == -ECONNRESET || gone.result == -EPROTO);
	CHECK((back = wait_back(&p, 5000)) == &silent);
	CHECK_INT(silent.result, -ETIMEDOUT);
	CHECK(wait_back(&p, 200) == NULL);	/* the other still going */
	kexpool_cancel(&p, &cancelled);
	CHECK((back = wait_back(&p, 5000)) == &cancelled);
	CHECK_INT(cancelled.result, -ECANCELED);
	kexpool_stop(&p);
	kexpool_free(&p);
	ssh_free(gone.ssh);
	ssh_free(silent.ssh);
	ssh_free(cancelled.ssh);
	close(b[1]);
	close(c[1]);
}

/* A thread holds at most KEXPOOL_PER_THREAD; a job handed back and
 * collected makes room; a stop hands back what was still going. */
static void
test_bound_and_stop(void)
{
	struct kex_job *jobs = calloc(KEXPOOL_PER_THREAD + 1, sizeof(*jobs));
	struct kex_job extra, *back;
	struct kexpool p;
	int sv[2], n = 0;

	CHECK(jobs != NULL);
	if (!jobs)
		return;
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(kexpool_start(&p, 1), 0);
	/* Already cancelled: the thread hands each back at once, but they
	 * count until collected. */
	for (int i = 0; i < KEXPOOL_PER_THREAD; i++) {
		job_on(&jobs[i], -1, time_mono_ms() + 60000);
		CHECK_INT(kexpool_submit(&p, &jobs[i]), 0);
		kexpool_cancel(&p, &jobs[i]);
	}
	job_on(&extra, sv[0], time_mono_ms() + 60000);
	CHECK_INT(kexpool_submit(&p, &extra), -EAGAIN);
	while (n < KEXPOOL_PER_THREAD && (back = wait_back(&p, 5000))) {
		CHECK(back->result < 0);
		n++;
	}
	CHECK_INT(n, KEXPOOL_PER_THREAD);
	CHECK_INT(kexpool_submit(&p, &extra), 0);
	kexpool_stop(&p);
	CHECK((back = kexpool_collect(&p)) == &extra);
	CHECK_INT(extra.result, -ECANCELED);
	CHECK(kexpool_collect(&p) == NULL);
	kexpool_free(&p);
	for (int i = 0; i < KEXPOOL_PER_THREAD; i++)
		ssh_free(jobs[i].ssh);
	ssh_free(extra.ssh);
	close(sv[1]);
	free(jobs);
}

int
main(void)
{
	CHECK_INT(make_bind(), 0);
	TEST(test_handshake_then_auth_elsewhere);
	TEST(test_failures_come_back);
	TEST(test_bound_and_stop);
	ssh_bind_free(test_bind);
	return unit_done("sshd_kexpool");
}
