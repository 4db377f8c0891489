/*
 * test_sshd_room_quota.c: counting the rooms a user created from
 * DATA/rooms.created (sshd/monitor/room_quota.c), from raw text, and admitting
 * a new room against the cap in a scratch DATA.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"
#include "util.h"
#include "../../sshd/monitor/room_quota.h"

/* Every room exists but "gone". */
static int
exists_but_gone(const char *room, void *arg)
{
	(void)arg;
	return strcmp(room, "gone") != 0;
}

static void
test_count(void)
{
	const char *t = "a alice\nb bob\nc alice\na bob\ngone alice\n"
	    "d alice\nd alice\ne alicex\nf alice";	/* torn last line */

	/* a, c, d (once); not gone, not e (another user), not the torn f;
	 * a counts for alice, who came first. */
	CHECK_INT(room_quota_count(t, strlen(t), "alice", exists_but_gone,
	    NULL), 3);
	CHECK_INT(room_quota_count(t, strlen(t), "bob", exists_but_gone,
	    NULL), 1);
	CHECK_INT(room_quota_count(t, strlen(t), "al", exists_but_gone,
	    NULL), 0);
	CHECK_INT(room_quota_count("", 0, "alice", exists_but_gone, NULL), 0);
	CHECK_INT(room_quota_count("\n\n \nx\n", 6, "alice", exists_but_gone,
	    NULL), 0);
}

static void
test_admit(void)
{
	char data[] = "/tmp/atrium-rq-XXXXXX", path[256], err[256], cmd[300];

	CHECK(mkdtemp(data) != NULL);
	snprintf(path, sizeof(path), "%s/rooms", data);
	mkdir(path, 0700);
	for (int i = 0; i < 2; i++) {
		char room[16];

		snprintf(room, sizeof(room), "r%d", i);
		CHECK_INT(room_quota_admit(data, room, "alice", 2, NULL, NULL,
		    err, sizeof(err)), 0);
		snprintf(path, sizeof(path), "%s/rooms/%s", data, room);
		mkdir(path, 0700);
	}
	/* An existing room is no creation, whoever made it. */
	CHECK_INT(room_quota_admit(data, "r0", "alice", 2, NULL, NULL, err,
	    sizeof(err)), 0);
	CHECK_INT(room_quota_admit(data, "r0", "bob", 1, NULL, NULL, err,
	    sizeof(err)), 0);
	CHECK_INT(room_quota_admit(data, "r2", "alice", 2, NULL, NULL, err,
	    sizeof(err)), -EDQUOT);
	CHECK(strstr(err, "max-rooms-per-user = 2") != NULL);
	CHECK_INT(room_quota_admit(data, "r2", "bob", 2, NULL, NULL, err,
	    sizeof(err)), 0);
	/* A removed room frees its place. */
	snprintf(path, sizeof(path), "%s/rooms/r1", data);
	rmdir(path);
	CHECK_INT(room_quota_admit(data, "r3", "alice", 2, NULL, NULL, err,
	    sizeof(err)), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", data);
	CHECK(system(cmd) == 0);
}

/* Every room counts. */
static int
exists_all(const char *room, void *arg)
{
	(void)room;
	(void)arg;
	return 1;
}

/* Every room counts but "half" (a half-made one, for the caller). */
static int
exists_but_half(const char *room, void *arg)
{
	(void)arg;
	return strcmp(room, "half") != 0;
}

/* A failed making gives the place back: a half-made room the caller does
 * not count, and a forgotten room, which then counts for whoever makes
 * it next, not for the one whose making failed. */
static void
test_forget(void)
{
	char data[] = "/tmp/atrium-rq-XXXXXX", path[256], err[256], cmd[300];
	char *text = NULL;
	size_t len = 0;

	CHECK(mkdtemp(data) != NULL);
	snprintf(path, sizeof(path), "%s/rooms", data);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%s", data, ROOM_QUOTA_FILE);
	{
		FILE *f = fopen(path, "w");

		CHECK(f != NULL);
		fputs("own alice\nhalf alice\nhalfway bob\nhalf carol\n", f);
		fclose(f);
	}
	/* At the cap while "half" counts; under it when it does not. */
	CHECK_INT(room_quota_admit(data, "new", "alice", 3, exists_but_half,
	    NULL, err, sizeof(err)), 0);
	CHECK_INT(room_quota_admit(data, "new2", "alice", 3, exists_all, NULL,
	    err, sizeof(err)), -EDQUOT);
	CHECK_INT(room_quota_admit(data, "new2", "alice", 3, exists_but_half,
	    NULL, err, sizeof(err)), 0);
	/* Forgetting "half" drops its lines and no other's. */
	CHECK_INT(room_quota_forget(data, "half"), 0);
	CHECK_INT(read_small_file(path, 4096, &text, &len), 0);
	CHECK_STR(text, "own alice\nhalfway bob\nnew alice\nnew2 alice\n");
	free(text);
	/* carol made "half" after alice's failed attempt: now it is hers. */
	CHECK_INT(room_quota_admit(data, "half", "carol", 1, NULL, NULL, err,
	    sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/rooms/half", data);
	mkdir(path, 0700);
	CHECK_INT(room_quota_admit(data, "x", "carol", 1, NULL, NULL, err,
	    sizeof(err)), -EDQUOT);
	CHECK_INT(room_quota_forget(data, "nothing"), 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", data);
	CHECK(system(cmd) == 0);
}

int
main(void)
{
	TEST(test_count);
	TEST(test_admit);
	TEST(test_forget);
	return unit_done("test_sshd_room_quota");
}
