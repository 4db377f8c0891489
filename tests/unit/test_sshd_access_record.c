/*
 * test_sshd_access_record.c: the monitor's room access record
 * (sshd/monitor/access_record.c): an agent's report read as hostile input
 * (names, duplicates, sizes, types), the file written and read back, a rewrite
 * only when the list changed, a damaged file refused, and what a room
 * without a record reads as (being made: open; room.db not root's: fail
 * closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "../../sshd/monitor/access_record.h"

/* Parse text as a report; its result, *l filled. */
static int
parse(const char *text, struct access_list *l)
{
	json_object *o = json_tokener_parse(text);
	int r = access_record_parse(o, l);

	json_object_put(o);
	return r;
}

static void
test_good_reports(void)
{
	struct access_list l;

	CHECK_INT(parse("{\"owner\":\"alice\",\"visibility\":\"private\","
	    "\"members\":[\"bob\",\"carol\"]}", &l), 0);
	CHECK_STR(l.owner, "alice");
	CHECK_INT(l.visibility, ACCESS_PRIVATE);
	CHECK_INT(l.nmembers, 2);
	CHECK_STR(l.members[1], "carol");
	CHECK_INT(parse("{\"owner\":null,\"visibility\":\"open\","
	    "\"members\":[]}", &l), 0);
	CHECK_STR(l.owner, "");
	CHECK_INT(l.visibility, ACCESS_OPEN);
}

static void
test_hostile_reports(void)
{
	static const char *const bad[] = {
		"{\"owner\":\"alice\",\"members\":[]}",
		"{\"owner\":\"alice\",\"visibility\":\"secret\",\"members\":[]}",
		"{\"owner\":\"al ice\",\"visibility\":\"open\",\"members\":[]}",
		"{\"owner\":\"-x\",\"visibility\":\"open\",\"members\":[]}",
		"{\"owner\":7,\"visibility\":\"open\",\"members\":[]}",
		"{\"owner\":\"alice\",\"visibility\":\"open\"}",
		"{\"owner\":\"alice\",\"visibility\":\"open\",\"members\":\"bob\"}",
		"{\"owner\":\"alice\",\"visibility\":\"open\","
		    "\"members\":[\"bob\",\"bob\"]}",
		"{\"owner\":\"alice\",\"visibility\":\"open\","
		    "\"members\":[\"alice\"]}",
		"{\"owner\":\"alice\",\"visibility\":\"open\","
		    "\"members\":[\"b\\u001b[2J\"]}",
		"{\"owner\":\"alice\",\"visibility\":\"open\","
		    "\"members\":[null]}",
	};
	struct access_list l;
	char big[ACCESS_MAX_MEMBERS * 16 + 200];
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		CHECK_INT(parse(bad[i], &l), -EINVAL);
		CHECK_STR(l.owner, "");
		CHECK_INT(l.nmembers, 0);
	}
	CHECK_INT(access_record_parse(NULL, &l), -EINVAL);
	n = (size_t)snprintf(big, sizeof(big), "{\"visibility\":\"open\","
	    "\"members\":[");
	for (int i = 0; i <= ACCESS_MAX_MEMBERS; i++)
		n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"u%d\"",
		    i ? "," : "", i);
	snprintf(big + n, sizeof(big) - n, "]}");
	CHECK_INT(parse(big, &l), -EINVAL);
}

/* A fresh room directory under /tmp. */
static void
room_dir(char *out, size_t len)
{
	snprintf(out, len, "/tmp/atrium-record-XXXXXX");
	CHECK(mkdtemp(out) != NULL);
}

static void
test_write_read_and_rewrite(void)
{
	char dir[64], path[128];
	struct access_list l, back;
	struct stat sb;

	room_dir(dir, sizeof(dir));
	access_list_init(&l);
	snprintf(l.owner, sizeof(l.owner), "alice");
	l.visibility = ACCESS_PRIVATE;
	access_list_add(&l, "bob");
	CHECK_INT(access_record_read(dir, &back), -ENOENT);
	CHECK_INT(access_record_write(dir, &l), 1);
	snprintf(path, sizeof(path), "%s/%s", dir, ACCESS_RECORD_NAME);
	CHECK(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0600);
	CHECK_INT(access_record_read(dir, &back), 0);
	CHECK_STR(back.owner, "alice");
	CHECK_INT(back.visibility, ACCESS_PRIVATE);
	CHECK_INT(back.nmembers, 1);
	CHECK_STR(back.members[0], "bob");
	/* The same list again is no write. */
	CHECK_INT(access_record_write(dir, &l), 0);
	access_list_add(&l, "carol");
	CHECK_INT(access_record_write(dir, &l), 1);
	CHECK_INT(access_record_get(dir, 0, &back), 0);
	CHECK_INT(back.nmembers, 2);
	unlink(path);
	rmdir(dir);
}

static void
test_damaged_record_is_refused(void)
{
	char dir[64], path[128];
	struct access_list l;
	int fd;

	room_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, ACCESS_RECORD_NAME);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, "{\"version\":1,\"visibility\":\"open\"",
	    32) == 32);
	close(fd);
	CHECK_INT(access_record_get(dir, 0, &l), -EIO);
	unlink(path);
	rmdir(dir);
}

static void
test_rooms_without_a_record(void)
{
	char dir[64], path[128];
	struct access_list l;
	int fd;

	room_dir(dir, sizeof(dir));
	/* No room.db yet: a room being made, open with no owner. */
	CHECK_INT(access_record_get(dir, 1, &l), 0);
	CHECK_INT(l.visibility, ACCESS_OPEN);
	CHECK_STR(l.owner, "");
	/* A room.db that is not root's: fail closed, nothing recorded. */
	snprintf(path, sizeof(path), "%s/room.db", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	close(fd);
	if (getuid() == 0)
		CHECK(chown(path, 65534, 65534) == 0);
	CHECK_INT(access_record_get(dir, 1, &l), 0);
	CHECK_INT(l.visibility, ACCESS_PRIVATE);
	CHECK_STR(l.owner, "");
	CHECK_INT(l.nmembers, 0);
	CHECK_INT(access_record_read(dir, &l), -ENOENT);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	TEST(test_good_reports);
	TEST(test_hostile_reports);
	TEST(test_write_read_and_rewrite);
	TEST(test_damaged_record_is_refused);
	TEST(test_rooms_without_a_record);
	return unit_done("test_sshd_access_record");
}
