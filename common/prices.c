/*
 * prices.c: the operator's price table (prices.h).
 *
 * The table is entries separated by commas, spaces around them allowed:
 *   claude-sonnet-4=3/15, gpt-4o=2.5/10
 * An entry is MODEL=IN/OUT: a non-empty model name without '=', ',' or
 * spaces,
 * then two finite, non-negative numbers in US dollars per million input
 * and output tokens.  Anything else in an entry makes the whole table
 * malformed: a typo must not quietly leave a model unpriced.
 */
#include "prices.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One entry of the table, as prices_next found it. */
struct price_entry {
	const char *text;	/* the entry, spaces around it dropped */
	size_t len;		/* its length */
	size_t model_len;	/* of the model name, at text */
	double in, out;		/* dollars per million tokens */
};

/* A price at p that ends at end: a finite, non-negative number.  0, or
 * -EINVAL. */
static int
prices_number(const char *p, const char *end, double *out)
{
	char *stop;

	if (p >= end || *p == ' ' || *p == '+' || *p == '-')
		return -EINVAL;
	errno = 0;
	*out = strtod(p, &stop);
	if (stop != end || errno || !isfinite(*out) || *out < 0)
		return -EINVAL;
	return 0;
}

/* Read the entry at *pp into e and move *pp past it.  1 read; 0 at the
 * end of the table; -EINVAL malformed (e->text and e->len still name the
 * entry, for the message). */
static int
prices_next(const char **pp, struct price_entry *e)
{
	const char *p = *pp, *end, *eq, *slash;
	char num[64];

	while (*p == ' ' || *p == ',')
		p++;
	if (!*p)
		return 0;
	end = p + strcspn(p, ",");
	*pp = end;
	while (end > p && end[-1] == ' ')
		end--;
	e->text = p;
	e->len = (size_t)(end - p);
	eq = memchr(p, '=', e->len);
	if (!eq || eq == p)
		return -EINVAL;
	e->model_len = (size_t)(eq - p);
	if (memchr(p, ' ', e->model_len))
		return -EINVAL;	/* "a =1/2": no model is named "a " */
	slash = memchr(eq + 1, '/', (size_t)(end - eq - 1));
	if (!slash || (size_t)(end - eq) > sizeof(num))
		return -EINVAL;
	/* strtod needs the number to end where the entry's part does. */
	memcpy(num, eq + 1, (size_t)(end - eq - 1));
	num[end - eq - 1] = '\0';
	num[slash - eq - 1] = '\0';
	if (prices_number(num, num + (slash - eq - 1), &e->in) < 0 ||
	    prices_number(num + (slash - eq), num + (end - eq - 1),
	    &e->out) < 0)
		return -EINVAL;
	return 1;
}

int
prices_check(const char *prices, char *err, size_t errlen)
{
	struct price_entry e;
	const char *p = prices;
	int rc;

	while ((rc = prices_next(&p, &e)) > 0)
		;
	if (rc < 0)
		snprintf(err, errlen, "prices: entry \"%.*s\" is not "
		    "MODEL=IN/OUT (US dollars per million input and output "
		    "tokens, entries separated by commas, e.g. "
		    "claude-sonnet-4=3/15,gpt-4o=2.5/10)",
		    (int)(e.len > 80 ? 80 : e.len), e.text);
	return rc;
}

int
prices_lookup(const char *prices, const char *model, double *in,
    double *out)
{
	struct price_entry e;
	const char *p = prices;
	size_t ml = strlen(model);
	int rc, found = 0;

	/* To the end, so that a table is either read whole or not at all. */
	while (p && (rc = prices_next(&p, &e)) != 0) {
		if (rc < 0)
			return 0;
		if (!found && e.model_len == ml &&
		    memcmp(e.text, model, ml) == 0) {
			*in = e.in;
			*out = e.out;
			found = 1;
		}
	}
	return found;
}
