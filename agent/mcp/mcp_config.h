/*
 * mcp_config.h: the room's MCP servers as its config names them
 * (mcp_config.c).  Pure; unit-tested.
 *
 * A `config` line's "mcp" is a JSON array of at most MCP_MAX_SERVERS
 * objects, each
 *
 *   name     1-32 of [A-Za-z0-9_-], no "__" (it separates the parts of
 *            a tool's name, mcp__NAME__TOOL), unique in the list
 *   command  the program, run in the room's sandbox (a string, 1-4096
 *            bytes, no NUL)
 *   args     optional array of at most MCP_MAX_ARGS strings (each up to
 *            4096 bytes, no NUL)
 *   env      optional object of at most MCP_MAX_ENV NAME: "value" pairs,
 *            NAME a shell variable name up to 128 bytes, the value up to
 *            4096 bytes with no NUL and never one of the operator's API
 *            keys (they are the operator's alone:
 *            ARCHITECTURE.md, Trust boundaries)
 *
 * and nothing else.  The checked copy keeps exactly these fields, so what
 * room.db stores and mcp.c starts is what was checked.
 */
#ifndef ATRIUM_AGENT_MCP_CONFIG_H
#define ATRIUM_AGENT_MCP_CONFIG_H

#include <stddef.h>
#include <json-c/json.h>

struct keys;

#define MCP_MAX_SERVERS	8	/* servers a room may name */
#define MCP_MAX_ARGS	64	/* arguments of one server */
#define MCP_MAX_ENV	64	/* environment entries of one server */
#define MCP_NAME_MAX	32	/* bytes of a server's name */
#define MCP_STR_MAX	4096	/* bytes of a command, argument or value */
#define MCP_CONFIG_MAX	(64 * 1024)	/* bytes of the whole list as JSON */

/* The checked copy of v (a new array), or NULL with the reason in why.
 * keys may be NULL (no key to refuse). */
json_object *mcp_config_parse(json_object *v, const struct keys *keys,
    char *why, size_t whylen);

/* 1 when name is a valid server name (see the head). */
int mcp_config_name_valid(const char *name);

#endif
