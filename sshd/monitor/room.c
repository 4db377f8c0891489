/*
 * room.c: start, watch and stop each room's atrium-fs and atrium-agent
 * (room.h).  Called by monitor_loop.c (child exits, ticks, shutdown) and
 * by monitor.c's use requests (rooms_use).
 *
 * Invariants: a room's children are only ever started from ROOM_COLD or
 * ROOM_RETRY (one atrium-fs per workspace.db, one atrium-agent per room.db);
 * every started child is reaped through rooms_child_exited; a room in
 * ROOM_READY has both children running and ready.  Children get
 * PR_SET_PDEATHSIG so they go when atriumd goes, and only fds 0-3 (the
 * ready pipe is 3), plus, for atrium-agent, fd 4: a pipe holding the API
 * keys (keys.h), so that no key is in any child's environment or argv;
 * on a cluster's host fd 5, the room's fence page, to both writers, and
 * with --s3 fd 6, the write end of the room's stream to its
 * atrium-replicate (room_stream.c makes that one and the restore, and
 * this file reaps them: a streamed room's writers start only once the
 * shipper is ready, and its end stops the room).  A room whose shipper
 * ended before it stored every commit keeps its home here until a
 * finishing run stores them (room_keep_unstored): no other host may
 * start it from a store that lacks an acknowledged write.
 *
 * Nothing here waits for a child: fusermount3 too (a stale mount when
 * atriumd is not root) is reaped through rooms_child_exited, and a mount
 * that has to wait for it waits in ROOM_RETRY.
 */
#include "room.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access_record.h"
#include "keys.h"
#include "log.h"
#include "protocol.h"
#include "room_ids.h"
#include "room_stream.h"
#include "sandbox.h"
#include "setup.h"
#include "util.h"

#define ROOM_MOUNT_WAIT_MS	15000	/* atrium-fs mount to "ready" */
#define ROOM_AGENT_WAIT_MS	15000	/* atrium-agent to "ready" */
#define ROOM_STOP_WAIT_MS	5000	/* SIGTERM to SIGKILL */
#define ROOM_MOUNT_TRIES	25	/* DB still locked by a dying atrium-fs */
#define ROOM_RETRY_MS		200
#define ROOM_FAILED_HOLD_MS	2000	/* a failed room is not retried sooner */
#define ROOM_MAX_RESTARTS	5	/* abnormal agent exits per window */
#define ROOM_RESTART_WINDOW_MS	60000
#define ROOM_MAX_ARGS		256	/* the agent's argv: every setting */
#define ROOM_READY_FD		3	/* a child's ready pipe */
#define ROOM_KEYS_FD		4	/* atrium-agent's keys channel */
#define ROOM_FENCE_FD		5	/* the room's fence page (--cluster) */
#define ROOM_REPL_FD		6	/* its stream to atrium-replicate (--s3) */
#define ROOM_CHILD_FDS		4	/* fds 3 to 6 */
#define ROOM_SHIPPER_WAIT_MS	30000	/* atrium-replicate run to "ready":
					 * it uploads a snapshot first */
#define ROOM_STR_(x)		#x
#define ROOM_STR(x)		ROOM_STR_(x)
#define ROOM_WHY_SHOWN_MS	5000	/* a chat is told why the agent went */
#define ROOM_FINISH_WAIT_MS	15000	/* a finishing run of the shipper */
#define ROOM_FINISH_RETRY_MS	5000	/* between finishing runs */

static void room_mount(struct room *r);
static void room_files_step(struct room *r);
static void room_ship(struct room *r);
static void room_check_stopped(struct room *r);
static void room_stop(struct room *r);
static void room_remove(struct room *r);
static void room_start(struct room *r);

/* Tell the owner a room's start settled, one way or the other. */
static void
room_changed(struct room *r)
{
	if (r->rs->changed)
		r->rs->changed(r->rs->changed_arg);
}

/* An empty set of rooms; cannot fail. */
void
rooms_init(struct rooms *rs, const struct config *cfg, struct loop *loop,
    const struct helpers *progs)
{
	memset(rs, 0, sizeof(*rs));
	rs->cfg = cfg;
	rs->loop = loop;
	rs->progs = *progs;
	snprintf(rs->data, sizeof(rs->data), "%s", cfg->data_dir);
}

void
rooms_set_keys(struct rooms *rs, const struct keys *keys)
{
	rs->keys = keys;
}

void
rooms_send_keys(struct rooms *rs)
{
	static const struct keys none;

	for (struct room *r = rs->list; r; r = r->next) {
		int e;

		if (r->agent.keys_fd < 0)
			continue;
		if ((e = keys_send(r->agent.keys_fd, rs->keys ? rs->keys :
		    &none)) < 0)
			log_warn("room %s: cannot send the new API key to its "
			    "agent (%s); it keeps the old one until it stops",
			    r->name, strerror(-e));
		else
			log_info("room %s: new API key sent to its agent",
			    r->name);
	}
}

/* Path of atrium-fs or atrium-agent (helpers.h). */
static void
room_bin(const struct rooms *rs, const char *prog, char *out, size_t len)
{
	snprintf(out, len, "%s", strcmp(prog, "atrium-agent") == 0 ?
	    rs->progs.agent : rs->progs.fs);
}

/* Forget a child's ready pipe. */
static void
room_child_close(struct room_child *c)
{
	loop_del(&c->w);
	if (c->ready_fd >= 0)
		close(c->ready_fd);
	c->ready_fd = -1;
	c->ready_len = 0;
}

/* The child is gone (or going): its keys' channel too. */
static void
room_child_gone(struct room_child *c)
{
	room_child_close(c);
	if (c->keys_fd >= 0)
		close(c->keys_fd);
	c->keys_fd = -1;
}

/* In the forked child: put fd at want (inheritable); -1 stays closed. */
static void
room_child_fd(int fd, int want)
{
	if (fd < 0)
		return;
	if (fd != want)
		dup2(fd, want);
	fcntl(want, F_SETFD, 0);
}

/* In the forked child: fds[i] becomes fd 3 + i (fd 3 the ready pipe, 4
 * the keys' channel, 5 the fence page, 6 the stream to atrium-replicate;
 * -1 leaves it closed), nothing else leaks. */
static void
room_child_exec(char *const argv[], const int fds[ROOM_CHILD_FDS])
{
	sigset_t none;
	int null = open("/dev/null", O_RDONLY), moved[ROOM_CHILD_FDS], top = 0;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (null >= 0)
		dup2(null, 0);
	dup2(2, 1);
	/* Above every target first, so that no dup2 overwrites another's
	 * source. */
	for (int i = 0; i < ROOM_CHILD_FDS; i++)
		moved[i] = fds[i] >= 0 ? fcntl(fds[i], F_DUPFD_CLOEXEC, 10) : -1;
	for (int i = 0; i < ROOM_CHILD_FDS; i++) {
		if (moved[i] >= 0) {
			room_child_fd(moved[i], ROOM_READY_FD + i);
			top = i + 1;
		} else {
			close(ROOM_READY_FD + i);
		}
	}
	close_range(ROOM_READY_FD + top, ~0U, 0);
	execv(argv[0], argv);
	fprintf(stderr, "atriumd: cannot run %s: %s\n", argv[0],
	    strerror(errno));
	_exit(127);
}

