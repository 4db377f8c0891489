/*
 * model_totals.c: every agent's model requests by provider, summed
 * (model_totals.h).  Called by agentwatch.c at each pong and by monitor.c
 * for the metrics request.
 */
#include "model_totals.h"

#include <stdio.h>
#include <string.h>

const char *const model_count_names[MODEL_COUNTS] = {
	"requests", "input_tokens", "output_tokens", "errors",
};

/* The slot of provider: its own, a free one, or the last ("other") when
 * all are taken. */
static int
model_totals_slot(struct model_totals *t, const char *provider)
{
	int last = MODEL_TOTALS_PROVIDERS - 1;

	for (int i = 0; i < last; i++) {
		if (strcmp(t->p[i].provider, provider) == 0)
			return i;
		if (!t->p[i].provider[0]) {
			snprintf(t->p[i].provider, sizeof(t->p[i].provider),
			    "%s", provider);
			return i;
		}
	}
	snprintf(t->p[last].provider, sizeof(t->p[last].provider), "other");
	return last;
}

/* See model_totals.h. */
void
model_totals_add(struct model_totals *t, const char *provider,
    const long long d[MODEL_COUNTS])
{
	int i, zero = 1;

	for (int k = 0; k < MODEL_COUNTS; k++)
		if (d[k] != 0)
			zero = 0;
	if (zero || !provider[0])
		return;
	i = model_totals_slot(t, provider);
	for (int k = 0; k < MODEL_COUNTS; k++)
		if (d[k] > 0)
			t->p[i].v[k] += (unsigned long long)d[k];
}
