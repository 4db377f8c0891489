/*
 * tools.c: the table of tools (tools.h).  Order matters only for
 * tools_names; the schemas the model sees are in prompt.c and must name
 * the same tools.
 */
#include "tools.h"

#include <string.h>

#include "mcp.h"
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
	{ "bash", 1, tools_bash_start, tools_bash_cancel, tools_bash_abandon,
	    NULL },
	{ "read", 0, tool_files_start_read, tool_files_cancel,
	    tool_files_abandon, NULL },
	{ "write", 1, tool_files_start_write, tool_files_cancel,
	    tool_files_abandon, NULL },
	{ "edit", 1, tool_files_start_edit, tool_files_cancel,
	    tool_files_abandon, NULL },
	{ "ls", 0, tool_files_start_ls, tool_files_cancel, tool_files_abandon,
	    NULL },
	{ "grep", 0, tool_files_start_grep, tool_files_cancel,
	    tool_files_abandon, NULL },
	{ "skill", 0, tool_skill_start, tool_skill_cancel, tool_skill_abandon,
	    NULL },
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

const struct tool_def *
tools_lookup(struct agent *a, const char *name)
{
	const struct tool_def *def = tools_find(name);

	return def ? def : mcp_tool_find(a, name);
}

int
tools_start(const struct tool_def *def, struct agent *a, const char *name,
    const char *call_id, json_object *input, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen)
{
	if (def->start_named)
		return def->start_named(a, name, call_id, input, done, arg, run,
		    err, errlen);
	return def->start(a, call_id, input, done, arg, run, err, errlen);
}

const char *
tools_names(void)
{
	return "bash, read, write, edit, ls, grep, skill";
}
