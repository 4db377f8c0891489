/*
 * usage.h: the room's token usage and its cost (usage.c), for the
 * `usage` request: today and this month (UTC), by model and by person,
 * with the cost where the operator's price table (--prices
 * "MODEL=IN/OUT,...", US dollars per million input and output tokens)
 * names the model (common/prices.c reads the table).
 */
#ifndef ATRIUM_AGENT_USAGE_H
#define ATRIUM_AGENT_USAGE_H

#include <json-c/json.h>

struct agent;

/* A `usage` event for a: day and month, their totals, per model and per
 * person, the caps and, where known, the cost.  NULL on no memory. */
json_object *usage_event(struct agent *a);

#endif
