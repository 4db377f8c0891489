/*
 * mount.c: `atrium-fs mount`: lock the database, open it, mount it, report
 * readiness, serve requests on several threads until unmounted, then close
 * cleanly.  Called by fs/fs_main.c.
 *
 * Order matters for the caller: everything that can fail (a missing
 * database, a second mount, a newer schema, a bad mount point) fails before
 * the calling process returns, with its message on the caller's stderr and a
 * non-zero exit status.  In the background the process forks first; the
 * child does all the work and tells the waiting parent through a pipe
 * whether the mount went live, so the SQLite connection and the flock are
 * never carried across a fork.
 *
 * Options of our own among the -o ones: no_writeback, quota=BYTES and
 * quota_inodes=N (fs/engine/quota.c), which are set before the first request,
 * control_uid=UID, the one uid besides root and the daemon's own that
 * the control socket serves (atriumd gives the room's, under which its
 * agent runs), and run_as=UID:GID, under which the process forks the
 * daemon first and stays as its root keeper, and the daemon gives up root
 * once mounted (mount_confine.h); replicate_fd=N, the descriptor
 * every commit is streamed to in a room of a cluster (walbuf.h).
 * fence_fd=N, on a host of a cluster:
 * the room's fence page (common/fence.h), mapped at once; every commit
 * to the database checks it (common/walbuf.h).
 *
 * The control socket (fs/daemon/control_socket.c) lives from just before the
 * mount is announced until the session loop ends.
 *
 * Signals: SIGTERM, SIGINT and SIGHUP end the session loop (libfuse's
 * handlers), after which the mount is removed and pending work committed.
 *
 * Threads: up to MOUNT_MAX_THREADS of libfuse's request workers, the
 * committer and the reclaimer (fs/engine/fs_int.h says what each may lock), all
 * on one malloc arena (mount_malloc_config), set before any of them starts.
 */
#include "config.h"
#include "control_socket.h"
#include "fence.h"
#include "fs.h"
#include "fuse_ops.h"
#include "log.h"
#include "mount.h"
#include "mount_confine.h"
#include "util.h"
#include "walbuf.h"
#include "walrec.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define MOUNT_COMMIT_MS 100
#define MOUNT_MAX_THREADS 16
#define MOUNT_GONE_TRIES 50	/* for a holder whose mount is gone: 1 s */
#define MOUNT_GONE_POLL_MS 20
#define MOUNT_OPTS_MAX 4096

/* What a mount holds while it lives. */
struct mount_state {
	struct fs *fs;
	struct fuse_ops_data ops;   /* the session's userdata */
	struct fuse_session *se;
	int lock_fd;
	int signals_set;
	int mounted;
	char dir[PATH_MAX];      /* absolute mount point */
	long long quota_bytes;   /* -o quota=, 0: none */
	long long quota_inodes;  /* -o quota_inodes=, 0: none */
	long long control_uid;   /* -o control_uid=, -1: none */
	int run_as;              /* -o run_as= given: serve as run_uid */
	uid_t run_uid;
	gid_t run_gid;
	int keeper_fd;           /* the keeper's socket (run_as), or -1 */
	char extra[MOUNT_OPTS_MAX];  /* libfuse's -o options, ",a,b" */
	char db[PATH_MAX];       /* the database, as this process reaches it */
};

/* Explain a failure to open db on stderr. */
static void
mount_open_error(const char *db, int r)
{
	if (r == -ENOENT)
		fprintf(stderr, "atrium-fs: %s does not exist; create it first "
		    "with: atrium-fs mkfs %s\n", db, db);
	else if (r == -EPROTO)
		fprintf(stderr, "atrium-fs: %s was written by a newer atrium-fs "
		    "(schema newer than version %d); upgrade atrium-fs to mount it\n",
		    db, FS_SCHEMA_VERSION);
	else if (r == -EINVAL)
		fprintf(stderr, "atrium-fs: %s is not an atrium-fs database; "
		    "check the path, or make one with: atrium-fs mkfs NEWFILE\n", db);
	else
		fprintf(stderr, "atrium-fs: cannot open %s: %s\n", db, strerror(-r));
}

