/*
 * context.h: what the next model request of a turn carries (context.c): the
 * system prompt, the tools, the latest summary and the transcript rows after
 * its cut, the token estimate, and whether a summary step must come first.
 * Loaded from room.db before every step, so a resumed turn decides exactly
 * as the crashed one did.
 */
#ifndef ATRIUM_AGENT_CONTEXT_H
#define ATRIUM_AGENT_CONTEXT_H

#include <stddef.h>
#include <json-c/json.h>

#include "provider.h"
#include "room_db.h"

struct agent;

struct context {
	enum provider_kind kind;
	char *system;			/* the system prompt */
	json_object *tools;		/* the tools offered */
	struct room_db_compaction last;	/* the latest summary (id 0: none) */
	struct room_db_compaction pending;	/* a summary step asked for */
	struct room_db_msg *rows;	/* the transcript from last.cut on */
	size_t n;
	long window;			/* the model's window, tokens */
	long max_tokens;		/* of an answer */
	long threshold;			/* compact_threshold */
	long estimate;			/* the next request's input tokens */
	size_t cut;			/* index in rows of a new cut; 0 none */
};

/* Load the context of turn's next step, with the workspace's AGENTS.md
 * (NULL when there is none or it could not be read).  0, or -errno with
 * what went wrong for the room in err. */
int context_load(struct agent *a, long long turn, const char *agents_md,
    size_t agents_len, struct context *c, char *err, size_t errlen);
void context_free(struct context *c);

/* Must a summary step come before the next request?  Yes when one was
 * asked for, or when the estimate passes the threshold and there is
 * something to summarise. */
int context_wants_summary(const struct context *c);

/* The step's request (summary and rows, system, tools).  0 or -errno. */
int context_build(struct agent *a, const struct context *c,
    struct provider_http *out);

/* The summary request: rows before the cut (and the previous summary),
 * no tools, in at most the threshold's bytes halved shrink times (after
 * the model refused a bigger one).  0 or -errno. */
int context_build_summary(struct agent *a, const struct context *c,
    int shrink, struct provider_http *out);

#endif
