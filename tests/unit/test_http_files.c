/*
 * test_http_files.c: the file routes' pure parts (api_files.h): the one
 * range of a Range header, and the status of each of the agent's error
 * codes.
 */
#include <string.h>

#include "unit.h"
#include "../../sshd/http/api_files.h"

static void
test_ranges(void)
{
	unsigned long long a = 0, b = 0;

	CHECK_INT(api_files_range("bytes=0-9", 100, &a, &b), 1);
	CHECK_INT(a, 0);
	CHECK_INT(b, 9);
	CHECK_INT(api_files_range("bytes=90-", 100, &a, &b), 1);
	CHECK_INT(a, 90);
	CHECK_INT(b, 99);
	CHECK_INT(api_files_range("bytes=50-500", 100, &a, &b), 1);
	CHECK_INT(b, 99);			/* cut at the end */
	CHECK_INT(api_files_range("bytes=-10", 100, &a, &b), 1);
	CHECK_INT(a, 90);
	CHECK_INT(b, 99);
	CHECK_INT(api_files_range("bytes=-1000", 100, &a, &b), 1);
	CHECK_INT(a, 0);
	CHECK_INT(api_files_range("bytes=100-", 100, &a, &b), -1);
	CHECK_INT(api_files_range("bytes=0-", 0, &a, &b), -1);
	CHECK_INT(api_files_range("bytes=-0", 100, &a, &b), -1);
	/* ignored: the whole file is served */
	CHECK_INT(api_files_range(NULL, 100, &a, &b), 0);
	CHECK_INT(api_files_range("bytes=0-1,5-6", 100, &a, &b), 0);
	CHECK_INT(api_files_range("items=0-1", 100, &a, &b), 0);
	CHECK_INT(api_files_range("bytes=9-1", 100, &a, &b), 0);
	CHECK_INT(api_files_range("bytes=-", 100, &a, &b), 0);
	CHECK_INT(api_files_range("bytes=1-2x", 100, &a, &b), 0);
	CHECK_INT(api_files_range("bytes=99999999999999999999999-", 100, &a,
	    &b), 0);
}

static void
test_statuses(void)
{
	CHECK_INT(api_files_status("not_found", "GET"), 404);
	CHECK_INT(api_files_status("not_empty", "DELETE"), 409);
	CHECK_INT(api_files_status("symlink", "PUT"), 403);
	CHECK_INT(api_files_status("bad_path", "PUT"), 400);
	CHECK_INT(api_files_status("no_space", "PUT"), 507);
	CHECK_INT(api_files_status("read_only", "PUT"), 403);
	CHECK_INT(api_files_status("not_directory", "GET"), 404);
	CHECK_INT(api_files_status("not_directory", "PUT"), 409);
	CHECK_INT(api_files_status("failed", "GET"), 500);
	CHECK_INT(api_files_status(NULL, "GET"), 400);
}

int
main(void)
{
	TEST(test_ranges);
	TEST(test_statuses);
	return unit_done("test_http_files");
}
