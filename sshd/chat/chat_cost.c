/*
 * chat_cost.c: the chat's /cost and /caps (chat_int.h).  /cost asks the
 * room for a `usage` event and shows it as lines of plain integers (the
 * tokens of today and this month, by model and by person, the cost where
 * the operator priced the model, the caps); /caps shows the room's caps
 * on steps per turn and tokens per day, or lowers them (the owner).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "chat_int.h"
#include "jsonl.h"

/* Append to text at *used, never past len. */
static void
chat_cost_add(char *text, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
chat_cost_add(char *text, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(text + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < len ? *used + (size_t)n : len;
}

/* " ($0.0123)" when o has a cost, else nothing. */
static void
chat_cost_money(json_object *o, char *out, size_t len)
{
	json_object *c;

	out[0] = '\0';
	if (json_object_object_get_ex(o, "cost", &c) && c)
		snprintf(out, len, ", cost $%.4f", json_object_get_double(c));
}

/* One period's lines: the total, then per model and per person. */
static void
chat_cost_period(json_object *p, const char *what, char *text, size_t len,
    size_t *used)
{
	json_object *rows;
	char money[64];

	if (!p)
		return;
	chat_cost_money(p, money, sizeof(money));
	chat_cost_add(text, len, used, "\n%s: %lld tokens in, %lld out, %lld "
	    "requests%s", what, json_get_int(p, "input_tokens", 0),
	    json_get_int(p, "output_tokens", 0), json_get_int(p, "requests", 0),
	    money);
	if (json_object_object_get_ex(p, "models", &rows))
		for (size_t i = 0; i < json_object_array_length(rows); i++) {
			json_object *r = json_object_array_get_idx(rows, i);

			chat_cost_money(r, money, sizeof(money));
			chat_cost_add(text, len, used, "\n  model %s: %lld in, "
			    "%lld out%s", json_get_string(r, "model") ?: "?",
			    json_get_int(r, "input_tokens", 0),
			    json_get_int(r, "output_tokens", 0), money);
		}
	if (json_object_object_get_ex(p, "users", &rows))
		for (size_t i = 0; i < json_object_array_length(rows); i++) {
			json_object *r = json_object_array_get_idx(rows, i);

			chat_cost_add(text, len, used, "\n  by %s: %lld in, "
			    "%lld out", json_get_string(r, "user") ?: "?",
			    json_get_int(r, "input_tokens", 0),
			    json_get_int(r, "output_tokens", 0));
		}
}

void
chat_cost_text(json_object *o, char *text, size_t len)
{
	json_object *today = NULL, *month = NULL;
	long long cap = json_get_int(o, "max_tokens_per_day", 0);
	char what[64];
	size_t used = 0;

	chat_cost_add(text, len, &used, "tokens the model used in this room");
	json_object_object_get_ex(o, "today", &today);
	json_object_object_get_ex(o, "this_month", &month);
	if (!today) {	/* a room from before the breakdown */
		chat_cost_add(text, len, &used, " today (%s, UTC): %lld in, "
		    "%lld out", json_get_string(o, "day") ?: "?",
		    json_get_int(o, "input_tokens", 0),
		    json_get_int(o, "output_tokens", 0));
		return;
	}
	snprintf(what, sizeof(what), "today (%s, UTC)",
	    json_get_string(o, "day") ?: "?");
	chat_cost_period(today, what, text, len, &used);
	snprintf(what, sizeof(what), "this month (%s)",
	    json_get_string(o, "month") ?: "?");
	chat_cost_period(month, what, text, len, &used);
	if (json_object_object_get_ex(o, "imported", &today) && today)
		chat_cost_add(text, len, &used, "\nbefore the import (in the room "
		    "it came from, not counted here): %lld tokens in, %lld out, "
		    "%lld request%s", json_get_int(today, "input_tokens", 0),
		    json_get_int(today, "output_tokens", 0),
		    json_get_int(today, "requests", 0),
		    json_get_int(today, "requests", 0) == 1 ? "" : "s");
	if (cap > 0)
		chat_cost_add(text, len, &used, "\ncaps: %lld steps per turn, "
		    "%lld tokens per day", json_get_int(o, "max_steps", 0), cap);
	else
		chat_cost_add(text, len, &used, "\ncaps: %lld steps per turn, no "
		    "cap on tokens per day", json_get_int(o, "max_steps", 0));
}

int
chat_caps_command(const char *arg, json_object **out, char *reply,
    size_t len)
{
	static const struct chat_pair pairs[] = {
		{ "steps", "max_steps" }, { "tokens", "max_tokens_per_day" },
		{ NULL, NULL }
	};

	return chat_pairs_command("caps", pairs, arg, "usage: /caps shows the "
	    "room's caps; /caps steps N tokens N lowers the steps per turn "
	    "and tokens per day (owner; \"max\" for the operator's)", out,
	    reply, len);
}
