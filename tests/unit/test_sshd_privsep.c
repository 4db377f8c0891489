/*
 * test_sshd_privsep.c: the monitor's request socket (sshd/shared/privsep.c,
 * sshd/monitor/monitor.c) from the network process's side: frames and passed
 * fds go through whole, a frame too long or not JSON is refused, and the
 * monitor answers the requests of its set and ends the network process
 * (stops) at anything else: an unknown type, a room name a client could
 * not use, a user name authorized_keys cannot make, a request for a user
 * that does not say who in full (user, key, address), raw bytes; a key
 * that is not the user's is answered with a refusal; an access request
 * is answered for who it names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "jsonl.h"
#include "../../sshd/monitor/monitor.h"
#include "../../sshd/monitor/monitor_loop.h"
#include "../../sshd/shared/privsep.h"

/* Who a request is for, in the guest set of --open (no authorized_keys):
 * the name of the key whose SHA256 starts with four zero bytes. */
#define GUEST	"\"user\":\"guest-00000000\",\"key\":\"SHA256:" \
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"addr\":\"127.0.0.1\""

/* A monitor with no room, no network process, on socket fd; --open, and
 * no authorized_keys. */
static void
fake_monitor(struct monitor *srv, struct config *cfg, int fd)
{
	memset(srv, 0, sizeof(*srv));
	config_defaults(cfg);
	snprintf(cfg->data_dir, sizeof(cfg->data_dir), "/nonexistent-data");
	cfg->open = 1;
	srv->keys = authkeys_new("/nonexistent-data/authorized_keys");
	authkeys_set_quiet(srv->keys);
	srv->cfg = cfg;
	srv->net.srv = srv;
	srv->net.name = "network process";
	srv->net.req_fd = fd;
	srv->net.ev_fd = -1;
	srv->sigfd = -1;
	srv->ctl.fd = -1;
}

/* Send text as one request to the monitor and let it serve it; the
 * answer (NULL when none) is the caller's, and so are the fds that came
 * with it, into fds[0..*nfds) (up to 6). */
static json_object *
ask_fds(struct monitor *srv, int net, const char *text, int *fds, int *nfds)
{
	json_object *req = jsonl_parse_object(text, strlen(text), &(const
	    char *){ NULL }), *ans = NULL;
	struct watch w = { .arg = &srv->net };

	CHECK(req != NULL);
	CHECK_INT(privsep_send(net, req, NULL, 0), 0);
	json_object_put(req);
	monitor_serve(&w, 0);
	if (!srv->stopping)
		CHECK_INT(privsep_recv(net, PRIVSEP_MAX_ANSWER, &ans, fds,
		    nfds, 6), 0);
	return ans;
}

/* The same without fds. */
static json_object *
ask(struct monitor *srv, int net, const char *text)
{
	return ask_fds(srv, net, text, NULL, NULL);
}

static void
test_frames_and_fds(void)
{
	int sv[2], fd = -1, n = 0, p[2];
	json_object *o = json_object_new_object(), *got = NULL;
	char c = 0;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(pipe(p), 0);
	json_object_object_add(o, "type", json_object_new_string("x"));
	CHECK_INT(privsep_send(sv[0], o, &p[1], 1), 0);
	CHECK_INT(privsep_recv(sv[1], 1024, &got, &fd, &n, 1), 0);
	CHECK_STR(json_get_string(got, "type"), "x");
	CHECK_INT(n, 1);
	CHECK(fd >= 0);
	CHECK_INT(write(fd, "y", 1), 1);
	CHECK_INT(read(p[0], &c, 1), 1);
	CHECK_INT(c, 'y');
	json_object_put(got);
	close(fd);
	/* Too long for the receiver's cap. */
	CHECK_INT(privsep_send(sv[0], o, NULL, 0), 0);
	CHECK_INT(privsep_recv(sv[1], 4, &got, NULL, NULL, 0), -EPROTO);
	CHECK(got == NULL);
	json_object_put(o);
	close(sv[0]);
	close(sv[1]);
	/* End of stream. */
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[0]);
	CHECK_INT(privsep_recv(sv[1], 1024, &got, NULL, NULL, 0), -EPIPE);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

