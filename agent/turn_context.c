/*
 * turn_context.c: a turn's CONTEXT phase (turn.c): the skills and AGENTS.md
 * read from the workspace on the confined path (ws_skills.h, ws_file.h)
 * once a turn, then the step's request made (turn_model_request).
 *
 * Both are read once a turn, so the system prompt stays the same through
 * it (a provider's prompt cache keeps it); a file that cannot be read is
 * logged and left out, never a reason to fail the turn.  Every request
 * starts from a callback or a 0 ms timer, never inside the callback of the
 * request before it.
 */
#include "turn_impl.h"

#include <errno.h>
#include <string.h>
#include <json-c/json.h>

#include "agent.h"
#include "jsonl.h"
#include "log.h"
#include "loop_uring.h"
#include "skills.h"
#include "ws_file.h"
#include "ws_skills.h"

#define TURN_AGENTS_MD		"AGENTS.md"	/* at the workspace root */
#define TURN_AGENTS_MD_READ	(1024 * 1024)	/* read at most */

/* AGENTS.md was read through the confined path, or could not be: the
 * prompt simply goes without it then.  Kept for the turn's later requests
 * (turn_read_agents_md). */
static void
turn_agents_md_done(void *arg, int err, char *data, size_t len)
{
	struct turn *t = arg;
	char why[256];

	t->read = NULL;
	if (err < 0 && err != -ENOENT) {
		ws_file_why(why, sizeof(why), err);
		log_warn("%s not put in the system prompt: %s", TURN_AGENTS_MD,
		    why);
	}
	t->agents_md = data;
	t->agents_len = data ? len : 0;
	t->agents_loaded = 1;
	turn_model_request(t, t->agents_md, t->agents_len);
}

/* A later request of the turn, with the AGENTS.md read for its first. */
static long
turn_agents_md_kept_cb(struct loop *l, long long id, void *arg)
{
	struct turn *t = arg;

	t->timer = 0;
	turn_model_request(t, t->agents_md, t->agents_len);
	return LOOP_NOMORE;
}

/* Read AGENTS.md, then make the request.  It is read once a turn, as the
 * skills are: the system prompt stays the same through the turn (so a
 * provider's prompt cache keeps it), and a step reads nothing of the
 * workspace for itself.  A later request is made from a 0 ms timer, so
 * that, as after a read, it never starts inside the callback of the
 * request before it. */
static void
turn_read_agents_md(struct turn *t)
{
	int r;

	if (t->agents_loaded) {
		t->timer = loop_add_timer(t->a->loop, 0, turn_agents_md_kept_cb,
		    t);
		r = t->timer ? 0 : -ENOMEM;
	} else {
		r = ws_file_read_start(t->a, TURN_AGENTS_MD,
		    TURN_AGENTS_MD_READ, turn_agents_md_done, t, &t->read);
	}
	if (r < 0)
		turn_fail(t, "the model request could not be prepared: out of "
		    "memory");
}

/* The turn's skills: the room's config ones, then the workspace's (found,
 * taken; NULL when they could not be read) whose names are free. */
static void
turn_skills_set(struct agent *a, json_object *found)
{
	json_object *set = json_object_new_array();
	size_t n = a->config_skills ?
	    json_object_array_length(a->config_skills) : 0;

	for (size_t i = 0; i < n; i++)
		skills_add(set, json_object_get(
		    json_object_array_get_idx(a->config_skills, i)));
	n = found ? json_object_array_length(found) : 0;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(found, i);

		if (!skills_add(set, json_object_get(s)))
			log_warn("skill %s of the workspace skipped: the room's "
			    "config has one of that name, or the room has %d "
			    "skills already", json_get_string(s, "name"),
			    SKILLS_MAX);
	}
	json_object_put(found);
	json_object_put(a->skills);
	a->skills = set;
}

/* The workspace's skills were read on the confined path, or could not be:
 * the turn goes on with the config's alone then. */
static void
turn_skills_done(void *arg, int err, json_object *found)
{
	struct turn *t = arg;

	t->skills_read = NULL;
	if (err < 0)
		log_warn("the workspace's skills were not read: %s",
		    strerror(-err));
	turn_skills_set(t->a, found);
	t->skills_loaded = 1;
	turn_read_agents_md(t);
}

/* Read the skills (once a turn) and AGENTS.md for the next request. */
void
turn_read_context(struct turn *t)
{
	if (t->skills_loaded) {
		turn_read_agents_md(t);
	} else if (ws_skills_read_start(t->a, turn_skills_done, t,
	    &t->skills_read) < 0) {
		turn_fail(t, "the model request could not be prepared: out of "
		    "memory");
	}
}
