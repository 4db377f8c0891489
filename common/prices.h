/*
 * prices.h: the operator's price table (prices.c), "MODEL=IN/OUT,...":
 * US dollars per million input and output tokens of each model.  One
 * parser serves config_finish (a malformed table stops atriumd and the
 * agent at start) and the agent's `usage` costs, so both agree on what
 * the table says.
 */
#ifndef ATRIUM_COMMON_PRICES_H
#define ATRIUM_COMMON_PRICES_H

#include <stddef.h>

/* Check every entry of prices.  0 when each is MODEL=IN/OUT with finite,
 * non-negative numbers (an empty table is fine); -EINVAL with err naming
 * the first bad entry and the form expected. */
int prices_check(const char *prices, char *err, size_t errlen);

/* The price of model per million input and output tokens.  1 found (in,
 * out set); 0 not named, or the table is malformed (prices_check refuses
 * such a table at start). */
int prices_lookup(const char *prices, const char *model, double *in,
    double *out);

#endif
