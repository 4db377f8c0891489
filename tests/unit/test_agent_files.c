/*
 * test_agent_files.c: the file requests' pure parts (file_requests.h): the
 * path a request may name, and the codes its errors carry.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "../../agent/file_requests.h"
#include "unit.h"

/* file_path_rel of a C string: its result, out filled. */
static int
rel(const char *in, char *out, size_t outlen)
{
	const char *why;

	return file_path_rel(in, strlen(in), out, outlen, &why);
}

static void
test_paths_made_relative(void)
{
	char out[PATH_MAX];

	CHECK_INT(rel("", out, sizeof(out)), 0);
	CHECK_STR(out, ".");
	CHECK_INT(rel("/", out, sizeof(out)), 0);
	CHECK_STR(out, ".");
	CHECK_INT(rel("a//b/", out, sizeof(out)), 0);
	CHECK_STR(out, "a/b");
	CHECK_INT(rel("/src/main.c", out, sizeof(out)), 0);
	CHECK_STR(out, "src/main.c");
	CHECK_INT(rel("...", out, sizeof(out)), 0);	/* a name like any */
	CHECK_STR(out, "...");
	CHECK_INT(rel(".hidden/..x", out, sizeof(out)), 0);
	CHECK_STR(out, ".hidden/..x");
}

static void
test_hostile_paths_refused(void)
{
	char out[PATH_MAX], big[PATH_MAX + 8], name[NAME_MAX + 2];
	const char *why;

	CHECK_INT(rel("..", out, sizeof(out)), -EINVAL);
	CHECK_INT(rel("a/../b", out, sizeof(out)), -EINVAL);
	CHECK_INT(rel("a/./b", out, sizeof(out)), -EINVAL);
	CHECK_INT(rel("a/..", out, sizeof(out)), -EINVAL);
	CHECK_INT(file_path_rel("a\0/../x", 7, out, sizeof(out), &why),
	    -EINVAL);
	CHECK(why && strstr(why, "NUL"));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	CHECK_INT(rel(big, out, sizeof(out)), -ENAMETOOLONG);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CHECK_INT(rel(name, out, sizeof(out)), -ENAMETOOLONG);
	name[NAME_MAX] = '\0';
	CHECK_INT(rel(name, out, sizeof(out)), 0);
	CHECK_INT(rel("abc/def", out, 5), -ENAMETOOLONG);
}

static void
test_error_codes(void)
{
	CHECK_STR(file_error_code(-ENOENT), "not_found");
	CHECK_STR(file_error_code(-ENOTEMPTY), "not_empty");
	CHECK_STR(file_error_code(-ELOOP), "symlink");
	CHECK_STR(file_error_code(-EXDEV), "symlink");
	CHECK_STR(file_error_code(-EDQUOT), "no_space");
	CHECK_STR(file_error_code(-ENOSPC), "no_space");
	CHECK_STR(file_error_code(-EACCES), "denied");
	CHECK_STR(file_error_code(-EIO), "failed");
}

static void
test_stale_temporary_names(void)
{
	long long start_ms = 5000, start_s = 1700000000;

	/* made before the start (by the clock or, after a reboot, the
	 * file's time): stale */
	CHECK_INT(file_tmp_stale(".atrium-tmp-12-4999-0", start_s, start_ms,
	    start_s), 1);
	CHECK_INT(file_tmp_stale(".atrium-tmp-12-90000-3", start_s - 60,
	    start_ms, start_s), 1);
	/* made since: an upload of this agent's, kept */
	CHECK_INT(file_tmp_stale(".atrium-tmp-12-5001-0", start_s, start_ms,
	    start_s), 0);
	/* not the exact shape the uploads make: never touched */
	CHECK_INT(file_tmp_stale(".atrium-tmp-12-1-0.bak", 0, start_ms,
	    start_s), 0);
	CHECK_INT(file_tmp_stale(".atrium-tmp-x-1-0", 0, start_ms, start_s),
	    0);
	CHECK_INT(file_tmp_stale(".atrium-tmp-12-1", 0, start_ms, start_s),
	    0);
	CHECK_INT(file_tmp_stale(".atrium-tmp--1-0", 0, start_ms, start_s),
	    0);
	CHECK_INT(file_tmp_stale("atrium-tmp-12-1-0", 0, start_ms, start_s),
	    0);
	CHECK_INT(file_tmp_stale("notes.txt", 0, start_ms, start_s), 0);
	CHECK_INT(file_tmp_stale(".atrium-tmp-99999999999999999999-1-0", 0,
	    start_ms, start_s), 0);
}

int
main(void)
{
	TEST(test_paths_made_relative);
	TEST(test_hostile_paths_refused);
	TEST(test_error_codes);
	TEST(test_stale_temporary_names);
	return unit_done("test_agent_files");
}
