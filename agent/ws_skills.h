/*
 * ws_skills.h: the workspace's skills, /workspace/.atrium/skills/NAME/
 * SKILL.md, read at the start of a turn (ws_skills.c) on the file tools'
 * confined path (wsio.h): openat2 beneath the workspace root with
 * RESOLVE_BENEATH and the sandbox uid's credentials, so a SKILL.md (or a
 * skill's directory) that is a symlink leading out of the workspace is
 * never read; it is skipped and the log says so.
 *
 * Bounds: at most WS_SKILLS_MAX_VISIT entries of .atrium/skills are looked
 * at, in name order the first SKILLS_MAX skills that parse are kept, and
 * a SKILL.md over SKILLS_MAX_BODY bytes is skipped (skills.h).
 *
 * Contract: done is called exactly once, from the loop and never inside
 * ws_skills_read_start, unless the read was cancelled or abandoned first.
 */
#ifndef ATRIUM_AGENT_WS_SKILLS_H
#define ATRIUM_AGENT_WS_SKILLS_H

#include <json-c/json.h>

#define WS_SKILLS_DIR		".atrium/skills"	/* beneath the root */
#define WS_SKILLS_FILE		"SKILL.md"		/* in each skill's dir */
#define WS_SKILLS_MAX_VISIT	1024	/* directory entries looked at */

struct agent;
struct ws_skills;

/* The outcome: err 0 with found (an array of skills, skills.h; the
 * callee's), or -errno with found NULL.  No skills directory is 0 with
 * an empty array. */
typedef void ws_skills_done_fn(void *arg, int err, json_object *found);

/* Start reading.  0 with *out, or -ENOMEM. */
int ws_skills_read_start(struct agent *a, ws_skills_done_fn *done,
    void *arg, struct ws_skills **out);

/* Never call done; the read ends and is freed on its own.  NULL is fine. */
void ws_skills_read_cancel(struct ws_skills *r);

/* At shutdown: free now, unless the kernel may still write into it (then
 * its memory is left to the process's exit).  NULL is fine. */
void ws_skills_read_abandon(struct ws_skills *r);

#endif
