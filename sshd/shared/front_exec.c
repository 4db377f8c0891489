/*
 * front_exec.c: the monitor's start of a front (front_exec.h).  Called by
 * sshd/monitor/monitor_main.c (atriumd-net, once, at the split) and
 * sshd/monitor/http_front.c (atriumd-http, at each start and restart), as
 * root.
 *
 * Everything the child needs is made before the fork, in the caller's
 * struct front_exec: between fork and execve the child only moves fds,
 * closes the rest and executes, with async-signal-safe calls alone.
 */
#include "front_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* config_each's callback: keep the settings cmd->settings names. */
static void
front_exec_setting(const char *key, const char *value, void *arg)
{
	struct front_exec *cmd = arg;

	for (size_t i = 0; i < cmd->nsettings; i++) {
		if (strcmp(key, cmd->settings[i]) != 0)
			continue;
		snprintf(cmd->keys[i], sizeof(cmd->keys[i]), "--%s", key);
		snprintf(cmd->values[i], sizeof(cmd->values[i]), "%s", value);
	}
}

/* See front_exec.h. */
int
front_exec_cmd(struct front_exec *cmd, const char *path,
    const struct config *c, const struct privdrop_id *id,
    const char *const *settings, size_t n, int skip_empty)
{
	const char *level = getenv("ATRIUM_LOG");
	int k = 0;

	memset(cmd, 0, sizeof(*cmd));
	if (n > FRONT_EXEC_MAX_SETTINGS) {
		log_error("%s: %zu settings, at most %d", path, n,
		    FRONT_EXEC_MAX_SETTINGS);
		return -E2BIG;
	}
	cmd->settings = settings;
	cmd->nsettings = n;
	cmd->skip_empty = skip_empty;
	snprintf(cmd->nums[0], sizeof(cmd->nums[0]), "%d", (int)getpid());
	snprintf(cmd->nums[1], sizeof(cmd->nums[1]), "%u", (unsigned)id->uid);
	snprintf(cmd->nums[2], sizeof(cmd->nums[2]), "%u", (unsigned)id->gid);
	snprintf(cmd->name, sizeof(cmd->name), "%s", id->name);
	config_each(c, front_exec_setting, cmd);
	cmd->argv[k++] = (char *)path;
	for (int i = 0; i < 3; i++)
		cmd->argv[k++] = cmd->nums[i];
	cmd->argv[k++] = cmd->name;
	for (size_t i = 0; i < n; i++) {
		if (!cmd->keys[i][0] || (skip_empty && !cmd->values[i][0]))
			continue;
		cmd->argv[k++] = cmd->keys[i];
		cmd->argv[k++] = cmd->values[i];
	}
	cmd->argc = k;
	if (level && strlen(level) < 32) {
		snprintf(cmd->log_env, sizeof(cmd->log_env), "ATRIUM_LOG=%s",
		    level);
		cmd->envp[0] = cmd->log_env;
	}
	return 0;
}

/* See front_exec.h. */
void
front_exec_close(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* See front_exec.h. */
int
front_exec_fds(const int *src, int n, int *fds)
{
	int r = 0;

	if (n > FRONT_EXEC_MAX_FDS)
		return -E2BIG;
	for (int i = 0; i < n; i++) {
		fds[i] = fcntl(src[i], F_DUPFD_CLOEXEC, FRONT_EXEC_FD_TOP);
		if (fds[i] < 0 && r == 0)
			r = -errno;
	}
	if (r < 0)
		front_exec_close(fds, n);
	return r;
}

/* See front_exec.h. */
void
front_exec_child(const struct front_exec *cmd, const int *fds, int n,
    const char *failed)
{
	for (int i = 0; i < n; i++)
		if (dup2(fds[i], 3 + i) < 0)
			_exit(127);
	if (close_range(3 + (unsigned)n, ~0U, 0) < 0)
		_exit(127);
	execve(cmd->argv[0], cmd->argv, cmd->envp);
	if (write(2, failed, strlen(failed)) < 0)
		_exit(127);
	_exit(127);
}
