/*
 * test_common_sandbox.c: the real sandbox, end to end: a command's output,
 * exit code, signal, uid, isolation (no network, no host files, no secrets
 * in the environment) and the kill of a whole process tree.  Needs root and
 * bubblewrap, as atrium-agent does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"
#include "unit.h"

static char ws[] = "/tmp/atrium-sbtest-XXXXXX";
static char run[PATH_MAX], init_path[PATH_MAX + 32];
static struct cgroup_tree cg;	/* a parent of this test's own */

/* Run tmpl's command; its stdout and stderr (capped) into out, how it
 * ended into ex. */
static void
run_cmd_as(const struct sandbox_cmd *tmpl, char *out, size_t outlen,
    struct sandbox_exit *ex)
{
	struct sandbox sb = {
		.workspace = ws, .run_dir = run, .room = "sbtest",
		.init_path = init_path, .uid = 64222, .gid = 64222,
		.cg = &cg, .limits = { 256 << 20, 64, 1000 },
		.room_limits = { 512 << 20, 128, 1000 },
		.require_limits = cg.have == CGROUP_ALL,
	};
	struct sandbox_cmd cmd = *tmpl;
	struct sandbox_proc p;
	int pipefd[2], status;
	size_t n = 0;
	ssize_t r;

	CHECK(pipe2(pipefd, O_CLOEXEC) == 0);
	cmd.fd_out = pipefd[1];
	cmd.fd_err = pipefd[1];
	CHECK(sandbox_spawn(&sb, &cmd, &p) == 0);
	close(pipefd[1]);
	while (n + 1 < outlen && (r = read(pipefd[0], out + n, outlen - 1 - n)) > 0)
		n += (size_t)r;
	out[n] = '\0';
	close(pipefd[0]);
	CHECK(waitpid(p.pid, &status, 0) == p.pid);
	sandbox_result(&p, status, ex);
	sandbox_release(&p);
}

/* Run a shell command; its stdout (capped) into out, how it ended into ex. */
static void
run_cmd(const char *shell, char *out, size_t outlen, struct sandbox_exit *ex)
{
	struct sandbox_cmd cmd = { .shell = shell, .fd_in = -1 };

	run_cmd_as(&cmd, out, outlen, ex);
}

static void
test_exit_code_and_output(void)
{
	char out[4096];
	struct sandbox_exit ex;

	run_cmd("echo hi > f.txt; cat f.txt; pwd; id -u; exit 3", out,
	    sizeof(out), &ex);
	CHECK_STR(out, "hi\n/workspace\n64222\n");
	CHECK_INT(ex.how, SANDBOX_EXITED);
	CHECK_INT(ex.code, 3);
}

static void
test_signal_is_reported(void)
{
	char out[256];
	struct sandbox_exit ex;

	run_cmd("kill -9 $$", out, sizeof(out), &ex);
	CHECK_INT(ex.how, SANDBOX_SIGNALED);
	CHECK_INT(ex.code, SIGKILL);
	run_cmd("exit 137", out, sizeof(out), &ex);
	CHECK_INT(ex.how, SANDBOX_EXITED);
	CHECK_INT(ex.code, 137);
}

static void
test_missing_command(void)
{
	char out[512];
	struct sandbox_exit ex;

	run_cmd("no-such-command-xyz", out, sizeof(out), &ex);
	CHECK_INT(ex.code, 127);
	CHECK(strstr(out, "no-such-command-xyz") != NULL);
	CHECK(strstr(out, "not found") != NULL);
}

static void
test_isolation(void)
{
	char out[4096];
	struct sandbox_exit ex;

	setenv("ANTHROPIC_API_KEY", "sk-secret-test", 1);
	run_cmd("env; ls /root 2>&1; cat /proc/self/status | grep CapEff;"
	    " cat /proc/net/dev; echo $$", out, sizeof(out), &ex);
	unsetenv("ANTHROPIC_API_KEY");
	CHECK(strstr(out, "sk-secret") == NULL);
	CHECK(strstr(out, "CapEff:\t0000000000000000") != NULL);
	CHECK(strstr(out, " lo:") != NULL);
	CHECK(strstr(out, "eth0") == NULL);
	CHECK(strstr(out, "HOME=/workspace") != NULL);
}

/* A listener on the host's 127.0.0.1: reachable only from a command that
 * shares the host's network. */
