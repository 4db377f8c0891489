/*
 * test_agent_policy.c: approval decisions with allow-list prefixes
 * (agent/approval.c) and the system prompt and prompt framing
 * (agent/prompt.c).
 */
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "../../agent/approval.h"
#include "../../agent/prompt.h"
#include "unit.h"

static json_object *
cmd(const char *c)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "command", json_object_new_string(c));
	return o;
}

static void
test_prefix(void)
{
	CHECK_INT(approval_prefix_match("git status", "git status"), 1);
	CHECK_INT(approval_prefix_match("git status -s", "git status"), 1);
	CHECK_INT(approval_prefix_match("  make  ", "make"), 1);
	CHECK_INT(approval_prefix_match("make -j2", "make "), 1);
	CHECK_INT(approval_prefix_match("makefoo", "make"), 0);
	CHECK_INT(approval_prefix_match("git statusx", "git status"), 0);
	CHECK_INT(approval_prefix_match("git status; rm -rf .", "git status"), 0);
	CHECK_INT(approval_prefix_match("git status && rm x", "git status"), 0);
	CHECK_INT(approval_prefix_match("git status | sh", "git status"), 0);
	CHECK_INT(approval_prefix_match("git status $(rm x)", "git status"), 0);
	CHECK_INT(approval_prefix_match("git status `rm x`", "git status"), 0);
	CHECK_INT(approval_prefix_match("git status > f", "git status"), 0);
	CHECK_INT(approval_prefix_match("git status\nrm x", "git status"), 0);
	CHECK_INT(approval_prefix_match("ls", ""), 0);
}

static void
test_decide(void)
{
	json_object *list = json_tokener_parse("[\"read\", \"git status\", "
	    "\"make\"]");
	json_object *all = json_tokener_parse("[\"bash\"]");
	json_object *in = cmd("make test"), *bad = cmd("rm -rf /workspace");

	CHECK_INT(approval_decide("allow_all", NULL, "bash", bad),
	    APPROVAL_ALLOW);
	CHECK_INT(approval_decide("deny_all", all, "bash", in), APPROVAL_DENY);
	CHECK_INT(approval_decide("allow_list", list, "bash", in),
	    APPROVAL_ALLOW);
	CHECK_INT(approval_decide("allow_list", list, "bash", bad),
	    APPROVAL_DENY);
	CHECK_INT(approval_decide("allow_list", list, "read", NULL),
	    APPROVAL_ALLOW);
	CHECK_INT(approval_decide("allow_list", all, "bash", bad),
	    APPROVAL_ALLOW);
	CHECK_INT(approval_decide("allow_list", NULL, "bash", in),
	    APPROVAL_DENY);
	CHECK_INT(approval_decide("ask", list, "bash", in), APPROVAL_ALLOW);
	CHECK_INT(approval_decide("ask", list, "bash", bad), APPROVAL_ASK);
	CHECK_INT(approval_decide("bogus", list, "bash", in), APPROVAL_DENY);
	CHECK_INT(approval_decide(NULL, list, "bash", in), APPROVAL_DENY);
	CHECK_INT(approval_policy_valid("ask"), 1);
	CHECK_INT(approval_policy_valid("Ask"), 0);
	json_object_put(list);
	json_object_put(all);
	json_object_put(in);
	json_object_put(bad);
}

static void
test_system_prompt(void)
{
	json_object *members = json_tokener_parse("[\"alice\", \"bob\"]");
	char *big = malloc(PROMPT_MAX_AGENTS_MD + 100), *s;

	s = prompt_system("demo", members, "Use tabs.\n", 10, NULL);
	CHECK(s && strstr(s, "\"demo\""));
	CHECK(s && strstr(s, "/workspace"));
	CHECK(s && strstr(s, "alice, bob"));
	CHECK(s && strstr(s, "AGENTS.md"));
	CHECK(s && strstr(s, "Use tabs.\n"));
	free(s);
	s = prompt_system("demo", NULL, NULL, 0, NULL);
	CHECK(s && !strstr(s, "AGENTS.md") && !strstr(s, "People in"));
	free(s);
	memset(big, 'z', PROMPT_MAX_AGENTS_MD + 100);
	s = prompt_system("demo", NULL, big, PROMPT_MAX_AGENTS_MD + 100,
	    NULL);
	CHECK(s && strstr(s, "only the first 32768 are shown"));
	free(s);
	free(big);
	json_object_put(members);
}

static void
test_user_text(void)
{
	char *s = prompt_user_text("alice", "line one\n  line two\n");

	CHECK_STR(s, "alice:\nline one\n  line two\n");
	free(s);
}

static void
test_tools(void)
{
	json_object *t = prompt_tools(120, 0), *schema = NULL;

	CHECK_INT(json_object_array_length(t), 6);
	CHECK_STR(json_get_string(json_object_array_get_idx(t, 0), "name"),
	    "bash");
	CHECK(json_object_object_get_ex(json_object_array_get_idx(t, 0),
	    "input_schema", &schema));
	CHECK(strstr(json_object_to_json_string(schema), "\"command\""));
	json_object_put(t);
	t = prompt_tools(120, 1);
	CHECK_INT(json_object_array_length(t), 7);
	CHECK_STR(json_get_string(json_object_array_get_idx(t, 6), "name"),
	    "skill");
	json_object_put(t);
}

/* The words of an approval's outcome: the room's line, the model's. */
static void
test_outcome(void)
{
	char t[256];

	approval_outcome_text(APPROVAL_APPROVED, "bob", "bash", NULL, 4230,
	    120, t, sizeof(t));
	CHECK_STR(t, "bob approved the agent's bash call (waited 4.2 s)");
	approval_outcome_text(APPROVAL_DENIED, "bob", "edit", "not on main",
	    61000, 120, t, sizeof(t));
	CHECK_STR(t, "bob denied the agent's edit call (waited 1 min 01 s): "
	    "not on main");
	approval_outcome_text(APPROVAL_TIMED_OUT, NULL, "bash", NULL, 120000,
	    120, t, sizeof(t));
	CHECK_STR(t, "approval timed out: no one answered the agent's bash "
	    "call within 120 s, so it was denied");
	approval_outcome_output(APPROVAL_DENIED, "bob", "not on main", 120, t,
	    sizeof(t));
	CHECK_STR(t, "denied by bob: not on main");
	approval_outcome_output(APPROVAL_DENIED, "bob", "", 120, t, sizeof(t));
	CHECK_STR(t, "denied by bob");
	CHECK_STR(approval_outcome_name(APPROVAL_TIMED_OUT), "timed_out");
	/* A /stop while it waited answers it too. */
	approval_outcome_text(APPROVAL_STOPPED, "alice", "bash", NULL, 2000,
	    120, t, sizeof(t));
	CHECK_STR(t, "alice stopped the agent before its bash call was "
	    "answered (waited 2.0 s)");
	approval_outcome_output(APPROVAL_STOPPED, "alice", NULL, 120, t,
	    sizeof(t));
	CHECK_STR(t, "stopped by alice before it was approved");
	CHECK_STR(approval_outcome_name(APPROVAL_STOPPED), "stopped");
	/* Cut to the buffer, whole. */
	approval_outcome_text(APPROVAL_LEFT, NULL, "bash", NULL, 0, 120, t, 12);
	CHECK_INT((int)strlen(t), 11);
}

int
main(void)
{
	TEST(test_prefix);
	TEST(test_decide);
	TEST(test_outcome);
	TEST(test_system_prompt);
	TEST(test_user_text);
	TEST(test_tools);
	return unit_done("test_agent_policy");
}
