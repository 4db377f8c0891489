/*
 * test_common_mountinfo.c: the mount table reader (mountinfo.h) from raw
 * lines: fields, escapes, optional fields, FUSE types, a line too long for
 * the buffer, a cut last line, and the running process's own table.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mountinfo.h"
#include "unit.h"

static struct mountinfo_reader reader;

/* Write text to a new temporary file; its path into path. */
static void
put(char *path, const char *text, size_t len)
{
	int fd;

	strcpy(path, "/tmp/atrium-mountinfo-XXXXXX");
	fd = mkstemp(path);
	CHECK(fd >= 0);
	CHECK(write(fd, text, len) == (ssize_t)len);
	close(fd);
}

static void
test_line(void)
{
	char line[] = "36 35 0:41 / /tmp/my\\040dir\\134x rw,nosuid shared:1 "
	    "master:2 - fuse.sshfs room@host:\\040x rw,user_id=0";
	struct mountinfo_entry e;

	CHECK_INT(mountinfo_parse_line(line, &e), 0);
	CHECK_INT(e.id, 36);
	CHECK_INT(e.parent, 35);
	CHECK_INT(e.major, 0);
	CHECK_INT(e.minor, 41);
	CHECK_STR(e.point, "/tmp/my dir\\x");
	CHECK_STR(e.fstype, "fuse.sshfs");
	CHECK_STR(e.source, "room@host: x");
	CHECK(mountinfo_is_fuse(&e));
}

static void
test_fuse_types(void)
{
	struct mountinfo_entry e;
	const char *yes[] = { "fuse", "fuse.atrium-fs", "fuseblk" };
	const char *no[] = { "fusectl", "ext4", "tmpfs", "fuse2" };

	memset(&e, 0, sizeof(e));
	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
		e.fstype = yes[i];
		CHECK(mountinfo_is_fuse(&e));
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++) {
		e.fstype = no[i];
		CHECK(!mountinfo_is_fuse(&e));
	}
}

static void
test_bad_lines(void)
{
	char a[] = "36 35 0:41 / /x rw master:1";	/* no "-" */
	char b[] = "x 35 0:41 / /x rw - ext4 /dev/sda rw";
	char c[] = "36 35 041 / /x rw - ext4 /dev/sda rw";
	char d[] = "36 35 0:41 / x rw - ext4 /dev/sda rw";	/* relative */
	char e_[] = "";
	struct mountinfo_entry e;

	CHECK_INT(mountinfo_parse_line(a, &e), -EINVAL);
	CHECK_INT(mountinfo_parse_line(b, &e), -EINVAL);
	CHECK_INT(mountinfo_parse_line(c, &e), -EINVAL);
	CHECK_INT(mountinfo_parse_line(d, &e), -EINVAL);
	CHECK_INT(mountinfo_parse_line(e_, &e), -EINVAL);
}

static void
test_file(void)
{
	const char text[] =
	    "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
	    "2 1 0:40 / /mnt/w rw,nosuid - fuse.atrium-fs atrium-fs rw\n";
	struct mountinfo_entry e;
	char path[64];

	put(path, text, sizeof(text) - 1);
	CHECK_INT(mountinfo_open(&reader, path), 0);
	CHECK_INT(mountinfo_next(&reader, &e), 1);
	CHECK_STR(e.point, "/");
	CHECK_INT(mountinfo_next(&reader, &e), 1);
	CHECK_STR(e.point, "/mnt/w");
	CHECK_INT(e.minor, 40);
	CHECK_INT(mountinfo_next(&reader, &e), 0);
	mountinfo_close(&reader);
	unlink(path);
	/* A last line without its newline was cut: an error, not a mount. */
	put(path, text, sizeof(text) - 2);
	CHECK_INT(mountinfo_open(&reader, path), 0);
	CHECK_INT(mountinfo_next(&reader, &e), 1);
	CHECK_INT(mountinfo_next(&reader, &e), -EINVAL);
	mountinfo_close(&reader);
	unlink(path);
}

/* A line longer than the buffer fails the read; it is never skipped. */
static void
test_long_line(void)
{
	size_t n = MOUNTINFO_LINE_MAX + 100;
	char *text = malloc(n + 64), path[64];
	struct mountinfo_entry e;

	CHECK(text != NULL);
	if (!text)
		return;
	strcpy(text, "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 0:40 / /");
	memset(text + strlen(text), 'a', n);
	strcpy(text + n, " rw - fuse x rw\n");
	put(path, text, strlen(text));
	CHECK_INT(mountinfo_open(&reader, path), 0);
	CHECK_INT(mountinfo_next(&reader, &e), 1);
	CHECK_INT(mountinfo_next(&reader, &e), -E2BIG);
	mountinfo_close(&reader);
	unlink(path);
	free(text);
}

/* The real table has a root mount. */
static void
test_self(void)
{
	struct mountinfo_entry e;
	int n, root = 0;

	CHECK_INT(mountinfo_open(&reader, "/proc/self/mountinfo"), 0);
	while ((n = mountinfo_next(&reader, &e)) == 1)
		root |= strcmp(e.point, "/") == 0;
	CHECK_INT(n, 0);
	CHECK(root);
	mountinfo_close(&reader);
}

int
main(void)
{
	TEST(test_line);
	TEST(test_fuse_types);
	TEST(test_bad_lines);
	TEST(test_file);
	TEST(test_long_line);
	TEST(test_self);
	return unit_done("test_common_mountinfo");
}
