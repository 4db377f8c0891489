/*
 * monitor_main.c: atriumd's command line.  Settings come from the defaults,
 * then DATA/atrium.conf, then flags (--key VALUE for every key of config.h,
 * plus --open without a value); then the data directory is made, its lock
 * taken (datalock.h: a second atriumd on the same DATA stops there, having
 * made and removed nothing in it), what goes in it prepared, the cgroup
 * parent claimed (cgroup_claim.h: a second atriumd under the same parent
 * stops there), the host key loaded and the listener bound, as root; then
 * atriumd splits in two (monitor_loop.h, sshd/net/server.h): the parent
 * stays root as the monitor, the child executes atriumd-net
 * (sshd/net/net_main.c, found by helpers.h) with the listener, the host key
 * and its ends of the two sockets as fds 3 to 6, and that program drops to
 * the privsep user (privdrop.h) and serves the network; both run until
 * SIGTERM or SIGINT; with --http-listen the monitor also binds that socket
 * and starts atriumd-http, the HTTP process (http_front.h), after the split;
 * SIGHUP makes the monitor reread its settings (reload.h).  `atriumd room
 * ...`, `atriumd status` and `atriumd cluster status|keys|move|drain|
 * undrain` are the operator's commands instead (room_cli.h, status.h,
 * cluster_status.h, cluster_keys.h, cluster_move.h); --version and
 * --log-level are every program's (cli.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "banner.h"
#include "cgroup_claim.h"
#include "cluster_keys.h"
#include "cluster_move.h"
#include "cluster_status.h"
#include "cli.h"
#include "config.h"
#include "datalock.h"
#include "front_exec.h"
#include "helpers.h"
#include "host_limits.h"
#include "http_front.h"
#include "keys.h"
#include "log.h"
#include "monitor_loop.h"
#include "privdrop_id.h"
#include "privsep.h"
#include "reload.h"
#include "room_cli.h"
#include "setup.h"
#include "status.h"
#include "strictmodes.h"
#include "util.h"

#define MAIN_NETWORK_PID	"atriumd-network.pid"	/* in DATA/run */
#define MAIN_MIN_NOFILE		65536	/* descriptors, as the packaged unit */
#define MAIN_MMAP_THRESHOLD	(128 * 1024)	/* glibc's initial one, kept */

static const char main_usage[] =
	"usage: atriumd [--data DIR] [--listen [ADDR]:PORT] "
	"[--provider anthropic|openai]\n"
	"               [--model NAME] [--model-url URL] [--api-key-file FILE] "
	"[--open]\n"
	"               [--idle-timeout S] [--bin-dir DIR] [--KEY VALUE ...]\n"
	"               [--http-listen ADDR:PORT]\n"
	"       atriumd room list DATA | atriumd room delete DATA ROOM\n"
	"       atriumd status [DATA] | atriumd --version\n"
	"       atriumd cluster status | atriumd cluster keys push FILE | "
	"atriumd cluster keys show\n"
	"       atriumd cluster move ROOM [--to NODE] | atriumd cluster drain "
	"[NODE] | atriumd cluster undrain NODE\n"
	"Serves rooms over SSH: ssh -p PORT ROOM@HOST.  See atriumd(8).\n";

/* Value of flag i ("--k=v" or "--k v"); --open, --no-limits and
 * --exec-creates-rooms may stand alone. */
static const char *
main_value(int argc, char **argv, int *i, const char *key, char *eqbuf,
    size_t len)
{
	const char *eq = strchr(argv[*i], '=');

	if (eq) {
		snprintf(eqbuf, len, "%s", eq + 1);
		return eqbuf;
	}
	if ((strcmp(key, "open") == 0 || strcmp(key, "no-limits") == 0 ||
	    strcmp(key, "exec-creates-rooms") == 0) &&
	    (*i + 1 >= argc || strncmp(argv[*i + 1], "--", 2) == 0))
		return "1";
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

/* Apply flags to c; only_data sets just --data (read before the file).
 * 0, or 2 after printing the usage for the user. */
static int
main_flags(struct config *c, int argc, char **argv, int only_data)
{
	char key[64], eqbuf[PATH_MAX], err[256];

	for (int i = 1; i < argc; i++) {
		const char *value;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(main_usage, stdout);
			exit(0);
		}
		if (strncmp(argv[i], "--", 2) != 0) {
			fprintf(stderr, "atriumd: unexpected argument '%s'\n%s",
			    argv[i], main_usage);
			return 2;
		}
		snprintf(key, sizeof(key), "%.*s",
		    (int)strcspn(argv[i] + 2, "="), argv[i] + 2);
		if (!(value = main_value(argc, argv, &i, key, eqbuf,
		    sizeof(eqbuf)))) {
			fprintf(stderr, "atriumd: --%s needs a value\n%s", key,
			    main_usage);
			return 2;
		}
		if (only_data && strcmp(key, "data") != 0)
			continue;
		if (config_set(c, key, value, err, sizeof(err)) < 0) {
			fprintf(stderr, "atriumd: --%s: %s\n%s", key, err,
			    main_usage);
			return 2;
		}
	}
	return 0;
}

