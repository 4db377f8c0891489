/*
 * room_stream.c: start each room's atrium-replicate (room_stream.h).
 * room.c decides when (its states ROOM_RESTORE, ROOM_FSCK, ROOM_SHIPPER)
 * and reaps the children; this file makes them.
 *
 * Rules: a child gets only the descriptors it needs, at fixed numbers
 * (below), and nothing else of the monitor's; the credentials only on a
 * pipe.  As root, `run` is told --run-as the room's uid and gid: it
 * copies the databases first (SQLite opens them by their real paths,
 * which the room's uid may not walk: DATA is 0700), then gives root up
 * for good before it reads a record or says "ready".  `restore` gets the
 * staging directory (DATA/run/ROOM/replicate/restore, the room's uid's,
 * 0700) already open as its fd 4 and --run-as too: it gives root up
 * before it asks etcd or the store anything and reaches no file but that
 * directory's (cluster/replicate_restore.c); the files it writes are
 * bounded (--max-bytes, room_stream_max_bytes).  The monitor, as root,
 * empties the staging directory before a restore, moves what a restore
 * staged into the room's directory (room_stream_install) once `atrium-fs
 * fsck`, given that directory open and --run-as the room's uid, passed
 * the staged workspace.db (room_stream_fsck), and removes
 * what a failed or killed one left (room_stream_discard), always through
 * that directory opened without following a link: the directory is the
 * room's uid's, so its entries are not trusted to be what they are
 * named.  Nothing here waits for a child.
 */
#include "room_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "protocol.h"

/* The children's descriptors. */
#define RS_FD_FIRST	3
#define RS_RUN_READY	3	/* run: "ready\n" */
#define RS_RUN_CREDS	4	/* run: the credentials */
#define RS_RUN_ROOM	5	/* run: room.db's records */
#define RS_RUN_WS	6	/* run: workspace.db's records */
#define RS_RESTORE_CREDS 3	/* restore: the credentials */
#define RS_RESTORE_DIR	4	/* restore: its staging directory */
#define RS_FSCK_DIR	3	/* fsck: the staging directory */
#define RS_MAX_FDS	4
#define RS_STR_(x)	#x
#define RS_STR(x)	RS_STR_(x)

/* See room_stream.h. */
int
room_stream_load(const struct config *cfg, const char *node,
    const char *agent_prog, struct room_stream **out)
{
	struct room_stream *st;
	const char *slash = strrchr(agent_prog, '/');
	char err[256];

	*out = NULL;
	if (!cfg->s3[0])
		return 0;
	if (!cfg->s3_bucket[0]) {
		log_error("--s3 needs --s3-bucket (atriumd(8), CLUSTER)");
		return -EINVAL;
	}
	if (!(st = calloc(1, sizeof(*st))))
		return -ENOMEM;
	st->cfg = cfg;
	st->etcd = cfg->cluster + 5;
	snprintf(st->node, sizeof(st->node), "%s", node);
	snprintf(st->prog, sizeof(st->prog), "%.*s/atrium-replicate",
	    slash ? (int)(slash - agent_prog) : 1, slash ? agent_prog : ".");
	if (s3_creds_load(&st->creds, cfg->s3_credentials[0] ?
	    cfg->s3_credentials : NULL, err, sizeof(err)) < 0) {
		log_error("--s3: %s", err);
		s3_creds_scrub_env();
		free(st);
		return -EINVAL;
	}
	s3_creds_scrub_env();
	if (access(st->prog, X_OK) < 0) {
		log_error("--s3: %s: %s (it ships each room's writes)", st->prog,
		    strerror(errno));
		room_stream_free(st);
		return -ENOENT;
	}
	*out = st;
	return 0;
}

/* See room_stream.h. */
void
room_stream_free(struct room_stream *st)
{
	if (!st)
		return;
	s3_creds_clear(&st->creds);
	free(st);
}

/* See room_stream.h. */
int64_t
room_stream_epoch(int fence_fd)
{
	int64_t page[2];

	if (pread(fence_fd, page, sizeof(page), 0) != (ssize_t)sizeof(page))
		return -EIO;
	return page[1] > 0 ? page[1] : -ESTALE;
}

