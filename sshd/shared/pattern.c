/*
 * pattern.c: wildcard patterns and pattern lists (pattern.h).  Called by
 * addr_match.c (the wildcard entries of from=) and authkeys_opts.c
 * (rooms=, checked at load and matched when a key names a new room).
 *
 * The matcher backtracks to the last '*' only, so it is linear in
 * practice and never recursive; lists are short and split on a copy.
 */
#include "pattern.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

/* One character of s against one of p. */
static int
pattern_same(char a, char b, int nocase)
{
	return nocase ? tolower((unsigned char)a) == tolower((unsigned char)b)
	    : a == b;
}

/* See pattern.h. */
int
pattern_match(const char *s, const char *p, int nocase)
{
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*p == '*') {
			star = p++;
			resume = s;
		} else if (*p && (*p == '?' || pattern_same(*p, *s, nocase))) {
			p++;
			s++;
		} else if (star) {
			p = star + 1;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

/* Walk list's entries, calling fn on each (NUL-terminated in a copy);
 * fn's non-zero result stops the walk and is returned.  -EINVAL when
 * malformed. */
static int
pattern_each(const char *list, int (*fn)(const char *entry, void *arg),
    void *arg)
{
	char copy[PATTERN_MAX_LIST + 1];
	size_t n = strlen(list);
	int count = 0, r;
	char *e, *next;

	if (n == 0 || n > PATTERN_MAX_LIST)
		return -EINVAL;
	memcpy(copy, list, n + 1);
	for (e = copy; e; e = next) {
		next = strchr(e, ',');
		if (next)
			*next++ = '\0';
		if (!e[0] || (e[0] == '!' && !e[1]) ||
		    ++count > PATTERN_MAX_ENTRIES)
			return -EINVAL;
		if ((r = fn(e, arg)) != 0)
			return r;
	}
	return 0;
}

struct pattern_walk {
	const char *name;
	int positive;		/* a positive entry matched */
};

/* One entry: 2 stops the walk (a negated entry matched). */
static int
pattern_entry(const char *entry, void *arg)
{
	struct pattern_walk *w = arg;
	int neg = entry[0] == '!';

	if (!pattern_match(w->name, entry + neg, 0))
		return 0;
	if (neg)
		return 2;
	w->positive = 1;
	return 0;
}

/* Syntax only. */
static int
pattern_entry_ok(const char *entry, void *arg)
{
	(void)entry; (void)arg;
	return 0;
}

/* See pattern.h. */
int
pattern_list_match(const char *name, const char *list)
{
	struct pattern_walk w = { name, 0 };
	int r = pattern_list_check(list);

	if (r < 0)
		return r;
	r = pattern_each(list, pattern_entry, &w);
	return r == 2 ? 0 : w.positive;
}

/* See pattern.h. */
int
pattern_list_check(const char *list)
{
	return pattern_each(list, pattern_entry_ok, NULL);
}
