/*
 * fs_main.c: the atrium-fs command line: mkfs, mount, fsck, du, compact,
 * export, import and the snapshot commands (snapshot, snapshots, restore,
 * drop, diff) over the core (export, import, fsck --repair and compact in
 * files of their own: fs/offline/commands.h).
 * atriumd runs `atrium-fs mkfs --owner UID:GID DB` for a new room and
 * `atrium-fs mount --ready-fd N DB DIR` when the room starts; people run
 * the same commands by hand.  man/atrium-fs.8 documents each one.
 */
#include "cli.h"
#include "commands.h"
#include "fdfiles.h"
#include "fs.h"
#include "fsctl_client.h"
#include "log.h"
#include "mount.h"
#include "mount_confine.h"
#include "names.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long a command waits for the mounted daemon's answer: a restore of
 * a big tree with much changed may take a while. */
#define CTL_TIMEOUT_S 600

static const char usage_text[] =
	"usage: atrium-fs mkfs [--owner UID:GID] DB\n"
	"       atrium-fs mount [-f] [-o OPTS] [--ready-fd N] DB DIR\n"
	"       atrium-fs fsck [--repair | --run-as UID:GID] DB\n"
	"       atrium-fs du DB\n"
	"       atrium-fs compact DB\n"
	"       atrium-fs reown DB FROM_UID:GID TO_UID:GID\n"
	"       atrium-fs export DB [SNAPSHOT] > TAR\n"
	"       atrium-fs import DB < TAR\n"
	"       atrium-fs export-room [--fd NAME=FD]... [--after-commit FD]\n"
	"                   [--room NAME] ROOM_DIR > TAR\n"
	"       atrium-fs import-room [--owner UID:GID] [--quota BYTES]\n"
	"                   [--quota-inodes N] ROOM_DIR < TAR\n"
	"       atrium-fs snapshot DB NAME\n"
	"       atrium-fs snapshots DB\n"
	"       atrium-fs restore DB NAME\n"
	"       atrium-fs diff DB NAME\n"
	"       atrium-fs drop DB NAME\n"
	"see atrium-fs(8)\n";

/* Print usage to stderr; the exit status 2. */
static int
usage(void)
{
	fputs(usage_text, stderr);
	return 2;
}

/* Parse "UID:GID" into uid, gid: 0 or -EINVAL. */
static int
parse_owner(const char *s, uint32_t *uid, uint32_t *gid)
{
	char *end;
	unsigned long u, g;

	errno = 0;
	u = strtoul(s, &end, 10);
	if (end == s || *end != ':' || errno)
		return -EINVAL;
	s = end + 1;
	g = strtoul(s, &end, 10);
	if (end == s || *end || errno || u > UINT32_MAX - 1 || g > UINT32_MAX - 1)
		return -EINVAL;
	*uid = (uint32_t)u;
	*gid = (uint32_t)g;
	return 0;
}

/* atrium-fs mkfs [--owner UID:GID] DB */
static int
cmd_mkfs(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "owner", required_argument, NULL, 'O' },
		{ NULL, 0, NULL, 0 },
	};
	struct lockfile_holder h;
	uint32_t uid = 0, gid = 0;
	int c, fd, r;

	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		if (c != 'O' || parse_owner(optarg, &uid, &gid) < 0) {
			if (c == 'O')
				fprintf(stderr, "atrium-fs: --owner wants UID:GID "
				    "(numbers), not \"%s\"\n", optarg);
			return usage();
		}
	}
	if (argc - optind != 1)
		return usage();
	/* Under the mount lock: a daemon serving DB, or starting to, is
	 * named, and none mounts a database half made. */
	if ((r = lockfile_acquire(argv[optind], &fd, &h)) == -EBUSY) {
		mount_holder_refuse(argv[optind], &h, "make a filesystem in");
		return 1;
	}
	if (r == 0) {
		r = fs_mkfs(argv[optind], uid, gid);
		lockfile_release(fd);
	}
	if (r == -EEXIST) {
		fprintf(stderr, "atrium-fs: %s already exists and is not empty; "
		    "refusing to overwrite it (remove it first, or pick a new "
		    "path)\n", argv[optind]);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "atrium-fs: cannot create %s: %s; check that its "
		    "directory exists and is writable\n", argv[optind], strerror(-r));
		return 1;
	}
	return 0;
}

