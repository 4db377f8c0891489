/*
 * context.c: what the next model request of a turn carries (context.h).
 * turn.c calls context_load before every step, then either context_build
 * (a normal step) or context_build_summary (a summary step, compact.h).
 *
 * Only the rows from the latest summary's cut on are loaded; the rows
 * before it stay in room.db for history and audit and reach the model only
 * through the summary.  Nothing here writes room.db.
 */
#include "context.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "compact.h"
#include "endpoint.h"
#include "log.h"
#include "mcp.h"
#include "prompt.h"
#include "room.h"

#define CONTEXT_REQUEST_OVERHEAD 256	/* bytes of a body besides its parts */

/* The system prompt: room, members, AGENTS.md (read by turn.c through
 * ws_file.h, never here), the skills of the turn (a->skills, read by
 * turn.c through ws_skills.h).  malloc'd or NULL. */
static char *
context_system(struct agent *a, const char *agents_md, size_t agents_len)
{
	json_object *members = room_members(a);
	char *s = prompt_system(a->room, members, agents_md, agents_len,
	    a->skills);

	json_object_put(members);
	return s;
}

/* Bytes sent besides the rows: system prompt, tools, the summary. */
static size_t
context_fixed_bytes(const struct context *c)
{
	size_t n = CONTEXT_REQUEST_OVERHEAD + strlen(c->system);

	n += strlen(json_object_to_json_string_ext(c->tools,
	    JSON_C_TO_STRING_PLAIN));
	if (c->last.summary)
		n += strlen(COMPACT_SUMMARY_HEAD) + strlen(c->last.summary);
	return n;
}

int
context_load(struct agent *a, long long turn, const char *agents_md,
    size_t agents_len, struct context *c, char *err, size_t errlen)
{
	int timeout = a->cfg.command_timeout > 0 ? a->cfg.command_timeout :
	    AGENT_DEFAULT_TOOL_TIMEOUT;
	int r;

	memset(c, 0, sizeof(*c));
	if (provider_kind_parse(a->provider, &c->kind) < 0) {
		snprintf(err, errlen, "the room's provider \"%s\" is unknown: "
		    "set it to anthropic or openai", a->provider);
		return -EINVAL;
	}
	r = room_db_compaction_get(a->db, 0, &c->last);
	if (r >= 0)
		r = room_db_compaction_get(a->db, 1, &c->pending);
	if (r >= 0)
		r = room_db_transcript_rows(a->db, c->last.cut, &c->rows, &c->n);
	c->system = context_system(a, agents_md, agents_len);
	c->tools = prompt_tools(timeout, a->skills &&
	    json_object_array_length(a->skills) > 0);
	if (c->tools)
		mcp_tools_add(a, c->tools);
	if (r >= 0 && (!c->system || !c->tools))
		r = -ENOMEM;
	if (r < 0) {
		snprintf(err, errlen, "the room's transcript could not be read "
		    "from room.db (%s)", strerror(-r));
		context_free(c);
		return r;
	}
	c->window = compact_window(c->kind, a->cfg.context_window);
	c->max_tokens = a->cfg.max_tokens > 0 ? a->cfg.max_tokens : 4096;
	c->threshold = compact_threshold(c->window, c->max_tokens);
	c->estimate = compact_estimate(c->rows, c->n, c->last.upto,
	    context_fixed_bytes(c));
	c->cut = compact_cut(c->rows, c->n, turn);
	return 0;
}

void
context_free(struct context *c)
{
	free(c->system);
	json_object_put(c->tools);
	free(c->last.summary);
	free(c->pending.summary);
	room_db_rows_free(c->rows, c->n);
	memset(c, 0, sizeof(*c));
}

int
context_wants_summary(const struct context *c)
{
	return c->pending.id != 0 || (c->estimate > c->threshold && c->cut > 0);
}

/* Build a request of messages (borrowed) with system and tools. */
static int
context_request(struct agent *a, const struct context *c,
    const char *system, json_object *messages, json_object *tools,
    struct provider_http *out)
{
	struct provider_request req = {
		.model = a->model,
		.system = system,
		.messages = messages,
		.tools = tools,
		.max_tokens = (int)c->max_tokens,
	};
	struct endpoint e;
	int r;

	if (!messages)
		return -ENOMEM;
	if ((r = endpoint_get(a, a->provider, &e)) < 0)
		return r;
	return provider_build(c->kind, e.url, e.key, &req, out);
}

int
context_build(struct agent *a, const struct context *c,
    struct provider_http *out)
{
	json_object *msgs = compact_messages(c->last.summary, c->rows, c->n);
	int r = context_request(a, c, c->system, msgs, c->tools, out);

	json_object_put(msgs);
	return r;
}

int
context_build_summary(struct agent *a, const struct context *c,
    int shrink, struct provider_http *out)
{
	const char *system = compact_summary_system();
	long room = (c->threshold * COMPACT_BYTES_PER_TOKEN) >> shrink;
	size_t budget = room > (long)strlen(system) ?
	    (size_t)room - strlen(system) : 0;
	json_object *msgs = compact_summary_request(c->last.summary, c->rows,
	    c->cut, budget);
	int r = context_request(a, c, system, msgs, NULL, out);

	json_object_put(msgs);
	return r;
}
