/*
 * front_start.c: a front's start-up (front_start.h).  Called by
 * sshd/net/net_main.c (atriumd-net) and sshd/http/http_main.c (atriumd-http):
 * identity and fds first, as root; the settings once root is given up.
 * Every word of argv is the monitor's, but is checked as any input is:
 * a front run by hand gets its usage, not a crash.
 */
#include "front_start.h"

#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"

#define FRONT_START_MMAP_THRESHOLD (128 * 1024)	/* glibc's initial one */

/* text as a number from 1 to max.  0, or -EINVAL. */
static int
front_start_number(const char *text, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || end == text || *end || text[0] == '-' || v == 0 ||
	    v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* See front_start.h. */
int
front_start_identity(int argc, char **argv, const char *usage,
    struct privdrop_id *id, pid_t *monitor)
{
	unsigned long pid, uid, gid;

	memset(id, 0, sizeof(*id));
	if (argc < 5 || (argc - 5) % 2 ||
	    front_start_number(argv[1], INT_MAX, &pid) < 0 ||
	    front_start_number(argv[2], UINT_MAX - 1, &uid) < 0 ||
	    front_start_number(argv[3], UINT_MAX - 1, &gid) < 0 ||
	    strlen(argv[4]) >= sizeof(id->name)) {
		fputs(usage, stderr);
		return -EINVAL;
	}
	*monitor = (pid_t)pid;
	id->uid = (uid_t)uid;
	id->gid = (gid_t)gid;
	snprintf(id->name, sizeof(id->name), "%s", argv[4]);
	return 0;
}

/* See front_start.h. */
int
front_start_sockets(const char *prog, const int *fds, size_t n)
{
	struct stat st;

	for (size_t i = 0; i < n; i++) {
		if (fstat(fds[i], &st) < 0 || !S_ISSOCK(st.st_mode)) {
			log_error("fd %d is not a socket: %s is started by "
			    "atriumd only", fds[i], prog);
			return -EBADF;
		}
	}
	return 0;
}

/* See front_start.h. */
void
front_start_malloc(void)
{
	if (mallopt(M_MMAP_THRESHOLD, FRONT_START_MMAP_THRESHOLD) != 1)
		log_warn("mallopt M_MMAP_THRESHOLD failed; memory after bursts "
		    "may not be given back");
}

/* See front_start.h. */
int
front_start_settings(int argc, char **argv, struct config *cfg,
    int (*allowed)(const char *key), const char *expect)
{
	char err[256];

	config_defaults(cfg);
	for (int i = 5; i < argc; i += 2) {
		if (strncmp(argv[i], "--", 2) != 0 ||
		    (allowed && !allowed(argv[i] + 2)) || i + 1 >= argc) {
			log_error("settings: expected %s at '%s'", expect,
			    argv[i]);
			return -EINVAL;
		}
		if (config_set(cfg, argv[i] + 2, argv[i + 1], err,
		    sizeof(err)) < 0) {
			log_error("settings: %s: %s", argv[i], err);
			return -EINVAL;
		}
	}
	return 0;
}
