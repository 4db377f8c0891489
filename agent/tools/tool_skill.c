/*
 * tool_skill.c: the `skill` tool (tool_skill.h).  The body is copied at
 * start and handed to done from a 0 ms timer, so done never comes inside
 * start (tools.h's contract); cancel and abandon just drop the timer.
 */
#include "tool_skill.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "jsonl.h"
#include "loop_uring.h"
#include "skills.h"

struct tool_skill_run {
	struct agent *a;
	char *body;			/* the skill's text for the model */
	long long timer;		/* fires done */
	tool_done_fn *done;
	void *arg;
};

static void
tool_skill_free(struct tool_skill_run *r)
{
	free(r->body);
	free(r);
}

static long
tool_skill_fire(struct loop *l, long long id, void *arg)
{
	struct tool_skill_run *r = arg;

	(void)l;
	(void)id;
	r->timer = 0;
	r->done(r->arg, "ok", r->body);
	tool_skill_free(r);
	return LOOP_NOMORE;
}

/* The skill called name in the room's current set; a message for the
 * model in err when there is none. */
static json_object *
tool_skill_lookup(struct agent *a, const char *name, char *err,
    size_t errlen)
{
	json_object *s = skills_find(a->skills, name);

	if (!s)
		snprintf(err, errlen, "there is no skill called \"%.80s\"; the "
		    "system prompt lists the room's skills", name ? name :
		    "");
	return s;
}

int
tool_skill_start(struct agent *a, const char *call_id, json_object *input,
    long long audit_id, tool_done_fn *done, void *arg, void **run, char *err,
    size_t errlen)
{
	const char *name = json_get_string(input, "name");
	struct tool_skill_run *r;
	json_object *s;

	(void)call_id;
	*run = NULL;
	if (!name) {
		snprintf(err, errlen, "the skill tool needs {\"name\": NAME}");
		return -EINVAL;
	}
	if (!(s = tool_skill_lookup(a, name, err, errlen)))
		return -ENOENT;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->body = strdup(json_get_string(s, "body")))) {
		free(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->a = a;
	r->done = done;
	r->arg = arg;
	r->timer = loop_add_timer(a->loop, 0, tool_skill_fire, r);
	if (r->timer < 0) {
		tool_skill_free(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*run = r;
	return 0;
}

void
tool_skill_cancel(void *run)
{
	struct tool_skill_run *r = run;

	if (!r)
		return;
	if (r->timer > 0)
		loop_del_timer(r->a->loop, r->timer);
	tool_skill_free(r);
}

void
tool_skill_abandon(void *run)
{
	tool_skill_cancel(run);
}
