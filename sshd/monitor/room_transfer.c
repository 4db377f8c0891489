/*
 * room_transfer.c: whole-room exports and imports in the monitor
 * (room_transfer.h).  Called by monitor.c (the export and import
 * requests), monitor_loop.c (reaping, shutdown) and monitor.c's use and
 * access requests (a room being imported is neither started nor
 * entered).
 *
 * An export is one child, `atrium-fs export-room --fd NAME=N... .`: it
 * reads room.db and workspace.db each in one read transaction (consistent
 * while the room runs: both are WAL databases with one writer elsewhere),
 * so whether the room runs or not does not matter and nothing is started.
 * It runs as the room's own uid (room_ids_get), without groups or new
 * privileges, in a directory of its own (DATA/rooms/ROOM/export-XXXXXX,
 * that uid's, seen as /mnt as the import's is) where it writes its copy
 * of the history.  The databases are root's: the monitor opens exactly
 * them (transfer_export_files: each database read-only, its -wal
 * read-only and its -shm read-write, as every reader of a WAL database
 * shares it; the two made empty, as SQLite would, when a stopped room has
 * none, so that a room starting meanwhile shares them with the helper)
 * and passes them as descriptors 3 and up (fs/engine/fdfiles.c).  The helper
 * can reach nothing else of the room.  Its directory goes when it ends; one
 * that atriumd's stop left behind goes at the room's next export.
 *
 * An import makes the room, in this order, and removes it all again when
 * any step fails (nothing half-made is left, and the user's room count
 * gives its place back: room_quota_forget drops the room's record, and a
 * room that a crash left half-made counts for nobody, as it is removed
 * when counted, room_transfer_counts):
 *   1. checks: the room's directory does not exist, no room of that name
 *      runs, is deleted or imported; the user is under max-rooms-per-user
 *      (room_quota_admit records the room for the user, as a first entry
 *      does);
 *   2. the room's sandbox identity (room_ids_assign, which makes the
 *      directory), so the workspace's files are the new room's uid's;
 *   3. `atrium-fs import-room --owner UID:GID --quota .. --quota-inodes ..
 *      DIR` reading the archive from the client (workspace.db, and
 *      room.db.import);
 *   4. `atrium-agent import-db --owner USER DIR/room.db.import`: the
 *      history checked, migrated, its grants replaced by the importer;
 *   5. workspace.db and room.db.import taken into the room's directory
 *      (the latter as room.db), its access record written (the importer
 *      its owner, private until its agent reports: transfer_record), the
 *      helpers' directory and the mark removed: the room exists for
 *      everyone.
 * From step 2 to step 5 DATA/rooms/ROOM/importing marks the room: when
 * atriumd stopped in between, the next request that names the room (use,
 * access, export, import) finds the mark with no import running and
 * removes the half-made room first (room_transfer_clear_stale).
 * Helpers' stderr goes to the client's stderr; the status pipe gets the
 * exit status after step 5 or the cleanup.  While an import runs, monitor
 * refuses `use` and `access` for the room, so no session starts or enters
 * it half-made.
 *
 * An import's helpers parse a stranger's archive and SQLite file
 * (fs/offline/import.c, fs/offline/room_archive.c and agent/room_import.c check
 * them), so they run as the new room's uid, without groups or a way back, in a
 * directory of their own, DATA/rooms/ROOM/import (the room's directory
 * stays root's: they cannot touch its uid record or mark), which they
 * reach as their working directory, confined as a sandboxed command is
 * (transfer_sandbox.h: the sandbox's seccomp filter, no network, a cgroup
 * with the room's limits; an export's helper too).  Step 5 takes from it
 * only regular, single-linked files of that uid, makes them root's and
 * links exactly the inodes it checked into the room's directory.  Their
 * mount namespace holds copies of the rooms' FUSE mounts while they run
 * (mounts here are private), so a workspace unmounted meanwhile keeps its
 * daemon until the import ends: seconds to minutes, never a room's
 * lifetime.
 */
#include "room_transfer.h"

#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "access_record.h"
#include "fsctl_client.h"
#include "log.h"
#include "monitor_loop.h"
#include "protocol.h"
#include "room.h"
#include "room_ids.h"
#include "room_quota.h"
#include "transfer_sandbox.h"

#define TRANSFER_PIPE_SIZE	(1024 * 1024)
/* In DATA/rooms/ROOM from step 2 to step 5 of an import: a room that has
 * it while no import runs is what a crash left half-made. */
#define TRANSFER_MARK		"importing"
/* The import's own directory in DATA/rooms/ROOM, the room's uid's: the
 * helpers write there and nowhere else (transfer_adopt_file). */
