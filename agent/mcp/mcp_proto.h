/*
 * mcp_proto.h: the messages of the Model Context Protocol (revision
 * 2025-06-18) that the agent speaks as a client over stdio (mcp_proto.c).
 * Pure: JSON in, JSON or text out; no I/O.  Unit-tested.
 *
 * Framing (stdio transport): one JSON-RPC 2.0 message per line, UTF-8,
 * no embedded newline; the server's stderr is a log, not protocol.
 *
 *   client -> server                      server -> client
 *   initialize {protocolVersion,          result {protocolVersion,
 *     capabilities {}, clientInfo}          capabilities {tools}, serverInfo}
 *   notifications/initialized
 *   tools/list {cursor?}                  result {tools [{name, description,
 *                                           inputSchema}], nextCursor?}
 *   tools/call {name, arguments}          result {content [...], isError?,
 *                                           structuredContent?}
 *   notifications/cancelled {requestId,
 *     reason}  (a call that timed out)
 *   result {} to a ping request           ping (answered), other requests
 *   error -32601 to any other request       (refused), notifications
 *                                           (ignored)
 *
 * A tool's name as the model sees it is mcp__SERVER__TOOL, checked against
 * the providers' rule for tool names (1-64 of [A-Za-z0-9_-]); a tool whose
 * name does not fit, or whose inputSchema is not an object schema of at
 * most MCP_SCHEMA_MAX bytes, is left out with a note.
 */
#ifndef ATRIUM_AGENT_MCP_PROTO_H
#define ATRIUM_AGENT_MCP_PROTO_H

#include <stddef.h>
#include <json-c/json.h>

#define MCP_PROTOCOL_VERSION	"2025-06-18"
#define MCP_TOOL_NAME_MAX	64		/* the providers' limit */
#define MCP_SCHEMA_MAX		(16 * 1024)	/* bytes of one inputSchema */
#define MCP_DESC_MAX		2048		/* description bytes kept */
#define MCP_CURSOR_MAX		1024		/* bytes of a nextCursor */

enum mcp_msg {
	MCP_MSG_INVALID,	/* not a JSON-RPC 2.0 message */
	MCP_MSG_RESULT,		/* a response with result (an object) */
	MCP_MSG_ERROR,		/* a response with error */
	MCP_MSG_REQUEST,	/* a request from the server */
	MCP_MSG_NOTIFICATION	/* a notification from the server */
};

/* A request line's object (params taken; may be NULL). */
json_object *mcp_proto_request(long long id, const char *method,
    json_object *params);

/* A notification's object (params taken; may be NULL). */
json_object *mcp_proto_notification(const char *method, json_object *params);

/* initialize's params: our version, no client capabilities, clientInfo. */
json_object *mcp_proto_initialize_params(void);

/* The answer to the server's request m: an empty result to ping, error
 * -32601 otherwise.  NULL when m has no usable id. */
json_object *mcp_proto_answer(json_object *m);

/* What m is; *id is a response's numeric id (-1 when it has none). */
enum mcp_msg mcp_proto_classify(json_object *m, long long *id);

/* An error response's code and message as one line, into out. */
void mcp_proto_error_text(json_object *m, char *out, size_t outlen);

/* mcp__server__tool into out.  0, or -EINVAL when it breaks the rule. */
int mcp_proto_tool_name(const char *server, const char *tool, char *out,
    size_t outlen);

/* Add the tools of one tools/list result to tools (the model's list:
 * {name, description, input_schema}) and names (model's name -> the
 * server's), up to max tools in tools in all.  The tools left out, each
 * with its reason, are counted into *skipped, and the first reason is put
 * in note.  0, or -EINVAL when result has no tools array. */
int mcp_proto_add_tools(json_object *result, const char *server,
    json_object *tools, json_object *names, size_t max, int *skipped,
    char *note, size_t notelen);

/* The result's nextCursor: a string of 1-MCP_CURSOR_MAX bytes, or NULL. */
const char *mcp_proto_next_cursor(json_object *result);

/* The text for the model of a tools/call result: text blocks as they are,
 * other content as a short note, the head and tail kept as the bash tool
 * keeps them.  *is_error from isError.  A new string, or NULL when result
 * has no content array (nor structuredContent), or on ENOMEM. */
char *mcp_proto_call_text(json_object *result, int *is_error);

#endif