/* Take the mount lock and open the database.  0 or -1 (reported). */
static int
mount_open(const struct mount_opts *o, struct mount_state *m)
{
	struct lockfile_holder h;
	int r;

	if (access(m->db, F_OK) < 0) {
		mount_open_error(o->db, -ENOENT);
		return -1;
	}
	r = lockfile_acquire(m->db, &m->lock_fd, &h);
	/* Right after `fusermount3 -u` the daemon may not yet have seen its
	 * mount end and said that it is closing (lockfile.c), which makes
	 * lockfile_acquire wait for it: give it that moment. */
	for (int i = 0; r == -EBUSY && i < MOUNT_GONE_TRIES &&
	    mount_holder_gone(&h); i++) {
		nanosleep(&(struct timespec){ 0, MOUNT_GONE_POLL_MS * 1000000L },
		    NULL);
		r = lockfile_acquire(m->db, &m->lock_fd, &h);
	}
	if (r == -EBUSY) {
		mount_holder_explain(o->db, &h);
		return -1;
	}
	if (r < 0) {
		fprintf(stderr, "atrium-fs: cannot lock %s-mount: %s; check that "
		    "its directory is writable\n", o->db, strerror(-r));
		return -1;
	}
	if ((r = fs_open(m->db, FS_OPEN_CLEAN_ORPHANS |
	    (m->run_as ? FS_OPEN_KEEP_WAL : 0), &m->fs)) < 0) {
		mount_open_error(o->db, r);
		return -1;
	}
	return 0;
}

/* -o replicate_fd=N (a room of a cluster): every commit of the
 * workspace goes to the open descriptor N as a record (walbuf.h), for
 * atrium-replicate.  1, or -1 (reported). */
static int
mount_replicate_opt(const char *tok)
{
	char *end;
	long fd;

	errno = 0;
	fd = strtol(tok + 13, &end, 10);
	if (errno || *end || end == tok + 13 || fd < 3 || fd > INT_MAX ||
	    fcntl((int)fd, F_GETFD) < 0) {
		fprintf(stderr, "atrium-fs: -o %s: want an open descriptor "
		    "above 2\n", tok);
		return -1;
	}
	/* A reader that is gone fails the commit (EPIPE), not the daemon;
	 * the descriptor is the daemon's alone. */
	signal(SIGPIPE, SIG_IGN);
	if (fd_set_cloexec((int)fd, 1) < 0)
		return -1;
	return walbuf_replicate((int)fd, WALREC_DB_WORKSPACE) < 0 ? -1 : 1;
}

/* -o fence_fd=N: map the room's fence page (fence.h), which every commit
 * of the writer then checks (walbuf.h).  1, or -1 (reported). */
static int
mount_fence_opt(const char *tok)
{
	const struct fence_page *f;
	char *end;
	long fd;

	errno = 0;
	fd = strtol(tok + 9, &end, 10);
	if (errno || *end || end == tok + 9 || fd < 3 || fd > 65535 ||
	    fence_map((int)fd, &f) < 0) {
		fprintf(stderr, "atrium-fs: -o %s: want the descriptor of a "
		    "fence page\n", tok);
		return -1;
	}
	walbuf_set_fence(f);
	close((int)fd);
	return 1;
}

/* Take tok when it is one of our own options (see the head): 1 when
 * taken, 0 when it is libfuse's, -1 when its value is bad (reported). */
static int
mount_own_opt(const char *tok, struct mount_state *m)
{
	long long *to = NULL;
	const char *v = NULL;

	if (strcmp(tok, "no_writeback") == 0) {
		m->ops.writeback = 0;
		return 1;
	}
	if (strncmp(tok, "control_uid=", 12) == 0) {
		char *end;

		errno = 0;
		m->control_uid = strtoll(tok + 12, &end, 10);
		if (errno || *end || end == tok + 12 || m->control_uid < 1 ||
		    m->control_uid >= (long long)UINT32_MAX) {
			fprintf(stderr, "atrium-fs: -o %s: want a uid other "
			    "than 0\n", tok);
			return -1;
		}
		return 1;
	}
	if (strncmp(tok, "replicate_fd=", 13) == 0)
		return mount_replicate_opt(tok);
	if (strncmp(tok, "fence_fd=", 9) == 0)
		return mount_fence_opt(tok);
	if (strncmp(tok, "run_as=", 7) == 0) {
		if (mount_confine_parse(tok + 7, &m->run_uid, &m->run_gid) < 0) {
			fprintf(stderr, "atrium-fs: -o %s: want UID:GID, neither "
			    "0\n", tok);
			return -1;
		}
		m->run_as = 1;
		return 1;
	}
	if (strncmp(tok, "quota=", 6) == 0)
		to = &m->quota_bytes, v = tok + 6;
	else if (strncmp(tok, "quota_inodes=", 13) == 0)
		to = &m->quota_inodes, v = tok + 13;
	else
		return 0;
	if (config_parse_size(v, to) < 0) {
		fprintf(stderr, "atrium-fs: -o %s: want a number, optionally with "
		    "a K, M, G or T suffix (0: no limit)\n", tok);
		return -1;
	}
	return 1;
}