#define TRANSFER_STAGING	"import"
/* An export's own directory in DATA/rooms/ROOM (mkdtemp's pattern), the
 * room's uid's. */
#define TRANSFER_EXPORT_DIR	"export-"
#define TRANSFER_EXPORT_TEMPLATE TRANSFER_EXPORT_DIR "XXXXXX"
/* Where the helpers see it (transfer_view): a directory every system
 * has, shadowed only in their own mount namespace. */
#define TRANSFER_VIEW		"/mnt"
/* The files an export's helper is given, in the order of its fds 3 and
 * up: each database, then its -wal and -shm; last, when a daemon serves
 * the workspace, the connection on which it was asked to commit. */
#define TRANSFER_EXPORT_FILES	7

enum transfer_stage { STAGE_EXPORT, STAGE_UNPACK, STAGE_ADOPT };

struct room_transfer {
	struct room_transfer *next;
	enum transfer_stage stage;
	pid_t pid;			/* the helper running now */
	char room[64];
	char user[64];
	struct room_ids ids;		/* the helpers run as these */
	struct transfer_cg cg;		/* and in this cgroup
					 * (transfer_sandbox.h) */
	char staging[32];		/* their directory in the room's */
	int err_w;			/* the client's stderr, kept for step 4 */
	int status_w;			/* the status line goes here */
};

/* In the forked child, as root: dir where the room's uid can reach it
 * and SQLite can name it.  SQLite opens by absolute path (it prepends
 * getcwd), and DATA's directories are root's alone, so a private mount
 * namespace shows dir at TRANSFER_VIEW, whose parents anyone may pass.
 * 0 or -errno. */
static int
transfer_view(const char *dir)
{
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount(dir, TRANSFER_VIEW, NULL, MS_BIND, NULL) < 0 ||
	    chdir(TRANSFER_VIEW) < 0)
		return -errno;
	return 0;
}

/* The descriptors a helper gets: 0, 1 and 2, then files from 3 on. */
struct transfer_fds {
	int std[3];			/* in, out, err */
	const int *files;		/* n of them, or NULL */
	int n;
};

/* In the forked child: fds->std as 0, 1, 2 and fds->files as 3 and up,
 * nothing else open.  0 or -1. */
static int
transfer_child_fds(const struct transfer_fds *fds)
{
	int moved[3 + TRANSFER_EXPORT_FILES], n = 3 + fds->n;

	if (fds->n > TRANSFER_EXPORT_FILES)
		return -1;
	/* Above every target first, so that no dup2 overwrites another's
	 * source. */
	for (int i = 0; i < n; i++) {
		moved[i] = fcntl(i < 3 ? fds->std[i] : fds->files[i - 3],
		    F_DUPFD_CLOEXEC, 16);
		if (moved[i] < 0)
			return -1;
	}
	for (int i = 0; i < n; i++)
		if (dup2(moved[i], i) < 0)
			return -1;
	close_range((unsigned)n, ~0U, 0);
	return 0;
}

/* In the forked child: dir as the working directory (the helpers are
 * given "." so that what they say names no path of the server's), no
 * network and the cgroup cg, then as ids (no groups, no way back, no new
 * privileges: what an import's helpers parse is a stranger's, and an
 * export's need nothing of root's), the descriptors of fds, default
 * signals, the sandbox's seccomp filters; then argv.  parent is the
 * monitor's pid, taken before the fork. */
static void
transfer_child(char *const argv[], const char *dir,
    const struct room_ids *ids, const struct transfer_cg *cg,
    const struct transfer_fds *fds, pid_t parent)
{
	sigset_t none;
	int r;

	if ((r = transfer_sandbox_enter(cg)) < 0) {
		/* The client's stderr: nothing else would tell it why. */
		dprintf(fds->std[2], "atriumd: cannot confine the helper (a "
		    "network namespace and the room's cgroup): %s\n",
		    strerror(-r));
		_exit(126);
	}
	if (transfer_view(dir) < 0 || setgroups(0, NULL) < 0 ||
	    setresgid(ids->gid, ids->gid, ids->gid) < 0 ||
	    setresuid(ids->uid, ids->uid, ids->uid) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || setuid(0) == 0)
		_exit(126);
	/* After the change of uid, which clears it; a parent gone already
	 * is seen by getppid. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(126);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (transfer_child_fds(fds) < 0)
		_exit(127);
	if (transfer_sandbox_seal() < 0)
		_exit(126);
	execv(argv[0], argv);
	fprintf(stderr, "atriumd: cannot run %s: %s\n", argv[0],
	    strerror(errno));
	_exit(127);
}

/* Start argv in dir as ids in cg with fds.  The pid, or -errno
 * (logged). */
static pid_t
transfer_spawn_fds(char *const argv[], const char *dir,
    const struct room_ids *ids, const struct transfer_cg *cg,
    const struct transfer_fds *fds)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid < 0) {
		log_error("cannot fork for %s: %s", argv[0], strerror(errno));
		return -errno;
	}
	if (pid == 0)
		transfer_child(argv, dir, ids, cg, fds, parent);
	return pid;
}

