/*
 * approval.h: the approval policy's decision for one tool call (approval.c).
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

/* 1 when policy is one of the four names. */
int approval_policy_valid(const char *policy);

/* 1 when command starts with prefix at a word boundary and has none of
 * ; & | ` $ < > or a newline. */
int approval_prefix_match(const char *command, const char *prefix);

/* The decision for tool with input under policy and allow_list (a JSON
 * array of strings, may be NULL).  An unknown policy denies. */
enum approval_decision approval_decide(const char *policy,
    json_object *allow_list, const char *tool, json_object *input);

#endif
