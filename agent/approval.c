/*
 * approval.c: approval decisions and the words of their outcomes
 * (approval.h).  The allow list is checked strictly: a prefix entry allows
 * one simple command, so "git status" never lets "git status; rm -rf ." or
 * "git status $(rm x)" through; those go to a person (ask) or are denied
 * (allow_list).  The outcome's line is made here once, stored in the
 * approval_result event as its text, so the room shows the same words live,
 * in a replay and in a /history search.
 */
#include "approval.h"

#include <stdio.h>
#include <string.h>

static const char *const approval_policies[] = {
	"allow_all", "deny_all", "allow_list", "ask",
};

int
approval_policy_valid(const char *policy)
{
	for (size_t i = 0; policy && i < 4; i++)
		if (strcmp(policy, approval_policies[i]) == 0)
			return 1;
	return 0;
}

int
approval_prefix_match(const char *command, const char *prefix)
{
	size_t n;

	while (*command == ' ' || *command == '\t')
		command++;
	while (*prefix == ' ' || *prefix == '\t')
		prefix++;
	n = strlen(prefix);
	while (n && (prefix[n - 1] == ' ' || prefix[n - 1] == '\t'))
		n--;
	if (n == 0 || strncmp(command, prefix, n) != 0)
		return 0;
	if (command[n] != '\0' && command[n] != ' ' && command[n] != '\t')
		return 0;
	return strpbrk(command, ";&|`$<>\n\r") == NULL;
}

/* 1 when allow_list lets this call run. */
static int
approval_listed(json_object *allow_list, const char *tool,
    json_object *input)
{
	json_object *cmd = NULL;
	const char *command = NULL;
	size_t n;

	if (!allow_list || !json_object_is_type(allow_list, json_type_array))
		return 0;
	if (strcmp(tool, "bash") == 0 && input &&
	    json_object_object_get_ex(input, "command", &cmd) &&
	    json_object_is_type(cmd, json_type_string))
		command = json_object_get_string(cmd);
	n = json_object_array_length(allow_list);
	for (size_t i = 0; i < n; i++) {
		const char *e = json_object_get_string(
		    json_object_array_get_idx(allow_list, i));

		if (!e)
			continue;
		if (strcmp(e, tool) == 0)
			return 1;
		if (command && approval_prefix_match(command, e))
			return 1;
	}
	return 0;
}

enum approval_decision
approval_decide(const char *policy, json_object *allow_list,
    const char *tool, json_object *input)
{
	if (!policy || !tool)
		return APPROVAL_DENY;
	if (strcmp(policy, "allow_all") == 0)
		return APPROVAL_ALLOW;
	if (strcmp(policy, "ask") == 0)
		return approval_listed(allow_list, tool, input) ?
		    APPROVAL_ALLOW : APPROVAL_ASK;
	if (strcmp(policy, "allow_list") == 0)
		return approval_listed(allow_list, tool, input) ?
		    APPROVAL_ALLOW : APPROVAL_DENY;
	return APPROVAL_DENY;
}

static const char *const approval_outcomes[] = {
	[APPROVAL_APPROVED] = "approved",
	[APPROVAL_DENIED] = "denied",
	[APPROVAL_TIMED_OUT] = "timed_out",
	[APPROVAL_LEFT] = "left",
	[APPROVAL_NOBODY] = "nobody",
	[APPROVAL_STOPPED] = "stopped",
};

const char *
approval_outcome_name(enum approval_outcome outcome)
{
	return (unsigned)outcome < sizeof(approval_outcomes) /
	    sizeof(approval_outcomes[0]) ? approval_outcomes[outcome] : "?";
}

/* A wait as people read it: "4.2 s", "3 min 05 s". */
static void
approval_wait_text(long long ms, char *out, size_t len)
{
	if (ms < 0)
		ms = 0;
	if (ms < 60000)
		snprintf(out, len, "%lld.%lld s", ms / 1000, ms % 1000 / 100);
	else
		snprintf(out, len, "%lld min %02lld s", ms / 60000,
		    ms % 60000 / 1000);
}

void
approval_outcome_text(enum approval_outcome outcome, const char *who,
    const char *tool, const char *reason, long long waited_ms,
    int timeout_s, char *out, size_t len)
{
	char wait[32];
	int why = reason && *reason;

	approval_wait_text(waited_ms, wait, sizeof(wait));
	tool = tool && *tool ? tool : "tool";
	who = who && *who ? who : "someone";
	switch (outcome) {
	case APPROVAL_APPROVED:
		snprintf(out, len, "%s approved the agent's %s call (waited "
		    "%s)", who, tool, wait);
		break;
	case APPROVAL_DENIED:
		snprintf(out, len, "%s denied the agent's %s call (waited "
		    "%s)%s%s", who, tool, wait, why ? ": " : "",
		    why ? reason : "");
		break;
	case APPROVAL_TIMED_OUT:
		snprintf(out, len, "approval timed out: no one answered the "
		    "agent's %s call within %d s, so it was denied", tool,
		    timeout_s);
		break;
	case APPROVAL_LEFT:
		snprintf(out, len, "the agent's %s call was denied: everyone "
		    "who could approve it left (waited %s)", tool, wait);
		break;
	case APPROVAL_STOPPED:
		snprintf(out, len, "%s stopped the agent before its %s call "
		    "was answered (waited %s)", who, tool, wait);
		break;
	default:
		snprintf(out, len, "the agent's %s call was denied: the "
		    "approval policy is ask and no one is connected to "
		    "answer", tool);
		break;
	}
}

void
approval_outcome_output(enum approval_outcome outcome, const char *who,
    const char *reason, int timeout_s, char *out, size_t len)
{
	int why = reason && *reason;

	switch (outcome) {
	case APPROVAL_APPROVED:
		snprintf(out, len, "approved by %s", who ? who : "someone");
		break;
	case APPROVAL_DENIED:
		snprintf(out, len, "denied by %s%s%s", who ? who : "someone",
		    why ? ": " : "", why ? reason : "");
		break;
	case APPROVAL_TIMED_OUT:
		snprintf(out, len, "denied: no one in the room answered the "
		    "approval request within %d s", timeout_s);
		break;
	case APPROVAL_LEFT:
		snprintf(out, len, "denied: everyone who could approve this "
		    "call left the room before answering");
		break;
	case APPROVAL_STOPPED:
		snprintf(out, len, "stopped by %s before it was approved",
		    who ? who : "someone");
		break;
	default:
		snprintf(out, len, "denied: the room's approval policy is ask "
		    "and no one who could approve this call is connected");
		break;
	}
}