static void
test_network_for_one_command(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	struct sandbox_cmd cmd = { .fd_in = -1 };
	struct sandbox_exit ex;
	char out[4096], shell[128];
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(l >= 0 && bind(l, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    listen(l, 4) == 0 &&
	    getsockname(l, (struct sockaddr *)&sa, &len) == 0);
	snprintf(shell, sizeof(shell), "echo > /dev/tcp/127.0.0.1/%d && "
	    "echo reached", ntohs(sa.sin_port));
	cmd.shell = shell;
	run_cmd_as(&cmd, out, sizeof(out), &ex);
	CHECK(strstr(out, "reached") == NULL);
	cmd.network = 1;
	run_cmd_as(&cmd, out, sizeof(out), &ex);
	CHECK_STR(out, "reached\n");
	close(l);
}

/* tmp_bytes caps the command's /tmp (seed_git keeps its clone there):
 * a write past it fails with ENOSPC; without it /tmp is tmpfs's default. */
static void
test_tmp_size(void)
{
	struct sandbox_cmd cmd = { .fd_in = -1, .tmp_bytes = 4 << 20,
	    .shell = "df -B1 --output=size /tmp | tail -n 1 | tr -d ' '; "
	    "head -c 5M /dev/zero > /tmp/big 2>/dev/null || echo full" };
	struct sandbox_exit ex;
	char out[512];

	run_cmd_as(&cmd, out, sizeof(out), &ex);
	CHECK_STR(out, "4194304\nfull\n");
	cmd.tmp_bytes = 0;
	cmd.shell = "head -c 5M /dev/zero > /tmp/big && echo fits";
	run_cmd_as(&cmd, out, sizeof(out), &ex);
	CHECK_STR(out, "fits\n");
}

/* /seed: a directory beneath the allowed one, read-only; nothing that
 * leads out of the allowed directory is bound. */
static void
test_seed_bound_read_only(void)
{
	char base[] = "/tmp/atrium-seedtest-XXXXXX", allowed[PATH_MAX];
	char path[PATH_MAX + 64], out[4096];
	struct sandbox_cmd cmd = { .fd_in = -1, .shell = "cat /seed/f; "
	    "touch /seed/x 2>/dev/null || echo read-only" };
	struct sandbox_exit ex;
	FILE *f;

	CHECK(mkdtemp(base) != NULL);
	snprintf(allowed, sizeof(allowed), "%s/allowed", base);
	snprintf(path, sizeof(path), "%s/repo", allowed);
	CHECK(mkdir(allowed, 0755) == 0 && mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/repo/f", allowed);
	CHECK((f = fopen(path, "w")) != NULL);
	fputs("seeded\n", f);
	fclose(f);
	chmod(path, 0644);
	snprintf(path, sizeof(path), "%s/out", allowed);
	CHECK(symlink("/etc", path) == 0);
	cmd.seed_root = allowed;
	cmd.seed_rel = "repo";
	run_cmd_as(&cmd, out, sizeof(out), &ex);
	CHECK_STR(out, "seeded\nread-only\n");
	CHECK_INT(ex.code, 0);
	for (int i = 0; i < 3; i++) {
		cmd.seed_rel = i == 0 ? "out" : i == 1 ? "../allowed/repo" :
		    "/etc";
		run_cmd_as(&cmd, out, sizeof(out), &ex);
		CHECK(strstr(out, "the seed directory") != NULL);
		CHECK_INT(ex.code, 126);
	}
	CHECK_INT(sandbox_seed_open(allowed, "out"), -EXDEV);
	snprintf(path, sizeof(path), "rm -rf %s", base);
	CHECK(system(path) == 0);
}

static void
test_background_tree_dies(void)
{
	char out[256];
	struct sandbox_exit ex;
	long long t0 = time_mono_ms();

	/* The sandbox ends with its command, taking stray children along. */
	run_cmd("sleep 30 >/dev/null 2>&1 & echo started", out, sizeof(out), &ex);
	CHECK_STR(out, "started\n");
	CHECK_INT(ex.code, 0);
	CHECK(time_mono_ms() - t0 < 10000);
}

static void
test_limits(void)
{
	char out[4096];
	struct sandbox_exit ex;

	/* The memory limit (256 MiB here) stops a runaway allocation. */
	run_cmd("cat /proc/self/cgroup; /usr/bin/python3 -c "
	    "'x = bytearray(600 << 20); print(\"allocated\")'", out,
	    sizeof(out), &ex);
	if (cg.have != CGROUP_ALL) {
		printf("test_limits: no writable cgroups here, skipped\n");
		return;
	}
	CHECK(strstr(out, "allocated") == NULL);
	CHECK(ex.code != 0);
}

/* The number of entries named cmd-* in the sbtest room's memory group. */
static int
cmd_groups(void)
{
	char path[CGROUP_PATH_MAX];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	snprintf(path, sizeof(path), "%s%s/%s/sbtest", cg.root,
	    cg.v2 ? "" : "/memory", cg.parent);
	if (!(dp = opendir(path)))
		return 0;
	while ((d = readdir(dp)))
		n += strncmp(d->d_name, "cmd-", 4) == 0;
	closedir(dp);
	return n;
}

static void
test_groups_removed_and_swept(void)
{
	struct cgroup_set stale;
	char out[256], rel[64];
	struct sandbox_exit ex;

	if (cg.have != CGROUP_ALL)
		return;
	/* A command's group goes when the command ends. */
	run_cmd("true", out, sizeof(out), &ex);
	CHECK_INT(cmd_groups(), 0);
	/* One left by a dead agent (pid 1 is no atrium-agent) is swept, and
	 * so is one of ours when we are the one starting. */
	snprintf(rel, sizeof(rel), "sbtest/cmd-1-42");
	CHECK(cgroup_make(&cg, rel, &(struct reslimits){ 1 << 30, 10, 500 },
	    &stale) == 0);
	snprintf(rel, sizeof(rel), "sbtest/cmd-%d-7", (int)getpid());
	CHECK(cgroup_make(&cg, rel, &(struct reslimits){ 0, 0, 0 },
	    &stale) == 0);
	CHECK_INT(cmd_groups(), 2);
	CHECK_INT(cgroup_sweep(&cg, "sbtest", getpid()), 2);
	CHECK_INT(cmd_groups(), 0);
}

static void
test_refused_without_cgroups(void)
{
	struct cgroup_tree none;
	struct sandbox sb = {
		.workspace = ws, .run_dir = run, .room = "sbtest",
		.init_path = init_path, .uid = 64222, .gid = 64222,
		.cg = &none, .limits = { 256 << 20, 64, 1000 },
		.require_limits = 1,
	};
	struct sandbox_cmd cmd = { .shell = "true", .fd_in = -1, .fd_out = -1,
	    .fd_err = -1 };
	struct sandbox_proc p;

	/* A cgroup root with no controllers: the command must not run. */
	cgroup_probe(&none, run, "atrium");
	CHECK_INT(none.have, 0);
	CHECK_INT(sandbox_spawn(&sb, &cmd, &p), -ENOTSUP);
	CHECK_INT(p.pid, -1);
}

int
main(void)
{
	char dir[PATH_MAX];

	if (geteuid() != 0 || access("/usr/bin/bwrap", X_OK) != 0) {
		printf("test_common_sandbox: skipped (needs root and bwrap)\n");
		return 0;
	}
	if (!mkdtemp(ws) || chown(ws, 64222, 64222) < 0)
		return 2;
	snprintf(run, sizeof(run), "%s.run", ws);
	mkdir(run, 0700);
	CHECK(sandbox_write_identity(run, 64222, 64222) == 0);
	CHECK(self_dir(dir, sizeof(dir)) == 0);
	{
		char parent[64];

		snprintf(parent, sizeof(parent), "atrium-unit-%d", (int)getpid());
		cgroup_probe(&cg, "/sys/fs/cgroup", parent);
	}
	snprintf(init_path, sizeof(init_path), "%s/../atrium-sandbox-init", dir);
	TEST(test_exit_code_and_output);
	TEST(test_signal_is_reported);
	TEST(test_missing_command);
	TEST(test_isolation);
	TEST(test_network_for_one_command);
	TEST(test_seed_bound_read_only);
	TEST(test_tmp_size);
	TEST(test_background_tree_dies);
	TEST(test_limits);
	TEST(test_groups_removed_and_swept);
	TEST(test_refused_without_cgroups);
	{
		struct cgroup_set parent = { { "" } };

		cgroup_sweep(&cg, NULL, getpid());
		if (cg.have) {
			cgroup_make(&cg, "", &(struct reslimits){ 0, 0, 0 },
			    &parent);
			cgroup_destroy(&parent);
		}
	}
	{
		char cmd[PATH_MAX * 2 + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf %s %s", ws, run);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup failed\n");
	}
	return unit_done("test_common_sandbox");
}
