/*
 * tools.h: the agent's tools by name (tools.c), the one table a turn runs
 * calls through (turn_tools.c).  bash runs a command in the sandbox (tool_bash.c); read,
 * write, edit, ls and grep work on the workspace tree through the loop's
 * io_uring with no process spawned (tool_files.c and its family); skill
 * returns one of the room's skills (tool_skill.c).  The room's MCP servers
 * add tools named mcp__SERVER__TOOL (mcp.h), found with tools_lookup.
 *
 * Auditing.  A tool that acts on the workspace has an audit hook: the
 * caller (turn_tools.c) writes the call's audit row with the call's journal
 * start, so that one commit makes both durable before anything runs (for
 * a tool that does not modify: before its result reaches anyone, turn.c's
 * "Held steps"), and hands the row's id to start.  From then on the tool
 * owns the row: it writes its end (room_db_audit_end) when the call ends,
 * in the open transaction that the caller commits with the call's end.  A
 * start that fails has run nothing: tools_start ends the row then (exit
 * code 126).
 */
#ifndef ATRIUM_AGENT_TOOLS_H
#define ATRIUM_AGENT_TOOLS_H

#include <stddef.h>
#include <json-c/json.h>

struct agent;

/* A call's end: status "ok" or "error" and the text for the model (the
 * callee keeps it; copy it).  Never called during start, nor after
 * cancel or abandon. */
typedef void tool_done_fn(void *arg, const char *status, const char *output);

#define TOOLS_AUDIT_BUF	1300	/* audit's buf: the most it makes */

struct tool_def {
	const char *name;		/* as the model calls it */
	int modifies;			/* may change the workspace */
	/* The audit text of a call of the tool called name (its command,
	 * or its name and path): a string of input's, or made in buf; it
	 * runs in audit_cwd.  NULL with a message for the model in err when
	 * start would refuse input (nothing is recorded then).  A NULL hook:
	 * the tool's calls have no audit row. */
	const char *(*audit)(struct agent *a, const char *name,
	    json_object *input, char *buf, size_t buflen, char *err,
	    size_t errlen);
	const char *audit_cwd;
	/* Start a call whose audit row (0: none) is committed: 0 with *run,
	 * or -errno with a message for the model in err (bad input, could
	 * not start). */
	int (*start)(struct agent *a, const char *call_id, json_object *input,
	    long long audit_id, tool_done_fn *done, void *arg, void **run,
	    char *err, size_t errlen);
	/* Stop a running call; its done will not come. */
	void (*cancel)(void *run);
	/* Drop it now, at shutdown. */
	void (*abandon)(void *run);
	/* Instead of start, for a family of tools behind one definition (the
	 * MCP servers' tools, mcp.h): the same, with the name called. */
	int (*start_named)(struct agent *a, const char *name,
	    const char *call_id, json_object *input, long long audit_id,
	    tool_done_fn *done, void *arg, void **run, char *err,
	    size_t errlen);
};

/* The tool called name, or NULL. */
const struct tool_def *tools_find(const char *name);

/* The tool called name: a built-in one or one of the room's MCP servers'
 * (mcp.h), or NULL. */
const struct tool_def *tools_lookup(struct agent *a, const char *name);

/* Start a call of def (found for name) as its start or start_named does;
 * when that fails, end its audit row (audit_id, 0: none): it never ran. */
int tools_start(const struct tool_def *def, struct agent *a, const char *name,
    const char *call_id, json_object *input, long long audit_id,
    tool_done_fn *done, void *arg, void **run, char *err, size_t errlen);

/* The tools' names, "bash, read, write, edit, ls, grep, skill". */
const char *tools_names(void);

#endif
