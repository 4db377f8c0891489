/*
 * context.h: what the next model request of a turn carries (context.c): the
 * system prompt, the tools, the latest summary and the transcript rows after
 * its cut, the token estimate, and whether a summary step must come first.
 * Loaded from room.db before every step, so a resumed turn decides exactly
 * as the crashed one did (but for what a server's refusal taught of its
 * window, which lives in memory: agent.h's struct model_fit); the
 * transcript rows themselves are kept between
 * a turn's steps (struct context_rows), and only the rows added since are
 * read and parsed; so is their wire form (provider.h: struct
 * provider_cache), and only the messages added since are serialised.
 */
#ifndef ATRIUM_AGENT_CONTEXT_H
#define ATRIUM_AGENT_CONTEXT_H

#include <stddef.h>
#include <json-c/json.h>

#include "compact_context.h"
#include "provider.h"
#include "room_db.h"

struct agent;

/* The transcript rows from the latest summary's cut on, kept in memory
 * between the steps of one turn (parsing the whole transcript again was
 * the biggest part of a step's own time).  Rule: the copy is used only
 * while room_db_transcript_epoch and the cut are what they were when it
 * was read; a replaced or deleted row, a summary asked for, made or
 * dropped, or a rolled-back transaction (a failed checkpoint) changes the
 * epoch, and the rows are then read whole again.  Only rows added since
 * are read otherwise.  The turn owns it, so a new turn (and a resume after
 * a restart or a failed checkpoint, which starts a new turn object) reads
 * room.db whole.  Zeroed: empty. */
struct context_rows {
	struct room_db_msg *rows;	/* oldest first; each owns its msg */
	size_t n, cap;
	json_object *head;		/* the summary's message before them,
					 * or NULL: made once with them, so
					 * that wire sees the same object */
	struct provider_cache *wire;	/* their wire form (provider.h), made
					 * by the first request that uses
					 * them; NULL until then */
	long long cut;			/* the summary's cut they start at */
	long long epoch;		/* room_db_transcript_epoch when read */
	int valid;			/* rows, cut and epoch are set */
	/* The tools offered (context.c: context_tools), kept with them. */
	json_object *builtin;		/* prompt_tools(builtin_timeout,
					 * builtin_skill), or NULL */
	int builtin_timeout, builtin_skill;
	json_object *tools;		/* builtin's, then the MCP servers'
					 * tools; never changed in place */
	size_t tools_bytes;		/* its compact JSON's length */
};
void context_rows_free(struct context_rows *k);

struct context {
	enum provider_kind kind;
	char *system;			/* the system prompt */
	json_object *tools;		/* the tools offered (a reference) */
	size_t tools_bytes;		/* their compact JSON's length */
	struct room_db_compaction last;	/* the latest summary (id 0: none) */
	struct room_db_compaction pending;	/* a summary step asked for */
	const struct room_db_msg *rows;	/* the transcript from last.cut on
					 * (borrowed from the turn's
					 * context_rows, as are head and
					 * keep) */
	json_object *head;		/* the summary's message, or NULL */
	struct context_rows *keep;	/* for its wire cache */
	size_t n;
	long window;			/* the model's window, tokens: the
					 * configured or usual one, or the
					 * smaller one its server named */
	int window_told;		/* window is the server's */
	long max_tokens_cfg;		/* of an answer, as configured */
	long max_tokens;		/* of this step's answer: what the
					 * window leaves (compact_context.h:
					 * compact_answer_tokens) */
	long threshold;			/* compact_threshold */
	long estimate;			/* the next request's input tokens,
					 * the bytes not counted by the
					 * provider scaled to its tokenizer
					 * when a refusal told it (struct
					 * model_fit) */
	long scale_pm;			/* that scale, 1000: none */
	size_t cut;			/* index in rows of a new cut; 0 none */
};

/* Load the context of turn's next step, with the workspace's AGENTS.md
 * (NULL when there is none or it could not be read), its rows brought up
 * to date in keep (which must outlive c).  0, or -errno with what went
 * wrong for the room in err. */
int context_load(struct agent *a, long long turn, struct context_rows *keep,
    const char *agents_md, size_t agents_len, struct context *c, char *err,
    size_t errlen);
void context_free(struct context *c);

/* Must a summary step come before the next request?  Yes when one was
 * asked for, or when the estimate passes the threshold and there is
 * something to summarise. */
int context_wants_summary(const struct context *c);

/* A refusal as too long (compact_context.h: struct compact_refusal) of a
 * request whose body was sent_bytes long: keep the window it names, and how
 * many more tokens than the estimate's the server counts in those bytes, for
 * the room's provider and model (agent.h: struct model_fit). */
void context_learn_refusal(struct agent *a,
    const struct compact_refusal *r, size_t sent_bytes);

/* The step's request (summary and rows, system, tools).  0 or -errno. */
int context_build(struct agent *a, const struct context *c,
    struct provider_http *out);

/* The summary request: rows before the cut (and the previous summary),
 * no tools, in at most the threshold's bytes halved shrink times (after
 * the model refused a bigger one); its estimate in *estimate.  0 or
 * -errno. */
int context_build_summary(struct agent *a, const struct context *c,
    int shrink, struct provider_http *out, long *estimate);

#endif
