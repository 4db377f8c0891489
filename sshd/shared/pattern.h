/*
 * pattern.h: OpenSSH's wildcard patterns and pattern lists (ssh_config(5)
 * PATTERNS), as from="..." (addr_match.h) and rooms="..." in
 * authorized_keys use them:
 *
 *   list   = entry *( "," entry )
 *   entry  = [ "!" ] PATTERN        '*' any run, '?' one character
 *
 * A list matches a name when some positive entry matches and no negated
 * entry does (a negated match refuses at once, as match_pattern_list).
 * Pure functions, no allocation, no recursion.
 */
#ifndef ATRIUMD_PATTERN_H
#define ATRIUMD_PATTERN_H

#define PATTERN_MAX_LIST	1024	/* bytes in a list */
#define PATTERN_MAX_ENTRIES	64	/* entries in a list */

/* Does s match the wildcard p?  nocase: ignore ASCII case.  1 or 0. */
int pattern_match(const char *s, const char *p, int nocase);

/* Does name match list (case-sensitive)?  1 yes, 0 no, -EINVAL when the
 * list is malformed (empty, an empty entry, "!" alone, too long). */
int pattern_list_match(const char *name, const char *list);

/* Check list's syntax.  0 or -EINVAL. */
int pattern_list_check(const char *list);

#endif
