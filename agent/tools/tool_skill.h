/*
 * tool_skill.h: the `skill` tool (tool_skill.c): input {"name": NAME},
 * result the body of the room's skill of that name (skills.h), from the
 * set the turn read at its start (config skills and the workspace's
 * SKILL.md files).  It reads nothing itself: the workspace was read on the
 * confined path when the turn began (ws_skills.h).
 */
#ifndef ATRIUM_AGENT_TOOL_SKILL_H
#define ATRIUM_AGENT_TOOL_SKILL_H

#include <stddef.h>
#include <json-c/json.h>

#include "tools.h"

struct agent;

/* tools.h's start, cancel and abandon for the skill tool. */
int tool_skill_start(struct agent *a, const char *call_id,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen);
void tool_skill_cancel(void *run);
void tool_skill_abandon(void *run);

#endif
