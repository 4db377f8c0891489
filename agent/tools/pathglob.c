/*
 * pathglob.c: globs compiled to an NFA and matched by simulating it
 * (pathglob.h).
 *
 * Why an NFA.  The matcher this replaced backtracked: each * tried every
 * length and recursed, so "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b" against a name of
 * 200 a's took exponential time, and one ls call held the room's loop for
 * minutes.  Here the pattern becomes a list of tokens and the match keeps
 * the set of positions in that list the path so far can have reached
 * (Thompson's construction): each byte of the path moves every position in
 * the set at most once, so a match costs O(len(path) * states) with no
 * backtracking at all, and the set is sparse (a list plus a stamp per
 * state) so the usual pattern costs a few states per byte.
 *
 * Tokens and their states.  Token j is one of
 *   SET    one byte from a 256-bit set (a literal, ?, or a [...] class)
 *   STAR   * : any bytes but '/'
 *   DDIR   ** followed by '/' : "" or any bytes ending in '/'
 *   DALL   ** at the end : anything, '/' included
 * State 2j is "at token j" (2m: at the end, the accepting state); state
 * 2j+1 exists for DDIR only: "inside it, not yet after a '/'".  Entering
 * a STAR, DDIR or DALL also enters the token after it (they may match
 * nothing); the inside state of DDIR does not, which is why it is a state
 * of its own.
 *
 * Parsing follows the old matcher byte for byte (the unit tests keep it as
 * the reference and compare the two on random patterns): a ** is a
 * component when it starts the pattern or follows a '/' (even an escaped
 * one) and ends the pattern or precedes a '/'; runs of * collapse; a class
 * is parsed as the old one was, with its byte comparisons made on signed
 * chars, and never matches '/'.
 */
#include "pathglob.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum pathglob_kind { PG_SET, PG_STAR, PG_DDIR, PG_DALL };

struct pathglob_tok {
	enum pathglob_kind kind;
	unsigned char set[32];	/* PG_SET: bit b set when byte b matches */
};

struct pathglob {
	struct pathglob_tok *toks;	/* m tokens */
	size_t m;
	int slash;			/* the pattern holds a '/' */
	/* Scratch of the match: two state lists and a stamp per state. */
	unsigned *cur, *next;		/* 2m+2 entries each */
	unsigned long *stamp;		/* state -> the step that last added it */
	unsigned long gen;		/* the current step's stamp */
};

/* ---- compiling ------------------------------------------------------------- */

static void
pathglob_set_add(unsigned char *set, unsigned char b)
{
	set[b >> 3] |= (unsigned char)(1u << (b & 7));
}

static int
pathglob_set_has(const unsigned char *set, unsigned char b)
{
	return set[b >> 3] >> (b & 7) & 1;
}

/* Add the bytes lo..hi, compared as signed chars as the old matcher did. */
static void
pathglob_set_range(unsigned char *set, char lo, char hi)
{
	for (int v = -128; v <= 127; v++)
		if ((char)v >= lo && (char)v <= hi)
			pathglob_set_add(set, (unsigned char)(char)v);
}

/* The class starting at p ('['), into set.  The byte after it, or NULL
 * when it is malformed (then '[' is a literal). */
static const char *
pathglob_class(const char *p, unsigned char *set)
{
	int neg = 0;

	p++;
	if (*p == '!' || *p == '^') {
		neg = 1;
		p++;
	}
	for (int first = 1; *p && (first || *p != ']'); first = 0) {
		char lo = *p, hi;

		if (lo == '\\' && p[1])
			lo = *++p;
		hi = lo;
		if (p[1] == '-' && p[2] && p[2] != ']') {
			hi = p[2] == '\\' && p[3] ? p[3] : p[2];
			p += p[2] == '\\' && p[3] ? 3 : 2;
		}
		pathglob_set_range(set, lo, hi);
		p++;
	}
	if (*p != ']')
		return NULL;
	if (neg)
		for (size_t i = 0; i < 32; i++)
			set[i] = (unsigned char)~set[i];
	set['/' >> 3] &= (unsigned char)~(1u << ('/' & 7));
	return p + 1;
}