/* Each session holds a socket and up to four pipes or sockets per channel
 * (a chat member: two descriptors here, one in its room's agent): take
 * every fd the hard limit allows, and as root raise a hard limit under
 * MAIN_MIN_NOFILE to it (a login shell's 4096 would stop a room near
 * 2,000 members).  The rooms' processes inherit the limit. */
static void
main_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	if (rl.rlim_max < MAIN_MIN_NOFILE) {
		struct rlimit want = { MAIN_MIN_NOFILE, MAIN_MIN_NOFILE };

		if (setrlimit(RLIMIT_NOFILE, &want) == 0)
			return;
		log_info("file descriptors: hard limit %lu kept (%s); "
		    "connections are refused near it",
		    (unsigned long)rl.rlim_max, strerror(errno));
	}
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* A fixed threshold for malloc's own mappings.  glibc raises it to the
 * size of every large block freed (up to 32 MiB), after which a burst's
 * buffers (a frame, a queue, a long protocol line, each up to megabytes
 * for each of a thousand connections) come from the heap, whose free
 * space between live blocks is never given back: measured here, a 200 KiB
 * command output shown to 200 members left 170 MB of free heap.  Blocks
 * of 128 KiB and more are mapped and unmapped instead. */
static void
main_tune_malloc(void)
{
	if (mallopt(M_MMAP_THRESHOLD, MAIN_MMAP_THRESHOLD) != 1)
		log_warn("mallopt M_MMAP_THRESHOLD failed; memory after bursts "
		    "may not be given back");
}

/* Where the monitor says which process is the network one, for the
 * operator (and the tests): DATA/run/atriumd-network.pid, recorded into
 * *made for main_unpublish_pid. */
static void
main_publish_pid(const struct config *c, pid_t pid, struct file_id *made)
{
	char dir[PATH_MAX + 8], path[PATH_MAX + 48], text[32];
	int n = snprintf(text, sizeof(text), "%d\n", (int)pid);
	int r;

	snprintf(dir, sizeof(dir), "%s/run", c->data_dir);
	snprintf(path, sizeof(path), "%s/%s", dir, MAIN_NETWORK_PID);
	if ((r = write_file_atomic(dir, MAIN_NETWORK_PID, text, (size_t)n,
	    0644, 0)) < 0)
		log_warn("%s: %s", path, strerror(-r));
	else
		file_id_get(path, made);
}

/* At the monitor's end: remove the pid file, if it is still the one it
 * wrote (a stale pid in it would name another process one day). */
static void
main_unpublish_pid(const struct config *c, const struct file_id *made)
{
	char path[PATH_MAX + 48];
	int r;

	snprintf(path, sizeof(path), "%s/run/%s", c->data_dir,
	    MAIN_NETWORK_PID);
	if ((r = unlink_if_same(path, made)) < 0 && made->set)
		log_warn("%s: %s; left alone", path, r == -ESTALE ?
		    "not the file this atriumd wrote" : strerror(-r));
}

/* The settings atriumd-net reads (config.h's keys); no other is passed
 * on, the API keys' file least of all. */
static const char *const main_net_settings[] = {
	"data", "open", "max-commands-per-user", "max-startups",
	"per-source-rate", "per-source-startups", "exec-creates-rooms",
};
#define MAIN_NET_NSETTINGS \
	(sizeof(main_net_settings) / sizeof(main_net_settings[0]))

