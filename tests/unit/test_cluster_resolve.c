/*
 * test_cluster_resolve.c: advertised addresses as the numbers the front
 * door dials (cluster/resolve.h): numbers as they are (IPv6 bracketed),
 * names from /etc/hosts (localhost), a name that cannot resolve, and
 * what is not HOST:PORT at all.
 */
#include <errno.h>
#include <string.h>

#include "resolve.h"
#include "unit.h"

/* addr as a number, waiting as long as resolve_addr may. */
static int
ask(struct resolve *r, const char *addr, char *out, size_t len)
{
	return resolve_addr(r, addr, RESOLVE_WAIT_MS, out, len);
}

static void
test_numbers(void)
{
	struct resolve *r = resolve_new();
	char out[64];

	CHECK_INT(ask(r, "10.0.0.1:2222", out, sizeof(out)), 0);
	CHECK_STR(out, "10.0.0.1:2222");
	CHECK_INT(ask(r, "[fd00::1]:22", out, sizeof(out)), 0);
	CHECK_STR(out, "[fd00::1]:22");
	CHECK_INT(ask(r, "10.0.0.1:2222", out, 8), -ENAMETOOLONG);
	resolve_free(r);
}

static void
test_names(void)
{
	struct resolve *r = resolve_new();
	char out[64];

	/* localhost is in every /etc/hosts: 127.0.0.1, or ::1. */
	CHECK_INT(ask(r, "localhost:2222", out, sizeof(out)), 0);
	CHECK(strcmp(out, "127.0.0.1:2222") == 0 ||
	    strcmp(out, "[::1]:2222") == 0);
	/* Again: from what it keeps. */
	CHECK_INT(ask(r, "localhost:22", out, sizeof(out)), 0);
	CHECK(strcmp(out, "127.0.0.1:22") == 0 || strcmp(out, "[::1]:22") == 0);
	/* .invalid never resolves (RFC 2606); without a resolver on the
	 * net, the look-up may still be under way after its wait. */
	int rc = -EAGAIN;
	for (int i = 0; i < 5 && rc == -EAGAIN; i++)
		rc = ask(r, "no-such-host.invalid:22", out,
		    sizeof(out));
	CHECK(rc == -ENOENT || rc == -EAGAIN || rc == -EIO);
	CHECK_STR(out, "");
	resolve_free(r);
}

static void
test_malformed(void)
{
	struct resolve *r = resolve_new();
	char out[64];

	CHECK_INT(ask(r, "localhost", out, sizeof(out)), -EINVAL);
	CHECK_INT(ask(r, ":22", out, sizeof(out)), -EINVAL);
	CHECK_INT(ask(r, "host:", out, sizeof(out)), -EINVAL);
	CHECK_INT(ask(r, "host:0", out, sizeof(out)), -EINVAL);
	CHECK_INT(ask(r, "host:65536", out, sizeof(out)), -EINVAL);
	CHECK_INT(ask(r, "host:22x", out, sizeof(out)), -EINVAL);
	CHECK_INT(ask(r, "[::1:22", out, sizeof(out)), -EINVAL);
	CHECK_INT(ask(r, "[]:22", out, sizeof(out)), -EINVAL);
	resolve_free(r);
	resolve_free(NULL);
}

int
main(void)
{
	TEST(test_numbers);
	TEST(test_names);
	TEST(test_malformed);
	return unit_done("cluster_resolve");
}