static void
test_not_json_is_refused(void)
{
	int sv[2];
	uint32_t n = 5;
	json_object *got = NULL;

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(write(sv[0], &n, 4), 4);
	CHECK_INT(write(sv[0], "[1,2]", 5), 5);
	CHECK_INT(privsep_recv(sv[1], 1024, &got, NULL, NULL, 0), -EPROTO);
	n = 0;
	CHECK_INT(write(sv[0], &n, 4), 4);
	CHECK_INT(privsep_recv(sv[1], 1024, &got, NULL, NULL, 0), -EPROTO);
	close(sv[0]);
	close(sv[1]);
}

/* pipes: three pipes of 1 MiB, read end then write end. */
static void
check_pipes(struct monitor *srv, int net)
{
	int fds[6], n = 0;
	char c = 0;
	json_object *ans = ask_fds(srv, net, "{\"type\":\"pipes\"}", fds,
	    &n);

	CHECK(json_get_bool(ans, "fd", 0));
	CHECK_INT(n, 6);
	for (int i = 0; i + 1 < n; i += 2) {
		CHECK_INT(fcntl(fds[i], F_GETPIPE_SZ), 1024 * 1024);
		CHECK_INT(write(fds[i + 1], "p", 1), 1);
		CHECK_INT(read(fds[i], &c, 1), 1);
		CHECK_INT(c, 'p');
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	json_object_put(ans);
}

static void
test_requests_in_the_set(void)
{
	struct monitor srv;
	struct config cfg;
	json_object *ans;
	int sv[2];

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fake_monitor(&srv, &cfg, sv[0]);
	ans = ask(&srv, sv[1], "{\"type\":\"why\",\"room\":\"lab\","
	    GUEST "}");
	CHECK(!srv.stopping);
	CHECK(ans && json_object_object_get_ex(ans, "why", NULL));
	json_object_put(ans);
	/* A room with no processes has no agent to reach. */
	ans = ask(&srv, sv[1], "{\"type\":\"agent\",\"room\":\"lab\","
	    "\"kind\":\"chat\"," GUEST "}");
	CHECK_INT(json_get_int(ans, "errno", 0), ECONNREFUSED);
	json_object_put(ans);
	/* A key that is not the user's is refused, not a broken rule: the
	 * key may have left authorized_keys since the session began. */
	ans = ask(&srv, sv[1], "{\"type\":\"agent\",\"room\":\"lab\","
	    "\"kind\":\"chat\",\"user\":\"alice\",\"key\":\"SHA256:"
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"addr\":\"::1\"}");
	CHECK(!srv.stopping);
	CHECK_INT(json_get_int(ans, "errno", 0), EACCES);
	json_object_put(ans);
	/* The monitor's decision for who asks: a guest may create any
	 * room, and learns no list of one it may not enter. */
	ans = ask(&srv, sv[1], "{\"type\":\"access\",\"room\":\"lab\","
	    "\"for\":\"exec\"," GUEST "}");
	CHECK(!srv.stopping);
	CHECK(!json_get_bool(ans, "exists", 1));
	CHECK(json_get_bool(ans, "may_create", 0));
	CHECK(!json_get_bool(ans, "may_enter", 1));
	CHECK(!json_object_object_get_ex(ans, "owner", NULL));
	CHECK(!json_object_object_get_ex(ans, "members", NULL));
	json_object_put(ans);
	/* A relay from another host (sshd/net/relay.h): refused by a host
	 * in no cluster, whatever the key. */
	ans = ask(&srv, sv[1], "{\"type\":\"relay\",\"hostkey\":"
	    "\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA\"}");
	CHECK(!srv.stopping);
	CHECK(!json_get_bool(ans, "ok", 0));
	CHECK(ans && strstr(json_get_string(ans, "error") ?: "", "no cluster"));
	json_object_put(ans);
	ans = ask(&srv, sv[1], "{\"type\":\"authkeys\"}");
	CHECK_INT(json_get_int(ans, "errno", 0), ENOENT);
	json_object_put(ans);
	CHECK(!srv.stopping);
	check_pipes(&srv, sv[1]);
	authkeys_free(srv.keys);
	close(sv[0]);
	close(sv[1]);
}

/* One request that must end the network process. */
static void
check_refused(const char *text)
{
	struct monitor srv;
	struct config cfg;
	int sv[2];

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fake_monitor(&srv, &cfg, sv[0]);
	json_object_put(ask(&srv, sv[1], text));
	if (!srv.stopping)
		fprintf(stderr, "not refused: %s\n", text);
	CHECK(srv.stopping);
	CHECK_INT(srv.exit_code, 1);
	authkeys_free(srv.keys);
	close(sv[0]);
	close(sv[1]);
}

static void
test_requests_outside_the_set(void)
{
	check_refused("{\"type\":\"exec\",\"room\":\"lab\"}");
	check_refused("{\"type\":\"mount\"}");
	check_refused("{\"room\":\"lab\"}");
	check_refused("{\"type\":\"agent\",\"room\":\"../etc\"}");
	check_refused("{\"type\":\"agent\"}");
	check_refused("{\"type\":\"delete\",\"room\":\"Lab\"}");
	check_refused("{\"type\":\"access\",\"room\":\"a/b\"}");
	check_refused("{\"type\":\"use\",\"room\":\"lab\"}");
	check_refused("{\"type\":\"use\",\"room\":\"lab\",\"user\":\"a b\"}");
	check_refused("{\"type\":\"rooms\",\"user\":\"-x\"}");
	check_refused("{\"type\":\"why\",\"room\":7}");
	/* Each request that acts for a user says who, in full. */
	check_refused("{\"type\":\"delete\",\"room\":\"lab\"}");
	check_refused("{\"type\":\"export\",\"room\":\"lab\"}");
	check_refused("{\"type\":\"access\",\"room\":\"lab\","
	    "\"for\":\"exec\"}");
	check_refused("{\"type\":\"why\",\"room\":\"lab\"}");
	/* What an access request is for is one of a fixed set (the
	 * monitor's log says it). */
	check_refused("{\"type\":\"access\",\"room\":\"lab\"," GUEST "}");
	check_refused("{\"type\":\"access\",\"room\":\"lab\","
	    "\"for\":\"x\\n\"," GUEST "}");
	check_refused("{\"type\":\"rooms\",\"user\":\"alice\","
	    "\"admin\":true}");
	check_refused("{\"type\":\"use\",\"room\":\"lab\","
	    "\"user\":\"guest-00000000\",\"key\":\"SHA256:AAAA\","
	    "\"addr\":\"127.0.0.1\"}");
	check_refused("{\"type\":\"use\",\"room\":\"lab\","
	    "\"user\":\"guest-00000000\",\"key\":\"SHA256:"
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\",\"addr\":\"a b\"}");
	/* An agent connection's kind is chat, control or exec: the
	 * watchdog's "monitor" is the monitor's own. */
	check_refused("{\"type\":\"agent\",\"room\":\"lab\","
	    "\"kind\":\"monitor\"," GUEST "}");
	check_refused("{\"type\":\"agent\",\"room\":\"lab\"," GUEST "}");
	/* A relay request says which key, as text of a sane length. */
	check_refused("{\"type\":\"relay\"}");
	check_refused("{\"type\":\"relay\",\"hostkey\":7}");
}

/* A request may not carry descriptors. */
static void
test_fds_in_a_request_end_it(void)
{
	struct monitor srv;
	struct config cfg;
	struct watch w = { .arg = &srv.net };
	json_object *req = json_object_new_object();
	int sv[2], p[2];

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(pipe(p), 0);
	fake_monitor(&srv, &cfg, sv[0]);
	json_object_object_add(req, "type", json_object_new_string("why"));
	json_object_object_add(req, "room", json_object_new_string("lab"));
	CHECK_INT(privsep_send(sv[1], req, p, 1), 0);
	monitor_serve(&w, 0);
	CHECK(srv.stopping);
	authkeys_free(srv.keys);
	json_object_put(req);
	close(p[0]);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
}

static void
test_raw_bytes_end_it(void)
{
	struct monitor srv;
	struct config cfg;
	struct watch w = { .arg = &srv.net };
	int sv[2];

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fake_monitor(&srv, &cfg, sv[0]);
	privsep_set_timeout(sv[0], 200);
	/* A length far past the request cap. */
	CHECK_INT(write(sv[1], "\xff\xff\xff\x7f{}", 6), 6);
	monitor_serve(&w, 0);
	CHECK(srv.stopping);
	authkeys_free(srv.keys);
	fake_monitor(&srv, &cfg, sv[0]);
	privsep_set_timeout(sv[0], 200);
	/* Half a frame: the monitor waits no longer than its timeout. */
	CHECK_INT(write(sv[1], "\x10\x00\x00\x00{\"ty", 8), 8);
	monitor_serve(&w, 0);
	CHECK(srv.stopping);
	authkeys_free(srv.keys);
	close(sv[0]);
	close(sv[1]);
}

/* Send text on the HTTP front f (atriumd-http's end: peer) and serve it;
 * the answer, or NULL when the front was ended for it. */
static json_object *
ask_http(struct monitor_front *f, int peer, const char *text)
{
	json_object *req = jsonl_parse_object(text, strlen(text), &(const
	    char *){ NULL }), *ans = NULL;
	struct watch w = { .arg = f };

	CHECK(req != NULL);
	CHECK_INT(privsep_send(peer, req, NULL, 0), 0);
	json_object_put(req);
	monitor_serve(&w, 0);
	if (f->req_fd >= 0)
		CHECK_INT(privsep_recv(peer, PRIVSEP_MAX_ANSWER, &ans, NULL,
		    NULL, 0), 0);
	return ans;
}

/* The HTTP front: a token, not a key, says who a request is for; a bad
 * one is refused, not a breach; a request outside its smaller set (one
 * the network process may send) ends it, and only it: atriumd goes on. */
static void
test_http_front_rules(void)
{
	struct monitor srv;
	struct config cfg;
	struct monitor_front f;
	json_object *ans;
	int sv[2];

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fake_monitor(&srv, &cfg, -1);
	memset(&f, 0, sizeof(f));
	f.srv = &srv;
	f.name = "HTTP process";
	f.http = 1;
	f.req_fd = sv[0];
	f.ev_fd = -1;
	f.w.fd = -1;
	ans = ask_http(&f, sv[1], "{\"type\":\"whoami\",\"token\":"
	    "\"atrium_nope\",\"addr\":\"127.0.0.1\"}");
	CHECK(ans != NULL);
	CHECK_INT(json_get_int(ans, "errno", 0), EACCES);
	CHECK(strstr(json_get_string(ans, "error"), "not an Atrium token"));
	CHECK(json_get_string(ans, "user") == NULL);
	json_object_put(ans);
	CHECK(!srv.stopping);
	CHECK(ask_http(&f, sv[1], "{\"type\":\"authkeys\"}") == NULL);
	CHECK_INT(f.req_fd, -1);
	CHECK(!srv.stopping);
	close(sv[1]);
	/* A key's identity is no identity here: a request without a token
	 * breaks the rules. */
	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	f.req_fd = sv[0];
	CHECK(ask_http(&f, sv[1], "{\"type\":\"whoami\"," GUEST "}") ==
	    NULL);
	CHECK_INT(f.req_fd, -1);
	CHECK(!srv.stopping);
	authkeys_free(srv.keys);
	close(sv[1]);
}

int
main(void)
{
	TEST(test_frames_and_fds);
	TEST(test_not_json_is_refused);
	TEST(test_requests_in_the_set);
	TEST(test_requests_outside_the_set);
	TEST(test_raw_bytes_end_it);
	TEST(test_fds_in_a_request_end_it);
	TEST(test_http_front_rules);
	return unit_done("sshd_privsep");
}