/* Copy the comma-separated FUSE options in into out, less our own
 * (mount_own_opt).  0 or -1 (reported). */
static int
mount_split_opts(const char *in, char *out, size_t outlen,
    struct mount_state *m)
{
	char *copy, *tok, *save = NULL;
	size_t used = 0;
	int n;

	out[0] = '\0';
	if (!in || !*in)
		return 0;
	if (!(copy = strdup(in)))
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if ((n = mount_own_opt(tok, m)) != 0) {
			if (n < 0) {
				free(copy);
				return -1;
			}
			continue;
		}
		n = snprintf(out + used, outlen - used, ",%s", tok);
		if (n < 0 || (size_t)n >= outlen - used) {
			free(copy);
			fprintf(stderr, "atrium-fs: -o options too long\n");
			return -1;
		}
		used += (size_t)n;
	}
	free(copy);
	return 0;
}

/* 1 when dir is a FUSE mount whose daemon died (kill -9, a crash):
 * mounting on top would hide it, not repair it.  statfs always reaches
 * the daemon, where stat may be answered from the kernel's cache. */
static int
mount_point_is_stale(const char *dir)
{
	struct statfs sf;
	char path[PATH_MAX];

	if (!realpath(dir, path))
		return errno == ENOTCONN;
	return statfs(path, &sf) < 0 && errno == ENOTCONN;
}

/* Create the FUSE session with our fixed options plus o->fuse_opts, and
 * mount it.  0 or -1 (reported). */
static int
mount_session(const struct mount_opts *o, struct mount_state *m)
{
	char opts[MOUNT_OPTS_MAX];
	char *argv[] = { "atrium-fs", "-o", opts, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct stat st;
	int n;

	if (mount_point_is_stale(o->dir)) {
		fprintf(stderr, "atrium-fs: %s is a stale mount of a daemon "
		    "that is gone (transport endpoint not connected); unmount "
		    "it first with: fusermount3 -u %s\n", o->dir, o->dir);
		return -1;
	}
	if (!realpath(o->dir, m->dir) || stat(m->dir, &st) < 0 ||
	    !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "atrium-fs: mount point %s is not a directory; "
		    "create it with: mkdir -p %s\n", o->dir, o->dir);
		return -1;
	}
	if ((n = fs_quota_set(m->fs, (uint64_t)m->quota_bytes,
	    (uint64_t)m->quota_inodes)) < 0) {
		fprintf(stderr, "atrium-fs: cannot count %s for its quota: %s\n",
		    o->db, strerror(-n));
		return -1;
	}
	n = snprintf(opts, sizeof(opts), "allow_other,default_permissions,"
	    "fsname=atrium-fs,subtype=atrium-fs%s", m->extra);
	if (n < 0 || (size_t)n >= sizeof(opts)) {
		fprintf(stderr, "atrium-fs: -o options too long\n");
		return -1;
	}
	m->ops.fs = m->fs;
	m->se = fuse_session_new(&args, &fuse_ops_table, sizeof(fuse_ops_table),
	    &m->ops);
	fuse_opt_free_args(&args);
	m->ops.se = m->se;
	if (!m->se) {
		fprintf(stderr, "atrium-fs: bad FUSE options \"%s\"; see "
		    "atrium-fs(8)\n", opts);
		return -1;
	}
	if (fuse_set_signal_handlers(m->se) == 0)
		m->signals_set = 1;
	if (fuse_session_mount(m->se, m->dir) != 0) {
		fprintf(stderr, "atrium-fs: cannot mount %s at %s; check that "
		    "/dev/fuse exists and that you are root\n", o->db, m->dir);
		return -1;
	}
	m->mounted = 1;
	return 0;
}

void
mount_detach_stdio(void)
{
	struct stat st;
	int null;

	if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		return;
	dup2(null, STDIN_FILENO);
	dup2(null, STDOUT_FILENO);
	if (fstat(STDERR_FILENO, &st) < 0 ||
	    !(S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)))
		dup2(null, STDERR_FILENO);
	if (null > STDERR_FILENO)
		close(null);
}

