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

int
main(void)
{
	TEST(test_paths_made_relative);
	TEST(test_hostile_paths_refused);
	TEST(test_error_codes);
	return unit_done("test_agent_files");
}
