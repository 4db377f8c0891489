/*
 * test_sshd_phases.c: a connection's phase stamps and the debug line
 * they make (sshd/net/phases.c): each phase from the one stamped before it,
 * phases never reached left out, the first stamp kept, and a line that
 * fits whatever buffer it is given.
 */
#include <string.h>

#include "unit.h"
#include "../../sshd/net/phases.h"

/* Every phase: the time from the previous one, and the total. */
static void
test_all_phases(void)
{
	struct phases ph = { 0 };
	char out[400];

	for (int p = 0; p < PHASE_COUNT; p++)
		phases_set(&ph, p, 1000000 + p * 1500LL);
	CHECK_STR(phases_format(&ph, out, sizeof(out)),
	    "kex-wait 1.5, kex 1.5, hand-back 1.5, auth 1.5, channel 1.5, "
	    "request 1.5, room 1.5, run 1.5, close 1.5; total 13.5 "
	    "(accepted at 1.000000 s)");
}

/* A hostile handshake that never authenticated: only what it reached,
 * each from the last phase stamped before it. */
static void
test_missing_phases(void)
{
	struct phases ph = { 0 };
	char out[400];

	phases_set(&ph, PHASE_ACCEPT, 2000000);
	phases_set(&ph, PHASE_KEX_BACK, 2004000);
	phases_set(&ph, PHASE_CLOSE, 2004500);
	CHECK_STR(phases_format(&ph, out, sizeof(out)),
	    "hand-back 4.0, close 0.5; total 4.5 (accepted at 2.000000 s)");
}

/* The first stamp of a phase counts (a second channel is not timed). */
static void
test_first_stamp_kept(void)
{
	struct phases ph = { 0 };

	phases_set(&ph, PHASE_CHANNEL, 5);
	phases_set(&ph, PHASE_CHANNEL, 9);
	phases_mark(&ph, PHASE_CHANNEL);
	CHECK(ph.us[PHASE_CHANNEL] == 5);
	phases_mark(&ph, PHASE_AUTH);
	CHECK(ph.us[PHASE_AUTH] > 0);
}

/* Never accepted: nothing to say.  A short buffer: cut, terminated. */
static void
test_edges(void)
{
	struct phases ph = { 0 };
	char out[400], small[12];

	CHECK_STR(phases_format(&ph, out, sizeof(out)), "");
	for (int p = 0; p < PHASE_COUNT; p++)
		phases_set(&ph, p, 1000000 + p * 1500LL);
	memset(small, 'x', sizeof(small));
	phases_format(&ph, small, sizeof(small));
	CHECK(memchr(small, '\0', sizeof(small)) != NULL);
	CHECK(strncmp(small, "kex-wait 1.", 11) == 0);
}

int
main(void)
{
	TEST(test_all_phases);
	TEST(test_missing_phases);
	TEST(test_first_stamp_kept);
	TEST(test_edges);
	return unit_done("sshd_phases");
}
