/*
 * model_totals.h: the model requests, tokens and failed requests of every
 * room's agent, by provider, over atriumd's life (model_totals.c), for
 * GET /metrics.
 *
 * Each agent counts its own since it started and says so in each pong
 * to the monitor's watchdog (agentwatch.h), every 2 s at most; the
 * watchdog adds what grew since the last pong here.  So the totals only
 * grow (Prometheus counters) though agents stop and start, and they lag
 * the agents by one ping; what an agent counted after its last pong and
 * before it stopped is not seen.  The agent's word is taken as counts
 * only: a provider name is cleaned to [A-Za-z0-9._-] and at most
 * MODEL_TOTALS_PROVIDERS names are kept (more are added to "other").
 */
#ifndef ATRIUMD_MODEL_TOTALS_H
#define ATRIUMD_MODEL_TOTALS_H

#define MODEL_TOTALS_PROVIDERS	8
#define MODEL_TOTALS_NAME	16

enum model_count {
	MODEL_REQUESTS,		/* answered requests */
	MODEL_INPUT_TOKENS,
	MODEL_OUTPUT_TOKENS,
	MODEL_ERRORS,		/* failed requests, each attempt */
	MODEL_COUNTS
};

/* The counts' names in a pong's "model" object, in enum order. */
extern const char *const model_count_names[MODEL_COUNTS];

struct model_totals {
	struct {
		char provider[MODEL_TOTALS_NAME];	/* "" : free */
		unsigned long long v[MODEL_COUNTS];
	} p[MODEL_TOTALS_PROVIDERS];
};

/* Add d (each >= 0) to provider's totals. */
void model_totals_add(struct model_totals *t, const char *provider,
    const long long d[MODEL_COUNTS]);

#endif
