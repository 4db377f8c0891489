/*
 * test_sshd_cmd_cap.c: the monitor's counts behind max-commands-per-user
 * (sshd/monitor/cmd_cap.c) and the model totals of GET /metrics
 * (sshd/monitor/model_totals.c): counting, giving back no more than was
 * counted, a front's end, the refusal's words, and totals that only grow.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include "../../sshd/monitor/cmd_cap.h"
#include "../../sshd/monitor/model_totals.h"

static void
test_count_and_drop(void)
{
	struct cmd_cap c = { 0 };

	CHECK_INT(cmd_cap_running(&c, "alice"), 0);
	CHECK_INT(cmd_cap_add(&c, "alice"), 0);
	CHECK_INT(cmd_cap_add(&c, "alice"), 0);
	CHECK_INT(cmd_cap_add(&c, "bob"), 0);
	CHECK_INT(cmd_cap_running(&c, "alice"), 2);
	CHECK_INT(cmd_cap_running(&c, "bob"), 1);
	CHECK_INT(c.running, 3);
	/* More given back than counted: only what was counted. */
	CHECK_INT(cmd_cap_drop(&c, "alice", 5), 2);
	CHECK_INT(cmd_cap_running(&c, "alice"), 0);
	CHECK_INT(cmd_cap_drop(&c, "carol", 1), 0);
	CHECK_INT(cmd_cap_drop(&c, "bob", 0), 0);
	CHECK_INT(c.running, 1);
	CHECK_INT(c.len, 1);
	cmd_cap_clear(&c);
}

static void
test_many_users_and_clear(void)
{
	struct cmd_cap c = { 0 };
	char name[32];

	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "user%d", i);
		CHECK_INT(cmd_cap_add(&c, name), 0);
	}
	CHECK_INT(c.running, 100);
	CHECK_INT(cmd_cap_running(&c, "user57"), 1);
	c.refused = 3;
	cmd_cap_clear(&c);	/* the front ended */
	CHECK_INT(c.running, 0);
	CHECK_INT(cmd_cap_running(&c, "user57"), 0);
	CHECK_INT(c.refused, 3);	/* a counter of atriumd's life */
	CHECK_INT(cmd_cap_add(&c, "user57"), 0);
	cmd_cap_clear(&c);
}

static void
test_words(void)
{
	char w[400];

	cmd_cap_words(w, sizeof(w), 2, 2);
	CHECK(strstr(w, "command refused: you already run 2 commands") == w);
	CHECK(strstr(w, "(max-commands-per-user = 2)") != NULL);
	CHECK(strstr(w, "HTTP exec") != NULL);
}

static void
test_model_totals(void)
{
	struct model_totals t;
	const long long d1[MODEL_COUNTS] = { 1, 100, 7, 0 };
	const long long d2[MODEL_COUNTS] = { 0, 0, 0, 1 };
	const long long zero[MODEL_COUNTS] = { 0 };
	char name[16];

	memset(&t, 0, sizeof(t));
	model_totals_add(&t, "anthropic", d1);
	model_totals_add(&t, "anthropic", d2);
	model_totals_add(&t, "openai", zero);	/* nothing: no row */
	CHECK_STR(t.p[0].provider, "anthropic");
	CHECK_INT(t.p[0].v[MODEL_REQUESTS], 1);
	CHECK_INT(t.p[0].v[MODEL_INPUT_TOKENS], 100);
	CHECK_INT(t.p[0].v[MODEL_OUTPUT_TOKENS], 7);
	CHECK_INT(t.p[0].v[MODEL_ERRORS], 1);
	CHECK_STR(t.p[1].provider, "");
	/* Past the table's size, the rest are "other". */
	for (int i = 0; i < MODEL_TOTALS_PROVIDERS + 2; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		model_totals_add(&t, name, d1);
	}
	CHECK_STR(t.p[MODEL_TOTALS_PROVIDERS - 1].provider, "other");
	CHECK_INT(t.p[MODEL_TOTALS_PROVIDERS - 1].v[MODEL_REQUESTS], 4);
}

int
main(void)
{
	TEST(test_count_and_drop);
	TEST(test_many_users_and_clear);
	TEST(test_words);
	TEST(test_model_totals);
	return unit_done("test_sshd_cmd_cap");
}
