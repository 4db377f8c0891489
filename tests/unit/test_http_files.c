/*
 * test_http_files.c: the file routes' pure parts (api_files.h): the one
 * range of a Range header, and the status of each of the agent's error
 * codes.
 */
#include <string.h>

#include "unit.h"
#include "../../sshd/http/api_files.h"
#include "../../sshd/http/api_files_meta.h"

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

static void
test_types(void)
{
	struct api_files_type t;

	t = api_files_type_of("notes/a.txt");
	CHECK_STR(t.content_type, "text/plain; charset=utf-8");
	CHECK_INT(t.attachment, 0);
	t = api_files_type_of("src/MAIN.C");
	CHECK_STR(t.content_type, "text/plain; charset=utf-8");
	t = api_files_type_of("app.js");
	CHECK_STR(t.content_type, "text/plain; charset=utf-8");
	t = api_files_type_of("pic.png");
	CHECK_STR(t.content_type, "image/png");
	t = api_files_type_of("x/index.HTML");
	CHECK_STR(t.content_type, "application/octet-stream");
	CHECK_INT(t.attachment, 1);
	t = api_files_type_of("logo.svg");
	CHECK_STR(t.content_type, "application/octet-stream");
	CHECK_INT(t.attachment, 1);
	t = api_files_type_of("a.txt/b.bin");
	CHECK_STR(t.content_type, "application/octet-stream");
	CHECK_INT(t.attachment, 0);
	t = api_files_type_of(".txt");
	CHECK_STR(t.content_type, "application/octet-stream");
	t = api_files_type_of("Makefile");
	CHECK_STR(t.content_type, "application/octet-stream");
}

static void
test_not_modified(void)
{
	const char *e = "\"1-2-3-4\"";
	time_t t = 1700000000;	/* Tue, 14 Nov 2023 22:13:20 GMT */

	CHECK_INT(api_files_not_modified(NULL, NULL, e, t), 0);
	CHECK_INT(api_files_not_modified("\"1-2-3-4\"", NULL, e, t), 1);
	CHECK_INT(api_files_not_modified("W/\"1-2-3-4\"", NULL, e, t), 1);
	CHECK_INT(api_files_not_modified("\"x\", \"1-2-3-4\" ", NULL, e, t),
	    1);
	CHECK_INT(api_files_not_modified("*", NULL, e, t), 1);
	CHECK_INT(api_files_not_modified("\"1-2-3-5\"", NULL, e, t), 0);
	CHECK_INT(api_files_not_modified("\"1-2-3-4", NULL, e, t), 0);
	/* If-None-Match wins over a date that alone would say current */
	CHECK_INT(api_files_not_modified("\"old\"",
	    "Tue, 14 Nov 2023 22:13:20 GMT", e, t), 0);
	CHECK_INT(api_files_not_modified(NULL,
	    "Tue, 14 Nov 2023 22:13:20 GMT", e, t), 1);
	CHECK_INT(api_files_not_modified(NULL,
	    "Tue, 14 Nov 2023 22:13:19 GMT", e, t), 0);
	CHECK_INT(api_files_not_modified(NULL, "yesterday", e, t), 0);
	CHECK_INT(api_files_not_modified(NULL,
	    "Tue, 14 Nov 2023 22:13:20 GMTx", e, t), 0);
}

int
main(void)
{
	TEST(test_ranges);
	TEST(test_statuses);
	TEST(test_types);
	TEST(test_not_modified);
	return unit_done("test_http_files");
}
