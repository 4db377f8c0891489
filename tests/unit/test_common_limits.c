/*
 * test_common_limits.c: the pure parts of the resource limits: sizes and
 * CPU counts in settings (common/config.c), the host-derived total and
 * the nesting of total, room and command (common/reslimits.c), and the
 * names of command cgroups that the stale sweep reads (common/cgroup.h).
 */
#include <errno.h>
#include <string.h>

#include "cgroup.h"
#include "config.h"
#include "reslimits.h"
#include "unit.h"

#define GiB (1LL << 30)

static void
test_sizes(void)
{
	long long v = -1;

	CHECK(config_parse_size("0", &v) == 0 && v == 0);
	CHECK(config_parse_size("1536", &v) == 0 && v == 1536);
	CHECK(config_parse_size("4K", &v) == 0 && v == 4096);
	CHECK(config_parse_size("256M", &v) == 0 && v == 256LL << 20);
	CHECK(config_parse_size("256m", &v) == 0 && v == 256LL << 20);
	CHECK(config_parse_size("2G", &v) == 0 && v == 2 * GiB);
	CHECK(config_parse_size("2GB", &v) == 0 && v == 2 * GiB);
	CHECK(config_parse_size("2GiB", &v) == 0 && v == 2 * GiB);
	CHECK(config_parse_size("1T", &v) == 0 && v == 1024 * GiB);
	CHECK_INT(config_parse_size("", &v), -EINVAL);
	CHECK_INT(config_parse_size("-1", &v), -EINVAL);
	CHECK_INT(config_parse_size(" 1G", &v), -EINVAL);
	CHECK_INT(config_parse_size("1.5G", &v), -EINVAL);
	CHECK_INT(config_parse_size("1X", &v), -EINVAL);
	CHECK_INT(config_parse_size("1GG", &v), -EINVAL);
	CHECK_INT(config_parse_size("99999999999999999999", &v), -EINVAL);
	CHECK_INT(config_parse_size("2000000T", &v), -EINVAL);	/* > 1 PiB */
}

static void
test_cpus(void)
{
	int v = -1;

	CHECK(config_parse_cpus("1", &v) == 0 && v == 1000);
	CHECK(config_parse_cpus("1.5", &v) == 0 && v == 1500);
	CHECK(config_parse_cpus("0.25", &v) == 0 && v == 250);
	CHECK(config_parse_cpus("0.125", &v) == 0 && v == 125);
	CHECK(config_parse_cpus("2.5000", &v) == 0 && v == 2500);
	CHECK(config_parse_cpus("0", &v) == 0 && v == 0);
	CHECK_INT(config_parse_cpus("0.0001", &v), -EINVAL);
	CHECK_INT(config_parse_cpus(".5", &v), -EINVAL);
	CHECK_INT(config_parse_cpus("1.", &v), -EINVAL);
	CHECK_INT(config_parse_cpus("-1", &v), -EINVAL);
	CHECK_INT(config_parse_cpus("1,5", &v), -EINVAL);
	CHECK_INT(config_parse_cpus("2000", &v), -EINVAL);
	CHECK_INT(config_parse_cpus("", &v), -EINVAL);
}

static void
test_settings(void)
{
	struct config c;
	char err[256];

	config_defaults(&c);
	CHECK(c.room_memory == 4 * GiB && c.room_pids == 1024 &&
	    c.room_cpus == 1000);
	CHECK(c.max_commands_per_user >= 16 && c.max_rooms_per_user >= 20);
	CHECK(config_set(&c, "room-memory", "256M", err, sizeof(err)) == 0);
	CHECK(c.room_memory == 256LL << 20);
	CHECK(config_set(&c, "room_cpus", "1.5", err, sizeof(err)) == 0);
	CHECK_INT(c.room_cpus, 1500);
	CHECK(config_set(&c, "no-limits", "", err, sizeof(err)) == 0);
	CHECK_INT(c.no_limits, 1);
	CHECK(config_set(&c, "room-memory", "lots", err, sizeof(err)) ==
	    -EINVAL);
	CHECK(strstr(err, "512M or 4G") != NULL);
	CHECK(config_set(&c, "room-cpus", "1.0001", err, sizeof(err)) ==
	    -EINVAL);
	CHECK(strstr(err, "number of CPUs") != NULL);
	CHECK(config_set(&c, "cgroup-parent", "system.slice/atrium", err,
	    sizeof(err)) == 0);
	CHECK(config_set(&c, "cgroup-parent", "../escape", err,
	    sizeof(err)) == -EINVAL);
	CHECK(config_set(&c, "cgroup-parent", "a//b", err, sizeof(err)) ==
	    -EINVAL);
	CHECK(config_set(&c, "cgroup-parent", "a/", err, sizeof(err)) ==
	    -EINVAL);
	CHECK(config_set(&c, "cgroup-root", "relative", err, sizeof(err)) ==
	    -EINVAL);
}

