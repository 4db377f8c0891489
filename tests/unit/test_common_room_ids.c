/*
 * test_common_room_ids.c: each room's sandbox identity (room_ids.h): the
 * record's format, the lowest free uid, a room from before per-room uids
 * keeping the old one, records that survive, a freed uid, an exhausted
 * range and a damaged record.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "room_ids.h"
#include "unit.h"

static char data[] = "/tmp/atrium-roomids-XXXXXX";
static char rooms[PATH_MAX];

/* Write text to rooms/ROOM/NAME, making the room's directory. */
static void
put(const char *room, const char *name, const char *text)
{
	char path[PATH_MAX + 128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", rooms, room);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%s/%s", rooms, room, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static void
test_parse(void)
{
	struct room_ids ids;

	CHECK_INT(room_ids_parse("200000:200001\n", &ids), 0);
	CHECK_INT((int)ids.uid, 200000);
	CHECK_INT((int)ids.gid, 200001);
	CHECK_INT(room_ids_parse("5:6", &ids), 0);
	CHECK_INT(room_ids_parse("", &ids), -EINVAL);
	CHECK_INT(room_ids_parse("0:5", &ids), -EINVAL);
	CHECK_INT(room_ids_parse("5", &ids), -EINVAL);
	CHECK_INT(room_ids_parse("5:", &ids), -EINVAL);
	CHECK_INT(room_ids_parse("-5:5", &ids), -EINVAL);
	CHECK_INT(room_ids_parse("5:5\n\n", &ids), -EINVAL);
	CHECK_INT(room_ids_parse("2147483648:5", &ids), -EINVAL);
	CHECK_INT(room_ids_parse("99999999999999999999:5", &ids), -EINVAL);
}

static void
test_assign(void)
{
	struct config cfg;
	struct room_ids ids;
	char err[256], dir[PATH_MAX + 64];

	config_defaults(&cfg);
	cfg.sandbox_uid_base = 300000;
	cfg.sandbox_uid_count = 3;
	CHECK(mkdtemp(data) != NULL);
	snprintf(rooms, sizeof(rooms), "%s/rooms", data);
	CHECK(mkdir(rooms, 0700) == 0);
	/* New rooms: the lowest free, uid and gid alike, recorded. */
	CHECK_INT(room_ids_assign(rooms, "a", &cfg, &ids, err, sizeof(err)), 0);
	CHECK_INT((int)ids.uid, 300000);
	CHECK_INT((int)ids.gid, 300000);
	CHECK_INT(room_ids_assign(rooms, "b", &cfg, &ids, err, sizeof(err)), 0);
	CHECK_INT((int)ids.uid, 300001);
	snprintf(dir, sizeof(dir), "%s/a", rooms);
	CHECK_INT(room_ids_read(dir, &ids), 0);
	CHECK_INT((int)ids.uid, 300000);
	/* Asked again, a room keeps its own. */
	CHECK_INT(room_ids_assign(rooms, "a", &cfg, &ids, err, sizeof(err)), 0);
	CHECK_INT((int)ids.uid, 300000);
	/* A room from before: a workspace and no record keeps the old uid. */
	put("old", "workspace.db", "");
	CHECK_INT(room_ids_assign(rooms, "old", &cfg, &ids, err, sizeof(err)),
	    0);
	CHECK_INT((int)ids.uid, 64222);
	CHECK_INT((int)ids.gid, 64222);
	/* The agent's view: the record, or the old uid without one. */
	snprintf(dir, sizeof(dir), "%s/b", rooms);
	CHECK_INT(room_ids_get(dir, &cfg, &ids), 0);
	CHECK_INT((int)ids.uid, 300001);
	snprintf(dir, sizeof(dir), "%s/none", rooms);
	CHECK_INT(room_ids_get(dir, &cfg, &ids), 0);
	CHECK_INT((int)ids.uid, 64222);
	/* A record naming a uid of the range (another range once) holds it. */
	put("moved", ROOM_IDS_FILE, "300002:300002\n");
	CHECK_INT(room_ids_assign(rooms, "c", &cfg, &ids, err, sizeof(err)),
	    -ENOSPC);
	CHECK(strstr(err, "no sandbox uid is free") != NULL);
	CHECK(strstr(err, "sandbox-uid-count") != NULL);
	snprintf(dir, sizeof(dir), "%s/c", rooms);
	CHECK(access(dir, F_OK) < 0);
	/* A removed room frees its uid. */
	snprintf(dir, sizeof(dir), "rm -rf %s/b", rooms);
	CHECK(system(dir) == 0);
	CHECK_INT(room_ids_assign(rooms, "c", &cfg, &ids, err, sizeof(err)), 0);
	CHECK_INT((int)ids.uid, 300001);
	/* The old uid inside the range is never handed out. */
	cfg.sandbox_uid_base = 64222;
	cfg.sandbox_uid_count = 1;
	CHECK_INT(room_ids_assign(rooms, "d", &cfg, &ids, err, sizeof(err)),
	    -ENOSPC);
	/* A damaged record is an error, not a new uid. */
	put("bad", ROOM_IDS_FILE, "garbage");
	CHECK_INT(room_ids_assign(rooms, "bad", &cfg, &ids, err, sizeof(err)),
	    -EINVAL);
	CHECK(strstr(err, "damaged") != NULL);
	snprintf(dir, sizeof(dir), "rm -rf %s", data);
	CHECK(system(dir) == 0);
}

static void
test_config_range(void)
{
	struct config cfg;
	char err[256];

	config_defaults(&cfg);
	CHECK_INT(config_finish(&cfg, err, sizeof(err)), 0);
	CHECK_INT(config_set(&cfg, "sandbox-uid-base", "2147483000", err,
	    sizeof(err)), 0);
	CHECK_INT(config_finish(&cfg, err, sizeof(err)), -EINVAL);
	CHECK(strstr(err, "sandbox-uid-count") != NULL);
	CHECK_INT(config_set(&cfg, "sandbox_uid_count", "0", err,
	    sizeof(err)), -EINVAL);
}

int
main(void)
{
	TEST(test_parse);
	TEST(test_assign);
	TEST(test_config_range);
	return unit_done("test_common_room_ids");
}
