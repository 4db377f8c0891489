/*
 * test_sshd_fswatch.c: the monitor's reading of a workspace's request
 * counts (sshd/monitor/fswatch.c): atrium-fs's "stats" answer taken only
 * when every line is as fs/daemon/control_socket.c writes it, and totals that
 * only grow though mounts start again.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "../../sshd/monitor/fswatch.h"

static const char *const kinds[FSSTATS_KINDS] = FSSTATS_KIND_NAMES;

/* A well-formed answer into out: kind k counts k+base requests, all in
 * the first bucket, plus extra appended before "ok". */
static size_t
answer(char *out, size_t size, unsigned long long base, const char *extra)
{
	size_t n = 0;

	for (int k = 0; k < FSSTATS_KINDS; k++) {
		n += (size_t)snprintf(out + n, size - n, "O %s %llu %llu %llu",
		    kinds[k], base + k, (base + k) * 1000, base + k);
		for (int b = 1; b < FSSTATS_BUCKETS; b++)
			n += (size_t)snprintf(out + n, size - n, " 0");
		n += (size_t)snprintf(out + n, size - n, "\n");
	}
	n += (size_t)snprintf(out + n, size - n, "%sok\n", extra);
	return n;
}

static void
test_parse(void)
{
	unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS];
	char a[FSSTATS_ANSWER_MAX + 512];
	size_t n = answer(a, sizeof(a), 5, "");

	CHECK_INT(fswatch_parse(a, n, v), 0);
	CHECK_INT(v[0][0], 5);
	CHECK_INT(v[3][1], 8000);
	CHECK_INT(v[FSSTATS_KINDS - 1][2], 5 + FSSTATS_KINDS - 1);
	/* cut short, no "ok", a line too many, a kind twice */
	CHECK_INT(fswatch_parse(a, n - 1, v), -1);
	CHECK_INT(fswatch_parse(a, n - 3, v), -1);
	n = answer(a, sizeof(a), 5, "O lookup 1 1 1 0 0 0 0 0 0 0 0 0 0 0 0\n");
	CHECK_INT(fswatch_parse(a, n, v), -1);
	/* a sign, a control byte, an overflow, a byte after ok, an
	 * unknown kind */
	n = answer(a, sizeof(a), 5, "");
	memcpy(a, "O lookup -5", 11);
	CHECK_INT(fswatch_parse(a, n, v), -1);
	n = answer(a, sizeof(a), 5, "");
	a[2] = '\x1b';
	CHECK_INT(fswatch_parse(a, n, v), -1);
	n = answer(a, sizeof(a), 99999999999999999ULL, "");
	CHECK_INT(fswatch_parse(a, n, v), 0);
	n = answer(a, sizeof(a), 0, "");
	memcpy(a, "O lookup 99999999999999999999", 29);
	CHECK_INT(fswatch_parse(a, n, v), -1);
	n = answer(a, sizeof(a), 5, "");
	CHECK_INT(fswatch_parse(a, n + 1, v), -1);	/* the NUL after ok */
	n = answer(a, sizeof(a), 5, "");
	memcpy(a, "O lookupx", 9);
	CHECK_INT(fswatch_parse(a, n, v), -1);
	CHECK_INT(fswatch_parse("ok\n", 3, v), -1);
	CHECK_INT(fswatch_parse("", 0, v), -1);
}

static void
test_totals_only_grow(void)
{
	struct fsops_totals t = { 0 };
	struct fswatch w;
	unsigned long long v[FSSTATS_KINDS][FSWATCH_FIELDS] = { { 0 } };

	fswatch_init(&w, &t, "demo");
	fswatch_start(&w, 0);
	v[0][0] = 10;
	fswatch_add(&w, v);
	CHECK_INT(t.v[0][0], 10);
	v[0][0] = 15;
	fswatch_add(&w, v);
	CHECK_INT(t.v[0][0], 15);
	/* the daemon started again: its new count is all new */
	v[0][0] = 3;
	fswatch_add(&w, v);
	CHECK_INT(t.v[0][0], 18);
	/* a new mount of the room: counted from its start */
	fswatch_start(&w, 0);
	v[0][0] = 4;
	fswatch_add(&w, v);
	CHECK_INT(t.v[0][0], 22);
	fswatch_stop(&w);
}

int
main(void)
{
	TEST(test_parse);
	TEST(test_totals_only_grow);
	return unit_done("test_sshd_fswatch");
}