/* A file descriptor number given as s: it, or -1 (said, naming opt). */
static int
parse_fd(const char *opt, const char *s)
{
	char *end;
	long fd = strtol(s, &end, 10);

	if (end == s || *end || fd < 0 || fd > INT_MAX) {
		fprintf(stderr, "atrium-fs: --%s wants a file descriptor number, "
		    "not \"%s\"\n", opt, s);
		return -1;
	}
	return (int)fd;
}

/* atrium-fs mount [-f] [-o OPTS] [--ready-fd N] DB DIR */
static int
cmd_mount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "foreground", no_argument, NULL, 'f' },
		{ "ready-fd", required_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct mount_opts o = { .ready_fd = -1 };
	int c;

	while ((c = getopt_long(argc, argv, "+fo:", longopts, NULL)) != -1) {
		if (c == 'f') {
			o.foreground = 1;
		} else if (c == 'o') {
			o.fuse_opts = optarg;
		} else if (c == 'R') {
			if ((o.ready_fd = parse_fd("ready-fd", optarg)) < 0)
				return 2;
		} else {
			return usage();
		}
	}
	if (argc - optind != 2)
		return usage();
	o.db = argv[optind];
	o.dir = argv[optind + 1];
	return mount_run(&o);
}

/* fsck's report callback: one problem per line on stdout. */
static void
fsck_print(void *arg, const char *problem)
{
	int *n = arg;

	(*n)++;
	printf("%s\n", problem);
}

/* fsck --run-as UID:GID DB: give root up before DB is opened, as a
 * mount's daemon does (mount_confine.h), and say who checks it.  atriumd
 * checks so a database restored from the object store, whose pages a
 * hostile store could have made, before it puts it in place; such a
 * database is never mounted, so no lock file is looked at.  0, or 2
 * (said why). */
static int
fsck_confine(const char *spec, const char *db, char *path, size_t len)
{
	uid_t uid;
	gid_t gid;

	if (mount_confine_parse(spec, &uid, &gid) < 0) {
		fprintf(stderr, "atrium-fs: --run-as wants UID:GID, neither 0 "
		    "(not %s)\n", spec);
		return 2;
	}
	if (mount_confine_prepare(db, uid, gid, path, len) < 0 ||
	    mount_confine_drop(path, uid, gid) < 0)
		return 2;
	fprintf(stderr, "atrium-fs: checking %s as uid %u, gid %u, with no "
	    "capability\n", db, (unsigned)geteuid(), (unsigned)getegid());
	return 0;
}

