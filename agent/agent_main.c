/*
 * agent_main.c: atrium-agent, the actor of one room.
 *
 *   atrium-agent --room-dir DATA/rooms/ROOM --run-dir DATA/run/ROOM
 *       [--ready-fd N] [--keys-fd N] [--approval-timeout S] [--retry-base-ms N]
 *       [--max-retries N] [--model-idle-timeout S] [--fence-fd N]
 *       [--replicate-fd N] [--KEY VALUE ...]
 *
 * Every other --KEY VALUE is a setting of common/config.c (atriumd passes its
 * own through config_each).  atriumd has mounted the workspace at
 * RUN/workspace; the agent listens on RUN/agent.sock, writes "ready\n" to
 * the ready fd, resumes an unfinished turn, and serves until SIGTERM or
 * until it has been idle (no connection, no turn, no command) for
 * idle-timeout seconds, when it exits 0 so atriumd can unmount.
 *
 * The process is made non-dumpable before anything else, so no other
 * process of its uid can ptrace it or read its memory or environment, and
 * it leaves no core.  The API keys come from atriumd on the --keys-fd pipe
 * (keys.h), never from the environment or argv; started by hand, the agent
 * loads them as atriumd would and wipes them from its environment.  Held
 * in memory only, a provider's key goes only into that provider's requests
 * (endpoint.h).
 *
 * On a host of a cluster atriumd passes the room's fence page (--fence-fd,
 * common/fence.h): room.db's commits fail once this host's hold on the
 * room has ended (common/walbuf.h), whatever atriumd is doing then; and
 * with --s3, --replicate-fd N streams each commit of room.db to
 * atrium-replicate (walbuf.h).
 */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "agent.h"
#include "caps.h"
#include "consent.h"
#include "confine.h"
#include "cli.h"
#include "dirworker.h"
#include "spawner.h"
#include "conn.h"
#include "endpoint.h"
#include "exec.h"
#include "fence.h"
#include "file_requests.h"
#include "http.h"
#include "input_limits.h"
#include "journal.h"
#include "log.h"
#include "loop_uring.h"
#include "mcp.h"
#include "model_fit.h"
#include "model_window.h"
#include "names.h"
#include "term.h"
#include "protocol.h"
#include "requests.h"
#include "room_events.h"
#include "room_db.h"
#include "room_import.h"
#include "room_ids.h"
#include "room_limits.h"
#include "settings.h"
#include "seed.h"
#include "turn.h"
#include "util.h"
#include "walbuf.h"
#include "walrec.h"

#define MAIN_IDLE_CHECK_MS	500

static void
main_usage(void)
{
	fprintf(stderr, "usage: atrium-agent --room-dir DATA/rooms/ROOM "
	    "--run-dir DATA/run/ROOM [--ready-fd N] [--keys-fd N] [--fence-fd N]\n"
	    "       [--approval-timeout S] [--retry-base-ms N] [--max-retries N] "
	    "[--model-idle-timeout S] [--SETTING VALUE ...]\n");
}

/* A positive integer flag value, or -1. */
static long
main_number(const char *flag, const char *v, long min, long max)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(v, &end, 10);
	if (errno || *end || end == v || n < min || n > max) {
		fprintf(stderr, "atrium-agent: %s must be a number from %ld to "
		    "%ld, not \"%s\"\n", flag, min, max, v);
		return -1;
	}
	return n;
}

/* The process's own fds from the command line. */
struct main_fds {
	int ready;	/* "ready\n" goes here, or -1 */
	int keys;	/* atriumd's keys channel (or a pipe), or -1 */
};

/* --replicate-fd N (a room of a cluster): every commit of room.db goes
 * to the open descriptor N as a record (walbuf.h), for atrium-replicate;
 * kept from the tools' processes.  1, or -1 (told on stderr). */
static int
main_replicate_fd(const char *k, const char *v)
{
	long fd = main_number(k, v, 3, 65535);

	if (fd < 0)
		return -1;
	if (fd_set_cloexec((int)fd, 1) < 0 ||
	    walbuf_replicate((int)fd, WALREC_DB_ROOM) < 0) {
		fprintf(stderr, "atrium-agent: --replicate-fd %ld is not an "
		    "open descriptor\n", fd);
		return -1;
	}
	return 1;
}

