/*
 * test_sshd_front_start.c: a front's start-up (sshd/shared/front_start.c)
 * reads the command line the monitor makes (sshd/shared/front_exec.c):
 * what front_exec_cmd writes, front_start_identity and
 * front_start_settings read back whole; a line run by hand (a missing,
 * zero, negative or overlong field, an odd number of words) is refused;
 * a front that accepts only some settings refuses the others.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "unit.h"
#include "../../sshd/shared/front_exec.h"
#include "../../sshd/shared/front_start.h"

static const char *const net_like[] = { "data", "open", "max-startups" };

static int
only_http(const char *key)
{
	return strncmp(key, "http-", 5) == 0;
}

/* The monitor's line, read back by the front. */
static void
test_round_trip(void)
{
	static struct front_exec cmd;
	struct config c, got;
	struct privdrop_id id = { 4242, 4343, "atrium" }, back;
	char err[256];
	pid_t monitor;

	config_defaults(&c);
	CHECK_INT(config_set(&c, "data", "/srv/atrium data", err,
	    sizeof(err)), 0);
	CHECK_INT(config_set(&c, "max-startups", "7", err, sizeof(err)), 0);
	CHECK_INT(front_exec_cmd(&cmd, "/usr/libexec/atrium/atriumd-net", &c,
	    &id, net_like, 3, 0), 0);
	CHECK(cmd.argc >= 5 && (cmd.argc - 5) % 2 == 0);
	CHECK(cmd.argv[cmd.argc] == NULL);
	CHECK_INT(front_start_identity(cmd.argc, cmd.argv, "usage\n", &back,
	    &monitor), 0);
	CHECK_INT(monitor, getpid());
	CHECK_INT(back.uid, 4242);
	CHECK_INT(back.gid, 4343);
	CHECK_STR(back.name, "atrium");
	CHECK_INT(front_start_settings(cmd.argc, cmd.argv, &got, NULL,
	    "--KEY VALUE"), 0);
	CHECK_STR(got.data_dir, "/srv/atrium data");
	CHECK_INT(front_exec_cmd(&cmd, "x", &c, &id, net_like,
	    FRONT_EXEC_MAX_SETTINGS + 1, 0), -E2BIG);
}

/* Lines the monitor never makes. */
static void
test_refused(void)
{
	char *ok[] = { "p", "12", "1000", "1000", "atrium", NULL };
	char *zero[] = { "p", "0", "1000", "1000", "atrium", NULL };
	char *neg[] = { "p", "12", "-1", "1000", "atrium", NULL };
	char *junk[] = { "p", "12", "1000", "10x", "atrium", NULL };
	char *odd[] = { "p", "12", "1000", "1000", "atrium", "--open", NULL };
	char *other[] = { "p", "12", "1000", "1000", "atrium", "--open", "1",
	    NULL };
	char *name[] = { "p", "12", "1000", "1000", "a-name-of-sixty-four-"
	    "bytes-or-more-which-no-privdrop_id-can-hold-whole", NULL };
	struct privdrop_id id;
	struct config c;
	pid_t monitor;

	CHECK_INT(front_start_identity(5, ok, "", &id, &monitor), 0);
	CHECK_INT(front_start_identity(4, ok, "", &id, &monitor), -EINVAL);
	CHECK_INT(front_start_identity(5, zero, "", &id, &monitor), -EINVAL);
	CHECK_INT(front_start_identity(5, neg, "", &id, &monitor), -EINVAL);
	CHECK_INT(front_start_identity(5, junk, "", &id, &monitor), -EINVAL);
	CHECK_INT(front_start_identity(6, odd, "", &id, &monitor), -EINVAL);
	CHECK_INT(front_start_identity(5, name, "", &id, &monitor), -EINVAL);
	CHECK_INT(front_start_settings(7, other, &c, NULL, "--KEY VALUE"), 0);
	CHECK_INT(front_start_settings(7, other, &c, only_http,
	    "--http-KEY VALUE"), -EINVAL);
}

/* A front's fds: sockets only. */
static void
test_sockets(void)
{
	int sv[2], p[2];

	CHECK_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CHECK_INT(pipe(p), 0);
	CHECK_INT(front_start_sockets("t", sv, 2), 0);
	CHECK_INT(front_start_sockets("t", p, 1), -EBADF);
	close(sv[0]);
	CHECK_INT(front_start_sockets("t", sv, 2), -EBADF);
	close(sv[1]);
	close(p[0]);
	close(p[1]);
}

int
main(void)
{
	TEST(test_round_trip);
	TEST(test_refused);
	TEST(test_sockets);
	return unit_done("test_sshd_front_start");
}