/* Start argv in dir as ids in cg with in, out, err.  The pid, or
 * -errno. */
static pid_t
transfer_spawn(char *const argv[], const char *dir,
    const struct room_ids *ids, const struct transfer_cg *cg, int in,
    int out, int err)
{
	struct transfer_fds fds = { { in, out, err }, NULL, 0 };

	return transfer_spawn_fds(argv, dir, ids, cg, &fds);
}

/* A pipe with both ends CLOEXEC, enlarged (the archive's bulk goes
 * through it).  0 or -errno. */
static int
transfer_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fcntl(p[0], F_SETPIPE_SZ, TRANSFER_PIPE_SIZE);
	return 0;
}

/* Close each fd of v[0..n) that is open. */
static void
transfer_close(int *v, int n)
{
	for (int i = 0; i < n; i++)
		if (v[i] >= 0) {
			close(v[i]);
			v[i] = -1;
		}
}

/* Three pipes: p[0] the bulk (archive), p[1] stderr, p[2] status.  0 or
 * -errno (none left open). */
static int
transfer_pipes(int p[3][2])
{
	int r = 0;

	for (int i = 0; i < 3; i++)
		p[i][0] = p[i][1] = -1;
	for (int i = 0; i < 3 && r == 0; i++)
		r = transfer_pipe(p[i]);
	if (r < 0)
		for (int i = 0; i < 3; i++)
			transfer_close(p[i], 2);
	return r;
}

/* A record for a helper now running. */
static struct room_transfer *
transfer_add(struct monitor *srv, enum transfer_stage stage, pid_t pid,
    const char *room, const char *user, int err_w, int status_w)
{
	struct room_transfer *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->stage = stage;
	t->pid = pid;
	snprintf(t->room, sizeof(t->room), "%s", room);
	snprintf(t->user, sizeof(t->user), "%s", user ? user : "");
	t->err_w = err_w;
	t->status_w = status_w;
	t->next = srv->transfers;
	srv->transfers = t;
	return t;
}

/* DATA/rooms/ROOM[/name] into out. */
static void
transfer_path(const struct monitor *srv, const char *room, const char *name,
    char *out, size_t len)
{
	if ((size_t)snprintf(out, len, "%s/rooms/%s%s%s", srv->rooms.data,
	    room, name ? "/" : "", name ? name : "") >= len)
		out[0] = '\0';	/* DATA is shorter than PATH_MAX: never */
}

/* Step 1 of an import: may user make room now?  0, or -errno with why. */
static int
transfer_import_check(struct monitor *srv, const char *room, const char *user,
    char *why, size_t len)
{
	char dir[PATH_MAX + 80];
	struct stat sb;

	room_transfer_clear_stale(srv, room);
	transfer_path(srv, room, NULL, dir, sizeof(dir));
	if (lstat(dir, &sb) == 0 || rooms_find(&srv->rooms, room) ||
	    room_transfer_importing(srv, room)) {
		snprintf(why, len, "room '%s' exists already; a room is imported "
		    "only under a new name (ssh NEWROOM@HOST atrium-import)", room);
		return -EEXIST;
	}
	return room_quota_admit(srv->rooms.data, room, user,
	    srv->cfg->max_rooms_per_user, room_transfer_counts, srv, why, len);
}

/* Step 3: atrium-fs import-room, reading in, writing to err.  The pid,
 * or -errno. */
static pid_t
transfer_unpack(struct monitor *srv, const char *room,
    const struct room_ids *ids, const struct transfer_cg *cg, int in,
    int err)
{
	char dir[PATH_MAX + 80], owner[32], quota[32], inodes[32];
	char *argv[] = { srv->rooms.progs.fs, "import-room", "--owner", owner,
	    "--quota", quota, "--quota-inodes", inodes, ".", NULL };

	transfer_path(srv, room, TRANSFER_STAGING, dir, sizeof(dir));
	snprintf(owner, sizeof(owner), "%u:%u", (unsigned)ids->uid,
	    (unsigned)ids->gid);
	snprintf(quota, sizeof(quota), "%lld", srv->cfg->quota);
	snprintf(inodes, sizeof(inodes), "%lld", srv->cfg->quota_inodes);
	return transfer_spawn(argv, dir, ids, cg, in, err, err);
}

