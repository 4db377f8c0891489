/*
 * model_window.h: ask an OpenAI-compatible model server what window it
 * serves (model_window.c), so that the agent compacts to it before the
 * server has to refuse a request: vLLM's GET /v1/models (max_model_len of
 * the model), else llama.cpp's GET /props (default_generation_settings.
 * n_ctx).  Once per provider and model, in the background, and only when
 * the operator set no context-window; what it learns goes where a
 * refusal's would (model_fit.h: model_fit_learn).
 */
#ifndef ATRIUM_AGENT_MODEL_WINDOW_H
#define ATRIUM_AGENT_MODEL_WINDOW_H

#include <stddef.h>
#include <json-c/json.h>

struct agent;

#define MODEL_WINDOW_TIMEOUT	5		/* s for each answer */
#define MODEL_WINDOW_MAX_BODY	(1024 * 1024)	/* read of an answer */

/* Ask, unless it was asked already for the room's provider and model (or
 * there is nothing to ask).  Never fails: a server that does not say
 * leaves the window as it was. */
void model_window_ask(struct agent *a);

/* Abandon a question in flight (the agent is stopping). */
void model_window_cancel(struct agent *a);

/* The window a server's answer names: from /v1/models the max_model_len
 * of the entry whose id is model (or of the only entry), from /props
 * default_generation_settings.n_ctx; 0 when it names none.  Pure. */
long model_window_from_models(json_object *answer, const char *model);
long model_window_from_props(json_object *answer);

#endif