/* --fence-fd N: map the room's fence page (fence.h) and have every
 * commit to room.db check it (walbuf.h).  1, or -1 (told). */
static int
main_fence(const char *k, const char *v)
{
	const struct fence_page *f;
	long fd = main_number(k, v, 0, 65535);

	if (fd < 0)
		return -1;
	if (fence_map((int)fd, &f) < 0) {
		fprintf(stderr, "atrium-agent: --fence-fd %ld: not a fence page\n",
		    fd);
		return -1;
	}
	walbuf_set_fence(f);
	close((int)fd);
	return 1;
}

/* One agent-only flag; 1 taken, 0 not ours, -1 bad value. */
static int
main_agent_flag(struct agent *a, const char *k, const char *v,
    struct main_fds *fds)
{
	long n;

	if (strcmp(k, "room-dir") == 0) {
		snprintf(a->room_dir, sizeof(a->room_dir), "%s", v);
		return 1;
	}
	if (strcmp(k, "run-dir") == 0) {
		snprintf(a->run_dir, sizeof(a->run_dir), "%s", v);
		return 1;
	}
	if (strcmp(k, "ready-fd") == 0)
		return (fds->ready = (int)main_number(k, v, 0, 65535)) < 0 ?
		    -1 : 1;
	if (strcmp(k, "keys-fd") == 0)
		return (fds->keys = (int)main_number(k, v, 0, 65535)) < 0 ?
		    -1 : 1;
	if (strcmp(k, "replicate-fd") == 0)
		return main_replicate_fd(k, v);
	if (strcmp(k, "fence-fd") == 0)
		return main_fence(k, v);
	if (strcmp(k, "approval-timeout") == 0)
		return (a->approval_timeout = (int)main_number(k, v, 1,
		    86400)) < 0 ? -1 : 1;
	if (strcmp(k, "retry-base-ms") == 0)
		return (a->retry_base_ms = main_number(k, v, 1, 600000)) < 0 ?
		    -1 : 1;
	if (strcmp(k, "max-retries") == 0)
		return (a->max_retries = (int)main_number(k, v, 1, 100)) < 0 ?
		    -1 : 1;
	if (strcmp(k, "model-idle-timeout") == 0)
		return (a->model_idle_timeout = (int)(n = main_number(k, v, 1,
		    86400))) < 0 ? -1 : 1;
	return 0;
}

/* Parse the command line into a.  0, or -EINVAL (told on stderr). */
static int
main_args(struct agent *a, int argc, char **argv, struct main_fds *fds)
{
	char err[256];
	int r;

	for (int i = 1; i < argc; i += 2) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strncmp(k, "--", 2) != 0 || !v) {
			main_usage();
			return -EINVAL;
		}
		k += 2;
		r = main_agent_flag(a, k, v, fds);
		if (r < 0)
			return -EINVAL;
		if (r == 0 && config_set(&a->cfg, k, v, err, sizeof(err)) < 0) {
			fprintf(stderr, "atrium-agent: --%s: %s\n", k, err);
			return -EINVAL;
		}
	}
	if (!a->room_dir[0] || !a->run_dir[0]) {
		main_usage();
		return -EINVAL;
	}
	if (config_finish(&a->cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "atrium-agent: %s\n", err);
		return -EINVAL;
	}
	/* --approval-timeout, the agent's own flag, wins over the setting. */
	if (!a->approval_timeout)
		a->approval_timeout = a->cfg.approval_timeout;
	return 0;
}

