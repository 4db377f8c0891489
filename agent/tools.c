/*
 * tools.c: the table of tools (tools.h).  Order matters only for
 * tools_names; the schemas the model sees are in prompt.c and must name
 * the same tools.
 */
#include "tools.h"

#include <string.h>

#include "tool_bash.h"
#include "tool_files.h"
#include "tool_skill.h"

static int
tools_bash_start(struct agent *a, const char *call_id, json_object *input,
    tool_done_fn *done, void *arg, void **run, char *err, size_t errlen)
{
	struct tool_run *r = NULL;
	int rc = tool_bash_start(a, call_id, input, done, arg, &r, err, errlen);

	*run = r;
	return rc;
}

static void
tools_bash_cancel(void *run)
{
	tool_bash_cancel(run);
}

static void
tools_bash_abandon(void *run)
{
	tool_bash_abandon(run);
}

static const struct tool_def tools_table[] = {
	{ "bash", 1, tools_bash_start, tools_bash_cancel, tools_bash_abandon },
	{ "read", 0, tool_files_start_read, tool_files_cancel,
	    tool_files_abandon },
	{ "write", 1, tool_files_start_write, tool_files_cancel,
	    tool_files_abandon },
	{ "edit", 1, tool_files_start_edit, tool_files_cancel,
	    tool_files_abandon },
	{ "ls", 0, tool_files_start_ls, tool_files_cancel, tool_files_abandon },
	{ "grep", 0, tool_files_start_grep, tool_files_cancel,
	    tool_files_abandon },
	{ "skill", 0, tool_skill_start, tool_skill_cancel, tool_skill_abandon },
};

const struct tool_def *
tools_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(tools_table) /
	    sizeof(tools_table[0]); i++)
		if (strcmp(tools_table[i].name, name) == 0)
			return &tools_table[i];
	return NULL;
}

const char *
tools_names(void)
{
	return "bash, read, write, edit, ls, grep, skill";
}
