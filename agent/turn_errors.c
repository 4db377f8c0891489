/*
 * turn_errors.c: what the room is told when a turn cannot go on, for
 * turn.c: no model set up for the room's provider, a cap reached (steps,
 * tokens a day), and a failed model request described (what, a hint) with
 * whether it is worth retrying.
 *
 * Where the room can change something (a flag, a key, the model's URL),
 * the message says what; the server's own words are quoted only as
 * provider.h sanitised them.
 */
#include "turn_impl.h"

#include <errno.h>
#include <stdio.h>
#include <json-c/json.h>

#include "agent.h"
#include "caps.h"
#include "endpoint.h"
#include "http.h"
#include "keys.h"
#include "provider.h"
#include "room_events.h"

/* The room's provider has neither key nor URL: tell the room how to set
 * one up. */
void
turn_no_model(struct turn *t)
{
	char text[1200];
	int i = keys_index(t->a->provider);

	snprintf(text, sizeof(text), "No model is configured for this room's "
	    "provider (%s), so I cannot answer yet. To configure one, start "
	    "atriumd with %s in its environment, or with --api-key-file FILE "
	    "and --provider %s; or use a local OpenAI-compatible server with "
	    "--provider openai --model-url http://127.0.0.1:11434/v1 (Ollama) "
	    "and --model NAME.", t->a->provider, i >= 0 ? keys_env_name(i) :
	    "ANTHROPIC_API_KEY or OPENAI_API_KEY", t->a->provider);
	turn_finish_after(t, "end_turn", turn_say(t, text));
}

/* Before each model request: end the turn with a message to the room
 * when it has made its steps or the room has used its tokens for the
 * day.  1 when it ended. */
int
turn_capped(struct turn *t)
{
	struct agent *a = t->a;
	char text[256];

	if (t->step >= caps_max_steps(a)) {
		snprintf(text, sizeof(text), "I stopped after %d model requests "
		    "in this turn, the most this room allows. Ask me to "
		    "continue if there is more to do.", caps_max_steps(a));
		turn_finish_after(t, "max_steps", turn_say(t, text));
		return 1;
	}
	if (caps_day_spent(a)) {
		snprintf(text, sizeof(text), "This room has used its %lld "
		    "tokens for today (UTC), the most it allows; I can work "
		    "again after midnight UTC, or when the owner or the "
		    "operator raises the cap.", caps_max_tokens_per_day(a));
		turn_finish_after(t, "max_tokens_per_day", turn_say(t, text));
		return 1;
	}
	return 0;
}

/* What to tell people about a failed request, and whether to retry. */
int
turn_describe_failure(struct turn *t, const struct http_result *r,
    char *what, size_t whatlen, char *hint, size_t hintlen)
{
	const char *type, *msg = NULL, *url;
	struct endpoint e;
	char pm[600];

	url = endpoint_get(t->a, t->a->provider, &e) == 0 ? e.url : "?";
	hint[0] = '\0';
	if (r->status >= 200 && r->status < 300 && t->feed_err == -EPROTO) {
		type = provider_stream_error(t->stream, &msg);
		snprintf(what, whatlen, "model error (%s): %s",
		    type ? type : "error", msg ? msg : "");
		return provider_error_retryable(type);
	}
	if (r->status >= 200 && r->status < 300 && t->feed_err) {
		snprintf(what, whatlen, "the model server at %s answered in a "
		    "format that is not %s's", url, t->a->provider);
		snprintf(hint, hintlen, "check --provider and --model-url");
		return 0;
	}
	if (r->curl_code && r->status >= 200 && r->status < 300) {
		snprintf(what, whatlen, "the connection to the model server at "
		    "%s broke during the answer (%s)", url, r->error[0] ?
		    r->error : "no reason given");
		return provider_should_retry(0, NULL, 0);
	}
	if (r->status == 0 || (r->curl_code && r->status < 300)) {
		snprintf(what, whatlen, "could not reach the model server at "
		    "%s (%s)", url, r->error[0] ? r->error : "no answer");
		snprintf(hint, hintlen, "is the model server at %s running?",
		    url);
		return provider_should_retry(0, NULL, 0);
	}
	provider_error_message(t->kind, r->status, r->body, r->body_len, pm,
	    sizeof(pm));
	snprintf(what, whatlen, "model %s (%d): %s", r->status == 429 ?
	    "rate-limited" : r->status >= 500 ? "server error" : "request "
	    "refused", r->status, pm);
	if (r->status == 401 || r->status == 403)
		snprintf(hint, hintlen, "check %s's API key (%s in atriumd's "
		    "environment, or --api-key-file with --provider %s)",
		    t->a->provider, keys_env_name(keys_index(t->a->provider)),
		    t->a->provider);
	else if (r->status == 404)
		snprintf(hint, hintlen, "check --model-url (%s) and the model "
		    "name (%s)", url, t->a->model);
	else if (r->status == 400)
		snprintf(hint, hintlen, "the model server refused the request");
	return provider_should_retry(r->status, r->body, r->body_len);
}
