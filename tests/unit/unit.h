/*
 * unit.h: the unit-test harness.  Each tests/unit/test_PART_NAME.c is one
 * program: TEST(fn) runs a function, CHECK records a failure with its line
 * and goes on, and unit_done() prints "NAME: N passed, N failed" and gives
 * the exit status.
 */
#ifndef ATRIUM_UNIT_H
#define ATRIUM_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_failed_checks;
static int unit_passed, unit_failed;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
		unit_failed_checks++; \
	} \
} while (0)

#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (!a_ || !b_ || strcmp(a_, b_) != 0) { \
		fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
		    a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
		unit_failed_checks++; \
	} \
} while (0)

#define CHECK_INT(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) { \
		fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, \
		    __LINE__, #a, a_, b_); \
		unit_failed_checks++; \
	} \
} while (0)

#define TEST(fn) do { \
	int before_ = unit_failed_checks; \
	fn(); \
	if (unit_failed_checks == before_) unit_passed++; \
	else { unit_failed++; fprintf(stderr, "  in %s\n", #fn); } \
} while (0)

static inline int
unit_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, unit_passed, unit_failed);
	return unit_failed ? 1 : 0;
}

#endif
