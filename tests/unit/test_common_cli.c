/*
 * test_common_cli.c: the options every program takes (cli.h): --version
 * found anywhere before "--", --log-level in both spellings taken out of
 * argv with the rest kept in order, a bad or missing level refused, and
 * the level exported for the programs atriumd starts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "unit.h"

static void
test_log_level_is_taken_out(void)
{
	char *argv[] = { "prog", "--log-level", "debug", "mount", "--log-level=warn",
	    "x", NULL };
	int argc = 6;

	unsetenv("ATRIUM_LOG");
	CHECK_INT(cli_common("prog", &argc, argv), 0);
	CHECK_INT(argc, 3);
	CHECK_STR(argv[1], "mount");
	CHECK_STR(argv[2], "x");
	CHECK(argv[3] == NULL);
	CHECK_STR(getenv("ATRIUM_LOG"), "warn");
}

static void
test_bad_levels_are_refused(void)
{
	char *bad[] = { "prog", "--log-level", "loud", NULL };
	char *missing[] = { "prog", "--log-level", NULL };
	char *empty[] = { "prog", "--log-level=", NULL };
	int argc;

	fprintf(stderr, "(three refusals follow)\n");
	argc = 3;
	CHECK_INT(cli_common("prog", &argc, bad), -EINVAL);
	argc = 2;
	CHECK_INT(cli_common("prog", &argc, missing), -EINVAL);
	argc = 2;
	CHECK_INT(cli_common("prog", &argc, empty), -EINVAL);
}

static void
test_version_and_double_dash(void)
{
	char *version[] = { "prog", "mount", "--version", NULL };
	char *after[] = { "prog", "--", "--version", "--log-level", "x", NULL };
	int argc = 3;

	CHECK_INT(cli_common("prog", &argc, version), 1);
	argc = 5;
	CHECK_INT(cli_common("prog", &argc, after), 0);
	CHECK_INT(argc, 5);
	CHECK_STR(after[2], "--version");
}

int
main(void)
{
	log_init("test", NULL);
	TEST(test_log_level_is_taken_out);
	TEST(test_bad_levels_are_refused);
	TEST(test_version_and_double_dash);
	return unit_done("test_common_cli");
}