static void room_ready_cb(struct watch *w, int revents);

/* Start a child; with want_ready it gets a ready pipe as fd 3, and with
 * keys_r >= 0 that fd (the keys' channel) as fd 4 (the caller closes
 * it); atrium-fs and atrium-agent on a cluster's host get the room's
 * fence page as fd 5.  0 or -errno (logged). */
static int
room_spawn(struct room *r, struct room_child *c, char *const argv[],
    int want_ready, int keys_r)
{
	int p[2] = { -1, -1 }, fence = -1, fds[ROOM_CHILD_FDS];
	pid_t pid;

	/* A room's writers on a cluster's host get its fence page; a host
	 * that does not hold the room (any more) starts neither. */
	if ((c == &r->fs || c == &r->agent) && r->rs->fence_fd &&
	    (fence = r->rs->fence_fd(r->rs->cluster_arg, r->name)) < 0) {
		log_warn("room %s: not starting %s: this host does not hold "
		    "the room in the cluster now", r->name, c->what);
		return fence;
	}
	if (want_ready && pipe2(p, O_CLOEXEC) < 0) {
		log_error("room %s: pipe: %s", r->name, strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		log_error("room %s: fork: %s", r->name, strerror(e));
		if (p[0] >= 0) {
			close(p[0]);
			close(p[1]);
		}
		return -e;
	}
	if (pid == 0) {
		fds[0] = p[1];
		fds[1] = keys_r;
		fds[2] = fence;
		fds[3] = c == &r->agent ? r->repl_w[0] : c == &r->fs ?
		    r->repl_w[1] : -1;
		room_child_exec(argv, fds);
	}
	c->pid = pid;
	c->ready_len = 0;
	c->ready_fd = -1;
	if (want_ready) {
		close(p[1]);
		c->ready_fd = p[0];
		fd_set_nonblock(p[0], 1);
		loop_add(r->rs->loop, &c->w, p[0], POLLIN, room_ready_cb, r);
	}
	log_info("room %s: started %s (pid %d)", r->name, c->what, (int)pid);
	return 0;
}

/* Record why the start failed and stop what runs. */
static void
room_fail(struct room *r, const char *fmt, const char *detail)
{
	snprintf(r->error, sizeof(r->error), fmt, detail);
	log_error("room %s: %s", r->name, r->error);
	r->failed = 1;
	r->failed_ms = time_mono_ms();
	r->restart = 0;
	room_stop(r);
	room_changed(r);
}

/* The first fusermount3 that exists, or NULL. */
static const char *
room_fusermount_path(void)
{
	static const char *const paths[] = { "/usr/bin/fusermount3",
	    "/bin/fusermount3" };

	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

/* Start fusermount3 -u -z PATH, for when atriumd is not root; its exit
 * comes through rooms_child_exited (room_umount_exited), so the loop never
 * waits for it.  0 or -errno (logged). */
static int
room_fusermount(struct room *r, const char *path)
{
	const char *prog = room_fusermount_path();
	char *argv[] = { (char *)prog, "-u", "-z", (char *)path, NULL };

	if (!prog) {
		log_warn("room %s: cannot unmount %s: fusermount3 is not "
		    "installed (apt-get install fuse3)", r->name, path);
		return -ENOENT;
	}
	return room_spawn(r, &r->umount, argv, 0, -1);
}

/* Lazily unmount a stale mount left at RUN/workspace (a crashed atrium-fs
 * or atriumd); quiet when nothing is mounted.  1 while an unmount by
 * fusermount3 is under way (wait for room_umount_exited), else 0. */
static int
room_unmount_stale(struct room *r)
{
	char mnt[PATH_MAX + 128];
	struct stat st, parent;

	if (r->umount.pid > 0)
		return 1;
	snprintf(mnt, sizeof(mnt), "%s/%s", r->run, WORKSPACE_DIR_NAME);
	if (stat(mnt, &st) == 0 && stat(r->run, &parent) == 0 &&
	    st.st_dev == parent.st_dev)
		return 0;
	if (umount2(mnt, MNT_DETACH) == 0)
		log_info("room %s: unmounted a stale mount at %s", r->name,
		    mnt);
	else if (errno == EPERM)
		return room_fusermount(r, mnt) == 0;
	else if (errno != EINVAL && errno != ENOENT)
		log_warn("room %s: cannot unmount %s: %s", r->name, mnt,
		    strerror(errno));
	return 0;
}

/* Start atrium-fs mount, with the workspace quota (0: none); the next
 * step comes with its ready line. */
static void
room_mount(struct room *r)
{
	char prog[PATH_MAX + 128], db[PATH_MAX + 128], mnt[PATH_MAX + 128];
	char opts[192];
	char *argv[] = { prog, "mount", "-f", "--ready-fd", "3", "-o", opts, db,
	    mnt, NULL };

	room_bin(r->rs, "atrium-fs", prog, sizeof(prog));
	/* run_as: the daemon serves the room's commands' requests as the
	 * room's uid, with no capability (fs/daemon/mount_confine.c);
	 * control_uid: the room's agent, which runs as that uid too, asks for
	 * snapshots on the control socket. */
	snprintf(opts, sizeof(opts), "quota=%lld,quota_inodes=%lld,"
	    "run_as=%u:%u,control_uid=%u%s%s", r->rs->cfg->quota,
	    r->rs->cfg->quota_inodes, (unsigned)r->ids.uid,
	    (unsigned)r->ids.gid, (unsigned)r->ids.uid,
	    r->rs->fence_fd ? ",fence_fd=" ROOM_STR(ROOM_FENCE_FD) : "",
	    r->repl_w[1] >= 0 ? ",replicate_fd=" ROOM_STR(ROOM_REPL_FD) : "");
	snprintf(db, sizeof(db), "%s/%s", r->dir, WORKSPACE_DB_NAME);
	snprintf(mnt, sizeof(mnt), "%s/%s", r->run, WORKSPACE_DIR_NAME);
	if (room_unmount_stale(r)) {
		/* fusermount3 runs: mount when it has ended (or at the
		 * deadline, which gives up once the tries are used). */
		if (++r->mount_tries > ROOM_MOUNT_TRIES) {
			room_fail(r, "the stale mount of the workspace could not "
			    "be removed%s; see atriumd's log", "");
			return;
		}
		r->state = ROOM_RETRY;
		r->deadline_ms = time_mono_ms() + ROOM_MOUNT_WAIT_MS;
		return;
	}
	mkdir(mnt, 0755);
	r->mount_tries++;
	r->state = ROOM_MOUNTING;
	r->deadline_ms = time_mono_ms() + ROOM_MOUNT_WAIT_MS;
	if (room_spawn(r, &r->fs, argv, 1, -1) < 0)
		room_fail(r, "cannot start atrium-fs%s", "");
}

/* The agent's argv as it is built; full once a pair did not fit. */
struct room_argv {
	char *v[ROOM_MAX_ARGS];
	size_t n;
	int failed;		/* a pair did not fit, or out of memory */
};

/* Add "--key value" to a struct room_argv.  A setting is never dropped
 * silently: one that cannot be added fails the agent's start. */
static void
room_arg_pair(const char *key, const char *value, void *arg)
{
	struct room_argv *a = arg;

	if (a->n + 3 > ROOM_MAX_ARGS) {
		a->failed = 1;
		return;
	}
	if (asprintf(&a->v[a->n], "--%s", key) < 0) {
		a->v[a->n] = NULL;
		a->failed = 1;
		return;
	}
	if (!(a->v[a->n + 1] = strdup(value))) {
		free(a->v[a->n]);
		a->v[a->n] = NULL;
		a->failed = 1;
		return;
	}
	a->n += 2;
}

/* Start atrium-agent with the room's dirs, every setting and the keys'
 * channel. */
static void
room_start_agent(struct room *r)
{
	static const struct keys none;
	struct room_argv *args = calloc(1, sizeof(*args));
	char **argv = args ? args->v : NULL, fd[16];
	char prog[PATH_MAX + 128];
	int rc, keys_r, keys_mine = -1;

	if (!args) {
		room_fail(r, "cannot start atrium-agent%s", ": out of memory");
		return;
	}
	room_bin(r->rs, "atrium-agent", prog, sizeof(prog));
	if (!(argv[0] = strdup(prog)))
		args->failed = 1;
	args->n = 1;
	room_arg_pair("room-dir", r->dir, args);
	room_arg_pair("run-dir", r->run, args);
	snprintf(fd, sizeof(fd), "%d", ROOM_READY_FD);
	room_arg_pair("ready-fd", fd, args);
	snprintf(fd, sizeof(fd), "%d", ROOM_KEYS_FD);
	room_arg_pair("keys-fd", fd, args);
	if (r->rs->fence_fd)
		room_arg_pair("fence-fd", ROOM_STR(ROOM_FENCE_FD), args);
	if (r->repl_w[0] >= 0)
		room_arg_pair("replicate-fd", ROOM_STR(ROOM_REPL_FD), args);
	config_each(r->rs->cfg, room_arg_pair, args);
	if (args->failed) {
		for (size_t i = 0; i < args->n; i++)
			free(argv[i]);
		free(args);
		room_fail(r, "cannot start atrium-agent%s", ": its settings "
		    "do not fit its command line (out of memory, or more "
		    "than ROOM_MAX_ARGS)");
		return;
	}
	r->state = ROOM_AGENT;
	r->deadline_ms = time_mono_ms() + ROOM_AGENT_WAIT_MS;
	keys_r = keys_channel(r->rs->keys ? r->rs->keys : &none, &keys_mine);
	if (keys_r < 0)
		log_error("room %s: cannot make the keys' channel: %s",
		    r->name, strerror(-keys_r));
	rc = keys_r >= 0 ? room_spawn(r, &r->agent, argv, 1, keys_r) : -ENOMEM;
	if (keys_r >= 0)
		close(keys_r);
	if (r->agent.keys_fd >= 0)
		close(r->agent.keys_fd);
	r->agent.keys_fd = rc == 0 ? keys_mine : -1;
	if (rc != 0 && keys_mine >= 0)
		close(keys_mine);
	for (size_t i = 0; i < args->n; i++)
		free(argv[i]);
	free(args);
	if (rc < 0)
		room_fail(r, "cannot start atrium-agent%s", "");
}

/* Run argv (atrium-fs mkfs or reown) as the room's step before its mount;
 * room_mkfs_exited goes on to the mount when it ends. */
static void
room_fs_step(struct room *r, char *const argv[])
{
	r->state = ROOM_MKFS;
	r->deadline_ms = 0;
	if (room_spawn(r, &r->mkfs, argv, 0, -1) < 0)
		room_fail(r, "cannot start atrium-fs %s", argv[1]);
}

/* A room that just got a uid of its own (room_ids_unshare) gives its
 * workspace's files to it before the mount: `atrium-fs reown`, in the
 * mkfs step's place (room_mkfs_exited goes on to the mount).  1 when it
 * started (or failed the room), 0 when there is nothing to give. */
static int
room_reown(struct room *r, const char *db)
{
	char prog[PATH_MAX + 128], from[32], to[32];
	char *argv[] = { prog, "reown", (char *)db, from, to, NULL };
	struct room_ids old;

	if (room_ids_reown_from(r->dir, &old) < 0)
		return 0;
	room_bin(r->rs, "atrium-fs", prog, sizeof(prog));
	snprintf(from, sizeof(from), "%u:%u", (unsigned)old.uid,
	    (unsigned)old.gid);
	snprintf(to, sizeof(to), "%u:%u", (unsigned)r->ids.uid,
	    (unsigned)r->ids.gid);
	room_fs_step(r, argv);
	return 1;
}

/* A room made now (no room.db yet) gets its access record at once, as it
 * is until its agent reports: open, no owner (access_record.h).  Its
 * room.db will be the agent's, the room's uid's, which the monitor never
 * reads, so a room with a room.db and no record would otherwise be
 * refused (failing closed) until the report came. */
static void
room_record_new(struct room *r)
{
	char path[sizeof(r->dir) + sizeof(ROOM_DB_NAME) + 1];
	struct access_list l;

	snprintf(path, sizeof(path), "%s/%s", r->dir, ROOM_DB_NAME);
	if (access(path, F_OK) == 0 || errno != ENOENT ||
	    access_record_read(r->dir, &l) != -ENOENT)
		return;
	access_list_init(&l);
	access_record_write(r->dir, &l);
}

/* Decide the room's sandbox identity (room_ids.h), then make its
 * directories with it: DATA/run/ROOM is root's and the room's group's, so
 * no other room's uid may pass.  0, or -1 with the room failed. */
static int
room_prepare(struct room *r)
{
	char rooms_dir[PATH_MAX + 16], why[224];
	struct room_ids shared;
	int rc;

	snprintf(rooms_dir, sizeof(rooms_dir), "%s/rooms", r->rs->data);
	if (room_ids_assign(rooms_dir, r->name, r->rs->cfg, &r->ids, why,
	    sizeof(why)) < 0) {
		room_fail(r, "%s", why);
		return -1;
	}
	shared = r->ids;
	if ((rc = room_ids_unshare(rooms_dir, r->name, r->rs->cfg, &r->ids,
	    why, sizeof(why))) < 0) {
		room_fail(r, "%s", why);
		return -1;
	}
	if (rc > 0)
		log_info("room %s: gets a sandbox uid of its own, %u, instead of "
		    "the %u all rooms once shared", r->name, (unsigned)r->ids.uid,
		    (unsigned)shared.uid);
	/* Both root's and the room's group's, 0710: its agent, which runs
	 * as the room's uid, reaches its files; no other room's uid may. */
	if ((rc = setup_run_dir(r->dir, r->ids.gid, SETUP_RUN_MODE)) < 0 ||
	    (rc = setup_run_dir(r->run, r->ids.gid, SETUP_RUN_MODE)) < 0) {
		room_fail(r, "cannot make the room's directories: %s",
		    strerror(-rc));
		return -1;
	}
	if ((rc = sandbox_write_identity(r->run, r->ids.uid, r->ids.gid)) < 0)
		log_warn("room %s: cannot write the sandbox identity: %s",
		    r->name, strerror(-rc));
	room_record_new(r);
	return 0;
}

/* The room as room_stream.c needs it. */
static void
room_stream_of(const struct room *r, struct room_stream_room *rr)
{
	*rr = (struct room_stream_room){ r->name, r->dir, r->run, r->ids.uid,
	    r->ids.gid, r->epoch };
}

/* Close the monitor's ends of the streams: atrium-replicate sees them
 * end once the writers are gone too, stores what is left, and exits. */
static void
room_repl_close(struct room *r)
{
	for (int i = 0; i < 2; i++) {
		if (r->repl_w[i] >= 0)
			close(r->repl_w[i]);
		r->repl_w[i] = -1;
	}
}

/* --s3: start atrium-replicate run; its ready line starts the mount
 * (room_child_ready).  Without --s3: the mount. */
static void
room_ship(struct room *r)
{
	struct room_stream_room rr;
	int ready;
	pid_t pid;

	if (!r->rs->stream) {
		room_mount(r);
		return;
	}
	room_repl_close(r);
	room_stream_of(r, &rr);
	r->repl_ready = 0;
	if ((pid = room_stream_run(r->rs->stream, &rr, &ready, r->repl_w)) < 0) {
		room_fail(r, "cannot start atrium-replicate%s", "");
		return;
	}
	r->repl.pid = pid;
	r->repl.ready_fd = ready;
	r->repl.ready_len = 0;
	fd_set_nonblock(ready, 1);
	loop_add(r->rs->loop, &r->repl.w, ready, POLLIN, room_ready_cb, r);
	r->state = ROOM_SHIPPER;
	r->deadline_ms = time_mono_ms() + ROOM_SHIPPER_WAIT_MS;
	log_info("room %s: started atrium-replicate (pid %d, epoch %lld)",
	    r->name, (int)pid, (long long)r->epoch);
}

/* --s3, at each start: the room's epoch from its fence page; when this
 * hold on the room is new, start atrium-replicate restore (the mkfs
 * slot; room_restore_exited goes on).  1 when that started or the room
 * failed, 0 to go on with the start. */
static int
room_restore(struct room *r)
{
	struct room_stream_room rr;
	int fence = r->rs->fence_fd(r->rs->cluster_arg, r->name);
	int64_t epoch = fence >= 0 ? room_stream_epoch(fence) : fence;
	pid_t pid;

	if (epoch < 0) {
		room_fail(r, "this host does not hold the room in the cluster "
		    "now%s", "");
		return 1;
	}
	room_stream_of(r, &rr);
	rr.epoch = r->epoch;	/* this host's last hold, for the restore */
	r->epoch = epoch;
	if (room_stream_prepare(&rr) < 0) {
		room_fail(r, "cannot make the room's directories%s", "");
		return 1;
	}
	if (r->restored_epoch == epoch)
		return 0;
	if ((pid = room_stream_restore(r->rs->stream, &rr)) < 0) {
		room_fail(r, "cannot start atrium-replicate restore%s", "");
		return 1;
	}
	r->mkfs.pid = pid;
	r->restoring = 1;
	r->restore_late = 0;
	r->state = ROOM_RESTORE;
	r->deadline_ms = time_mono_ms() +
	    r->rs->cfg->s3_restore_timeout * 1000LL;
	log_info("room %s: restoring from the object store (epoch %lld, "
	    "pid %d, at most %d s)", r->name, (long long)epoch, (int)pid,
	    r->rs->cfg->s3_restore_timeout);
	return 1;
}

/* The restore, or the check of what it staged, passed
 * --s3-restore-timeout (one budget for both): kill it, and refuse the
 * room now with the reason.  What it staged is removed once it is reaped
 * (room_mkfs_exited), and the room, failed, gives its home up once it
 * has stopped: rather than hold a room nobody can use while the store
 * does not answer, its next use claims it anew, here or on a host that
 * reaches the store better, and restores it again. */
static void
room_restore_late(struct room *r)
{
	int secs = r->rs->cfg->s3_restore_timeout;
	int checking = r->state == ROOM_FSCK;
	char why[sizeof(r->error)];

	r->deadline_ms = 0;
	r->restore_late = 1;
	log_warn("room %s: %s (pid %d) did not end within %d s of the "
	    "restore's start (--s3-restore-timeout); killing it", r->name,
	    checking ? "atrium-fs fsck of the restored workspace" :
	    "atrium-replicate restore", (int)r->mkfs.pid, secs);
	if (r->mkfs.pid > 0)
		kill(r->mkfs.pid, SIGKILL);
	snprintf(why, sizeof(why), "the room could not be restored from the "
	    "object store within %d s (%s); nothing of it was put in place, "
	    "and its next use tries again", secs, checking ? "checking the "
	    "restored workspace took too long" : "the store is slow or does "
	    "not answer");
	room_fail(r, "%s", why);
}

/* --s3: a restore exited 0.  What it staged is checked before anything
 * is put in place: atrium-fs fsck of the staged workspace.db, as the
 * room's uid, confined (room_stream_fsck), since its pages are the
 * store's bytes; a restore that staged nothing (no manifest) goes on. */
static void
room_restore_check(struct room *r)
{
	char prog[PATH_MAX + 128];
	struct room_stream_room rr;
	int staged;
	pid_t pid;

	room_stream_of(r, &rr);
	if ((staged = room_stream_staged(&rr)) < 0) {
		room_fail(r, "the restored databases cannot be read%s; see "
		    "atriumd's log", "");
		return;
	}
	if (staged == 0) {
		r->restored_epoch = r->epoch;
		room_files_step(r);
		return;
	}
	room_bin(r->rs, "atrium-fs", prog, sizeof(prog));
	if ((pid = room_stream_fsck(&rr, prog)) < 0) {
		room_stream_discard(&rr);
		room_fail(r, "cannot start atrium-fs fsck%s", "");
		return;
	}
	r->mkfs.pid = pid;
	r->restoring = 1;	/* a failed check's files are discarded */
	r->restore_late = 0;
	r->state = ROOM_FSCK;
	/* The restore's deadline covers its check too: a database crafted
	 * to be slow to check must not hold the room's start forever. */
	log_info("room %s: checking the restored workspace (atrium-fs fsck, "
	    "pid %d, as uid %u)", r->name, (int)pid, (unsigned)r->ids.uid);
}

/* The fsck of what a restore staged passed: put it in place. */
static void
room_restore_install(struct room *r)
{
	struct room_stream_room rr;

	room_stream_of(r, &rr);
	if (room_stream_install(&rr) < 0) {
		room_fail(r, "the restored databases could not be put in "
		    "place%s; see atriumd's log", "");
		return;
	}
	r->restored_epoch = r->epoch;
	room_files_step(r);
}

/* atrium-replicate restore, or the atrium-fs fsck after it, ended. */
static void
room_restore_exited(struct room *r, int status, const char *how)
{
	int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;

	if (r->rs->shutting_down)
		return;
	if (!ok && r->state == ROOM_RESTORE) {
		room_fail(r, "the room could not be restored from the object "
		    "store (atrium-replicate restore %s; its files here are "
		    "untouched); see atriumd's log", how);
		/* Its home given up as at the deadline (room_restore_late):
		 * the room stopped at once, with no child left to wait for. */
		if (r->state == ROOM_COLD && r->rs->stopped)
			r->rs->stopped(r->rs->cluster_arg, r->name);
		return;
	}
	if (!ok) {
		room_fail(r, "the workspace restored from the object store "
		    "fails atrium-fs fsck (%s); nothing of it was put in place "
		    "(its files here are untouched); see atriumd's log", how);
		return;
	}
	if (r->state == ROOM_FSCK)
		room_restore_install(r);
	else
		room_restore_check(r);
}

/* What an ended atrium-replicate run stored.  Exit 0: every commit (its
 * streams ended with the writers, or a finishing run's snapshot held
 * them all).  Exit 3: another host holds the room; this one may write
 * nothing more, so there is nothing to keep.  Anything else after the
 * writers may have committed (killed at the stop's deadline, crashed):
 * commits may be here that the store lacks, so the room is unstored and
 * its home is kept (room_keep_unstored). */
static void
room_repl_stored(struct room *r, int status, const char *how)
{
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;

	if (code == 0 || code == 3) {
		if (r->unstored && code == 0)
			log_info("room %s: the object store has every commit "
			    "now", r->name);
		r->unstored = 0;
		r->finish_tries = 0;
		return;
	}
	if (!r->repl_ready || r->unstored)
		return;		/* no writer ran under it; or known */
	r->unstored = 1;
	log_warn("room %s: atrium-replicate %s before it stored every "
	    "commit: this host keeps the room (its home and files) until "
	    "the object store has them", r->name, how);
}

/* --s3: atrium-replicate run with no writer (its streams end at once),
 * to store what a killed run did not: its start's snapshot of the
 * databases holds every commit, and it exits 0 once the manifest names
 * it.  At most ROOM_FINISH_WAIT_MS, as a stop's deadline. */
static void
room_finish(struct room *r)
{
	struct room_stream_room rr;
	int ready;
	pid_t pid;

	r->finish_tries++;
	r->repl_ready = 0;
	room_repl_close(r);
	room_stream_of(r, &rr);
	if ((pid = room_stream_run(r->rs->stream, &rr, &ready, r->repl_w)) < 0) {
		log_error("room %s: cannot start atrium-replicate to store its "
		    "last commits; trying again", r->name);
		r->deadline_ms = time_mono_ms() + ROOM_FINISH_RETRY_MS;
		return;
	}
	room_repl_close(r);
	r->repl.pid = pid;
	r->repl.ready_fd = ready;
	r->repl.ready_len = 0;
	fd_set_nonblock(ready, 1);
	loop_add(r->rs->loop, &r->repl.w, ready, POLLIN, room_ready_cb, r);
	r->state = ROOM_STOPPING;
	r->deadline_ms = time_mono_ms() + ROOM_FINISH_WAIT_MS;
	log_info("room %s: storing its last commits (atrium-replicate pid "
	    "%d, try %d)", r->name, (int)pid, r->finish_tries);
}

/* A room just stopped: when it is unstored (and not being deleted, nor
 * atriumd stopping, whose lease goes anyway), keep the home rather than
 * let another host restore a store that lacks commits.  The first time,
 * a finishing run at once; after one failed, the move (if any) is
 * called off, the room starts again here if a use waits, else another
 * finishing run comes after ROOM_FINISH_RETRY_MS (room_tick).  1 when
 * kept. */
static int
room_keep_unstored(struct room *r)
{
	char why[256];

	if (!r->unstored || !r->rs->stream || r->deleting ||
	    r->rs->shutting_down)
		return 0;
	if (r->rs->fence_fd && r->rs->fence_fd(r->rs->cluster_arg,
	    r->name) < 0) {
		/* Its hold ended (its lease, or another host took it): no
		 * run may store anything for it now. */
		log_warn("room %s: this host no longer holds it: its commits "
		    "the object store lacks cannot be stored", r->name);
		r->unstored = 0;
		r->finish_tries = 0;
		return 0;
	}
	if (r->finish_tries == 0) {
		room_finish(r);
		return 1;
	}
	snprintf(why, sizeof(why), "its last commits could not be stored in "
	    "the object store (see atriumd's log there)");
	log_warn("room %s: %s after %d finishing run(s); this host keeps "
	    "serving it", r->name, why, r->finish_tries);
	if (r->rs->kept)
		r->rs->kept(r->rs->cluster_arg, r->name, why);
	if (r->restart) {
		/* Its shipper's start stores everything again. */
		r->restart = 0;
		room_start(r);
		return 1;
	}
	r->deadline_ms = time_mono_ms() + ROOM_FINISH_RETRY_MS;
	return 1;
}

/* atrium-replicate run ended: the room's commits would fail without it,
 * so the room stops, with the reason. */
static void
room_repl_exited(struct room *r, int status, const char *how)
{
	room_child_close(&r->repl);
	room_repl_close(r);
	room_repl_stored(r, status, how);
	if (r->state == ROOM_STOPPING || r->state == ROOM_COLD) {
		room_check_stopped(r);
		return;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
		room_fail(r, "this host no longer holds the room in the "
		    "cluster (its epoch is over)%s", "");
	else if (r->state == ROOM_SHIPPER)
		room_fail(r, "the room's writes cannot be streamed to the "
		    "object store (atrium-replicate %s before it was ready: "
		    "check --s3, --s3-bucket and the credentials); see "
		    "atriumd's log", how);
	else
		room_fail(r, "streaming the room's writes to the object store "
		    "ended (atrium-replicate %s); see atriumd's log", how);
	room_check_stopped(r);
}

/* Make the room's directories and begin its start. */
static void
room_start(struct room *r)
{
	r->failed = 0;
	r->error[0] = '\0';
	r->mount_tries = 0;
	r->restart = 0;
	r->finish_tries = 0;
	r->started_ms = time_mono_ms();
	if (room_prepare(r) < 0)
		return;
	log_info("room %s: starting (uid %u, gid %u)", r->name,
	    (unsigned)r->ids.uid, (unsigned)r->ids.gid);
	if (r->rs->stream && room_restore(r))
		return;
	room_files_step(r);
}

/* The workspace's step before the mount: mkfs (none yet), reown (a room
 * that got a uid of its own), or none; then the shipper (--s3) and the
 * mount. */
static void
room_files_step(struct room *r)
{
	char db[PATH_MAX + 128], prog[PATH_MAX + 128], owner[64];
	char *argv[] = { prog, "mkfs", "--owner", owner, db, NULL };

	snprintf(db, sizeof(db), "%s/%s", r->dir, WORKSPACE_DB_NAME);
	if (access(db, F_OK) == 0) {
		if (!room_reown(r, db))
			room_ship(r);
		return;
	}
	room_bin(r->rs, "atrium-fs", prog, sizeof(prog));
	snprintf(owner, sizeof(owner), "%u:%u", (unsigned)r->ids.uid,
	    (unsigned)r->ids.gid);
	room_fs_step(r, argv);
}

/* SIGTERM whatever runs; the room goes cold when the last child exits. */
static void
room_stop(struct room *r)
{
	int any = 0;

	room_child_close(&r->fs);
	room_child_gone(&r->agent);
	room_child_close(&r->repl);
	room_repl_close(r);
	agentwatch_stop(&r->watch);
	fswatch_stop(&r->fsw);
	/* atrium-replicate is not signalled: its streams end with the
	 * writers, and it stores what they sent before it exits. */
	if (r->repl.pid > 0)
		any = 1;
	if (r->agent.pid > 0 && kill(r->agent.pid, SIGTERM) == 0)
		any = 1;
	if (r->fs.pid > 0 && kill(r->fs.pid, SIGTERM) == 0)
		any = 1;
	if (r->mkfs.pid > 0)
		any = 1;
	if (!any) {
		r->state = ROOM_COLD;
		r->deadline_ms = 0;
		return;
	}
	r->state = ROOM_STOPPING;
	r->deadline_ms = time_mono_ms() + ROOM_STOP_WAIT_MS;
}

/* A child sent its ready line: take the next step. */
static void
room_child_ready(struct room *r, struct room_child *c)
{
	long long ms = time_mono_ms() - r->started_ms;

	room_child_close(c);
	if (c == &r->fs && r->state == ROOM_MOUNTING) {
		log_info("room %s: workspace mounted (%lld ms)", r->name, ms);
		fswatch_start(&r->fsw, time_mono_ms());
		room_start_agent(r);
	} else if (c == &r->repl && r->state == ROOM_SHIPPER) {
		log_info("room %s: atrium-replicate ready (%lld ms)", r->name,
		    ms);
		/* Its snapshot holds whatever a killed run did not store;
		 * from now on the writers commit under it. */
		r->repl_ready = 1;
		r->unstored = 0;
		r->finish_tries = 0;
		room_mount(r);
	} else if (c == &r->agent && r->state == ROOM_AGENT) {
		log_info("room %s: ready (%lld ms)", r->name, ms);
		r->state = ROOM_READY;
		r->deadline_ms = 0;
		agentwatch_start(&r->watch, time_mono_ms());
		room_changed(r);
	}
}

/* Read a ready pipe; "ready\n" moves the room on. */
static void
room_ready_cb(struct watch *w, int revents)
{
	struct room *r = w->arg;
	struct room_child *c = w == &r->fs.w ? &r->fs : w == &r->repl.w ?
	    &r->repl : &r->agent;
	ssize_t n;

	(void)revents;
	n = read(c->ready_fd, c->ready + c->ready_len,
	    sizeof(c->ready) - 1 - c->ready_len);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* Closed without a line: its exit tells the story. */
		loop_want(w, 0);
		return;
	}
	c->ready_len += (size_t)n;
	c->ready[c->ready_len] = '\0';
	if (strchr(c->ready, '\n')) {
		if (strncmp(c->ready, "ready", 5) == 0)
			room_child_ready(r, c);
		else
			loop_want(w, 0);
	} else if (c->ready_len >= sizeof(c->ready) - 1) {
		loop_want(w, 0);
	}
}

/* Describe a wait status into out. */
static void
room_describe(int status, char *out, size_t len)
{
	if (WIFEXITED(status))
		snprintf(out, len, "exited %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(out, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(out, len, "ended (status %d)", status);
}

/* One path of a removal walk (depth first, physical, this filesystem
 * only): unlink or rmdir it. */
static int
room_remove_one(const char *path, const struct stat *sb, int flag,
    struct FTW *ftw)
{
	(void)sb; (void)ftw;
	if ((flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 &&
	    errno != ENOENT)
		log_warn("cannot remove %s: %s", path, strerror(errno));
	return 0;
}

/* Remove dir and what it holds, without crossing a mount point.  0, or
 * -errno when dir is still there. */
static int
room_remove_tree(const char *dir)
{
	struct stat sb;

	if (lstat(dir, &sb) < 0)
		return errno == ENOENT ? 0 : -errno;
	nftw(dir, room_remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return lstat(dir, &sb) == 0 ? -ENOTEMPTY : 0;
}

/* See room.h. */
int
rooms_remove_dirs(const char *data, const char *name)
{
	char dir[PATH_MAX + 80];
	int r, r2;

	snprintf(dir, sizeof(dir), "%s/rooms/%s", data, name);
	r = room_remove_tree(dir);
	snprintf(dir, sizeof(dir), "%s/run/%s", data, name);
	r2 = room_remove_tree(dir);
	if (r < 0 || r2 < 0)
		log_error("room %s: could not remove all of its files: %s (is "
		    "its workspace still mounted?)", name,
		    strerror(-(r < 0 ? r : r2)));
	return r < 0 ? r : r2;
}

/* The room is stopped: remove its directories and forget the deletion. */
static void
room_remove(struct room *r)
{
	if (rooms_remove_dirs(r->rs->data, r->name) == 0)
		log_info("room %s: deleted", r->name);
	r->deleting = 0;
	r->failed = 0;
	r->restart = 0;
}

/* A stopping room whose children are gone becomes cold (or starts again). */
static void
room_check_stopped(struct room *r)
{
	if (r->state != ROOM_STOPPING || r->fs.pid || r->agent.pid ||
	    r->mkfs.pid || r->repl.pid)
		return;
	room_unmount_stale(r);
	r->state = ROOM_COLD;
	r->deadline_ms = 0;
	log_info("room %s: stopped", r->name);
	if (room_keep_unstored(r))
		return;
	/* A streamed room that stopped with everything stored starts
	 * again only under a new hold (the next use claims it again, on
	 * whichever host it reaches, and restores what the store has,
	 * which is all the room wrote).  One with commits the store lacks
	 * was kept above, and starts here under the same hold: its new
	 * shipper's streams start past what the manifest names
	 * (cluster/replicate_ship.c). */
	if (r->restart && r->rs->stream) {
		log_info("room %s: starts again at its next use, under a new "
		    "hold in the cluster", r->name);
		r->restart = 0;
	}
	/* Not starting again here: a cluster's host gives the room's home
	 * up, so that another host may take it. */
	if (r->rs->stopped && (r->deleting || !r->restart ||
	    r->rs->shutting_down))
		r->rs->stopped(r->rs->cluster_arg, r->name);
	if (r->deleting)
		room_remove(r);
	else if (r->restart && !r->rs->shutting_down)
		room_start(r);
}

/* atrium-fs mkfs ended. */
static void
room_mkfs_exited(struct room *r, int status, const char *how)
{
	int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0, e;
	struct room_stream_room rr;

	/* A restore that failed, or was killed at its deadline, may have
	 * left files in the staging directory: never to be put in place. */
	if (r->restoring) {
		r->restoring = 0;
		if (!ok || r->restore_late) {
			room_stream_of(r, &rr);
			room_stream_discard(&rr);
		}
		ok = ok && !r->restore_late;
	}
	/* The child was mkfs, or reown (room_reown): a room whose files
	 * are its own now forgets the identity they had. */
	if (r->state == ROOM_MKFS && ok && (e = room_ids_reown_done(r->dir)) < 0)
		log_warn("room %s: cannot remove %s/%s: %s", r->name, r->dir,
		    ROOM_IDS_REOWN_FILE, strerror(-e));
	if (r->state == ROOM_RESTORE || r->state == ROOM_FSCK) {
		room_restore_exited(r, status, how);
		room_check_stopped(r);
		return;
	}
	if (r->state == ROOM_MKFS && ok && !r->rs->shutting_down)
		room_ship(r);
	else if (r->state == ROOM_MKFS)
		room_fail(r, "atrium-fs mkfs or reown %s; see atriumd's log",
		    how);
	room_check_stopped(r);
}

/* atrium-fs mount ended. */
static void
room_fs_exited(struct room *r, const char *how)
{
	room_child_close(&r->fs);
	room_unmount_stale(r);
	if (r->state == ROOM_MOUNTING && !r->rs->shutting_down &&
	    r->mount_tries < ROOM_MOUNT_TRIES) {
		/* Most likely the DB is still locked by a dying atrium-fs. */
		r->state = ROOM_RETRY;
		r->deadline_ms = time_mono_ms() + ROOM_RETRY_MS;
		return;
	}
	if (r->state == ROOM_MOUNTING) {
		room_fail(r, "atrium-fs mount %s; see atriumd's log", how);
		return;
	}
	if (r->state == ROOM_AGENT || r->state == ROOM_READY) {
		log_warn("room %s: atrium-fs %s; restarting the room", r->name,
		    how);
		room_stop(r);
		r->restart = 1;
	}
	room_check_stopped(r);
}

/* fusermount3 ended: a mount that waited for it goes on. */
static void
room_umount_exited(struct room *r, int status, const char *how)
{
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		log_warn("room %s: fusermount3 could not remove the stale mount "
		    "(%s)", r->name, how);
	else
		log_info("room %s: unmounted a stale mount (fusermount3)",
		    r->name);
	if (r->state == ROOM_RETRY && !r->rs->shutting_down) {
		r->deadline_ms = 0;
		room_mount(r);
	}
}

/* atrium-agent ended. */
static void
room_agent_exited(struct room *r, int status, const char *how)
{
	long long now = time_mono_ms();

	room_child_gone(&r->agent);
	agentwatch_stop(&r->watch);
	if (r->state == ROOM_AGENT) {
		room_fail(r, "atrium-agent %s before it was ready; see "
		    "atriumd's log", how);
	} else if (r->state == ROOM_READY && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0) {
		log_info("room %s: idle; stopping", r->name);
		room_stop(r);
	} else if (r->state == ROOM_READY) {
		if (now - r->restarts_since_ms > ROOM_RESTART_WINDOW_MS) {
			r->restarts_since_ms = now;
			r->agent_restarts = 0;
		}
		if (++r->agent_restarts > ROOM_MAX_RESTARTS) {
			room_fail(r, "atrium-agent keeps dying (%s); see "
			    "atriumd's log", how);
		} else {
			log_warn("room %s: atrium-agent %s; restarting it",
			    r->name, how);
			r->started_ms = now;
			room_start_agent(r);
		}
	}
	room_check_stopped(r);
}

/* See room.h. */
void
rooms_stop(struct rooms *rs, const char *name)
{
	struct room *r = rooms_find(rs, name);

	if (!r || r->state == ROOM_COLD)
		return;
	r->restart = 0;
	snprintf(r->error, sizeof(r->error), "this host's hold on the room "
	    "ended");
	if (r->state != ROOM_STOPPING)
		room_stop(r);
	room_check_stopped(r);
}

/* Route a reaped child to its room. */
int
rooms_child_exited(struct rooms *rs, pid_t pid, int status)
{
	char how[64];

	room_describe(status, how, sizeof(how));
	for (struct room *r = rs->list; r; r = r->next) {
		struct room_child *c = pid == r->fs.pid ? &r->fs :
		    pid == r->agent.pid ? &r->agent :
		    pid == r->mkfs.pid ? &r->mkfs :
		    pid == r->umount.pid ? &r->umount :
		    pid == r->repl.pid ? &r->repl : NULL;

		if (!c)
			continue;
		log_info("room %s: %s (pid %d) %s", r->name, c->what,
		    (int)pid, how);
		c->pid = 0;
		if (c == &r->mkfs)
			room_mkfs_exited(r, status, how);
		else if (c == &r->fs)
			room_fs_exited(r, how);
		else if (c == &r->umount)
			room_umount_exited(r, status, how);
		else if (c == &r->repl)
			room_repl_exited(r, status, how);
		else
			room_agent_exited(r, status, how);
		return 1;
	}
	return 0;
}

/* The room's agent reported its access list on the watchdog's connection
 * (agent/room_access_list.c: at each connection, after each change): checked
 * as any input, then recorded (access_record.h).  A room being deleted
 * keeps no record: its directory is going. */
static void
room_access_reported(void *arg, json_object *obj)
{
	struct room *r = arg;
	struct access_list l;

	if (r->deleting)
		return;
	if (access_record_parse(obj, &l) < 0) {
		log_warn("room %s: the agent reported an access list that is "
		    "not well formed; ignored", r->name);
		return;
	}
	if (access_record_write(r->dir, &l) > 0)
		log_info("room %s: access recorded: %s, owner %s, %d member(s)",
		    r->name, access_visibility_name(l.visibility),
		    l.owner[0] ? l.owner : "(none)", l.nmembers);
}

/* Make the record of a new room. */
static struct room *
room_new(struct rooms *rs, const char *name)
{
	struct room *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->rs = rs;
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->dir, sizeof(r->dir), "%s/rooms/%s", rs->data, name);
	snprintf(r->run, sizeof(r->run), "%s/run/%s", rs->data, name);
	r->fs.ready_fd = r->agent.ready_fd = r->mkfs.ready_fd = -1;
	r->umount.ready_fd = -1;
	r->fs.keys_fd = r->agent.keys_fd = r->mkfs.keys_fd = -1;
	r->umount.keys_fd = -1;
	r->repl.ready_fd = r->repl.keys_fd = -1;
	r->repl_w[0] = r->repl_w[1] = -1;
	r->repl.what = "atrium-replicate";
	agentwatch_init(&r->watch, room_access_reported, r);
	r->watch.totals = &rs->models;
	fswatch_init(&r->fsw, &rs->fsops, r->name);
	r->fs.what = "atrium-fs";
	r->agent.what = "atrium-agent";
	r->mkfs.what = "atrium-fs mkfs";
	r->umount.what = "fusermount3";
	r->next = rs->list;
	rs->list = r;
	return r;
}

/* See room.h. */
int
rooms_use(struct rooms *rs, const char *name, struct room **out)
{
	struct room *r;

	for (r = rs->list; r && strcmp(r->name, name) != 0; r = r->next)
		;
	if (!r && !(r = room_new(rs, name)))
		return -ENOMEM;
	*out = r;
	if (r->deleting) {
		snprintf(r->error, sizeof(r->error), "the room is being deleted");
		return -1;
	}
	if (r->state == ROOM_READY)
		return 1;
	if (r->failed && (r->state == ROOM_STOPPING ||
	    time_mono_ms() - r->failed_ms < ROOM_FAILED_HOLD_MS))
		return -1;
	if (rs->shutting_down) {
		snprintf(r->error, sizeof(r->error), "the server is stopping");
		return -1;
	}
	if (r->state == ROOM_COLD)
		room_start(r);
	else if (r->state == ROOM_STOPPING)
		r->restart = 1;
	return r->failed ? -1 : 0;
}

/* See room.h. */
struct room *
rooms_find(const struct rooms *rs, const char *name)
{
	struct room *r;

	for (r = rs->list; r && strcmp(r->name, name) != 0; r = r->next)
		;
	return r;
}

/* See room.h. */
int
rooms_running(const struct rooms *rs, const char *name)
{
	const struct room *r = rooms_find(rs, name);

	return r && r->state != ROOM_COLD;
}

/* See room.h. */
int
rooms_held(const struct rooms *rs, const char *name)
{
	const struct room *r = rooms_find(rs, name);

	return r && (r->state != ROOM_COLD || r->unstored);
}

/* See room.h. */
int
rooms_deleting(const struct rooms *rs, const char *name)
{
	const struct room *r = rooms_find(rs, name);

	return r && r->deleting;
}

/* See room.h. */
int
rooms_delete(struct rooms *rs, const char *name)
{
	struct room *r = rooms_find(rs, name);

	if (!r && !(r = room_new(rs, name)))
		return -ENOMEM;
	if (r->deleting)
		return -EALREADY;
	r->deleting = 1;
	r->restart = 0;
	log_info("room %s: deleting", r->name);
	if (r->state != ROOM_STOPPING)
		room_stop(r);
	if (r->state == ROOM_COLD)
		room_remove(r);
	return 0;
}

/* The agent answered nothing for the timeout: kill it; its exit restarts
 * it (room_agent_exited) and its turn resumes from room.db. */
static void
room_agent_hung(struct room *r)
{
	int secs = r->rs->cfg->agent_timeout;

	snprintf(r->agent_why, sizeof(r->agent_why), "stopped answering for "
	    "%d s and was restarted", secs);
	r->agent_why_ms = time_mono_ms();
	log_warn("room %s: atrium-agent (pid %d) has not answered for %d s "
	    "(--agent-timeout); killing it to restart it", r->name,
	    (int)r->agent.pid, secs);
	agentwatch_stop(&r->watch);
	if (r->agent.pid > 0)
		kill(r->agent.pid, SIGKILL);
}

/* See room.h. */
const char *
rooms_agent_why(const struct room *r)
{
	if (!r || !r->agent_why[0] ||
	    time_mono_ms() - r->agent_why_ms > ROOM_WHY_SHOWN_MS)
		return NULL;
	return r->agent_why;
}

/* Deadlines of one room, and its agent's watchdog. */
static void
room_tick(struct room *r, long long now)
{
	if (r->state == ROOM_READY && agentwatch_tick(&r->watch, r->rs->loop,
	    r->run, now, r->rs->cfg->agent_timeout * 1000LL))
		room_agent_hung(r);
	fswatch_tick(&r->fsw, r->rs->loop, r->dir, now);
	if (!r->deadline_ms || now < r->deadline_ms)
		return;
	switch (r->state) {
	case ROOM_RETRY:
		room_mount(r);
		break;
	case ROOM_MOUNTING:
		room_fail(r, "atrium-fs was not ready in time%s", "");
		break;
	case ROOM_AGENT:
		room_fail(r, "atrium-agent was not ready in time%s", "");
		break;
	case ROOM_SHIPPER:
		room_fail(r, "atrium-replicate was not ready in time%s", "");
		break;
	case ROOM_COLD:
		r->deadline_ms = 0;
		if (r->unstored && !r->rs->shutting_down)
			room_finish(r);
		break;
	case ROOM_RESTORE:
	case ROOM_FSCK:
		room_restore_late(r);
		break;
	case ROOM_STOPPING:
		if (r->agent.pid > 0)
			kill(r->agent.pid, SIGKILL);
		if (r->fs.pid > 0)
			kill(r->fs.pid, SIGKILL);
		if (r->mkfs.pid > 0)
			kill(r->mkfs.pid, SIGKILL);
		if (r->umount.pid > 0)
			kill(r->umount.pid, SIGKILL);
		if (r->repl.pid > 0)
			kill(r->repl.pid, SIGKILL);
		r->deadline_ms = 0;
		break;
	default:
		r->deadline_ms = 0;
	}
}

/* Ask the loop to wake for the room's next deadline and its watchdog. */
static void
room_wake(struct room *r)
{
	if (r->state == ROOM_READY)
		loop_wake_at(r->rs->loop, agentwatch_next(&r->watch,
		    r->rs->cfg->agent_timeout * 1000LL));
	loop_wake_at(r->rs->loop, fswatch_next(&r->fsw));
	loop_wake_at(r->rs->loop, r->deadline_ms);
}

/* Run the deadlines of every room. */
void
rooms_tick(struct rooms *rs)
{
	long long now = time_mono_ms();

	for (struct room *r = rs->list; r; r = r->next) {
		room_tick(r, now);
		room_wake(r);
	}
}

/* Stop every room; force sends SIGKILL to what is left. */
void
rooms_shutdown(struct rooms *rs, int force)
{
	rs->shutting_down = 1;
	for (struct room *r = rs->list; r; r = r->next) {
		r->restart = 0;
		if (force) {
			r->deadline_ms = 1;
			r->state = ROOM_STOPPING;
			room_tick(r, time_mono_ms());
		} else if (r->state != ROOM_COLD && r->state != ROOM_STOPPING) {
			room_stop(r);
		}
	}
}

/* 1 when no room has a child left. */
int
rooms_all_stopped(const struct rooms *rs)
{
	for (const struct room *r = rs->list; r; r = r->next)
		if (r->fs.pid || r->agent.pid || r->mkfs.pid || r->umount.pid ||
		    r->repl.pid)
			return 0;
	return 1;
}

/* Free every room, unmounting what is left. */
void
rooms_free(struct rooms *rs)
{
	while (rs->list) {
		struct room *r = rs->list;

		rs->list = r->next;
		room_child_close(&r->fs);
		room_child_gone(&r->agent);
		room_child_close(&r->repl);
		room_repl_close(r);
		agentwatch_stop(&r->watch);
		fswatch_stop(&r->fsw);
		room_unmount_stale(r);
		free(r);
	}
}
