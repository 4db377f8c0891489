/*
 * context.c: what the next model request of a turn carries (context.h).
 * turn.c calls context_load before every step, then either context_build
 * (a normal step) or context_build_summary (a summary step, compact_context.h).
 *
 * Only the rows from the latest summary's cut on are loaded; the rows
 * before it stay in room.db for history and audit and reach the model only
 * through the summary.  They are kept between steps in the turn's
 * context_rows (its rule is in context.h): a step reads only the rows
 * added since the last.  Nothing here writes room.db.
 *
 * The window and the estimate are the configured (or usual) ones until a
 * server's refusal says better (context_learn_refusal): then the window it
 * named and its tokenizer's count per byte, kept in struct agent's fit for
 * the room's provider and model.
 */
#include "context.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "compact_context.h"
#include "endpoint.h"
#include "log.h"
#include "mcp.h"
#include "prompt.h"
#include "room_events.h"

#define CONTEXT_REQUEST_OVERHEAD 256	/* bytes of a body besides its parts */

/* The system prompt: room, members, AGENTS.md (read by turn_context.c
 * through ws_file.h, never here), the skills of the turn (a->skills, read
 * by turn_context.c through ws_skills.h).  malloc'd or NULL. */
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

	n += c->tools_bytes;
	if (c->last.summary)
		n += strlen(COMPACT_SUMMARY_HEAD) + strlen(c->last.summary);
	return n;
}

/* Forget the rows kept (they are read whole next time). */
static void
context_rows_clear(struct context_rows *k)
{
	room_db_rows_free(k->rows, k->n);
	json_object_put(k->head);
	provider_cache_free(k->wire);
	json_object_put(k->builtin);
	json_object_put(k->tools);
	memset(k, 0, sizeof(*k));
}

void
context_rows_free(struct context_rows *k)
{
	if (k)
		context_rows_clear(k);
}

/* Append add[0..n) to k, taking their messages; frees add.  0 or
 * -ENOMEM / -EFBIG (add freed, k unchanged). */
static int
context_rows_append(struct context_rows *k, struct room_db_msg *add,
    size_t n)
{
	struct room_db_msg *grown;
	size_t cap = k->cap ? k->cap : 64;

	if (k->n + n > ROOM_DB_MAX_ROWS) {
		log_error("transcript: more than %d rows to keep",
		    ROOM_DB_MAX_ROWS);
		room_db_rows_free(add, n);
		return -EFBIG;
	}
	while (cap < k->n + n)
		cap *= 2;
	if (cap != k->cap) {
		grown = realloc(k->rows, cap * sizeof(*grown));
		if (!grown) {
			room_db_rows_free(add, n);
			return -ENOMEM;
		}
		k->rows = grown;
		k->cap = cap;
	}
	if (n)
		memcpy(k->rows + k->n, add, n * sizeof(*add));
	k->n += n;
	free(add);
	return 0;
}

/* Bring k up to room.db's transcript from cut on, after the summary (may
 * be NULL): only the rows added since when the copy is still true
 * (context.h), else all of them.  0 or -errno (k then empty). */
static int
context_rows_update(struct room_db *db, struct context_rows *k,
    long long cut, const char *summary)
{
	long long epoch = room_db_transcript_epoch(db), from = cut;
	struct room_db_msg *add;
	size_t n;
	int r;

	if (k->valid && k->epoch == epoch && k->cut == cut && k->n > 0)
		from = k->rows[k->n - 1].rowid + 1;
	else
		context_rows_clear(k);
	if (summary && !k->head && !(k->head = compact_summary_message(
	    summary)))
		return -ENOMEM;
	r = room_db_transcript_rows(db, from, &add, &n);
	if (r >= 0) {
		log_debug("transcript: %zu row(s) read, %zu kept", n, k->n);
		r = context_rows_append(k, add, n);
	}
	if (r < 0) {
		context_rows_clear(k);
		return r;
	}
	k->cut = cut;
	k->epoch = epoch;
	k->valid = 1;
	return 0;
}

