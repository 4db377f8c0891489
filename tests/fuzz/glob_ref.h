/*
 * glob_ref.h: the reference for pathglob.c's tests (tests/unit and
 * tests/fuzz): the backtracking glob matcher ls used before, as it was.
 * Its work grows exponentially with the stars of a pattern, so it is only
 * fed short patterns; pathglob must give the same answer on every input.
 */
#ifndef ATRIUM_TESTS_GLOB_REF_H
#define ATRIUM_TESTS_GLOB_REF_H

#include <string.h>

/* One [...] at *pp against c: 1, 0, or -1 when malformed. */
static int
ref_class(const char **pp, char c)
{
	const char *p = *pp + 1;
	int neg = 0, hit = 0;

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
		if (c >= lo && c <= hi)
			hit = 1;
		p++;
	}
	if (*p != ']')
		return -1;
	*pp = p + 1;
	return c != '/' && hit != neg;
}

/* 1 when s matches p (pat: the whole pattern, for the ** rule). */
static int
ref_glob(const char *pat, const char *p, const char *s)
{
	for (;;) {
		if (p[0] == '*' && p[1] == '*' && (p == pat || p[-1] == '/') &&
		    (p[2] == '/' || p[2] == '\0')) {
			if (!p[2])
				return 1;
			for (const char *t = s;; t++) {
				if (ref_glob(pat, p + 3, t))
					return 1;
				t = strchr(t, '/');
				if (!t)
					return 0;
			}
		}
		switch (*p) {
		case '\0':
			return *s == '\0';
		case '*':
			while (*p == '*')
				p++;
			for (;; s++) {
				if (ref_glob(pat, p, s))
					return 1;
				if (*s == '\0' || *s == '/')
					return 0;
			}
		case '?':
			if (*s == '\0' || *s == '/')
				return 0;
			p++;
			s++;
			continue;
		case '[': {
			const char *q = p;
			int m = *s ? ref_class(&q, *s) : 0;

			if (m == 0)
				return 0;
			if (m == 1) {
				p = q;
				s++;
				continue;
			}
			break;
		}
		case '\\':
			if (p[1])
				p++;
			break;
		}
		if (*p != *s)
			return 0;
		p++;
		s++;
	}
}

#endif
