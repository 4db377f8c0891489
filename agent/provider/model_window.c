/*
 * model_window.c: what an OpenAI-compatible model server says of its
 * window (model_window.h).  One question at a time, held in the agent
 * (a->window_ask): GET BASE/models, and when that names no window, GET
 * /props at the server's root (BASE without its /v1).  Its answer is read
 * whole (at most MODEL_WINDOW_MAX_BODY), parsed, and kept for the
 * provider and model it was asked for, if they are still the room's.
 * Every failure is logged at debug level and changes nothing: the window
 * stays the configured or usual one, and a refusal still teaches it.
 */
#include "model_window.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "buf.h"
#include "compact_context.h"
#include "endpoint.h"
#include "http.h"
#include "jsonl.h"
#include "log.h"
#include "model_fit.h"

struct model_window {
	struct agent *a;
	char provider[16];
	char model[128];
	int props;			/* asking /props (else /models) */
	struct http_call *call;
	struct buf body;		/* the answer so far */
};

static void model_window_done(void *arg, const struct http_result *r);

long
model_window_from_models(json_object *answer, const char *model)
{
	json_object *data = NULL, *one = NULL;
	size_t n;

	if (!json_object_object_get_ex(answer, "data", &data) ||
	    !json_object_is_type(data, json_type_array))
		return 0;
	n = json_object_array_length(data);
	for (size_t i = 0; i < n && !one; i++) {
		const char *id = json_get_string(
		    json_object_array_get_idx(data, i), "id");

		if (id && strcmp(id, model) == 0)
			one = json_object_array_get_idx(data, i);
	}
	if (!one && n == 1)
		one = json_object_array_get_idx(data, 0);
	return one ? json_get_int(one, "max_model_len", 0) : 0;
}

long
model_window_from_props(json_object *answer)
{
	json_object *dgs = NULL;

	if (!json_object_object_get_ex(answer, "default_generation_settings",
	    &dgs))
		return 0;
	return json_get_int(dgs, "n_ctx", 0);
}

static void
model_window_free(struct model_window *w)
{
	if (!w)
		return;
	if (w->a->window_ask == w)
		w->a->window_ask = NULL;
	buf_free(&w->body);
	free(w);
}

static int
model_window_body(void *arg, const char *p, size_t n)
{
	struct model_window *w = arg;

	return buf_append(&w->body, p, n) < 0 ? -1 : 0;
}

/* The request of w's question: BASE/models, or ROOT/props.  0 or
 * -errno. */
static int
model_window_request(struct model_window *w, struct provider_http *req)
{
	struct endpoint e;
	char hdr[600];
	size_t len;
	int r;

	memset(req, 0, sizeof(*req));
	if ((r = endpoint_get(w->a, w->provider, &e)) < 0)
		return r;
	len = strlen(e.url);
	while (len > 0 && e.url[len - 1] == '/')
		len--;
	if (w->props && len >= 3 && strncmp(e.url + len - 3, "/v1", 3) == 0)
		len -= 3;
	if (asprintf(&req->url, "%.*s/%s", (int)len, e.url, w->props ?
	    "props" : "models") < 0) {
		req->url = NULL;
		return -ENOMEM;
	}
	if (!(req->headers = calloc(2, sizeof(char *))))
		return -ENOMEM;
	if (e.key && *e.key && !strpbrk(e.key, "\r\n")) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", e.key);
		if (!(req->headers[0] = strdup(hdr)))
			return -ENOMEM;
		explicit_bzero(hdr, sizeof(hdr));
	}
	return 0;
}

/* Send w's question.  0 or -errno. */
static int
model_window_send(struct model_window *w)
{
	struct provider_http req;
	struct http_cbs cbs = { w, model_window_body, model_window_done };
	int r = model_window_request(w, &req);

	buf_reset(&w->body);
	if (r == 0)
		r = http_get(w->a->http, &req, MODEL_WINDOW_TIMEOUT,
		    MODEL_WINDOW_TIMEOUT, &cbs, &w->call);
	provider_http_free(&req);
	return r;
}

/* The window w's answer names, 0 when none. */
static long
model_window_read(struct model_window *w, const struct http_result *r)
{
	json_object *o;
	long v;

	if (r->status < 200 || r->status >= 300 || r->curl_code)
		return 0;
	if (!(o = json_tokener_parse(w->body.data ? w->body.data : "")))
		return 0;
	v = w->props ? model_window_from_props(o) :
	    model_window_from_models(o, w->model);
	json_object_put(o);
	return v > 0 && v <= COMPACT_FIGURE_MAX ? v : 0;
}

static void
model_window_done(void *arg, const struct http_result *r)
{
	struct model_window *w = arg;
	struct agent *a = w->a;
	struct compact_refusal told = { 0, 0 };

	w->call = NULL;
	told.window = model_window_read(w, r);
	log_debug("model %s: GET %s: status %d, window %ld", w->model,
	    w->props ? "/props" : "/models", r->status, told.window);
	if (!told.window && !w->props) {
		w->props = 1;
		if (model_window_send(w) == 0)
			return;
	}
	if (told.window && strcmp(a->provider, w->provider) == 0 &&
	    strcmp(a->model, w->model) == 0)
		model_fit_learn(a, &told, 0);
	model_window_free(w);
}

void
model_window_ask(struct agent *a)
{
	struct model_window *w;
	struct model_fit *f = &a->fit;

	if (a->cfg.context_window > 0 || a->window_ask ||
	    strcmp(a->provider, "openai") != 0 || !endpoint_ready(a,
	    a->provider) || (f->asked && strcmp(f->provider, a->provider) == 0 &&
	    strcmp(f->model, a->model) == 0))
		return;
	if (strcmp(f->provider, a->provider) != 0 ||
	    strcmp(f->model, a->model) != 0) {
		memset(f, 0, sizeof(*f));
		snprintf(f->provider, sizeof(f->provider), "%s", a->provider);
		snprintf(f->model, sizeof(f->model), "%s", a->model);
	}
	f->asked = 1;
	if (!(w = calloc(1, sizeof(*w))))
		return;
	w->a = a;
	snprintf(w->provider, sizeof(w->provider), "%s", a->provider);
	snprintf(w->model, sizeof(w->model), "%s", a->model);
	buf_init(&w->body, MODEL_WINDOW_MAX_BODY);
	a->window_ask = w;
	if (model_window_send(w) < 0)
		model_window_free(w);
}

void
model_window_cancel(struct agent *a)
{
	struct model_window *w = a->window_ask;

	if (!w)
		return;
	http_cancel(w->call);
	model_window_free(w);
}
