/*
 * tools.c: the table of tools (tools.h).  Order matters only for
 * tools_names; the schemas the model sees are in prompt.c and must name
 * the same tools.
 */
#include "tools.h"

#include <string.h>

#include "agent.h"
#include "log.h"
#include "mcp.h"
#include "room_db.h"
#include "tool_bash.h"
#include "tool_files.h"
#include "tool_skill.h"

static int
tools_bash_start(struct agent *a, const char *call_id, json_object *input,
    long long audit_id, tool_done_fn *done, void *arg, void **run,
    char *err, size_t errlen)
{
	struct tool_run *r = NULL;
	int rc = tool_bash_start(a, call_id, input, audit_id, done, arg, &r,
	    err, errlen);

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

#define TOOLS_FILE(tool, mod) { .name = #tool, .modifies = (mod), \
	.audit = tool_files_audit, .audit_cwd = TOOL_FILES_CWD, \
	.start = tool_files_start_##tool, .cancel = tool_files_cancel, \
	.abandon = tool_files_abandon }

static const struct tool_def tools_table[] = {
	{ .name = "bash", .modifies = 1, .audit = tool_bash_audit,
	    .audit_cwd = TOOL_BASH_CWD, .start = tools_bash_start,
	    .cancel = tools_bash_cancel, .abandon = tools_bash_abandon },
	TOOLS_FILE(read, 0),
	TOOLS_FILE(write, 1),
	TOOLS_FILE(edit, 1),
	TOOLS_FILE(ls, 0),
	TOOLS_FILE(grep, 0),
	{ .name = "skill", .start = tool_skill_start,
	    .cancel = tool_skill_cancel, .abandon = tool_skill_abandon },
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
    const char *call_id, json_object *input, long long audit_id,
    tool_done_fn *done, void *arg, void **run, char *err, size_t errlen)
{
	int r, rc;

	if (def->start_named)
		r = def->start_named(a, name, call_id, input, audit_id, done,
		    arg, run, err, errlen);
	else
		r = def->start(a, call_id, input, audit_id, done, arg, run,
		    err, errlen);
	/* Not run: 126, as a shell says of a command it could not execute.
	 * A failure here leaves the row without an end, which says so. */
	if (r < 0 && audit_id > 0 &&
	    (rc = room_db_audit_end(a->db, audit_id, 126, NULL)) < 0)
		log_error("%s: the end of audit row %lld not recorded: %s",
		    name, audit_id, room_db_strerror(rc));
	return r;
}

const char *
tools_names(void)
{
	return "bash, read, write, edit, ls, grep, skill";
}
