/*
 * pathglob.h: glob patterns over workspace paths (pathglob.c), for the ls
 * and grep tools.  A pattern is compiled once per tool call and matched
 * against every path the walk visits, in time linear in the path's length
 * whatever the pattern (a model may choose it to be slow).
 *
 * Syntax: * and ? match within one component (never '/'); [abc], [a-z],
 * [!a-z] or [^a-z] match one byte other than '/' (a '[' with no closing
 * ']' is literal); \ makes the next byte literal.  A ** that is a whole
 * component (the whole pattern, or between slashes, or at either end
 * next to a slash) spans any number of components, none included: the
 * pattern "src" "/" "**" matches everything under src, and "**" "/" "x.c"
 * matches x.c at any depth (written apart here only because a C comment
 * cannot hold them joined).  A ** inside a component is a *.
 */
#ifndef ATRIUM_AGENT_PATHGLOB_H
#define ATRIUM_AGENT_PATHGLOB_H

struct pathglob;

/* Compile pattern into *out.  0 or -ENOMEM (*out NULL).  Any string is a
 * pattern: there is no syntax error. */
int pathglob_new(const char *pattern, struct pathglob **out);

/* Free g; NULL is fine. */
void pathglob_free(struct pathglob *g);

/* 1 when path matches g, else 0.  When steps is not NULL the work done
 * (NFA states visited) is added to *steps: it is at most
 * pathglob_states(g) for each byte of path, plus one.  g keeps scratch
 * space: one match at a time per g. */
int pathglob_match(struct pathglob *g, const char *path,
    unsigned long *steps);

/* The NFA's size: the bound on steps per byte. */
unsigned long pathglob_states(const struct pathglob *g);

/* 1 when the pattern has a '/' (ls and grep then match it against the
 * whole path below their base, else against the last component). */
int pathglob_has_slash(const struct pathglob *g);

#endif
