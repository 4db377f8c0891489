/*
 * approval.c: approval decisions (approval.h).  The allow list is checked
 * strictly: a prefix entry allows one simple command, so "git status" never
 * lets "git status; rm -rf ." or "git status $(rm x)" through; those go to a
 * person (ask) or are denied (allow_list).
 */
#include "approval.h"

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