/* Derive the room's name and paths.  0 or -EINVAL (told on stderr). */
static int
main_paths(struct agent *a)
{
	char dir[PATH_MAX];
	const char *base;
	size_t n;

	snprintf(dir, sizeof(dir), "%s", a->room_dir);
	n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	base = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	if (!room_name_valid(base)) {
		fprintf(stderr, "atrium-agent: \"%s\" is not a valid room name "
		    "(a-z, 0-9 and -, up to 63): check --room-dir\n", base);
		return -EINVAL;
	}
	snprintf(a->room, sizeof(a->room), "%s", base);
	if (snprintf(a->workspace, sizeof(a->workspace), "%s/%s", a->run_dir,
	    WORKSPACE_DIR_NAME) >= (int)sizeof(a->workspace) ||
	    snprintf(a->sock_path, sizeof(a->sock_path), "%s/%s", a->run_dir,
	    AGENT_SOCKET_NAME) >= (int)sizeof(a->sock_path))
		return -ENAMETOOLONG;
	if (a->cfg.bin_dir[0])
		snprintf(dir, sizeof(dir), "%s", a->cfg.bin_dir);
	else if (self_dir(dir, sizeof(dir)) < 0)
		snprintf(dir, sizeof(dir), ".");
	if (snprintf(a->init_path, sizeof(a->init_path),
	    "%s/atrium-sandbox-init", dir) >= (int)sizeof(a->init_path))
		return -ENAMETOOLONG;
	return 0;
}

/* The keys into memory: from atriumd's pipe, or (started by hand) from
 * the key file and the environment; either way none is left in the
 * environment.  0, or -errno (told in the log). */
static int
main_keys(struct agent *a, int keys_fd)
{
	char err[512];
	int r;

	a->keys_fd = -1;
	if (keys_fd >= 0 && keys_is_channel(keys_fd)) {
		/* atriumd sent the first set before it started us. */
		r = keys_recv(&a->keys, keys_fd, err, sizeof(err));
		if (r == -EAGAIN || r == -EPIPE)
			snprintf(err, sizeof(err), "the keys' channel %d held "
			    "no keys", keys_fd);
		if (r < 0)
			close(keys_fd);
		else
			a->keys_fd = keys_fd;
	} else if (keys_fd >= 0) {
		r = keys_read_fd(&a->keys, keys_fd, err, sizeof(err));
	} else {
		r = keys_load(&a->keys, &a->cfg, err, sizeof(err));
	}
	keys_scrub_env();
	if (r < 0) {
		log_error("%s", err);
		return r;
	}
	if (!endpoint_ready(a, a->cfg.provider))
		log_warn("no API key and no model URL for %s: the agent will "
		    "answer prompts with how to configure a model",
		    a->cfg.provider);
	return 0;
}

/* A reload in atriumd sent new keys: the next model request uses them
 * (one in flight keeps the key it was sent with).  A set that does not
 * parse leaves the keys as they were. */
static void
main_keys_renewed(struct loop *l, int fd, int mask, void *arg)
{
	struct agent *a = arg;
	struct keys fresh;
	char err[512];
	int r = keys_recv(&fresh, fd, err, sizeof(err));

	if (r == 0) {
		memcpy(&a->keys, &fresh, sizeof(fresh));
		log_info("new API keys from atriumd, for the next model "
		    "request on");
	} else if (r == -EINVAL) {
		log_error("%s; the keys in use are kept", err);
	} else if (r != -EAGAIN) {
		/* atriumd closed its end (or it broke): no more renewals. */
		if (r != -EPIPE)
			log_warn("%s; no further key renewals", err);
		loop_del_fd(l, fd);
		close(fd);
		a->keys_fd = -1;
	}
	keys_clear(&fresh);
}

static void
main_before_sleep(struct loop *l, void *arg)
{
	struct agent *a = arg;

	/* Persist, then announce, then write: the journal commits what this
	 * loop turn recorded (bookkeeping, the seq reservation of live
	 * events) and only then queues it, unless the turn holds its step's
	 * commit (journal_hold); a failure is logged there and whoever
	 * recorded something learns it at their own checkpoint.  Freeing
	 * connections may announce presence: commit and write once more. */
	journal_before_sleep(a->journal);
	term_flush(a);
	conn_flush(a);
	journal_before_sleep(a->journal);
	conn_flush(a);
}