/* atrium-fs fsck [--repair | --run-as UID:GID] DB */
static int
cmd_fsck(int argc, char **argv)
{
	struct lockfile_holder h;
	char confined[PATH_MAX + 64];
	const char *db;
	int mounted = 0, n = 0, r;

	if (argc == 3 && strcmp(argv[1], "--repair") == 0)
		return repair_run(argv[2]);
	if (argc == 4 && strcmp(argv[1], "--run-as") == 0) {
		if ((r = fsck_confine(argv[2], argv[3], confined,
		    sizeof(confined))) != 0)
			return r;
		db = confined;
	} else if (argc == 2) {
		db = argv[1];
		mounted = lockfile_probe(db, &h) == 1;
	} else {
		return usage();
	}
	if (mounted)
		fprintf(stderr, "atrium-fs: note: %s is mounted at %s by pid %ld; "
		    "checking its last committed state\n", db, h.dir, (long)h.pid);
	r = fsck_run(db, mounted, fsck_print, &n);
	if (r == -ENOENT) {
		fprintf(stderr, "atrium-fs: %s does not exist; check the path\n", db);
		return 2;
	}
	if (r == -EPROTO || r == -EINVAL) {
		fprintf(stderr, "atrium-fs: %s %s\n", db, r == -EPROTO ?
		    "was written by a newer atrium-fs; upgrade atrium-fs to check it" :
		    "is not an atrium-fs database");
		return 2;
	}
	if (r < 0) {
		fprintf(stderr, "atrium-fs: checking %s failed: %s\n", db,
		    strerror(-r));
		return 2;
	}
	if (r > 0) {
		fprintf(stderr, "atrium-fs: %s: %d problem%s found\n", db, r,
		    r == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

/* The database's overhead over its data, as "12.5%" (or "-" without data). */
static void
du_overhead(const struct fs_du *u, char *buf, size_t size)
{
	double total = (double)u->db_bytes + (double)u->wal_bytes;

	if (u->data_bytes == 0)
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.1f%%",
		    (total - (double)u->data_bytes) * 100.0 / (double)u->data_bytes);
}

/* atrium-fs compact DB: give the disk back what deleted files left free
 * (fs/offline/compact.c). */
static int
cmd_compact(int argc, char **argv)
{
	if (argc != 2)
		return usage();
	return compact_run(argv[1]);
}

/* atrium-fs reown DB FROM_UID:GID TO_UID:GID */
static int
cmd_reown(int argc, char **argv)
{
	if (argc != 4)
		return usage();
	return reown_run(argv[1], argv[2], argv[3]);
}

/* Bytes of path and of its -wal, or 0 when path is not there. */
static unsigned long long
du_sqlite_size(const char *path)
{
	char wal[4300];
	struct stat st;
	unsigned long long n = 0;

	if (stat(path, &st) < 0 ||
	    snprintf(wal, sizeof(wal), "%s-wal", path) >= (int)sizeof(wal))
		return 0;
	n = (unsigned long long)st.st_size;
	if (stat(wal, &st) == 0)
		n += (unsigned long long)st.st_size;
	return n;
}

/* The room's parts against its quota: room.db beside db (a room's
 * directory), and the quota of the daemon that has db mounted, if any
 * (the quota is a mount option, not stored in the file). */
static void
du_room(const char *db, const struct fs_du *u)
{
	char room[4200], *slash;
	struct fsctl_usage q;
	unsigned long long rdb;

	snprintf(room, sizeof(room), "%s", db);
	slash = strrchr(room, '/');
	snprintf(slash ? slash + 1 : room, sizeof(room) - (size_t)(slash ?
	    slash + 1 - room : 0), "room.db");
	rdb = du_sqlite_size(room);
	if (rdb)
		printf("room.db:       %llu bytes (with its WAL)\n", rdb);
	/* What the room takes on the disk, each WAL counted: a WAL holds a
	 * copy of the pages written since its last checkpoint. */
	printf("footprint:     %llu bytes\n", (unsigned long long)(u->db_bytes +
	    u->wal_bytes) + rdb);
	if (fsctl_usage(db, CTL_TIMEOUT_S, &q) < 0 || !q.quota)
		return;
	printf("quota:         %llu bytes: %llu used, of which live %llu, "
	    "snapshots only %llu; the WAL's %llu besides\n", q.quota, q.used,
	    q.used - q.snap_only, q.snap_only,
	    (unsigned long long)u->wal_bytes);
}

/* atrium-fs du DB */
static int
cmd_du(int argc, char **argv)
{
	struct fs_du u;
	char overhead[32];
	int r;

	if (argc != 2)
		return usage();
	r = fs_du(argv[1], &u);
	if (r == -ENOENT || r == -EPROTO || r == -EINVAL) {
		fprintf(stderr, "atrium-fs: %s %s\n", argv[1], r == -ENOENT ?
		    "does not exist; check the path" : r == -EPROTO ?
		    "was written by a newer atrium-fs; upgrade atrium-fs to read it" :
		    "is not an atrium-fs database");
		return 2;
	}
	if (r < 0) {
		fprintf(stderr, "atrium-fs: reading %s failed: %s\n", argv[1],
		    strerror(-r));
		return 2;
	}
	du_overhead(&u, overhead, sizeof(overhead));
	printf("data stored:   %llu bytes\n", (unsigned long long)u.data_bytes);
	printf("snapshots only: %llu bytes\n",
	    (unsigned long long)u.snap_only_bytes);
	printf("file sizes:    %llu bytes\n", (unsigned long long)u.file_sizes);
	printf("inodes:        %llu\n", (unsigned long long)u.inodes);
	printf("database:      %llu bytes\n", (unsigned long long)u.db_bytes);
	printf("wal:           %llu bytes\n", (unsigned long long)u.wal_bytes);
	printf("overhead:      %s\n", overhead);
	du_room(argv[1], &u);
	return 0;
}

/* Say on stderr why db could not be opened (r from fs_open); exit status 2. */
static int
open_failed(const char *db, int r)
{
	fprintf(stderr, "atrium-fs: %s %s\n", db, r == -ENOENT ?
	    "does not exist; check the path" : r == -EPROTO ?
	    "was written by a newer atrium-fs; upgrade atrium-fs to use it" :
	    r == -EINVAL ? "is not an atrium-fs database" : strerror(-r));
	return 2;
}

/* Hold db's mount lock for a command that changes an unmounted database
 * (so that no mount starts meanwhile) into *fd: 0, 1 when a daemon has it
 * mounted (*fd -1), or the exit status 2 with the reason said. */
static int
lock_unmounted(const char *db, int *fd)
{
	struct lockfile_holder h;
	int r;

	*fd = -1;
	if (access(db, F_OK) < 0)
		return open_failed(db, -ENOENT);
	if ((r = lockfile_acquire(db, fd, &h)) == -EBUSY)
		return 1;
	if (r < 0) {
		fprintf(stderr, "atrium-fs: cannot lock %s-mount: %s; check that "
		    "its directory is writable\n", db, strerror(-r));
		return 2;
	}
	return 0;
}

/* Why snapshot name does not fit, with the quota's figures, on stderr. */
static void
snapshot_quota_say(const char *name, unsigned long long keep,
    unsigned long long used, unsigned long long quota,
    unsigned long long snap_only)
{
	fprintf(stderr, "atrium-fs: snapshot %s would keep %llu bytes more "
	    "(the live data no other snapshot holds, and its rows); %llu of "
	    "the quota's %llu bytes are used (%llu of them by snapshots "
	    "only): drop a snapshot or delete files\n", name, keep, used,
	    quota, snap_only);
}

/* verb on snapshot name through the control socket of the daemon that
 * has db mounted: 0, -errno, or the exit status 2 with the reason said. */
static int
snapshot_mounted(const char *db, const char *verb, const char *name)
{
	struct lockfile_holder h;
	struct fsctl_usage why;
	int r = strcmp(verb, "snapshot") == 0 ?
	    fsctl_snapshot(db, 0, name, CTL_TIMEOUT_S, &why) :
	    fsctl_request(db, verb, name, CTL_TIMEOUT_S);

	if (r == -EDQUOT && strcmp(verb, "snapshot") == 0 && why.quota)
		snapshot_quota_say(name, why.keep, why.used, why.quota,
		    why.snap_only);

	if (r != -ECONNREFUSED && r != -ENAMETOOLONG)
		return r;
	if (lockfile_probe(db, &h) == 1 && h.pid > 0 && h.dir[0])
		fprintf(stderr, "atrium-fs: %s is mounted at %s by atrium-fs "
		    "pid %ld but its daemon does not answer on %s-ctl; unmount "
		    "it and try again\n", db, h.dir, (long)h.pid, db);
	else
		mount_holder_refuse(db, &h, verb);
	return 2;
}

/* What a snapshot command's failure r means for name, on stderr; 1. */
static int
snapshot_failed(const char *what, const char *db, const char *name, int r)
{
	if (r == -EINVAL)
		fprintf(stderr, "atrium-fs: \"%s\" is not a snapshot name: use 1 "
		    "to %d letters, digits and . _ : @ + - (not first)\n", name,
		    FS_SNAPSHOT_NAME_MAX);
	else if (r == -EEXIST)
		fprintf(stderr, "atrium-fs: %s already has a snapshot named %s; "
		    "drop it first or pick another name\n", db, name);
	else if (r == -ENOENT)
		fprintf(stderr, "atrium-fs: %s has no snapshot named %s; "
		    "`atrium-fs snapshots %s` lists them\n", db, name, db);
	else if (r == -EDQUOT || r == -ENOSPC)
		fprintf(stderr, "atrium-fs: %s of %s: %s; free some room first\n",
		    what, name, strerror(-r));
	else if (r == -EUCLEAN)
		fprintf(stderr, "atrium-fs: snapshot %s of %s is damaged (it has "
		    "no root directory) and was not restored; `atrium-fs fsck "
		    "--repair %s` drops it\n", name, db, db);
	else if (r == -ECONNRESET)
		fprintf(stderr, "atrium-fs: the daemon that has %s mounted went "
		    "away before answering the %s of %s: it was done whole or "
		    "not at all; unmount and mount again, then see `atrium-fs "
		    "snapshots %s`\n", db, what, name, db);
	else if (r == -EAGAIN)
		fprintf(stderr, "atrium-fs: the daemon that has %s mounted did "
		    "not answer the %s of %s in %d s; it may still finish it\n",
		    db, what, name, CTL_TIMEOUT_S);
	else
		fprintf(stderr, "atrium-fs: %s of %s in %s failed: %s\n", what,
		    name, db, strerror(-r));
	return 1;
}

/* A named snapshot of the unmounted fs, admitted as its daemon would
 * admit it: under the quota it was last mounted with (fs_quota_recorded),
 * refused with the figures when what it would keep does not fit.  0 or
 * -errno. */
static int
snapshot_take_offline(struct fs *fs, const char *name)
{
	struct fs_quota_figures why;
	uint64_t bytes, inodes;
	int r;

	if ((r = fs_quota_recorded(fs, &bytes, &inodes)) < 0 ||
	    ((bytes || inodes) && (r = fs_quota_set(fs, bytes, inodes)) < 0))
		return r;
	r = fs_snapshot_take(fs, name, 0, NULL, &why);
	if (r == -EDQUOT && why.quota)
		snapshot_quota_say(name, why.keep, why.used, why.quota,
		    why.snap_only);
	return r;
}

/* verb on name in the unmounted db (its lock held as fd).  0 or -errno. */
static int
snapshot_offline(const char *db, int fd, const char *verb, const char *name)
{
	struct fs *fs;
	int r;

	if ((r = fs_open(db, FS_OPEN_CLEAN_ORPHANS, &fs)) < 0) {
		lockfile_release(fd);
		return open_failed(db, r);
	}
	if (strcmp(verb, "snapshot") == 0)
		r = snapshot_take_offline(fs, name);
	else if (strcmp(verb, "restore") == 0)
		r = fs_snapshot_restore(fs, name, NULL);
	else
		r = fs_snapshot_drop(fs, name);
	fs_close(fs);
	lockfile_release(fd);
	return r;
}

/* atrium-fs snapshot|restore|drop DB NAME: on the database itself, or
 * through the mounting daemon (fs/daemon/control_socket.c) when it is
 * mounted. */
static int
cmd_snapshot_change(int argc, char **argv)
{
	const char *db, *name;
	int fd, r;

	if (argc != 3)
		return usage();
	db = argv[1];
	name = argv[2];
	if (fs_snapshot_name_ok(name) < 0)
		return snapshot_failed(argv[0], db, name, -EINVAL);
	if ((r = lock_unmounted(db, &fd)) == 0)
		r = snapshot_offline(db, fd, argv[0], name);
	else if (r == 1)
		r = snapshot_mounted(db, argv[0], name);
	if (r == 2)
		return 2;
	return r < 0 ? snapshot_failed(argv[0], db, name, r) : 0;
}

/* One line of `atrium-fs diff`: the kind and the path, with bytes a
 * terminal would act on shown as '?'. */
static int
diff_print(void *arg, char kind, const char *path)
{
	(void)arg;
	putchar(kind);
	putchar(' ');
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		putchar(*p < 0x20 || *p == 0x7f ? '?' : *p);
	putchar('\n');
	return 0;
}

/* diff in the unmounted db (its lock held as fd).  0 or -errno. */
static int
diff_offline(const char *db, int fd, const char *name, int *more)
{
	struct fs *fs;
	int r;

	if ((r = fs_open(db, 0, &fs)) < 0) {
		lockfile_release(fd);
		return open_failed(db, r);
	}
	r = fs_snapshot_diff(fs, name, FS_DIFF_MAX, diff_print, NULL, more);
	fs_close(fs);
	lockfile_release(fd);
	return r;
}

/* atrium-fs diff DB NAME: what changed since snapshot NAME, one path a
 * line (A added, D removed, M modified), through the mounting daemon
 * when DB is mounted. */
static int
cmd_diff(int argc, char **argv)
{
	const char *db, *name;
	int fd, r, more = 0;

	if (argc != 3)
		return usage();
	db = argv[1];
	name = argv[2];
	if (fs_snapshot_name_ok(name) < 0)
		return snapshot_failed("diff", db, name, -EINVAL);
	if ((r = lock_unmounted(db, &fd)) == 0) {
		r = diff_offline(db, fd, name, &more);
	} else if (r == 1) {
		r = fsctl_diff(db, name, CTL_TIMEOUT_S, diff_print, NULL, &more);
		if (r == -ECONNREFUSED)
			return snapshot_mounted(db, "diff", name);
	}
	if (r == 2)
		return 2;
	if (r < 0)
		return snapshot_failed("diff", db, name, r);
	if (more)
		printf("... more than %d changes; the first %d are shown\n",
		    FS_DIFF_MAX, FS_DIFF_MAX);
	return 0;
}

/* One line of `atrium-fs snapshots`. */
static int
snapshot_print(void *arg, const struct fs_snapshot_info *s)
{
	time_t t = (time_t)(s->created_ns / 1000000000);
	char when[32];
	struct tm tm;

	char name[FS_SNAPSHOT_NAME_MAX + 1];
	size_t i;

	(void)arg;
	/* Names were checked when taken; a database from elsewhere may hold
	 * anything, and this goes to a terminal. */
	for (i = 0; s->name && s->name[i] && i < FS_SNAPSHOT_NAME_MAX; i++)
		name[i] = s->name[i] > ' ' && s->name[i] < 127 ? s->name[i] : '?';
	name[i] = '\0';
	if (!gmtime_r(&t, &tm) ||
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(when, sizeof(when), "-");
	printf("%-24s %s %10llu %14llu %14llu\n", name, when,
	    (unsigned long long)s->inodes, (unsigned long long)s->shared_bytes,
	    (unsigned long long)s->own_bytes);
	return 0;
}

/* atrium-fs snapshots DB: read-only, so safe while mounted. */
static int
cmd_snapshots(int argc, char **argv)
{
	struct fs *fs;
	int r;

	if (argc != 2)
		return usage();
	if ((r = fs_open(argv[1], FS_OPEN_READONLY, &fs)) < 0)
		return open_failed(argv[1], r);
	printf("%-24s %-20s %10s %14s %14s\n", "NAME", "TAKEN", "INODES",
	    "SHARED", "OWN");
	r = fs_snapshot_list(fs, snapshot_print, NULL);
	fs_close(fs);
	if (r < 0) {
		fprintf(stderr, "atrium-fs: listing the snapshots of %s failed: "
		    "%s\n", argv[1], strerror(-r));
		return 2;
	}
	return 0;
}

/* atrium-fs export DB [SNAPSHOT].  In the C.UTF-8 locale, as import: names
 * in UTF-8 pass through libarchive as they are. */
static int
cmd_export(int argc, char **argv)
{
	if (argc != 2 && argc != 3)
		return usage();
	setlocale(LC_CTYPE, "C.UTF-8");
	return export_run(argv[1], argc == 3 ? argv[2] : NULL, STDOUT_FILENO);
}

/* atrium-fs import DB */
static int
cmd_import(int argc, char **argv)
{
	if (argc != 2)
		return usage();
	setlocale(LC_CTYPE, "C.UTF-8");
	return import_run(argv[1], STDIN_FILENO);
}

/* atrium-fs export-room [--fd NAME=FD]... [--after-commit FD] [--room
 * NAME] ROOM_DIR: the room's history and workspace.  Each --fd gives a
 * file of ROOM_DIR (which must then be ".") as an open descriptor:
 * atriumd opens the room's databases for a helper that may not
 * (fdfiles.h).  --after-commit names the connection on which atriumd
 * asked the workspace's daemon to commit; the export waits for its answer
 * before it reads.  --room names the room the archive says it came from
 * (by default ROOM_DIR's last component). */
static int
cmd_export_room(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "fd", required_argument, NULL, 'f' },
		{ "after-commit", required_argument, NULL, 'c' },
		{ "room", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	int c, given = 0, commit_fd = -1;
	const char *room = NULL;

	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1) {
		if (c == 'r') {
			if (!room_name_valid(optarg)) {
				fprintf(stderr, "atrium-fs: export-room: \"%s\" "
				    "is not a room name\n", optarg);
				return usage();
			}
			room = optarg;
			continue;
		}
		if (c == 'c') {
			if (commit_fd >= 0 ||
			    (commit_fd = parse_fd("after-commit", optarg)) < 0)
				return usage();
			continue;
		}
		if (c != 'f' || fdfiles_add(optarg) < 0) {
			if (c == 'f')
				fprintf(stderr, "atrium-fs: export-room: bad --fd "
				    "\"%s\" (NAME=FD: a file name and an open "
				    "descriptor above 2)\n", optarg);
			return usage();
		}
		given = 1;
	}
	if (argc - optind != 1 || (given && strcmp(argv[optind], ".") != 0))
		return usage();
	if (fdfiles_install() < 0)
		return 1;
	if (commit_fd >= 0 && room_export_await_commit(commit_fd))
		return 1;
	setlocale(LC_CTYPE, "C.UTF-8");
	return room_export_run(argv[optind], room, STDOUT_FILENO);
}

/* A decimal count for --quota and --quota-inodes: 0 or -EINVAL. */
static int
parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (end == s || *end || errno || s[0] == '-')
		return -EINVAL;
	*out = v;
	return 0;
}

/* One option of import-room into o.  0 or -EINVAL (said). */
static int
import_room_option(int c, const char *arg, struct import_opts *o)
{
	int r = c == 'O' ? parse_owner(arg, &o->uid, &o->gid) :
	    c == 'q' ? parse_count(arg, &o->quota_bytes) :
	    c == 'i' ? parse_count(arg, &o->quota_inodes) : -EINVAL;

	if (r < 0 && c != '?')
		fprintf(stderr, "atrium-fs: import-room: bad value \"%s\" (--owner "
		    "wants UID:GID, the quotas a number)\n", arg);
	o->owner |= c == 'O';
	return r;
}

/* atrium-fs import-room [--owner UID:GID] [--quota N] [--quota-inodes N]
 * ROOM_DIR < TAR */
static int
cmd_import_room(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "owner", required_argument, NULL, 'O' },
		{ "quota", required_argument, NULL, 'q' },
		{ "quota-inodes", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	struct import_opts o = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "+", longopts, NULL)) != -1)
		if (import_room_option(c, optarg, &o) < 0)
			return usage();
	if (argc - optind != 1)
		return usage();
	setlocale(LC_CTYPE, "C.UTF-8");
	return room_import_run(argv[optind], STDIN_FILENO, &o);
}

/* The commands, by name. */
static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "mkfs", cmd_mkfs },
	{ "mount", cmd_mount },
	{ "fsck", cmd_fsck },
	{ "du", cmd_du },
	{ "compact", cmd_compact },
	{ "reown", cmd_reown },
	{ "export", cmd_export },
	{ "import", cmd_import },
	{ "export-room", cmd_export_room },
	{ "import-room", cmd_import_room },
	{ "snapshot", cmd_snapshot_change },
	{ "snapshots", cmd_snapshots },
	{ "restore", cmd_snapshot_change },
	{ "drop", cmd_snapshot_change },
	{ "diff", cmd_diff },
};

int
main(int argc, char **argv)
{
	int r;

	log_init("atrium-fs", NULL);
	if ((r = cli_common("atrium-fs", &argc, argv)) != 0)
		return r > 0 ? 0 : 2;
	if (argc < 2)
		return usage();
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		fputs(usage_text, stdout);
		return 0;
	}
	fprintf(stderr, "atrium-fs: unknown command \"%s\"\n", argv[1]);
	return usage();
}
