/*
 * model_fit.c: the model's fit kept in room.db (model_fit.h).  agent_main.c
 * loads it at start; turn_summary.c (a refusal) and model_window.c (what
 * a server says of itself) learn through model_fit_learn, which writes it
 * at once: it is a fact about the server, not part of a turn, and a crash
 * right after a refusal must not lose it.
 *
 * Format: meta's key MODEL_FIT_KEY holds one JSON object,
 *   {"provider": P, "model": M, "window": N, "scale_pm": N}
 * window in the server's tokens (0: unknown), scale_pm the server's
 * tokens per 1000 of the agent's estimate (0: the estimate's own).  One
 * value for the room: learning of another provider or model replaces it,
 * and context.c's context_fit uses it only while the room's provider and
 * model are the ones it names, so a model change forgets it.  A stored
 * value is input like any other: one that does not parse, names no
 * provider or model, or holds a figure out of range is ignored.
 */
#include "model_fit.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "agent.h"
#include "compact_context.h"
#include "context.h"
#include "jsonl.h"
#include "log.h"
#include "room_db.h"

#define MODEL_FIT_MAX	1024	/* bytes of the stored value */

/* A figure of the stored object: 0 when absent or out of range. */
static long
model_fit_figure(json_object *o, const char *key, long max)
{
	json_object *v;
	long n;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return 0;
	n = (long)json_object_get_int64(v);
	return n > 0 && n <= max ? n : 0;
}

void
model_fit_load(struct agent *a)
{
	char text[MODEL_FIT_MAX];
	struct model_fit *f = &a->fit;
	const char *provider, *model;
	json_object *o;

	if (room_db_meta_get(a->db, MODEL_FIT_KEY, text, sizeof(text)) != 1)
		return;
	if (!(o = json_tokener_parse(text)) || !json_object_is_type(o,
	    json_type_object) || !(provider = json_get_string(o, "provider")) ||
	    !(model = json_get_string(o, "model")) || !*provider || !*model ||
	    strlen(provider) >= sizeof(f->provider) ||
	    strlen(model) >= sizeof(f->model)) {
		log_warn("room.db meta %s does not read: ignored", MODEL_FIT_KEY);
		json_object_put(o);
		return;
	}
	memset(f, 0, sizeof(*f));
	snprintf(f->provider, sizeof(f->provider), "%s", provider);
	snprintf(f->model, sizeof(f->model), "%s", model);
	f->window = model_fit_figure(o, "window", COMPACT_FIGURE_MAX);
	f->scale_pm = model_fit_figure(o, "scale_pm", COMPACT_FIGURE_MAX);
	if (f->scale_pm && f->scale_pm < 1000)
		f->scale_pm = 0;
	json_object_put(o);
	log_info("model %s: its server's window kept as %ld tokens", f->model,
	    f->window);
}

/* Write a->fit as meta's MODEL_FIT_KEY. */
static void
model_fit_store(struct agent *a)
{
	const struct model_fit *f = &a->fit;
	json_object *o = json_object_new_object();

	if (!o) {
		log_warn("model %s: its window not kept: out of memory",
		    f->model);
		return;
	}
	json_object_object_add(o, "provider",
	    json_object_new_string(f->provider));
	json_object_object_add(o, "model", json_object_new_string(f->model));
	json_object_object_add(o, "window", json_object_new_int64(f->window));
	json_object_object_add(o, "scale_pm",
	    json_object_new_int64(f->scale_pm));
	if (room_db_meta_set(a->db, MODEL_FIT_KEY,
	    json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0)
		log_warn("model %s: its window not kept in room.db", f->model);
	json_object_put(o);
}

void
model_fit_learn(struct agent *a, const struct compact_refusal *r,
    size_t sent_bytes)
{
	context_learn_refusal(a, r, sent_bytes);
	model_fit_store(a);
}