static long
main_idle_check(struct loop *l, long long id, void *arg)
{
	struct agent *a = arg;
	long long now = time_mono_ms();

	if (turn_busy(a) || exec_count(a) || a->tool_procs) {
		a->heap_trimmed = 0;
	} else if (!a->heap_trimmed) {
		/* Nothing runs: what a turn's requests and transcript
		 * grew goes back to the system, keeping an idle room's
		 * agent small. */
		malloc_trim(0);
		a->heap_trimmed = 1;
	}
	if (conn_count(a) || turn_busy(a) || exec_count(a) ||
	    a->tool_procs) {
		a->idle_since = 0;
		return MAIN_IDLE_CHECK_MS;
	}
	if (!a->idle_since)
		a->idle_since = now;
	if (now - a->idle_since >= a->cfg.idle_timeout * 1000LL) {
		log_info("idle for %d s: stopping", a->cfg.idle_timeout);
		loop_stop(l);
		return LOOP_NOMORE;
	}
	return MAIN_IDLE_CHECK_MS;
}

static void
main_on_signal(struct loop *l, int fd, int mask, void *arg)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		log_info("signal %d: stopping", (int)si.ssi_signo);
		loop_stop(l);
	}
}

/* Block the stop signals and watch them on the loop.  0 or -errno. */
static int
main_signals(struct agent *a)
{
	sigset_t set;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	a->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (a->signal_fd < 0)
		return -errno;
	return loop_add_fd(a->loop, a->signal_fd, LOOP_READ, main_on_signal, a);
}

/* The room's own identity, as atriumd recorded it (room_ids.h), and the
 * sandbox template that every command and the spawner use.  0 or -errno
 * (logged). */
static int
main_identity(struct agent *a)
{
	struct room_ids ids;
	int r;

	if ((r = room_ids_get(a->room_dir, &a->cfg, &ids)) < 0) {
		log_error("%s/%s: cannot read the room's sandbox uid: %s",
		    a->room_dir, ROOM_IDS_FILE, strerror(-r));
		return r;
	}
	a->sb = (struct sandbox){ .workspace = a->workspace,
	    .run_dir = a->run_dir, .room = a->room, .init_path = a->init_path,
	    .uid = ids.uid, .gid = ids.gid,
	    .require_limits = !a->cfg.no_limits };
	return 0;
}

/* What needs root, before the agent gives it up (confine.h): the room's
 * directories, room.db's files handed to the room's uid, the sandbox's
 * passwd and group, the room's cgroup, the listening socket.  0 or
 * -errno (logged). */
static int
main_setup_root(struct agent *a)
{
	int r;

	if ((r = mkdir_p(a->room_dir, 0700)) < 0 ||
	    (r = mkdir_p(a->run_dir, 0700)) < 0) {
		log_error("cannot make %s or %s: %s", a->room_dir, a->run_dir,
		    strerror(-r));
		return r;
	}
	if ((r = confine_room_files(a)) < 0)
		return r;
	if (sandbox_write_identity(a->run_dir, a->sb.uid, a->sb.gid) < 0)
		log_warn("could not write the sandbox's passwd and group");
	room_limits_prepare(a);
	return conn_bind(a);
}

/* Open room.db, the loop and the socket's watch, as the room's uid. */
static int
main_setup(struct agent *a)
{
	char path[PATH_MAX + 16];
	int r;

	snprintf(path, sizeof(path), "%s/%s", a->room_dir, ROOM_DB_NAME);
	if ((r = room_db_open(path, &a->db)) < 0)
		return r;
	if ((r = journal_new(a, &a->journal)) < 0)
		return r;
	settings_load(a);
	model_fit_load(a);
	caps_load(a);
	room_limits_open(a);
	input_limits_open(a);
	if (!(a->loop = loop_new(256)))
		return -ENOMEM;
	if ((r = http_new(a->loop, &a->http)) < 0 ||
	    (r = main_signals(a)) < 0 || (r = conn_listen(a, &requests_hooks)) < 0)
		return r;
	loop_set_before_sleep(a->loop, main_before_sleep, a);
	if (a->keys_fd >= 0 && (r = loop_add_fd(a->loop, a->keys_fd,
	    LOOP_READ, main_keys_renewed, a)) < 0)
		return r;
	if (loop_add_timer(a->loop, MAIN_IDLE_CHECK_MS, main_idle_check, a) < 0)
		return -ENOMEM;
	model_window_ask(a);	/* answered, as a rule, before a first prompt */
	return 0;
}

