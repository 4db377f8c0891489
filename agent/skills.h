/*
 * skills.h: the room's skills (skills.c): short named instructions the
 * model can load on demand.  They come from two places: the room's config
 * (a `config` line's `skills`, stored in room.db) and the workspace's
 * /workspace/.atrium/skills/NAME/SKILL.md files, read at the start of each
 * turn through the confined path (ws_skills.h).  The system prompt lists
 * each skill's name and description; the `skill` tool (tool_skill.c)
 * returns one skill's body.
 *
 * A skill is a JSON object {name, description, body, source}.  A SKILL.md
 * (or a config skill's body) may open with front matter:
 *
 *   ---
 *   name: deploy
 *   description: How to deploy this project
 *   ---
 *   body...
 *
 * Its `name` names the skill, else the directory (or the config's
 * `name` field) does.  Names are 1 to SKILLS_MAX_NAME bytes of printable
 * ASCII without spaces; a skill with any other name is skipped.  Pure;
 * unit-tested.
 */
#ifndef ATRIUM_AGENT_SKILLS_H
#define ATRIUM_AGENT_SKILLS_H

#include <stddef.h>
#include <json-c/json.h>

#define SKILLS_MAX		32		/* skills of a room, in all */
#define SKILLS_MAX_NAME		64		/* bytes of a name */
#define SKILLS_MAX_DESC		1024		/* bytes of a description kept */
#define SKILLS_MAX_BODY		(64 * 1024)	/* bytes of a SKILL.md or body */
#define SKILLS_MAX_CONFIG	(512 * 1024)	/* bytes of the stored config */

/* 1 when name is a valid skill name. */
int skills_name_valid(const char *name);

/* Make a skill from text (a SKILL.md, or a config body) of len bytes:
 * front matter's name wins over fallback_name, front matter's description
 * over fallback_desc (either may be NULL).  The body is the text after the
 * front matter.  A new object, or NULL when no valid name results or text
 * is not valid UTF-8 text (why in err). */
json_object *skills_parse(const char *text, size_t len,
    const char *fallback_name, const char *fallback_desc,
    const char *source, char *err, size_t errlen);

/* Check a `config` line's skills: an array of at most SKILLS_MAX objects
 * with a body (string, at most SKILLS_MAX_BODY) and a name (string) or a
 * front matter naming one, and an optional description.  A new array of
 * parsed skills (source "config"), or NULL with the reason in err. */
json_object *skills_from_config(json_object *v, char *err, size_t errlen);

/* Add skill (taken) to set unless set is full or already has its name:
 * 1 added, 0 skipped (skill released). */
int skills_add(json_object *set, json_object *skill);

/* The skill of set called name, borrowed, or NULL. */
json_object *skills_find(json_object *set, const char *name);

#endif