/* What atriumd-net gets as fds 3 to 6 (sshd/net/net_main.c), each
 * duplicated above FRONT_EXEC_FD_TOP into fds.  0, or -errno (logged;
 * nothing left open). */
static int
main_net_fds(struct monitor *srv, int req, int ev, int *fds)
{
	char path[PATH_MAX + 16];
	int src[4], r;

	snprintf(path, sizeof(path), "%s/hostkey", srv->cfg->data_dir);
	src[0] = ssh_bind_get_fd(srv->bind);
	src[1] = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	src[2] = req;
	src[3] = ev;
	if (src[1] < 0) {
		r = -errno;
		log_error("%s: %s", path, strerror(-r));
		return r;
	}
	r = front_exec_fds(src, 4, fds);
	close(src[1]);
	if (r < 0)
		log_error("cannot pass fds to the network process: %s",
		    strerror(-r));
	return r;
}

/* main_flags for a reload: every flag over the file's settings. */
static int
main_reload_flags(struct config *c, int argc, char **argv)
{
	return main_flags(c, argc, argv, 0);
}

/* The monitor's SIGHUP (monitor_loop.h). */
static void
main_reload(void *arg)
{
	reload_run(arg);
}

/* Two socketpairs (requests, events), the fork and atriumd-net's
 * execve.  The parent's return: the exit status. */
static int
main_split(struct monitor *srv, struct keys *keys, const struct helpers *progs,
    const struct privdrop_id *id, struct reload *rl)
{
	static struct front_exec cmd;
	struct file_id pidfile = { 0 };
	int req[2], ev[2], fds[4], r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, req) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ev) < 0) {
		log_error("socketpair: %s", strerror(errno));
		return 1;
	}
	if (front_exec_cmd(&cmd, progs->net, srv->cfg, id, main_net_settings,
	    MAIN_NET_NSETTINGS, 0) < 0 ||
	    main_net_fds(srv, req[1], ev[1], fds) < 0)
		return 1;
	if ((pid = fork()) < 0) {
		log_error("fork: %s", strerror(errno));
		front_exec_close(fds, 4);
		return 1;
	}
	/* The child becomes atriumd-net (sshd/net/net_main.c), which gives up
	 * root; the monitor's memory (the API keys among it) is gone with
	 * the execve. */
	if (pid == 0)
		front_exec_child(&cmd, fds, 4,
		    "atriumd: cannot execute atriumd-net\n");
	front_exec_close(fds, 4);
	close(req[1]);
	close(ev[1]);
	privsep_set_timeout(req[0], PRIVSEP_IO_TIMEOUT_MS);
	privsep_set_timeout(ev[0], PRIVSEP_IO_TIMEOUT_MS);
	main_publish_pid(srv->cfg, pid, &pidfile);
	if (monitor_loop_init(srv, progs, req[0], ev[0], pid) < 0) {
		kill(pid, SIGKILL);
		main_unpublish_pid(srv->cfg, &pidfile);
		return 1;
	}
	rooms_set_keys(&srv->rooms, keys);
	rl->rooms = &srv->rooms;
	rl->srv = srv;
	srv->reload = main_reload;
	srv->reload_arg = rl;
	r = monitor_loop_run(srv);
	main_unpublish_pid(srv->cfg, &pidfile);
	monitor_loop_destroy(srv);
	return r ? 1 : 0;
}

/* Take DATA's lock for the monitor's life (datalock.h), before anything
 * in DATA is made or removed.  0, or 1 with the reason said. */
static int
main_lock(const struct config *c, struct datalock *lock)
{
	char advice[PATH_MAX + 200];
	pid_t holder;
	int r = datalock_take(lock, c->data_dir, &holder);

	if (r == -EBUSY) {
		snprintf(advice, sizeof(advice), "one atriumd serves a data "
		    "directory at a time: stop that one first (`atriumd status "
		    "%s` shows its rooms), or give this one another --data",
		    c->data_dir);
		datalock_explain("atriumd", c->data_dir, holder, advice);
	}
	return r < 0 ? 1 : 0;
}

