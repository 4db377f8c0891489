/*
 * tool_bash.h: the agent's bash tool (tool_bash.c): one command in the
 * sandbox, output streamed to the room as tool_output, and the result for
 * the model: the combined output (64 KiB at most, head and tail kept) with
 * the exit status after it when not 0, and, when more was cut, where the
 * whole output was saved (output_save.h) or why it was not.
 */
#ifndef ATRIUM_AGENT_TOOL_BASH_H
#define ATRIUM_AGENT_TOOL_BASH_H

#include <stddef.h>
#include <json-c/json.h>

struct agent;
struct tool_run;

#define TOOL_BASH_HEAD	(32 * 1024)	/* output bytes kept from the start */
#define TOOL_BASH_TAIL	(32 * 1024)	/* and from the end */

/* done: status "ok" (exit 0) or "error", and the text for the model
 * (caller copies it).  Not called after tool_bash_cancel. */
typedef void tool_bash_done_fn(void *arg, const char *status,
    const char *output);

#define TOOL_BASH_CWD	"/workspace"	/* what the audit shows as cwd */

/* tools.h's audit hook: the command, or NULL with a message for the model
 * in err (bad input). */
const char *tool_bash_audit(struct agent *a, const char *name,
    json_object *input, char *buf, size_t buflen, char *err, size_t errlen);

/* Start the call, whose audit row (tools.h: "Auditing") is audit_id.  0
 * with *out, or -EINVAL with a message for the model in err (bad input),
 * or -errno (could not start; message in err). */
int tool_bash_start(struct agent *a, const char *call_id, json_object *input,
    long long audit_id, tool_bash_done_fn *done, void *arg,
    struct tool_run **out, char *err, size_t errlen);

/* Kill the command; its done callback will not come. */
void tool_bash_cancel(struct tool_run *r);

/* Kill, reap and free now (shutdown). */
void tool_bash_abandon(struct tool_run *r);

/* The result text for the model, from pieces (pure, unit-tested): output,
 * then "exit status N" when code != 0, or the signal, or the timeout. */
char *tool_bash_result(const char *output, int exited, int code,
    const char *signame, int timed_out, int timeout_s);

#endif