/* path, a directory of uid's, 0700: 0 or -errno (logged). */
static int
rs_own_dir(const char *path, uid_t uid, gid_t gid)
{
	struct stat sb;

	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		goto fail;
	if (lstat(path, &sb) < 0)
		goto fail;
	if (!S_ISDIR(sb.st_mode)) {
		errno = ENOTDIR;
		goto fail;
	}
	if (geteuid() == 0 && (sb.st_uid != uid || sb.st_gid != gid) &&
	    lchown(path, uid, gid) < 0)
		goto fail;
	return 0;
fail:
	log_error("%s: %s", path, strerror(errno));
	return -errno;
}

/* See room_stream.h. */
int
room_stream_prepare(const struct room_stream_room *rr)
{
	char path[PATH_MAX + 64];
	int r;

	snprintf(path, sizeof(path), "%s/replicate", rr->run);
	if ((r = rs_own_dir(path, rr->uid, rr->gid)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/replicate/restore", rr->run);
	return rs_own_dir(path, rr->uid, rr->gid);
}

/* In the forked child: fds[i] becomes descriptor 3 + i, then exec.
 * Never returns. */
static void
rs_child(char *const argv[], const int fds[], int n)
{
	int moved[RS_MAX_FDS], null = open("/dev/null", O_RDONLY);
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (null >= 0)
		dup2(null, 0);
	dup2(2, 1);
	/* Above every target first, so that no dup2 overwrites another's
	 * source. */
	for (int i = 0; i < n; i++)
		if ((moved[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 20)) < 0)
			_exit(127);
	for (int i = 0; i < n; i++)
		dup2(moved[i], RS_FD_FIRST + i);
	close_range(RS_FD_FIRST + n, ~0U, 0);
	execv(argv[0], argv);
	fprintf(stderr, "atriumd: cannot run %s: %s\n", argv[0],
	    strerror(errno));
	_exit(127);
}

/* Fork rs_child; the pid or -errno (logged). */
static pid_t
rs_spawn(const struct room_stream_room *rr, char *const argv[],
    const int fds[], int n)
{
	pid_t pid = fork();

	if (pid < 0) {
		log_error("room %s: fork: %s", rr->name, strerror(errno));
		return -errno;
	}
	if (pid == 0)
		rs_child(argv, fds, n);
	return pid;
}

/* The options both commands share, after argv[0..1]: the next index. */
static int
rs_common(const struct room_stream *st, const struct room_stream_room *rr,
    char **argv, int i, const char *creds_fd)
{
	const struct config *cfg = st->cfg;

	argv[i++] = "--room";
	argv[i++] = (char *)rr->name;
	argv[i++] = "--etcd";
	argv[i++] = (char *)st->etcd;
	argv[i++] = "--s3";
	argv[i++] = (char *)cfg->s3;
	argv[i++] = "--s3-bucket";
	argv[i++] = (char *)cfg->s3_bucket;
	argv[i++] = "--s3-region";
	argv[i++] = (char *)cfg->s3_region;
	argv[i++] = "--creds-fd";
	argv[i++] = (char *)creds_fd;
	return i;
}

/* Two pipes, close-on-exec: 0 or -errno (the ones made are closed). */
static int
rs_pipes(int p[][2], int n)
{
	for (int i = 0; i < n; i++)
		p[i][0] = p[i][1] = -1;
	for (int i = 0; i < n; i++)
		if (pipe2(p[i], O_CLOEXEC) < 0) {
			int e = errno;

			for (int k = 0; k < i; k++) {
				close(p[k][0]);
				close(p[k][1]);
			}
			return -e;
		}
	return 0;
}

/* DIR/name, when it exists, and its -wal and -shm (made empty when
 * missing): the room's uid's, 0600, no link followed.  The shipper opens
 * each database as that uid to checkpoint it, and SQLite makes neither
 * file in the room's directory, which is root's.  0 or -errno (logged). */
static int
rs_own_db(const struct room_stream_room *rr, const char *name)
{
	char path[PATH_MAX + 128];
	struct stat sb;

	for (int k = 0; k < 3; k++) {
		snprintf(path, sizeof(path), "%s/%s%s", rr->dir, name,
		    k == 1 ? "-wal" : k == 2 ? "-shm" : "");
		int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY |
		    (k ? O_CREAT : 0), 0600);

		if (fd < 0 && k == 0 && errno == ENOENT)
			return 0;
		if (fd < 0)
			goto fail;
		if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) ||
		    (geteuid() == 0 && (sb.st_uid != rr->uid ||
		    sb.st_gid != rr->gid) && fchown(fd, rr->uid, rr->gid) < 0)) {
			int e = S_ISREG(sb.st_mode) ? errno : EINVAL;

			close(fd);
			errno = e;
			goto fail;
		}
		close(fd);
	}
	return 0;
