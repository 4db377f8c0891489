/*
 * model_fit.h: what a model server taught of its model (agent.h: struct
 * model_fit: the window it named, its tokens per byte), kept in room.db
 * (model_fit.c) so that a restarted agent sizes its first request to it
 * rather than be refused again.  Only for the provider and model it was
 * learned of: another model starts from the configured or usual window.
 */
#ifndef ATRIUM_AGENT_MODEL_FIT_H
#define ATRIUM_AGENT_MODEL_FIT_H

#include <stddef.h>

struct agent;
struct compact_refusal;

#define MODEL_FIT_KEY	"model_fit"	/* its key in room.db's meta */

/* Take what room.db keeps into a->fit, at start.  Never fails: nothing
 * kept, or a value that does not read, leaves the fit empty (logged). */
void model_fit_load(struct agent *a);

/* Learn from a refusal or from what the server says of itself
 * (context.h: context_learn_refusal), then keep it in room.db.  A
 * failed write is logged: the fit still holds until the agent stops. */
void model_fit_learn(struct agent *a, const struct compact_refusal *r,
    size_t sent_bytes);

#endif
