/*
 * test_agent_text.c: the head-and-tail cap of command output
 * (agent/text.c), and the bash tool's result text for the model
 * (agent/tools/tool_bash.c).
 */
#include <stdlib.h>
#include <string.h>

#include "../../agent/text.h"
#include "../../agent/tools/tool_bash.h"
#include "unit.h"

static void
test_outcap_small(void)
{
	struct outcap o;
	char *s;

	CHECK_INT(outcap_init(&o, 8, 8), 0);
	outcap_add(&o, "hello ", 6);
	outcap_add(&o, "world", 5);
	CHECK_INT(o.total, 11);
	CHECK_INT(outcap_text(&o, &s), 0);
	CHECK_STR(s, "hello world");
	free(s);
	outcap_free(&o);

	CHECK_INT(outcap_init(&o, 8, 8), 0);
	CHECK_INT(outcap_text(&o, &s), 0);
	CHECK_STR(s, "");
	free(s);
	outcap_free(&o);
}

static void
test_outcap_cut_keeps_head_and_tail(void)
{
	struct outcap o;
	char *s, chunk[1000];

	CHECK_INT(outcap_init(&o, 10, 10), 0);
	outcap_add(&o, "HEADHEADHE", 10);
	memset(chunk, 'm', sizeof(chunk));
	for (int i = 0; i < 5; i++)
		outcap_add(&o, chunk, sizeof(chunk));
	outcap_add(&o, "0123", 4);
	outcap_add(&o, "456789", 6);
	CHECK_INT(o.total, 5020);
	CHECK_INT(outcap_text(&o, &s), 0);
	CHECK(strncmp(s, "HEADHEADHE\n", 11) == 0);
	CHECK(strstr(s, "5000 bytes of output cut") != NULL);
	CHECK(strlen(s) > 10 && strcmp(s + strlen(s) - 10, "0123456789") == 0);
	CHECK(strchr(s, 'm') == NULL);
	free(s);
	outcap_free(&o);
}

static void
test_bash_result(void)
{
	char *s;

	s = tool_bash_result("out\n", 1, 0, NULL, 0, 120);
	CHECK_STR(s, "out\n");
	free(s);
	s = tool_bash_result("out\n", 1, 3, NULL, 0, 120);
	CHECK_STR(s, "out\nexit status 3");
	free(s);
	s = tool_bash_result("no newline", 1, 1, NULL, 0, 120);
	CHECK_STR(s, "no newline\nexit status 1");
	free(s);
	s = tool_bash_result("", 0, 9, "KILL", 0, 120);
	CHECK_STR(s, "killed by signal KILL");
	free(s);
	s = tool_bash_result("x\n", 0, 9, "KILL", 1, 5);
	CHECK_STR(s, "x\ncommand timed out after 5 s and was killed");
	free(s);
}

int
main(void)
{
	TEST(test_outcap_small);
	TEST(test_outcap_cut_keeps_head_and_tail);
	TEST(test_bash_result);
	return unit_done("test_agent_text");
}