static void
test_total_from_host(void)
{
	struct reslimits t;

	/* The machine this is written for: 2 cores, 24 GiB. */
	reslimits_total_auto(24 * GiB, 2, &t);
	CHECK(t.memory == 21 * GiB);
	CHECK_INT(t.cpus, 1500);
	CHECK_INT(t.pids, RESLIMITS_AUTO_PIDS);
	/* Small hosts keep at least 1 GiB, tiny ones half. */
	reslimits_total_auto(4 * GiB, 1, &t);
	CHECK(t.memory == 3 * GiB);
	CHECK_INT(t.cpus, 500);
	reslimits_total_auto(GiB, 1, &t);
	CHECK(t.memory == GiB / 2);
}

static void
test_nesting(void)
{
	struct reslimits t, r, c;
	struct config cfg;

	config_defaults(&cfg);
	cfg.total_memory = 21 * GiB;
	cfg.total_pids = 8192;
	cfg.total_cpus = 1500;
	reslimits_nest(&cfg, NULL, &t, &r, &c);
	CHECK(r.memory == 4 * GiB && r.pids == 1024 && r.cpus == 1000);
	CHECK(c.memory == 2 * GiB && c.pids == 512 && c.cpus == 1000);
	/* A room cap below the command's: the command's is clamped (cgroup
	 * v1 refuses a CPU quota above its parent's). */
	cfg.room_memory = 256LL << 20;
	cfg.room_pids = 40;
	cfg.room_cpus = 500;
	reslimits_nest(&cfg, NULL, &t, &r, &c);
	CHECK(c.memory == 256LL << 20 && c.pids == 40 && c.cpus == 500);
	/* No limit at a level takes the one above. */
	cfg.room_memory = 0;
	cfg.sandbox_memory_mb = 0;
	reslimits_nest(&cfg, NULL, &t, &r, &c);
	CHECK(r.memory == 21 * GiB && c.memory == 21 * GiB);
	/* And a room above the total is brought down to it. */
	cfg.room_cpus = 4000;
	reslimits_nest(&cfg, NULL, &t, &r, &c);
	CHECK_INT(r.cpus, 1500);
}

/* The owner may lower a room's limits, never raise them. */
static void
test_owner_lowers(void)
{
	struct reslimits t, r, c, own = { 0 };
	struct config cfg;

	config_defaults(&cfg);
	cfg.total_memory = 21 * GiB;
	cfg.total_pids = 8192;
	cfg.total_cpus = 1500;
	own.memory = 1 * GiB;
	own.pids = 200;
	own.cpus = 500;
	reslimits_nest(&cfg, &own, &t, &r, &c);
	CHECK(r.memory == GiB && r.pids == 200 && r.cpus == 500);
	/* Commands nest below the lowered room. */
	CHECK(c.memory == GiB && c.pids == 200 && c.cpus == 500);
	/* Above the operator's: the operator's. */
	own.memory = 64 * GiB;
	own.pids = 0;
	own.cpus = 4000;
	reslimits_nest(&cfg, &own, &t, &r, &c);
	CHECK(r.memory == 4 * GiB && r.pids == 1024 && r.cpus == 1000);
}

static void
test_command_group_names(void)
{
	CHECK_INT(cgroup_cmd_owner("cmd-1234-5678"), 1234);
	CHECK_INT(cgroup_cmd_owner("cmd-1-0"), 1);
	CHECK_INT(cgroup_cmd_owner("cmd-1234"), 0);
	CHECK_INT(cgroup_cmd_owner("cmd--5"), 0);
	CHECK_INT(cgroup_cmd_owner("cmd-12-5x"), 0);
	CHECK_INT(cgroup_cmd_owner("demo-12-5"), 0);
	CHECK_INT(cgroup_cmd_owner("cmd-99999999999-1"), 0);
	CHECK_INT(cgroup_cmd_owner("memory.max"), 0);
}

int
main(void)
{
	TEST(test_sizes);
	TEST(test_cpus);
	TEST(test_settings);
	TEST(test_total_from_host);
	TEST(test_nesting);
	TEST(test_owner_lowers);
	TEST(test_command_group_names);
	return unit_done("test_common_limits");
}
