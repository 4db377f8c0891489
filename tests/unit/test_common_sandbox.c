/*
 * test_common_sandbox.c: the real sandbox, end to end: a command's output,
 * exit code, signal, uid, isolation (no network, no host files, no secrets
 * in the environment) and the kill of a whole process tree.  Needs root and
 * bubblewrap, as atrium-agent does.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"
#include "unit.h"

static char ws[] = "/tmp/atrium-sbtest-XXXXXX";
static char run[PATH_MAX], init_path[PATH_MAX + 32];

/* Run a shell command; its stdout (capped) into out, how it ended into ex. */
static void
run_cmd(const char *shell, char *out, size_t outlen, struct sandbox_exit *ex)
{
	struct sandbox sb = {
		.workspace = ws, .run_dir = run, .room = "sbtest",
		.init_path = init_path, .uid = 64222, .gid = 64222,
		.memory_mb = 256, .pids = 64, .cpu_percent = 100,
	};
	struct sandbox_cmd cmd = { .shell = shell, .fd_in = -1, .fd_err = -1 };
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
	if (access("/sys/fs/cgroup/memory/atrium", F_OK) != 0 &&
	    access("/sys/fs/cgroup/atrium", F_OK) != 0) {
		printf("test_limits: no writable cgroups here, skipped\n");
		return;
	}
	CHECK(strstr(out, "allocated") == NULL);
	CHECK(ex.code != 0);
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
	snprintf(init_path, sizeof(init_path), "%s/../atrium-sandbox-init", dir);
	TEST(test_exit_code_and_output);
	TEST(test_signal_is_reported);
	TEST(test_missing_command);
	TEST(test_isolation);
	TEST(test_background_tree_dies);
	TEST(test_limits);
	{
		char cmd[PATH_MAX * 2 + 16];
		snprintf(cmd, sizeof(cmd), "rm -rf %s %s", ws, run);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup failed\n");
	}
	return unit_done("test_common_sandbox");
}