/* Stop everything in order: commands killed, checkpoint committed. */
static void
main_teardown(struct agent *a)
{
	if (a->loop) {
		turn_shutdown(a);
		mcp_free(a);
		seed_shutdown(a);
		exec_kill_all(a);
		term_kill(a);
		consent_free(a);
		conn_close_all(a);
		room_limits_close(a);
	}
	if (a->journal)
		journal_commit(a->journal);
	journal_free(a->journal);
	input_limits_free(a);
	room_db_close(a->db);
	model_window_cancel(a);
	http_free(a->http);
	if (a->signal_fd >= 0)
		close(a->signal_fd);
	loop_free(a->loop);
	dirworker_free(a->dirworker);
	spawner_stop(a->spawner);
	json_object_put(a->allow_list);
	json_object_put(a->config_skills);
	json_object_put(a->skills);
	json_object_put(a->mcp_config);
	if (a->keys_fd >= 0)
		close(a->keys_fd);
	a->keys_fd = -1;
	keys_clear(&a->keys);
}

int
main(int argc, char **argv)
{
	static struct agent agent;
	struct agent *a = &agent;
	struct main_fds fds = { -1, -1 };
	int r;

	/* First: keys are about to be in this process's memory. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
	    prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) {
		fprintf(stderr, "atrium-agent: cannot make the process "
		    "non-dumpable: %s\n", strerror(errno));
		return 1;
	}
	a->listen_fd = a->signal_fd = a->spawner = -1;
	a->room_fd = a->run_fd = a->seed_fd = -1;
	a->approval_timeout = 0;	/* the setting's, unless flagged */
	a->retry_base_ms = 1000;
	a->max_retries = 6;
	a->model_idle_timeout = 300;
	config_defaults(&a->cfg);
	log_init("atrium-agent", NULL);
	if ((r = cli_common("atrium-agent", &argc, argv)) != 0)
		return r > 0 ? 0 : 2;
	if (argc > 1 && strcmp(argv[1], "import-db") == 0)
		return room_import_main(argc - 1, argv + 1);
	if (main_args(a, argc, argv, &fds) < 0 || main_paths(a) < 0)
		return 2;
	log_init("atrium-agent", a->room);
	if (main_identity(a) < 0)
		return 1;
	/* Before any thread and any key: the sandboxes' fork (spawner.h). */
	if ((a->spawner = spawner_start(argc, argv, a->room_dir, &a->sb,
	    &a->cfg)) < 0)
		return 1;
	if (main_keys(a, fds.keys) < 0)
		return 1;
	/* Root's part, then root given up, still with one thread. */
	r = main_setup_root(a);
	if (r == 0)
		r = confine_agent(a);
	if (r == 0)
		r = main_setup(a);
	if (r < 0) {
		log_error("cannot start: %s", strerror(-r));
		main_teardown(a);
		return 1;
	}
	log_info("serving room %s on %s (provider %s, model %s, approval %s; "
	    "keys from %s; uid %u, process %sdumpable)", a->room, a->sock_path,
	    a->provider, a->model, a->approval, fds.keys >= 0 ? "atriumd" :
	    "the environment", (unsigned)geteuid(),
	    prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) ? "" : "not ");
	consent_resume(a);     /* before anyone can see the round as open */
	if (fds.ready >= 0) {
		if (write_all(fds.ready, "ready\n", 6) < 0)
			log_warn("could not write to the ready fd");
		close(fds.ready);
	}
	exec_recover(a);
	file_requests_recover(a);
	turn_resume(a);
	r = loop_run(a->loop);
	main_teardown(a);
	return r < 0 ? 1 : a->exit_code;
}
