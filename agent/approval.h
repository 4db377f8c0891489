/*
 * approval.h: the approval policy's decision for one tool call, and how an
 * asked call's approval ended as the room's record says it (approval.c).
 * Pure; unit-tested.
 *
 *   allow_all   every call runs
 *   deny_all    no call runs
 *   allow_list  a call runs when the list names its tool ("bash", "read"),
 *               or, for bash, when an entry is a prefix of the command at a
 *               word boundary ("git status", "make") and the command has no
 *               shell operator that could chain another command after it
 *   ask         the people in the room decide
 */
#ifndef ATRIUM_AGENT_APPROVAL_H
#define ATRIUM_AGENT_APPROVAL_H

#include <json-c/json.h>

enum approval_decision { APPROVAL_ALLOW, APPROVAL_DENY, APPROVAL_ASK };

#define APPROVAL_REASON_MAX	1000	/* bytes of a denial's reason */

/* 1 when policy is one of the four names. */
int approval_policy_valid(const char *policy);

/* 1 when command starts with prefix at a word boundary and has none of
 * ; & | ` $ < > or a newline. */
int approval_prefix_match(const char *command, const char *prefix);

/* The decision for tool with input under policy and allow_list (a JSON
 * array of strings, may be NULL).  An unknown policy denies. */
enum approval_decision approval_decide(const char *policy,
    json_object *allow_list, const char *tool, json_object *input);

/* How an approval request ended: the `approval_result` event's status. */
enum approval_outcome {
	APPROVAL_APPROVED,	/* a member said yes */
	APPROVAL_DENIED,	/* a member said no (with a reason, maybe) */
	APPROVAL_TIMED_OUT,	/* nobody answered in time */
	APPROVAL_LEFT,		/* everyone who could answer left */
	APPROVAL_NOBODY,	/* nobody was there to ask */
	APPROVAL_STOPPED,	/* a member stopped the turn while it waited */
};

/* The status word of outcome ("approved", "denied", "timed_out", "left",
 * "nobody", "stopped"). */
const char *approval_outcome_name(enum approval_outcome outcome);

/* The line the room shows for the outcome, into out (len): who (NULL
 * unless a member answered or stopped the turn), the tool's name, the denial's reason (NULL
 * or "": none), waited_ms (how long the request waited) and timeout_s
 * (the room's approval timeout), e.g. "bob denied the agent's bash call
 * after 4.2 s: not on main".  Always a whole string, cut at len. */
void approval_outcome_text(enum approval_outcome outcome, const char *who,
    const char *tool, const char *reason, long long waited_ms,
    int timeout_s, char *out, size_t len);

/* What the model is told of a call that did not run, into out (len):
 * "denied by bob: not on main" and the like. */
void approval_outcome_output(enum approval_outcome outcome, const char *who,
    const char *reason, int timeout_s, char *out, size_t len);

#endif
