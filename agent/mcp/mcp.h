/*
 * mcp.h: the room's MCP servers (mcp.c), the tools they offer the model
 * beside the built-in ones, and the calls to them.
 *
 * Each server named by the room's config (mcp_config.h) runs as one
 * long-lived command in the room's sandbox (proc.h: the room's uid,
 * /workspace as its directory, no network, the room's cgroup limits), and
 * speaks MCP over its stdin and stdout (mcp_proto.h).  Servers start
 * before the first model request of a turn and stay up between turns; one
 * that died (or never started) is started again at the next turn's first
 * request.  Nothing here blocks the loop: every read, write and wait is a
 * loop event or timer.
 *
 * The tools go through tools.h like the built-in ones: the same approval
 * policy, the same journal and the same interrupted-never-rerun promise.
 */
#ifndef ATRIUM_AGENT_MCP_H
#define ATRIUM_AGENT_MCP_H

#include <json-c/json.h>

struct agent;
struct tool_def;

#define MCP_MAX_LINE		(1024 * 1024)	/* bytes of one message */
#define MCP_MAX_TOOLS		64		/* tools of one server */
#define MCP_MAX_PAGES		16		/* tools/list pages read */
#define MCP_START_TIMEOUT_S	15		/* initialize and list */

typedef void mcp_ready_fn(void *arg);

/* Take the room's server list (a checked array, mcp_config.h; borrowed):
 * servers that changed or went are stopped, new ones start at the next
 * mcp_prepare.  0 or -ENOMEM. */
int mcp_configure(struct agent *a, json_object *servers);

/* Before a model request of turn: start the servers that are not running
 * (a dead one once per turn).  0 when every server is ready or dead now;
 * 1 when ready(arg) will be called once they are (never from inside this
 * call). */
int mcp_prepare(struct agent *a, long long turn, mcp_ready_fn *ready,
    void *arg);

/* Forget the waiter arg of mcp_prepare (its turn ended). */
void mcp_unwait(struct agent *a, void *arg);

/* Append the ready servers' tools to tools (the model's list). */
void mcp_tools_add(struct agent *a, json_object *tools);

/* The tool definition for name when it names a tool of a ready server
 * (mcp__SERVER__TOOL), else NULL. */
const struct tool_def *mcp_tool_find(struct agent *a, const char *name);

/* When name is an MCP tool's name (mcp__...) that mcp_tool_find does not
 * find: 1, with the reason for the model in out (no such server, not
 * running and why, no such tool and which there are).  Else 0. */
int mcp_tool_missing(struct agent *a, const char *name, char *out,
    size_t outlen);

/* Stop every server now (shutdown). */
void mcp_free(struct agent *a);

#endif