/* 1 when list is builtin's tools, then mcp's, the very objects. */
static int
context_tools_same(json_object *list, json_object *builtin, json_object *mcp)
{
	size_t nb = json_object_array_length(builtin);
	size_t nm = json_object_array_length(mcp);

	if (json_object_array_length(list) != nb + nm)
		return 0;
	for (size_t i = 0; i < nb; i++)
		if (json_object_array_get_idx(list, i) !=
		    json_object_array_get_idx(builtin, i))
			return 0;
	for (size_t i = 0; i < nm; i++)
		if (json_object_array_get_idx(list, nb + i) !=
		    json_object_array_get_idx(mcp, i))
			return 0;
	return 1;
}

/* The tools to offer now: the built-in ones (for this bash timeout, the
 * skill tool when the turn has skills), then the MCP servers' ready ones.
 * k keeps the list and gives the same list object while it holds the very
 * same tools, so that neither it nor its wire text (provider.h) is made
 * again each step: building and printing it was a visible part of a
 * step's own time.  A reference, or NULL on ENOMEM. */
static json_object *
context_tools(struct agent *a, struct context_rows *k, int timeout,
    int with_skill)
{
	json_object *mcp = json_object_new_array(), *list;
	size_t n;

	if (!mcp)
		return NULL;
	mcp_tools_add(a, mcp);
	if (!k->builtin || k->builtin_timeout != timeout ||
	    k->builtin_skill != with_skill) {
		json_object_put(k->builtin);
		k->builtin = prompt_tools(timeout, with_skill);
		k->builtin_timeout = timeout;
		k->builtin_skill = with_skill;
	}
	if (k->builtin && (!k->tools ||
	    !context_tools_same(k->tools, k->builtin, mcp))) {
		list = json_object_new_array();
		n = json_object_array_length(k->builtin);
		for (size_t i = 0; list && i < n; i++)
			json_object_array_add(list, json_object_get(
			    json_object_array_get_idx(k->builtin, i)));
		for (size_t i = 0; list && i < json_object_array_length(mcp);
		    i++)
			json_object_array_add(list, json_object_get(
			    json_object_array_get_idx(mcp, i)));
		json_object_put(k->tools);
		k->tools = list;
		k->tools_bytes = list ? strlen(json_object_to_json_string_ext(
		    list, JSON_C_TO_STRING_PLAIN)) : 0;
	}
	json_object_put(mcp);
	return k->builtin ? json_object_get(k->tools) : NULL;
}

/* a / b rounded up, for a >= 0, b > 0. */
static long
context_div_up(long a, long b)
{
	return a / b + (a % b != 0);
}

/* The room's provider and model's fit, or NULL when nothing was learned
 * of them. */
static const struct model_fit *
context_fit(const struct agent *a)
{
	const struct model_fit *f = &a->fit;

	if (strcmp(f->provider, a->provider) != 0 ||
	    strcmp(f->model, a->model) != 0)
		return NULL;
	return f;
}

void
context_learn_refusal(struct agent *a, const struct compact_refusal *r,
    size_t sent_bytes)
{
	struct model_fit *f = &a->fit;
	long est;

	if (!context_fit(a)) {
		memset(f, 0, sizeof(*f));
		snprintf(f->provider, sizeof(f->provider), "%s", a->provider);
		snprintf(f->model, sizeof(f->model), "%s", a->model);
	}
	if (r->window > 0)
		f->window = r->window;
	/* The server's count against the request's bytes, as the estimate
	 * counts them: how many more tokens its tokenizer makes of them. */
	est = compact_tokens_of_bytes(sent_bytes);
	if (r->prompt > 0 && est > 0 && r->prompt > est &&
	    r->prompt < LONG_MAX / 1000)
		f->scale_pm = context_div_up(r->prompt * 1000, est);
	log_info("model %s: its server's window taken as %ld tokens, its "
	    "count as %ld per 1000 of the estimate", a->model, f->window,
	    f->scale_pm ? f->scale_pm : 1000);
}

/* The window, the estimate, the threshold and the answer's tokens of c,
 * with what the model's server told (context_fit). */
static void
context_size(struct agent *a, struct context *c)
{
	const struct model_fit *f = context_fit(a);

	c->window = compact_window(c->kind, a->cfg.context_window);
	if (f && f->window > 0 && f->window <= c->window) {
		c->window = f->window;
		c->window_told = 1;
	}
	c->scale_pm = f && f->scale_pm > 1000 ? f->scale_pm : 1000;
	c->max_tokens_cfg = a->cfg.max_tokens > 0 ? a->cfg.max_tokens : 4096;
	c->threshold = compact_threshold(c->window, c->max_tokens_cfg <
	    c->window / 4 ? c->max_tokens_cfg : c->window / 4);
	c->estimate = compact_estimate(c->rows, c->n, c->last.upto,
	    context_fixed_bytes(c), c->scale_pm);
	c->max_tokens = compact_answer_tokens(c->window, c->estimate,
	    c->max_tokens_cfg);
}