/* Remove what a failed import made of room, and give its place back
 * to the importer's count of rooms made (room_quota.h). */
static void
transfer_remove_room(struct monitor *srv, const char *room)
{
	if (rooms_remove_dirs(srv->rooms.data, room) < 0)
		log_error("room %s: a failed import left its directory behind; "
		    "remove DATA/rooms/%s by hand", room, room);
	else
		room_quota_forget(srv->rooms.data, room);
}

/* Step 2's mark.  0 or -errno. */
static int
transfer_mark(struct monitor *srv, const char *room)
{
	char path[PATH_MAX + 80];
	int fd;

	transfer_path(srv, room, TRANSFER_MARK, path, sizeof(path));
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -errno;
	if (fsync(fd) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/* The helpers' directory, the room's uid's alone.  0 or -errno. */
static int
transfer_staging(struct monitor *srv, const char *room,
    const struct room_ids *ids)
{
	char path[PATH_MAX + 80];

	transfer_path(srv, room, TRANSFER_STAGING, path, sizeof(path));
	if (mkdir(path, 0700) < 0 || chown(path, ids->uid, ids->gid) < 0)
		return -errno;
	return 0;
}

/* See room_transfer.h. */
int
room_transfer_clear_stale(struct monitor *srv, const char *room)
{
	char path[PATH_MAX + 80];

	if (room_transfer_importing(srv, room))
		return 0;
	transfer_path(srv, room, TRANSFER_MARK, path, sizeof(path));
	if (access(path, F_OK) < 0)
		return 0;
	log_warn("room %s: an import was cut short (atriumd stopped during "
	    "it); removing what it made", room);
	transfer_remove_room(srv, room);
	return 1;
}

/* Steps 1 and 2 of an import, the mark, the helpers' directory and
 * cgroup: everything before the first helper.  0, or -errno with why
 * (and nothing of the room left). */
static int
transfer_import_prepare(struct monitor *srv, const char *room,
    const char *user, struct room_ids *ids, struct transfer_cg *cg,
    char *why, size_t len)
{
	char rooms_dir[PATH_MAX + 16];
	int r;

	if ((r = transfer_import_check(srv, room, user, why, len)) < 0)
		return r;
	snprintf(rooms_dir, sizeof(rooms_dir), "%s/rooms", srv->rooms.data);
	if ((r = room_ids_assign(rooms_dir, room, srv->cfg, ids, why,
	    len)) < 0) {
		transfer_remove_room(srv, room);
		return r;
	}
	if ((r = transfer_mark(srv, room)) < 0 ||
	    (r = transfer_staging(srv, room, ids)) < 0) {
		transfer_remove_room(srv, room);
		snprintf(why, len, "cannot start the import: %s", strerror(-r));
		return r;
	}
	if ((r = transfer_sandbox_prepare(srv->cfg, room, cg, why, len)) < 0)
		transfer_remove_room(srv, room);
	return r;
}

/* See room_transfer.h. */
int
room_transfer_import(struct monitor *srv, const char *room,
    const char *user, int fds[ROOM_TRANSFER_FDS], char *why, size_t len)
{
	struct room_transfer *t;
	struct transfer_cg cg;
	struct room_ids ids;
	int p[3][2], r;
	pid_t pid;

	if ((r = transfer_import_prepare(srv, room, user, &ids, &cg, why,
	    len)) < 0)
		return r;
	if ((r = transfer_pipes(p)) < 0) {
		transfer_sandbox_release(&cg);
		transfer_remove_room(srv, room);
		snprintf(why, len, "cannot start the import: %s", strerror(-r));
		return r;
	}
	pid = transfer_unpack(srv, room, &ids, &cg, p[0][0], p[1][1]);
	transfer_close(&p[0][0], 1);
	if (pid < 0 || !(t = transfer_add(srv, STAGE_UNPACK, pid, room, user,
	    p[1][1], p[2][1]))) {
		if (pid > 0)
			kill(pid, SIGKILL);
		for (int i = 0; i < 3; i++)
			transfer_close(p[i], 2);
		transfer_sandbox_release(&cg);
		transfer_remove_room(srv, room);
		snprintf(why, len, "cannot start the import");
		return -ENOMEM;
	}
	t->ids = ids;
	t->cg = cg;
	log_info("room %s: import by %s started (pid %d, uid %u)", room, user,
	    (int)pid, (unsigned)ids.uid);
	fds[0] = p[0][1];
	fds[1] = p[1][0];
	fds[2] = p[2][0];
	return 0;
}

/* See room_transfer.h. */
int
room_transfer_counts(const char *room, void *arg)
{
	struct monitor *srv = arg;
	char path[PATH_MAX + 80];

	room_transfer_clear_stale(srv, room);
	transfer_path(srv, room, NULL, path, sizeof(path));
	return access(path, F_OK) == 0;
}

/* See room_transfer.h. */
int
room_transfer_importing(const struct monitor *srv, const char *room)
{
	for (const struct room_transfer *t = srv->transfers; t; t = t->next)
		if (t->stage != STAGE_EXPORT && strcmp(t->room, room) == 0)
			return 1;
	return 0;
}

/* Say on the client's stderr (when it is still there). */
static void
transfer_say(struct room_transfer *t, const char *msg)
{
	if (t->err_w >= 0 && write(t->err_w, msg, strlen(msg)) < 0)
		log_debug("room %s: the importer's stderr is gone", t->room);
}

/* Step 4: atrium-agent import-db.  0 or -errno. */
static int
transfer_adopt(struct monitor *srv, struct room_transfer *t)
{
	char dir[PATH_MAX + 80];
	char *argv[] = { srv->rooms.progs.agent, "import-db", "--owner",
	    t->user, ROOM_DB_NAME ".import", NULL };
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid_t pid;

	if (null < 0)
		return -errno;
	transfer_path(srv, t->room, TRANSFER_STAGING, dir, sizeof(dir));
	pid = transfer_spawn(argv, dir, &t->ids, &t->cg, null, t->err_w,
	    t->err_w);
	close(null);
	if (pid < 0)
		return (int)pid;
	t->stage = STAGE_ADOPT;
	t->pid = pid;
	return 0;
}

/* Take name from the helpers' directory (sfd) into the room's (rfd) as
 * to, root's and 0600: only a single-linked regular file of the room's
 * uid, with no write-ahead log left beside it, and exactly the inode that
 * was checked (linked through /proc, so nothing swapped meanwhile counts).
 * 0 or -errno. */
static int
transfer_adopt_file(int sfd, int rfd, const char *name, const char *to,
    const struct room_ids *ids)
{
	char wal[128], self[64];
	struct stat sb;
	int fd, r = 0;

	snprintf(wal, sizeof(wal), "%s-wal", name);
	if (fstatat(sfd, wal, &sb, AT_SYMLINK_NOFOLLOW) == 0 && sb.st_size > 0)
		return -EBUSY;		/* not closed cleanly */
	fd = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0)
		r = -errno;
	else if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1 ||
	    sb.st_uid != ids->uid)
		r = -EPERM;
	else if (fchown(fd, 0, 0) < 0 || fchmod(fd, 0600) < 0)
		r = -errno;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (r == 0 && linkat(AT_FDCWD, self, rfd, to, AT_SYMLINK_FOLLOW) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Empty and remove the helpers' directory name in rfd (files only: they
 * made no other kind).  0 or -errno. */
static int
transfer_drop_dir(int rfd, const char *name)
{
	int sfd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	struct dirent *d;
	DIR *dir;
	int r = 0;

	if (sfd < 0 || !(dir = fdopendir(sfd))) {
		if (sfd >= 0)
			close(sfd);
		return -errno;
	}
	while ((d = readdir(dir)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") &&
		    unlinkat(sfd, d->d_name, 0) < 0)
			r = -errno;
	closedir(dir);
	if (r == 0 && unlinkat(rfd, name, AT_REMOVEDIR) < 0)
		r = -errno;
	return r;
}

/* What an export's helper is given: its directory, and the room's
 * databases as descriptors with their --fd arguments. */
struct transfer_export {
	char staging[32];			/* in the room's directory */
	int files[TRANSFER_EXPORT_FILES];	/* its fds 3 .. 3 + n - 1 */
	int n;
	char args[TRANSFER_EXPORT_FILES][96];	/* --fd=NAME=FD */
};

/* Close what x holds. */
static void
transfer_export_release(struct transfer_export *x)
{
	transfer_close(x->files, x->n);
	x->n = 0;
}

/* Open database db of the room's directory rfd, then its -wal and -shm
 * (made empty, root's, when missing), for the helper: appended to x.
 * A database that does not exist is left out (the helper says so).
 * 0 or -errno. */
static int
transfer_export_db(int rfd, const char *db, struct transfer_export *x)
{
	static const char *const suffix[] = { "", "-wal", "-shm" };
	static const int mode[] = { O_RDONLY, O_RDONLY | O_CREAT,
	    O_RDWR | O_CREAT };
	char name[64];
	struct stat sb;

	for (int i = 0; i < 3; i++) {
		int fd;

		snprintf(name, sizeof(name), "%s%s", db, suffix[i]);
		fd = openat(rfd, name, mode[i] | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC, 0600);
		if (fd < 0 && i == 0 && errno == ENOENT)
			return 0;
		if (fd < 0)
			return -errno;
		if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
			close(fd);
			return -EINVAL;
		}
		x->files[x->n] = fd;
		snprintf(x->args[x->n], sizeof(x->args[0]), "--fd=%s=%d", name,
		    3 + x->n);
		x->n++;
	}
	return 0;
}

/* Ask the daemon that serves the room's workspace, if one does, to commit
 * what it has answered (fsctl_commit_send, which does not block): the
 * helper reads the database file, which holds only committed groups, and
 * what a command wrote just before (`ssh ROOM@host CMD`, then
 * atrium-export) may still be in the open group for a quarter of a
 * second.  The helper waits for the answer (export-room --after-commit)
 * on the connection appended to x; the daemon reads one line a
 * connection, so the helper can ask it nothing else.  0 when asked, or
 * when no daemon serves the workspace (the room is stopped and its
 * database whole); -EAGAIN when the daemon cannot take a connection now;
 * -errno. */
static int
transfer_export_commit(const char *dir, struct transfer_export *x)
{
	char db[PATH_MAX + 80 + sizeof("/" WORKSPACE_DB_NAME)];
	int fd;

	snprintf(db, sizeof(db), "%s/%s", dir, WORKSPACE_DB_NAME);
	if ((fd = fsctl_commit_send(db)) == -ECONNREFUSED)
		return 0;
	if (fd < 0)
		return fd;
	x->files[x->n] = fd;
	snprintf(x->args[x->n], sizeof(x->args[0]), "--after-commit=%d",
	    3 + x->n);
	x->n++;
	return 0;
}

/* Remove the export directories in the room's directory rfd that no
 * running export of room uses (atriumd stopped during those). */
static void
transfer_sweep_exports(struct monitor *srv, const char *room, int rfd)
{
	struct dirent *d;
	DIR *dir;
	int fd;

	for (const struct room_transfer *t = srv->transfers; t; t = t->next)
		if (t->stage == STAGE_EXPORT && strcmp(t->room, room) == 0)
			return;
	if ((fd = dup(rfd)) < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((d = readdir(dir)))
		if (strncmp(d->d_name, TRANSFER_EXPORT_DIR,
		    strlen(TRANSFER_EXPORT_DIR)) == 0 &&
		    transfer_drop_dir(rfd, d->d_name) < 0)
			log_warn("room %s: cannot remove %s, which an export left",
			    room, d->d_name);
	closedir(dir);
}

/* The helper's directory in dir (rfd), the room's uid's alone, into
 * x->staging.  0 or -errno. */
static int
transfer_export_staging(const char *dir, int rfd, const struct room_ids *ids,
    struct transfer_export *x)
{
	char path[PATH_MAX + 120];

	snprintf(path, sizeof(path), "%s/%s", dir, TRANSFER_EXPORT_TEMPLATE);
	if (!mkdtemp(path))
		return -errno;
	snprintf(x->staging, sizeof(x->staging), "%s", strrchr(path, '/') + 1);
	if (fchownat(rfd, x->staging, ids->uid, ids->gid,
	    AT_SYMLINK_NOFOLLOW) < 0) {
		int r = -errno;

		unlinkat(rfd, x->staging, AT_REMOVEDIR);
		return r;
	}
	return 0;
}

/* Everything an export of room (its directory dir) needs before its
 * helper starts, into x.  0 or -errno (nothing left made or open). */
static int
transfer_export_prepare(struct monitor *srv, const char *room,
    const char *dir, const struct room_ids *ids, struct transfer_export *x)
{
	int rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	memset(x, 0, sizeof(*x));
	if (rfd < 0)
		return -errno;
	transfer_sweep_exports(srv, room, rfd);
	r = transfer_export_db(rfd, ROOM_DB_NAME, x);
	if (r == 0)
		r = transfer_export_db(rfd, WORKSPACE_DB_NAME, x);
	if (r == 0)
		r = transfer_export_commit(dir, x);
	if (r == 0)
		r = transfer_export_staging(dir, rfd, ids, x);
	if (r < 0)
		transfer_export_release(x);
	close(rfd);
	return r;
}

/* Remove an export's directory (when it has one). */
static void
transfer_export_cleanup(struct monitor *srv, const struct room_transfer *t)
{
	char dir[PATH_MAX + 80];
	int rfd, r;

	if (!t->staging[0])
		return;
	transfer_path(srv, t->room, NULL, dir, sizeof(dir));
	if ((rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;		/* the room is gone, and the directory too */
	if ((r = transfer_drop_dir(rfd, t->staging)) < 0 && r != -ENOENT)
		log_warn("room %s: cannot remove the export's directory %s: %s",
		    t->room, t->staging, strerror(-r));
	close(rfd);
}

/* Start the export of room (at dir) as ids with x's files, writing to
 * out and err.  The pid, or -errno. */
static pid_t
transfer_export_spawn(struct monitor *srv, const char *room, const char *dir,
    const struct room_ids *ids, const struct transfer_cg *cg,
    struct transfer_export *x, int out, int err)
{
	char staging[PATH_MAX + 120];
	char *argv[6 + TRANSFER_EXPORT_FILES] = { srv->rooms.progs.fs,
	    "export-room" };
	struct transfer_fds fds = { { -1, out, err }, x->files, x->n };
	int argc = 2;
	pid_t pid;

	for (int i = 0; i < x->n; i++)
		argv[argc++] = x->args[i];
	/* The helper sees the room as "."; the archive says which it was. */
	argv[argc++] = "--room";
	argv[argc++] = (char *)room;
	argv[argc++] = ".";
	argv[argc] = NULL;
	if ((fds.std[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	snprintf(staging, sizeof(staging), "%s/%s", dir, x->staging);
	pid = transfer_spawn_fds(argv, staging, ids, cg, &fds);
	close(fds.std[0]);
	return pid;
}

/* The room an export names, at dir, and its uid, into ids: 0, or
 * -errno with why. */
static int
transfer_export_check(struct monitor *srv, const char *room, char *dir,
    size_t dirlen, struct room_ids *ids, char *why, size_t len)
{
	struct stat sb;
	int r;

	room_transfer_clear_stale(srv, room);
	transfer_path(srv, room, NULL, dir, dirlen);
	if (stat(dir, &sb) < 0 || room_transfer_importing(srv, room) ||
	    rooms_deleting(&srv->rooms, room)) {
		snprintf(why, len, "room '%s' does not exist (or is being made "
		    "or deleted)", room);
		return -ENOENT;
	}
	if ((r = room_ids_get(dir, srv->cfg, ids)) < 0) {
		log_error("room %s: cannot start an export: %s", room,
		    strerror(-r));
		snprintf(why, len, "cannot start the export: %s", strerror(-r));
	}
	return r;
}

/* See room_transfer.h. */
int
room_transfer_export(struct monitor *srv, const char *room,
    int fds[ROOM_TRANSFER_FDS], char *why, size_t len)
{
	char dir[PATH_MAX + 80];
	struct transfer_export x;
	struct room_transfer *t = NULL;
	struct transfer_cg cg;
	struct room_ids ids;
	int p[3][2], r;
	pid_t pid;

	if ((r = transfer_export_check(srv, room, dir, sizeof(dir), &ids, why,
	    len)) < 0 ||
	    (r = transfer_sandbox_prepare(srv->cfg, room, &cg, why, len)) < 0)
		return r;
	if ((r = transfer_export_prepare(srv, room, dir, &ids, &x)) < 0 ||
	    (r = transfer_pipes(p)) < 0) {
		/* A directory made is swept at the room's next export. */
		transfer_export_release(&x);
		transfer_sandbox_release(&cg);
		log_error("room %s: cannot start an export: %s", room,
		    strerror(-r));
		snprintf(why, len, "cannot start the export: %s", strerror(-r));
		return r;
	}
	pid = transfer_export_spawn(srv, room, dir, &ids, &cg, &x, p[0][1],
	    p[1][1]);
	transfer_export_release(&x);
	transfer_close(&p[0][1], 1);
	transfer_close(&p[1][1], 1);
	if (pid < 0 || !(t = transfer_add(srv, STAGE_EXPORT, pid, room, NULL,
	    -1, p[2][1]))) {
		if (pid > 0)
			kill(pid, SIGKILL);	/* reaped as no one's */
		transfer_close(p[2], 2);
		transfer_close(&p[0][0], 1);
		transfer_close(&p[1][0], 1);
		transfer_sandbox_release(&cg);
		snprintf(why, len, "cannot start the export");
		return -ENOMEM;
	}
	t->ids = ids;
	t->cg = cg;
	memcpy(t->staging, x.staging, sizeof(t->staging));
	log_info("room %s: export started (pid %d, uid %u)", room, (int)pid,
	    (unsigned)ids.uid);
	fds[0] = p[0][0];
	fds[1] = p[1][0];
	fds[2] = p[2][0];
	return 0;
}

/* The new room's access record (access_record.h): the importer owns it
 * (import-db made room.db say so), nobody else is a member, and it is
 * private until its agent first starts and reports the visibility the
 * archive keeps: the monitor learns nothing from the stranger's room.db
 * itself.  0 or -errno. */
static int
transfer_record(const char *dir, const struct room_transfer *t)
{
	struct access_list l;

	access_list_init(&l);
	l.visibility = ACCESS_PRIVATE;
	snprintf(l.owner, sizeof(l.owner), "%s", t->user);
	return access_record_write(dir, &l) < 0 ? -EIO : 0;
}

/* Step 5: the workspace and the history in place, the access record
 * made, the mark gone.  0 or -errno. */
static int
transfer_finish(struct monitor *srv, struct room_transfer *t)
{
	char dir[PATH_MAX + 80];
	int rfd, sfd = -1, r;

	transfer_path(srv, t->room, NULL, dir, sizeof(dir));
	if ((rfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	sfd = openat(rfd, TRANSFER_STAGING, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	r = sfd < 0 ? -errno : 0;
	if (r == 0)
		r = transfer_adopt_file(sfd, rfd, WORKSPACE_DB_NAME,
		    WORKSPACE_DB_NAME, &t->ids);
	if (r == 0)
		r = transfer_adopt_file(sfd, rfd, ROOM_DB_NAME ".import",
		    ROOM_DB_NAME, &t->ids);
	if (sfd >= 0)
		close(sfd);
	if (r == 0)
		r = transfer_drop_dir(rfd, TRANSFER_STAGING);
	if (r == 0)
		r = transfer_record(dir, t);
	if (r == 0 && unlinkat(rfd, TRANSFER_MARK, 0) < 0)
		r = -errno;
	close(rfd);
	if (r == 0)
		log_info("room %s: imported, owner %s", t->room, t->user);
	return r;
}

/* Write the status line and forget t. */
static void
transfer_end(struct monitor *srv, struct room_transfer *t, int code)
{
	char line[16];
	int n = snprintf(line, sizeof(line), "%d\n", code);

	for (struct room_transfer **pp = &srv->transfers; *pp;
	    pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	if (t->status_w >= 0 && write(t->status_w, line, (size_t)n) < 0)
		log_debug("room %s: the transfer's client is gone", t->room);
	transfer_close(&t->status_w, 1);
	transfer_close(&t->err_w, 1);
	transfer_sandbox_release(&t->cg);
	free(t);
}

/* An import's helper ended with code: on to the next step, or undo the
 * room. */
static void
transfer_import_step(struct monitor *srv, struct room_transfer *t, int code)
{
	int r = code == 0 ? 0 : -ECANCELED;

	if (r == 0 && t->stage == STAGE_UNPACK) {
		if ((r = transfer_adopt(srv, t)) == 0)
			return;		/* step 4 runs */
	} else if (r == 0) {
		if ((r = transfer_finish(srv, t)) == 0) {
			transfer_end(srv, t, 0);
			return;
		}
	}
	if (r != -ECANCELED) {
		log_error("room %s: import failed: %s", t->room, strerror(-r));
		transfer_say(t, "atriumd: the import failed on the server; the "
		    "operator's log says why\n");
	}
	transfer_remove_room(srv, t->room);
	transfer_say(t, "atriumd: nothing was imported: the room was not "
	    "made\n");
	log_info("room %s: import by %s refused or failed; removed", t->room,
	    t->user);
	transfer_end(srv, t, code ? code : 1);
}

/* The exit status of status, as a shell would show it. */
static int
transfer_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) :
	    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* See room_transfer.h. */
int
room_transfer_child_exited(struct monitor *srv, pid_t pid, int status)
{
	struct room_transfer *t = srv->transfers;
	int code = transfer_code(status);

	while (t && t->pid != pid)
		t = t->next;
	if (!t)
		return 0;
	t->pid = 0;
	if (t->stage == STAGE_EXPORT) {
		log_info("room %s: export ended with status %d", t->room, code);
		transfer_export_cleanup(srv, t);
		transfer_end(srv, t, code);
	} else {
		transfer_import_step(srv, t, code);
	}
	return 1;
}

/* See room_transfer.h. */
void
room_transfer_stop_all(struct monitor *srv)
{
	struct room_transfer *t;
	int status;

	while ((t = srv->transfers)) {
		if (t->pid > 0) {
			kill(t->pid, SIGKILL);
			waitpid(t->pid, &status, 0);
		}
		if (t->stage != STAGE_EXPORT)
			transfer_remove_room(srv, t->room);
		else
			transfer_export_cleanup(srv, t);
		transfer_end(srv, t, 1);
	}
}