fail:
	log_error("room %s: %s: %s", rr->name, path, strerror(errno));
	return -errno;
}

/* See room_stream.h. */
pid_t
room_stream_run(const struct room_stream *st,
    const struct room_stream_room *rr, int *ready_r, int writers[2])
{
	char epoch[32], state[PATH_MAX + 64], run_as[32];
	char room_db[PATH_MAX + 128], ws_db[PATH_MAX + 128];
	char *argv[40] = { (char *)st->prog, "run" };
	int p[3][2], fds[RS_MAX_FDS], creds, i;
	pid_t pid;

	if ((i = rs_own_db(rr, ROOM_DB_NAME)) < 0 ||
	    (i = rs_own_db(rr, WORKSPACE_DB_NAME)) < 0)
		return i;
	if ((creds = s3_creds_pipe(&st->creds)) < 0) {
		log_error("room %s: the credentials' pipe: %s", rr->name,
		    strerror(-creds));
		return creds;
	}
	if ((i = rs_pipes(p, 3)) < 0) {
		log_error("room %s: pipe: %s", rr->name, strerror(-i));
		close(creds);
		return i;
	}
	snprintf(epoch, sizeof(epoch), "%" PRId64, rr->epoch);
	snprintf(state, sizeof(state), "%s/replicate", rr->run);
	snprintf(room_db, sizeof(room_db), "%s/%s", rr->dir, ROOM_DB_NAME);
	snprintf(ws_db, sizeof(ws_db), "%s/%s", rr->dir, WORKSPACE_DB_NAME);
	snprintf(run_as, sizeof(run_as), "%u:%u", (unsigned)rr->uid,
	    (unsigned)rr->gid);
	i = rs_common(st, rr, argv, 2, RS_STR(RS_RUN_CREDS));
	argv[i++] = "--node";
	argv[i++] = (char *)st->node;
	argv[i++] = "--epoch";
	argv[i++] = epoch;
	argv[i++] = "--room-fd";
	argv[i++] = RS_STR(RS_RUN_ROOM);
	argv[i++] = "--workspace-fd";
	argv[i++] = RS_STR(RS_RUN_WS);
	argv[i++] = "--room-db";
	argv[i++] = room_db;
	argv[i++] = "--workspace-db";
	argv[i++] = ws_db;
	argv[i++] = "--state-dir";
	argv[i++] = state;
	argv[i++] = "--ready-fd";
	argv[i++] = RS_STR(RS_RUN_READY);
	if (geteuid() == 0) {
		argv[i++] = "--run-as";
		argv[i++] = run_as;
	}
	argv[i] = NULL;
	fds[0] = p[0][1];
	fds[1] = creds;
	fds[2] = p[1][0];
	fds[3] = p[2][0];
	pid = rs_spawn(rr, argv, fds, 4);
	close(creds);
	close(p[0][1]);
	close(p[1][0]);
	close(p[2][0]);
	if (pid < 0) {
		close(p[0][0]);
		close(p[1][1]);
		close(p[2][1]);
		return pid;
	}
	*ready_r = p[0][0];
	writers[0] = p[1][1];
	writers[1] = p[2][1];
	return pid;
}

/* The staging directory, DATA/run/ROOM/replicate/restore, opened with
 * no link followed (replicate/ is the room's uid's, so restore/ could be
 * a link it put there) and checked to be a directory of the room's uid:
 * the fd (O_PATH, close-on-exec) or -errno (logged). */