/* Tell the waiters (ready fd, parent) the mount is live; detach stdio when
 * in the background. */
static void
mount_announce(const struct mount_opts *o, int status_fd)
{
	if (o->ready_fd >= 0) {
		if (write(o->ready_fd, "ready\n", 6) != 6)
			log_warn("writing to --ready-fd %d: %s", o->ready_fd,
			    strerror(errno));
		close(o->ready_fd);
	}
	if (status_fd >= 0) {
		if (write(status_fd, "", 1) != 1) {
			/* The parent is gone; nothing to tell. */
		}
		close(status_fd);
	}
	if (!o->foreground)
		mount_detach_stdio();
}

/* Serve requests until the session ends.  0 or -1. */
static int
mount_loop(struct mount_state *m)
{
	struct fuse_loop_config *cfg = fuse_loop_cfg_create();
	int r;

	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, MOUNT_MAX_THREADS);
	if (fs_committer_start(m->fs, MOUNT_COMMIT_MS) < 0)
		log_warn("no committer thread: writes commit only as they go");
	if (fs_reclaimer_start(m->fs, 1) < 0)
		log_warn("no reclaimer thread: deleted files are freed at unmount "
		    "and at the next mount");
	r = fuse_session_loop_mt(m->se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return r < 0 ? -1 : 0;
}

/* Undo whatever of the mount exists.  The mount lock stays held: the
 * process ends right after, and the kernel drops its flock only once it
 * has freed the daemon's memory, so a mount that waits for this daemon
 * starts when it is gone, never beside it (two daemons' page caches at
 * once).  Its record, "closing", is left for the next holder to rewrite. */
static void
mount_teardown(struct mount_state *m)
{
	int r;

	/* Under run_as only the keeper, root, can take the mount down. */
	if (m->se && m->mounted && m->keeper_fd >= 0) {
		if ((r = mount_keeper_unmount(m->keeper_fd)) < 0)
			log_warn("asking the keeper to unmount %s: %s", m->dir,
			    strerror(-r));
		m->mounted = 0;
	}
	if (m->se && m->mounted)
		fuse_session_unmount(m->se);
	if (m->se && m->signals_set)
		fuse_remove_signal_handlers(m->se);
	if (m->se)
		fuse_session_destroy(m->se);
	fs_close(m->fs);
}

/* One malloc arena for all of the daemon's threads, set before any
 * starts.  glibc gives threads arenas of their own, and such an arena
 * grows by one mprotect call per page that SQLite's page cache adds:
 * filling the writer's cache (the first 64 MiB of a big write after a
 * mount, or a few thousand small creates) made 13,000 mprotect calls,
 * about a tenth of the daemon's time in that phase, where the main arena
 * grows by brk 128 KiB at a time (500 calls).  The changes are serialised
 * by fs->lock anyway, so the arena's own lock costs little, and one arena
 * keeps less free memory than sixteen. */
static void
mount_malloc_config(void)
{
	if (mallopt(M_ARENA_MAX, 1) != 1)
		log_warn("mallopt(M_ARENA_MAX, 1) failed: threads keep malloc "
		    "arenas of their own");
}

/* Let the kernel read a file ahead by FS_MAX_IO, as init asked: a FUSE
 * mount's read-ahead is capped by its backing device's, 128 KiB by
 * default, so a sequential read came in requests of 128 to 256 KiB, each
 * a round trip and a read transaction, four or more per MiB where one
 * does.  Only a speed matter: a failure (a read-only /sys) is logged. */
static void
mount_set_readahead(unsigned major, unsigned minor)
{
	char path[64], val[16];
	int fd, n, ok;

	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
	    major, minor);
	n = snprintf(val, sizeof(val), "%u\n", FS_MAX_IO >> 10);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
		log_info("%s: %s: reads ahead by the default", path,
		    strerror(errno));
		return;
	}
	ok = write(fd, val, (size_t)n) == n;
	if (!ok)
		log_info("%s: %s: reads ahead by the default", path,
		    strerror(errno));
	close(fd);
}

/* After the mount is made: tell the keeper, record the mount, set its
 * read-ahead, bind the control socket, give up root (run_as), and start
 * the control socket's thread, in that order: Landlock holds only the
 * threads made after it.  The control socket, or NULL; -1 in *failed
 * when the mount must end. */
