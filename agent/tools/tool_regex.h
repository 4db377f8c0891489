/*
 * tool_regex.h: the grep tool's regular expressions (tool_regex.c): PCRE2
 * syntax, matched with a budget of backtracking steps and memory per line,
 * so that no pattern the model writes can hold the room's loop.
 */
#ifndef ATRIUM_AGENT_TOOL_REGEX_H
#define ATRIUM_AGENT_TOOL_REGEX_H

#include <stddef.h>

/* Per line matched: PCRE2's match limit (backtracking steps; about 15 ms
 * of CPU), its depth limit, and its heap limit in KiB. */
#define TOOL_REGEX_MATCH_LIMIT	1000000
#define TOOL_REGEX_DEPTH_LIMIT	1000000
#define TOOL_REGEX_HEAP_KIB	(32 * 1024)

struct tool_regex;

/* Compile pattern (UTF-8; caseless when icase) into *out.  0; -EINVAL
 * with PCRE2's reason and its offset in err; -ENOMEM. */
int tool_regex_new(const char *pattern, int icase, struct tool_regex **out,
    char *err, size_t errlen);

/* Free re; NULL is fine. */
void tool_regex_free(struct tool_regex *re);

/* Does re match somewhere in s[0..len)?  1 yes, 0 no, -ERANGE when the
 * match ran out of its budget (the pattern backtracks too much on this
 * line), -ENOMEM.  Bytes that are not UTF-8 are never matched by any part
 * of the pattern, and do not stop the line from matching elsewhere. */
int tool_regex_match(struct tool_regex *re, const char *s, size_t len);

#endif