static int
rs_stage_open(const struct room_stream_room *rr)
{
	char path[PATH_MAX + 64];
	struct stat sb;
	int up, fd = -1, e;

	snprintf(path, sizeof(path), "%s/replicate", rr->run);
	if ((up = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) >= 0)
		fd = openat(up, "restore", O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	e = fd < 0 ? errno : 0;
	if (up >= 0)
		close(up);
	if (fd >= 0 && fstat(fd, &sb) < 0)
		e = errno;
	else if (fd >= 0 && !S_ISDIR(sb.st_mode))
		e = ENOTDIR;	/* O_PATH with O_NOFOLLOW can hold a link */
	else if (fd >= 0 && geteuid() == 0 && sb.st_uid != rr->uid)
		e = EPERM;
	if (!e)
		return fd;
	log_error("room %s: %s/restore: %s", rr->name, path, strerror(e));
	if (fd >= 0)
		close(fd);
	return -e;
}

/* Remove every file a restore makes from the staging directory dir: 0,
 * or -errno of the first that could not be (logged). */
static int
rs_stage_clear(const struct room_stream_room *rr, int dir)
{
	static const char *const dbs[] = { ROOM_DB_NAME, WORKSPACE_DB_NAME };
	static const char *const ends[] = { "", "-wal", "-shm", ".restore",
	    ".restore-wal", ".restore-shm" };
	char name[64];
	int r = 0;

	for (size_t i = 0; i < sizeof(dbs) / sizeof(*dbs); i++)
		for (size_t k = 0; k < sizeof(ends) / sizeof(*ends); k++) {
			snprintf(name, sizeof(name), "%s%s", dbs[i], ends[k]);
			if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
				continue;
			if (r == 0)
				r = -errno;
			log_warn("room %s: cannot remove the staged %s: %s",
			    rr->name, name, strerror(errno));
		}
	return r;
}

/* See room_stream.h. */
long long
room_stream_max_bytes(const struct config *cfg)
{
	long long q = cfg->quota > cfg->room_db_quota ? cfg->quota :
	    cfg->room_db_quota;

	/* Twice the larger quota and 1 GiB: a database holds its data,
	 * its tree and its free pages, which the quota does not count. */
	return q > 0 ? 2 * q + (1LL << 30) : 0;
}

/* The restore's argv past the shared options, from argv[i]; bufs holds
 * the numbers (3 of 32 bytes).  The next index. */
static int
rs_restore_args(const struct room_stream *st,
    const struct room_stream_room *rr, char **argv, int i, char bufs[][32])
{
	long long max = room_stream_max_bytes(st->cfg);

	argv[i++] = "--dir-fd";
	argv[i++] = RS_STR(RS_RESTORE_DIR);
	if (rr->epoch > 0) {
		snprintf(bufs[0], 32, "%" PRId64, rr->epoch);
		argv[i++] = "--epoch";
		argv[i++] = bufs[0];
	}
	if (geteuid() == 0) {
		snprintf(bufs[1], 32, "%u:%u", (unsigned)rr->uid,
		    (unsigned)rr->gid);
		argv[i++] = "--run-as";
		argv[i++] = bufs[1];
	}
	if (max > 0) {
		snprintf(bufs[2], 32, "%lld", max);
		argv[i++] = "--max-bytes";
		argv[i++] = bufs[2];
	}
	argv[i] = NULL;
	return i;
}

/* See room_stream.h. */
pid_t
room_stream_restore(const struct room_stream *st,
    const struct room_stream_room *rr)
{
	char bufs[3][32];
	char *argv[32] = { (char *)st->prog, "restore" };
	int fds[2], i;
	pid_t pid;

	if ((fds[1] = rs_stage_open(rr)) < 0)
		return fds[1];
	if ((i = rs_stage_clear(rr, fds[1])) < 0) {
		close(fds[1]);
		return i;
	}
	if ((fds[0] = s3_creds_pipe(&st->creds)) < 0) {
		log_error("room %s: the credentials' pipe: %s", rr->name,
		    strerror(-fds[0]));
		close(fds[1]);
		return fds[0];
	}
	i = rs_common(st, rr, argv, 2, RS_STR(RS_RESTORE_CREDS));
	rs_restore_args(st, rr, argv, i, bufs);
	pid = rs_spawn(rr, argv, fds, 2);
	close(fds[0]);
	close(fds[1]);
	return pid;
}

/* See room_stream.h. */
void
room_stream_discard(const struct room_stream_room *rr)
{
	int dir = rs_stage_open(rr);

	if (dir < 0)
		return;
	if (rs_stage_clear(rr, dir) == 0)
		log_info("room %s: what its restore staged is removed",
		    rr->name);
	close(dir);
}

/* See room_stream.h. */
int
room_stream_staged(const struct room_stream_room *rr)
{
	static const char *const names[] = { ROOM_DB_NAME, WORKSPACE_DB_NAME };
	int stage, r = 1;

	if ((stage = rs_stage_open(rr)) < 0)
		return stage;
	for (int i = 0; r == 1 && i < 2; i++)
		if (faccessat(stage, names[i], F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			r = errno == ENOENT ? 0 : -errno;
	close(stage);
	if (r < 0)
		log_error("room %s: the staged databases: %s", rr->name,
		    strerror(-r));
	return r;
}

/* Before the fsck: the staged workspace.db's -wal and -shm made anew,
 * empty, the room's uid's.  Anew, so that the check sees the database
 * alone, as it is put in place (room_stream_install moves it without
 * them); made here because the fsck, confined to the three files, makes
 * none (fs/daemon/mount_confine.h), and SQLite reads a database in WAL
 * mode only with both.  0 or -errno (logged). */
static int
rs_stage_sides(const struct room_stream_room *rr, int stage)
{
	static const char *const sides[] = { WORKSPACE_DB_NAME "-wal",
	    WORKSPACE_DB_NAME "-shm" };
	int fd, e;

	for (size_t i = 0; i < sizeof(sides) / sizeof(*sides); i++) {
		if (unlinkat(stage, sides[i], 0) < 0 && errno != ENOENT)
			goto fail;
		fd = openat(stage, sides[i], O_RDWR | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd < 0)
			goto fail;
		if (geteuid() == 0 && fchown(fd, rr->uid, rr->gid) < 0) {
			e = errno;
			close(fd);
			errno = e;
			goto fail;
		}
		close(fd);
		continue;
fail:
		log_error("room %s: the staged %s: %s", rr->name, sides[i],
		    strerror(errno));
		return -errno;
	}
	return 0;
}

/* See room_stream.h. */
pid_t
room_stream_fsck(const struct room_stream_room *rr, const char *prog)
{
	char run_as[32];
	char *argv[] = { (char *)prog, "fsck", "--run-as", run_as,
	    "/proc/self/fd/" RS_STR(RS_FSCK_DIR) "/" WORKSPACE_DB_NAME, NULL };
	int stage, r;
	pid_t pid;

	if ((stage = rs_stage_open(rr)) < 0)
		return stage;
	if ((r = rs_stage_sides(rr, stage)) < 0) {
		close(stage);
		return r;
	}
	snprintf(run_as, sizeof(run_as), "%u:%u", (unsigned)rr->uid,
	    (unsigned)rr->gid);
	/* Not root (a test's atriumd): nothing to give up. */
	if (geteuid() != 0) {
		argv[2] = argv[4];
		argv[3] = NULL;
	}
	pid = rs_spawn(rr, argv, &stage, 1);
	close(stage);
	return pid;
}

/* One staged database, a regular file of the room's uid, over the
 * room's (their stale -wal and -shm removed first): 0 or -errno
 * (logged). */
static int
rs_install_one(const struct room_stream_room *rr, int stage,
    const char *name)
{
	char to[PATH_MAX + 128], side[PATH_MAX + 136];
	struct stat sb;

	snprintf(to, sizeof(to), "%s/%s", rr->dir, name);
	if (fstatat(stage, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		goto fail;
	if (!S_ISREG(sb.st_mode) || (geteuid() == 0 && sb.st_uid != rr->uid)) {
		errno = EPERM;
		goto fail;
	}
	for (int k = 0; k < 2; k++) {
		snprintf(side, sizeof(side), "%s%s", to, k ? "-shm" : "-wal");
		if (unlink(side) < 0 && errno != ENOENT)
			goto fail;
	}
	if (renameat(stage, name, AT_FDCWD, to) == 0)
		return 0;
fail:
	log_error("room %s: putting the restored %s in place: %s", rr->name,
	    name, strerror(errno));
	return -errno;
}

/* See room_stream.h. */
int
room_stream_install(const struct room_stream_room *rr)
{
	static const char *const names[] = { ROOM_DB_NAME, WORKSPACE_DB_NAME };
	int stage, r = 1;

	if ((stage = rs_stage_open(rr)) < 0)
		return stage;
	/* The restore puts both in place or neither (replicate_restore.c):
	 * both staged, or nothing to do. */
	for (int i = 0; r == 1 && i < 2; i++)
		if (faccessat(stage, names[i], F_OK, AT_SYMLINK_NOFOLLOW) < 0)
			r = 0;
	for (int i = 0; r == 1 && i < 2; i++)
		if ((r = rs_install_one(rr, stage, names[i])) == 0)
			r = 1;
	close(stage);
	if (r == 1)
		log_info("room %s: its databases were restored from the "
		    "object store (epoch %" PRId64 ")", rr->name, rr->epoch);
	return r;
}
