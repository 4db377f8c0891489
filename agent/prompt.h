/*
 * prompt.h: what the agent tells the model besides the transcript
 * (prompt.c): the system prompt, the tool schemas, and how a person's prompt
 * is framed.  Pure; unit-tested.
 */
#ifndef ATRIUM_AGENT_PROMPT_H
#define ATRIUM_AGENT_PROMPT_H

#include <stddef.h>
#include <json-c/json.h>

#define PROMPT_MAX_AGENTS_MD	(32 * 1024)	/* of AGENTS.md kept */

/* The system prompt for room with members (a JSON array of names, may be
 * NULL), the workspace's AGENTS.md (may be NULL; cut at
 * PROMPT_MAX_AGENTS_MD with a note) and the room's skills (skills.h; may
 * be NULL; names and descriptions only).  malloc'd, NULL on ENOMEM. */
char *prompt_system(const char *room, json_object *members,
    const char *agents_md, size_t agents_len, json_object *skills);

/* The tools offered to the model, a new JSON array; the skill tool only
 * when with_skill is set (the room has skills: a room without them pays
 * nothing for it). */
json_object *prompt_tools(int timeout_s, int with_skill);

/* A person's prompt as the model sees it: "user:\n" then the text,
 * unchanged.  malloc'd, NULL on ENOMEM. */
char *prompt_user_text(const char *user, const char *text);

#endif