/* One token from p into t; the rest of the pattern. */
static const char *
pathglob_token(const char *pat, const char *p, struct pathglob_tok *t)
{
	const char *q;

	memset(t, 0, sizeof(*t));
	if (p[0] == '*' && p[1] == '*' && (p == pat || p[-1] == '/') &&
	    (p[2] == '/' || p[2] == '\0')) {
		t->kind = p[2] ? PG_DDIR : PG_DALL;
		return p + (p[2] ? 3 : 2);
	}
	t->kind = PG_SET;
	switch (*p) {
	case '*':
		t->kind = PG_STAR;
		while (*p == '*')
			p++;
		return p;
	case '?':
		memset(t->set, 0xff, sizeof(t->set));
		t->set['/' >> 3] &= (unsigned char)~(1u << ('/' & 7));
		return p + 1;
	case '[':
		q = pathglob_class(p, t->set);
		if (q)
			return q;
		memset(t->set, 0, sizeof(t->set));
		break;
	case '\\':
		if (p[1])
			p++;
		break;
	}
	pathglob_set_add(t->set, (unsigned char)*p);
	return p + 1;
}

int
pathglob_new(const char *pattern, struct pathglob **out)
{
	size_t cap = strlen(pattern) + 1, states = 2 * cap + 2;
	struct pathglob *g = calloc(1, sizeof(*g));

	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->toks = calloc(cap, sizeof(*g->toks));
	g->cur = calloc(states, sizeof(*g->cur));
	g->next = calloc(states, sizeof(*g->next));
	g->stamp = calloc(states, sizeof(*g->stamp));
	if (!g->toks || !g->cur || !g->next || !g->stamp) {
		pathglob_free(g);
		return -ENOMEM;
	}
	for (const char *p = pattern; *p; g->m++)
		p = pathglob_token(pattern, p, &g->toks[g->m]);
	g->slash = strchr(pattern, '/') != NULL;
	*out = g;
	return 0;
}

void
pathglob_free(struct pathglob *g)
{
	if (!g)
		return;
	free(g->toks);
	free(g->cur);
	free(g->next);
	free(g->stamp);
	free(g);
}

unsigned long
pathglob_states(const struct pathglob *g)
{
	return 2 * g->m + 2;
}

int
pathglob_has_slash(const struct pathglob *g)
{
	return g->slash;
}

/* ---- matching --------------------------------------------------------------- */

/* Add state s to list (n entries) unless this step has it, with the
 * positions it may skip to: entering a STAR, DDIR or DALL also enters the
 * next token.  Iterative: a chain of them is as long as the pattern. */
static void
pathglob_add(struct pathglob *g, unsigned *list, size_t *n, unsigned s)
{
	for (;;) {
		size_t j = s / 2;

		if (g->stamp[s] == g->gen)
			return;
		g->stamp[s] = g->gen;
		list[(*n)++] = s;
		if (s % 2 || j == g->m || g->toks[j].kind == PG_SET)
			return;
		s = 2 * (unsigned)(j + 1);
	}
}

/* Where state s goes on byte c, added to list. */
static void
pathglob_step(struct pathglob *g, unsigned s, unsigned char c,
    unsigned *list, size_t *n)
{
	size_t j = s / 2;
	const struct pathglob_tok *t;

	if (j == g->m)
		return;		/* the end consumes nothing */
	t = &g->toks[j];
	if (s % 2 == 0 && t->kind == PG_SET) {
		if (pathglob_set_has(t->set, c))
			pathglob_add(g, list, n, 2 * (unsigned)(j + 1));
	} else if (t->kind == PG_STAR) {
		if (c != '/')
			pathglob_add(g, list, n, s);
	} else if (t->kind == PG_DALL) {
		pathglob_add(g, list, n, s);
	} else {	/* DDIR, at it or inside it */
		pathglob_add(g, list, n, 2 * (unsigned)j + 1);
		if (c == '/')
			pathglob_add(g, list, n, 2 * (unsigned)(j + 1));
	}
}

int
pathglob_match(struct pathglob *g, const char *path, unsigned long *steps)
{
	size_t ncur = 0, nnext;
	unsigned long work = 1;
	unsigned *tmp;
	int hit;

	g->gen++;
	pathglob_add(g, g->cur, &ncur, 0);
	for (const char *p = path; *p && ncur; p++) {
		g->gen++;
		nnext = 0;
		for (size_t i = 0; i < ncur; i++)
			pathglob_step(g, g->cur[i], (unsigned char)*p, g->next,
			    &nnext);
		work += ncur;
		tmp = g->cur;
		g->cur = g->next;
		g->next = tmp;
		ncur = nnext;
	}
	/* Accepting: the end state is in the last step's set. */
	hit = ncur && g->stamp[2 * g->m] == g->gen;
	if (steps)
		*steps += work;
	return hit;
}