/* Settings, first start, then serve until SIGTERM.  0, 1 or 2 (usage). */
int
main(int argc, char **argv)
{
	static struct config cfg;
	static struct keys keys;
	static struct monitor srv;
	static struct helpers progs;
	static struct datalock lock = { -1 };
	static struct cgroup_claim cgclaim = { { -1 }, "" };
	struct privdrop_id id;
	struct reload rl;
	char conf[PATH_MAX + 32], err[512], abs[PATH_MAX];
	int r;

	umask(022);
	log_init("atriumd", NULL);
	if ((r = cli_common("atriumd", &argc, argv)) != 0)
		return r > 0 ? 0 : 2;
	if (argc > 1 && strcmp(argv[1], "room") == 0)
		return room_cli_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "status") == 0)
		return status_cli_main(argc - 1, argv + 1);
	if (argc > 2 && strcmp(argv[1], "cluster") == 0 &&
	    strcmp(argv[2], "status") == 0)
		return cluster_status_main(argc - 1, argv + 1);
	if (argc > 2 && strcmp(argv[1], "cluster") == 0 &&
	    strcmp(argv[2], "keys") == 0)
		return cluster_keys_main(argc - 1, argv + 1);
	if (argc > 2 && strcmp(argv[1], "cluster") == 0 &&
	    (strcmp(argv[2], "move") == 0 || strcmp(argv[2], "drain") == 0 ||
	    strcmp(argv[2], "undrain") == 0))
		return cluster_move_main(argc - 1, argv + 1);
	main_raise_fd_limit();
	main_tune_malloc();
	config_defaults(&cfg);
	if (main_flags(&cfg, argc, argv, 1))
		return 2;
	snprintf(conf, sizeof(conf), "%s/atrium.conf", cfg.data_dir);
	if (config_load_file(&cfg, conf, err, sizeof(err)) < 0) {
		fprintf(stderr, "atriumd: %s\n", err);
		return 2;
	}
	if (main_flags(&cfg, argc, argv, 0))
		return 2;
	if (config_finish(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "atriumd: %s\n", err);
		return 2;
	}
	/* Read once and wiped from the environment: each atrium-agent gets
	 * them on a pipe, and no other child ever sees them. */
	r = keys_load(&keys, &cfg, err, sizeof(err));
	keys_scrub_env();
	if (r < 0) {
		fprintf(stderr, "atriumd: %s\n", err);
		return 1;
	}
	if (geteuid() != 0) {
		/* Rooms mount FUSE filesystems for several uids and start each
		 * command in a sandbox as its room's uid: both need root. */
		fprintf(stderr, "atriumd: must run as root (it mounts each "
		    "room's workspace and runs commands in sandboxes as each "
		    "room's own uid, from %u); try: sudo %s\n",
		    (unsigned)cfg.sandbox_uid_base, argv[0]);
		return 1;
	}
	if (strictmodes_check(cfg.data_dir) < 0 || setup_data_top(&cfg) < 0 ||
	    main_lock(&cfg, &lock) || setup_data_dir(&cfg) < 0 ||
	    privdrop_resolve(cfg.privsep_user, &id) < 0)
		return 1;
	if (realpath(cfg.data_dir, abs))
		snprintf(cfg.data_dir, sizeof(cfg.data_dir), "%s", abs);
	if (helpers_find(cfg.bin_dir, &progs) < 0 ||
	    host_limits_start(&cfg, &cgclaim) < 0)
		return 1;
	banner_host_key(&cfg);
	if (monitor_loop_bind(&srv, &cfg) < 0 ||
	    http_front_open(&srv, &progs, &id) < 0) {
		monitor_loop_destroy(&srv);
		keys_clear(&keys);
		return 1;
	}
	log_info("atriumd %s: data %s, programs %s and %s, network process "
	    "%s, idle timeout %d s%s", ATRIUM_VERSION, cfg.data_dir, progs.fs,
	    progs.agent, progs.net,
	    cfg.idle_timeout, cfg.open ? ", OPEN: any key accepted, unknown "
	    "ones as guests (open rooms, rooms they create, private rooms when "
	    "invited)" : "");
	banner_model(&cfg, &keys);
	rl = (struct reload){ argc, argv, main_reload_flags, &cfg, &keys, NULL,
	    NULL };
	r = main_split(&srv, &keys, &progs, &id, &rl);
	keys_clear(&keys);
	cgroup_claim_release(&cgclaim);
	return r;
}
