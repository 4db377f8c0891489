/*
 * http_main.c: atriumd-http, atriumd's HTTP process.  Only the monitor starts
 * it (sshd/monitor/http_front.c), and only with --http-listen, as root,
 * with what it needs already open:
 *
 *   fd  what
 *   3   the listening socket, bound and listening, non-blocking
 *   4   the request socket (privsep.h), this process's end
 *   5   the event socket, this process's end
 *
 *   argv: atriumd-http MONITOR-PID UID GID USER [--KEY VALUE ...]
 *
 * as atriumd-net is started (sshd/net/net_main.c; both read their command
 * line with front_start.h): the four numbers are read first, root is
 * given up (http_privdrop.h), and only then is anything else parsed:
 * the settings (the http-* keys of config.h and max-commands-per-user,
 * nothing secret), then every byte of every client.  One thing comes
 * before the drop: the page's files are read into memory (http_web.h)
 * from the folder --http-web-dir names (taken from argv as it is,
 * nothing else parsed), or the one beside this program, since nothing
 * can be opened after it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "front_start.h"
#include "http_privdrop.h"
#include "http_server.h"
#include "http_web.h"
#include "log.h"

#define HTTP_FD_LISTEN		3	/* see the head of this file */
#define HTTP_FD_REQUEST		4
#define HTTP_FD_EVENT		5

static const char http_usage[] =
	"usage: atriumd-http MONITOR-PID UID GID USER [--KEY VALUE ...]\n"
	"atriumd's HTTP process: atriumd starts it with --http-listen, with "
	"its sockets as fds 3 to 5.\nRun atriumd instead; see atriumd(8).\n";

/* The settings atriumd-http reads: its own (http-*) and the command cap
 * it counts with the monitor; front_start_settings refuses any other. */
static int
http_setting_allowed(const char *key)
{
	return strncmp(key, "http-", 5) == 0 ||
	    strcmp(key, "max-commands-per-user") == 0;
}

/* The folder of the page's files: --http-web-dir's value when argv has
 * it, else the one beside this program (web/ in a build tree, where it
 * sits in build/; share/atrium/web of its prefix once installed in
 * libexec/atrium/).  0, or -errno when neither can be named. */
static int
http_web_dir(int argc, char **argv, char *out, size_t len)
{
	char exe[PATH_MAX], *slash;
	struct stat st;
	ssize_t n;

	for (int i = 5; i + 1 < argc; i += 2)
		if (strcmp(argv[i], "--http-web-dir") == 0 && argv[i + 1][0])
			return snprintf(out, len, "%s", argv[i + 1]) <
			    (int)len ? 0 : -ENAMETOOLONG;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	if (!(slash = strrchr(exe, '/')))
		return -EINVAL;
	*slash = '\0';
	if (snprintf(out, len, "%s/web", exe) < (int)len &&
	    stat(out, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return snprintf(out, len, "%s/../../share/atrium/web", exe) <
	    (int)len ? 0 : -ENAMETOOLONG;
}

/* Read the page's files (as root: nothing can be opened after the
 * drop).  A missing file is logged and its route answers 503; the rest
 * of atriumd-http serves on. */
static void
http_web_start(struct http_web *web, int argc, char **argv)
{
	char dir[PATH_MAX];

	if (http_web_dir(argc, argv, dir, sizeof(dir)) < 0) {
		log_error("the page's folder cannot be named: set "
		    "http-web-dir");
		return;
	}
	if (http_web_load(web, dir) == 0)
		log_debug("the page's files read from %s", dir);
}

/* Give up root, then serve HTTP until SIGTERM or the monitor's end.  The
 * exit status: 0, 1, or 2 for a command line out of step. */
int
main(int argc, char **argv)
{
	static const int socks[] = { HTTP_FD_LISTEN, HTTP_FD_REQUEST,
	    HTTP_FD_EVENT };
	static struct http_server srv;
	struct privdrop_id id;
	pid_t monitor;
	int r;

	log_init("atriumd-http", NULL);
	if ((r = cli_common("atriumd-http", &argc, argv)) != 0)
		return r > 0 ? 0 : 2;
	if (front_start_identity(argc, argv, http_usage, &id, &monitor) < 0)
		return 2;
	if (front_start_sockets("atriumd-http", socks, 3) < 0)
		return 1;
	front_start_malloc();
	http_web_start(&srv.web, argc, argv);
	if (http_privdrop_apply(&id, monitor) < 0)
		return 1;
	if (front_start_settings(argc, argv, &srv.cfg, http_setting_allowed,
	    "--http-KEY VALUE") < 0)
		return 2;
	log_info("HTTP process (pid %d) runs as %s (uid %u), without "
	    "capabilities, under seccomp", (int)getpid(), id.name,
	    (unsigned)id.uid);
	r = http_server_init(&srv, HTTP_FD_LISTEN, HTTP_FD_REQUEST,
	    HTTP_FD_EVENT);
	if (r == 0)
		r = http_server_run(&srv);
	http_server_destroy(&srv);
	http_web_free(&srv.web);
	return r ? 1 : 0;
}
