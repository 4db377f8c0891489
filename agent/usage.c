/*
 * usage.c: the `usage` event (usage.h), built from room.db's usage and
 * usage_users tables and the operator's price table.  Called by requests.c
 * for each `usage` request.
 *
 * The event (input_tokens, output_tokens and day are today's, as before):
 *   {"type":"usage","day":"2026-12-01","input_tokens":N,"output_tokens":N,
 *    "today":{"input_tokens","output_tokens","requests","cost"?,
 *             "models":[{"model","input_tokens","output_tokens",
 *                        "requests","cost"?}],
 *             "users":[{"user","input_tokens","output_tokens","requests"}]},
 *    "month":"2026-12","this_month":{... the same, for the month},
 *    "max_steps":N,"max_tokens_per_day":N|null,
 *    "imported"?:{"input_tokens","output_tokens","requests"}}
 * imported is the usage an imported room's archive brought from the room
 * it came from (room_import.c: meta imported_usage), kept apart from this
 * room's own, which the periods count.
 * cost (US dollars) appears only where every model counted has a price;
 * tokens are plain integers.
 */
#include "usage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "caps.h"
#include "jsonl.h"
#include "prices.h"
#include "room_events.h"
#include "room_db.h"
#include "util.h"

/* What one period's rows add up to, as they are collected. */
struct usage_period {
	const char *prices;
	json_object *rows;		/* models or users */
	long long in, out, requests;
	double cost;
	int unpriced;			/* a model without a price was seen */
};

static int
usage_model_row(const char *model, const char *unused, long long in,
    long long out, long long requests, void *arg)
{
	struct usage_period *p = arg;
	json_object *row = json_object_new_object();
	double pin, pout;

	(void)unused;
	json_object_object_add(row, "model", json_object_new_string(model));
	json_object_object_add(row, "input_tokens", json_object_new_int64(in));
	json_object_object_add(row, "output_tokens",
	    json_object_new_int64(out));
	json_object_object_add(row, "requests",
	    json_object_new_int64(requests));
	if (prices_lookup(p->prices, model, &pin, &pout)) {
		double c = (in * pin + out * pout) / 1e6;

		json_object_object_add(row, "cost", json_object_new_double(c));
		p->cost += c;
	} else {
		p->unpriced = 1;
	}
	json_object_array_add(p->rows, row);
	p->in += in;
	p->out += out;
	p->requests += requests;
	return 0;
}

/* A person's row: the rows come per user and model, summed per user. */
static int
usage_user_row(const char *user, const char *model, long long in,
    long long out, long long requests, void *arg)
{
	struct usage_period *p = arg;
	size_t n = json_object_array_length(p->rows);
	json_object *row = n ? json_object_array_get_idx(p->rows, n - 1) : NULL;

	(void)model;
	if (!row || strcmp(json_get_string(row, "user") ?: "", user) != 0) {
		row = json_object_new_object();
		json_object_object_add(row, "user",
		    json_object_new_string(user));
		json_object_array_add(p->rows, row);
	}
	json_object_object_add(row, "input_tokens", json_object_new_int64(
	    json_get_int(row, "input_tokens", 0) + in));
	json_object_object_add(row, "output_tokens", json_object_new_int64(
	    json_get_int(row, "output_tokens", 0) + out));
	json_object_object_add(row, "requests", json_object_new_int64(
	    json_get_int(row, "requests", 0) + requests));
	return 0;
}

/* One period's totals, models and users ("2026-12-01" or "2026-12"). */
static json_object *
usage_period_json(struct agent *a, const char *period)
{
	struct usage_period p = { .prices = a->cfg.prices };
	struct usage_period u = { .prices = a->cfg.prices };
	json_object *o = json_object_new_object();

	p.rows = json_object_new_array();
	u.rows = json_object_new_array();
	room_db_usage_rows(a->db, period, 0, usage_model_row, &p);
	room_db_usage_rows(a->db, period, 1, usage_user_row, &u);
	json_object_object_add(o, "input_tokens", json_object_new_int64(p.in));
	json_object_object_add(o, "output_tokens",
	    json_object_new_int64(p.out));
	json_object_object_add(o, "requests", json_object_new_int64(p.requests));
	if (!p.unpriced && a->cfg.prices[0])
		json_object_object_add(o, "cost", json_object_new_double(p.cost));
	json_object_object_add(o, "models", p.rows);
	json_object_object_add(o, "users", u.rows);
	return o;
}

/* The usage an import brought (meta imported_usage), or NULL. */
static json_object *
usage_imported_json(struct agent *a)
{
	char text[128];
	long long in, out, requests;
	json_object *o;

	if (room_db_meta_get(a->db, "imported_usage", text, sizeof(text)) != 1 ||
	    sscanf(text, "%lld %lld %lld", &in, &out, &requests) != 3)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "input_tokens", json_object_new_int64(in));
	json_object_object_add(o, "output_tokens", json_object_new_int64(out));
	json_object_object_add(o, "requests", json_object_new_int64(requests));
	return o;
}

json_object *
usage_event(struct agent *a)
{
	json_object *ev = room_event_new("usage"), *today, *imported;
	long long cap = caps_max_tokens_per_day(a);
	char day[40], month[8];

	time_now_iso(day, sizeof(day));
	day[10] = '\0';
	snprintf(month, sizeof(month), "%.7s", day);
	today = usage_period_json(a, day);
	json_object_object_add(ev, "day", json_object_new_string(day));
	json_object_object_add(ev, "month", json_object_new_string(month));
	json_object_object_add(ev, "input_tokens", json_object_new_int64(
	    json_get_int(today, "input_tokens", 0)));
	json_object_object_add(ev, "output_tokens", json_object_new_int64(
	    json_get_int(today, "output_tokens", 0)));
	json_object_object_add(ev, "today", today);
	json_object_object_add(ev, "this_month", usage_period_json(a, month));
	json_object_object_add(ev, "max_steps",
	    json_object_new_int(caps_max_steps(a)));
	json_object_object_add(ev, "max_tokens_per_day", cap > 0 ?
	    json_object_new_int64(cap) : NULL);
	if ((imported = usage_imported_json(a)))
		json_object_object_add(ev, "imported", imported);
	return ev;
}