static struct control *
mount_settle(const struct mount_opts *o, struct mount_state *m, int *failed)
{
	struct control *ctl;
	unsigned major = 0, minor = 0;
	int dev_known, r;

	*failed = 0;
	if (m->keeper_fd >= 0 && (r = mount_keeper_mounted(m->keeper_fd)) < 0) {
		log_error("telling the mount's keeper: %s", strerror(-r));
		*failed = 1;
		return NULL;
	}
	/* The device lets a refused mount tell whether this mount still
	 * exists (mount_holder.c); the mount table, not stat, which would
	 * wait on this very daemon. */
	dev_known = mount_holder_dev(m->dir, &major, &minor) == 0;
	if ((r = lockfile_record(m->lock_fd, m->dir, dev_known, major,
	    minor)) < 0)
		log_warn("recording the mount in %s-mount: %s", o->db,
		    strerror(-r));
	if (dev_known)
		mount_set_readahead(major, minor);
	/* Before the mount is announced, so that a snapshot asked for right
	 * after finds the socket. */
	ctl = control_open(m->db, m->fs, m->se, m->control_uid > 0 ?
	    (uid_t)m->control_uid : (uid_t)-1);
	if (m->run_as && mount_confine_drop(m->db, m->run_uid,
	    m->run_gid) < 0) {
		control_stop(ctl);
		*failed = 1;
		return NULL;
	}
	if (m->run_as)
		log_info("serving as uid %u, gid %u, with no capability",
		    (unsigned)geteuid(), (unsigned)getegid());
	if (ctl && control_run(ctl) < 0)
		ctl = NULL;
	return ctl;
}

/* The mount of m->db, in this process; status_fd (or -1) hears "live".
 * The exit status. */
static int
mount_serve_db(const struct mount_opts *o, struct mount_state *m,
    int status_fd)
{
	struct control *ctl;
	int failed, r;

	mount_malloc_config();
	if (mount_open(o, m) < 0 || mount_session(o, m) < 0 ||
	    (ctl = mount_settle(o, m, &failed), failed)) {
		mount_teardown(m);
		return 1;
	}
	log_info("%s mounted at %s", o->db, m->dir);
	mount_announce(o, status_fd);
	r = mount_loop(m);
	/* Before the last commits and the checkpoint, which take seconds
	 * after a big write: a mount of the database meanwhile waits. */
	if (lockfile_record_closing(m->lock_fd) < 0)
		log_warn("%s-mount: cannot record the closing: a mount of %s "
		    "until it ends is refused", o->db, o->db);
	control_stop(ctl);
	mount_teardown(m);
	log_info("%s unmounted from %s", o->db, m->dir);
	return r < 0 ? 1 : 0;
}

/* The whole mount: under run_as, the keeper stays here and the daemon
 * goes on in a child, before anything is opened (mount_keeper.c).  The
 * exit status. */
static int
mount_serve(const struct mount_opts *o, int status_fd)
{
	struct mount_state m;

	memset(&m, 0, sizeof(m));
	m.lock_fd = m.keeper_fd = -1;
	m.control_uid = -1;
	m.ops.writeback = 1;
	if (mount_split_opts(o->fuse_opts, m.extra, sizeof(m.extra), &m) < 0)
		return 1;
	snprintf(m.db, sizeof(m.db), "%s", o->db);
	if (m.run_as && (mount_keeper(o, status_fd, &m.keeper_fd) < 0 ||
	    mount_confine_prepare(o->db, m.run_uid, m.run_gid, m.db,
	    sizeof(m.db)) < 0))
		return 1;
	return mount_serve_db(o, &m, status_fd);
}

/* Mount in the foreground or background: the exit status. */
int
mount_run(const struct mount_opts *o)
{
	int pfd[2];
	pid_t pid;
	char c;

	if (o->foreground)
		return mount_serve(o, -1);
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "atrium-fs: pipe: %s\n", strerror(errno));
		return 1;
	}
	if ((pid = fork()) < 0) {
		fprintf(stderr, "atrium-fs: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid > 0) {
		/* The parent returns once the child is live or has failed. */
		close(pfd[1]);
		if (o->ready_fd >= 0)
			close(o->ready_fd);
		return read(pfd[0], &c, 1) == 1 ? 0 : 1;
	}
	close(pfd[0]);
	setsid();
	return mount_serve(o, pfd[1]);
}