int
context_load(struct agent *a, long long turn, struct context_rows *keep,
    const char *agents_md, size_t agents_len, struct context *c, char *err,
    size_t errlen)
{
	int timeout = a->cfg.command_timeout > 0 ? a->cfg.command_timeout :
	    AGENT_DEFAULT_TOOL_TIMEOUT;
	int r, begun;

	memset(c, 0, sizeof(*c));
	if (provider_kind_parse(a->provider, &c->kind) < 0) {
		snprintf(err, errlen, "the room's provider \"%s\" is unknown: "
		    "set it to anthropic or openai", a->provider);
		return -EINVAL;
	}
	/* One snapshot (and one WAL lock) for the compactions and the rows. */
	begun = room_db_read_begin(a->db);
	r = begun < 0 ? begun : room_db_compaction_get(a->db, 0, &c->last);
	if (r >= 0)
		r = room_db_compaction_get(a->db, 1, &c->pending);
	if (r >= 0)
		r = context_rows_update(a->db, keep, c->last.cut,
		    c->last.summary);
	room_db_read_end(a->db, begun);
	if (r >= 0) {
		c->rows = keep->rows;
		c->n = keep->n;
		c->head = keep->head;
		c->keep = keep;
	}
	c->system = context_system(a, agents_md, agents_len);
	c->tools = context_tools(a, keep, timeout, a->skills &&
	    json_object_array_length(a->skills) > 0);
	c->tools_bytes = keep->tools_bytes;
	if (r >= 0 && (!c->system || !c->tools))
		r = -ENOMEM;
	if (r < 0) {
		snprintf(err, errlen, "the room's transcript could not be read "
		    "from room.db (%s)", strerror(-r));
		context_free(c);
		return r;
	}
	context_size(a, c);
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
	memset(c, 0, sizeof(*c));
}

int
context_wants_summary(const struct context *c)
{
	return c->pending.id != 0 || (c->estimate > c->threshold && c->cut > 0);
}

/* Build a request of messages (borrowed) with system and tools, keeping
 * the wire form of the settled messages in cache (NULL: not kept). */
static int
context_request(struct agent *a, const struct context *c,
    const char *system, json_object *messages, json_object *tools,
    long max_tokens, struct provider_cache *cache, struct provider_http *out)
{
	struct provider_request req = {
		.model = a->model,
		.system = system,
		.messages = messages,
		.tools = tools,
		.max_tokens = max_tokens > INT_MAX ? INT_MAX : (int)max_tokens,
		.cache = cache,
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
	json_object *msgs = compact_messages(c->head, c->rows, c->n);
	struct context_rows *k = c->keep;
	int r;

	/* Without a cache (out of memory) the request is built whole. */
	if (k && !k->wire)
		k->wire = provider_cache_new();
	r = context_request(a, c, c->system, msgs, c->tools, c->max_tokens,
	    k ? k->wire : NULL, out);

	json_object_put(msgs);
	return r;
}

int
context_build_summary(struct agent *a, const struct context *c,
    int shrink, struct provider_http *out, long *estimate)
{
	const char *system = compact_summary_system();
	long room = (c->threshold * COMPACT_BYTES_PER_TOKEN * 1000 /
	    c->scale_pm) >> shrink;
	size_t budget = room > (long)strlen(system) ?
	    (size_t)room - strlen(system) : 0;
	json_object *msgs = compact_summary_request(c->last.summary, c->rows,
	    c->cut, budget);
	long est = compact_estimate(NULL, 0, 0, CONTEXT_REQUEST_OVERHEAD +
	    strlen(system) + (budget > COMPACT_MIN_BUDGET ? budget :
	    COMPACT_MIN_BUDGET), c->scale_pm);
	int r = context_request(a, c, system, msgs, NULL,
	    compact_answer_tokens(c->window, est, c->max_tokens_cfg), NULL,
	    out);

	*estimate = est;
	json_object_put(msgs);
	return r;
}
