/*
 * replicate_restore.c: `atrium-replicate restore`, run on a host that has
 * just claimed a room, before the room starts: rebuild room.db and
 * workspace.db from what the manifest in etcd names (replicate.h), into
 * a staging directory (--dir-fd, or --dir) that the caller moves them
 * from.
 *
 * Privilege: atriumd starts it as root with --run-as the room's uid and
 * the staging directory already open (--dir-fd: made by the monitor, the
 * room's uid's, 0700, in DATA/run/ROOM/replicate, whose parents that uid
 * may not walk: DATA is 0700).  Before it asks etcd or the store anything
 * it becomes that uid for good (replicate_confine.c: no capability,
 * no_new_privs), lets Landlock refuse it any write outside that
 * directory, and bounds the size of every file it writes (--max-bytes,
 * RLIMIT_FSIZE).  From then on it reaches its files only
 * through the open directory: openat, renameat and unlinkat on it for
 * the files it writes, and for SQLite, which opens files by name, the
 * path /proc/self/fd/N/NAME, through a VFS that keeps that path as it is
 * (common/vfs_shim.h's plain shim: the default VFS would read the link
 * and walk the directory's real path, which the uid may not).  Why an
 * open directory rather than a staging place the uid could walk: nothing
 * of DATA is made reachable to a room's uid for it, and the process can
 * name no file but the directory's.  The names it writes there are fixed
 * (REPL_ROOM_DB_NAME, REPL_WORKSPACE_DB_NAME, each with ".restore" while
 * it is built), never taken from what it fetches.
 *
 * For each database: the snapshot is fetched into NAME.restore (in
 * pieces: memory stays one piece), the segments of its epoch that cover
 * [from, upto) are fetched one at a time and fed to a repl_stream that
 * applies them to that file, the file is synced and checked (PRAGMA
 * integrity_check).  Once both are, NAME-wal and NAME-shm are removed (a
 * stale WAL would be replayed over the restored file) and each file
 * renamed over its NAME.  A failure before that leaves both databases as
 * they were, removes the NAME.restore files and fails the command (exit
 * 1): the room must not start on half a restore.  No manifest (a room
 * never streamed): nothing is done (exit 0); nor with --epoch E when the
 * manifest is E's, the caller's own last hold (its copy has every commit
 * the store has, and maybe more).  `atrium-fs fsck` of workspace.db is
 * the caller's next step.  It has no deadline of its own: atriumd kills
 * it at --s3-restore-timeout (sshd/monitor/room.c) and removes what it
 * staged.
 *
 * Everything fetched is hostile: the manifest's keys must be the room's,
 * a segment's size must be the listing's and at most REPL_SEG_MAX,
 * segments are parsed as records (repl_stream), a gap in the segments or
 * a stream that does not end exactly at upto fails, and a snapshot or a
 * page past --max-bytes fails its write (EFBIG).
 */
#include "replicate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etcd.h"
#include "log.h"
#include "vfs_shim.h"

/* Segments of one database to feed, in the listing's (stream) order. */
struct restore_db {
	struct s3 *s3;
	struct repl_stream st;
	const struct repl_db_manifest *man;
	char prefix[S3_KEY_MAX];	/* rooms/ROOM/EPOCH/DB/seg- */
	uint64_t next;			/* the stream offset wanted next */
	int failed;
};

/* Fetch one segment starting at off and feed the part of it in
 * [next, upto) to the stream: 0 or -errno. */
static int
restore_segment(struct restore_db *rd, const char *key, uint64_t off,
    uint64_t size)
{
	uint64_t skip, take;
	void *data;
	size_t len;
	int r;

	if (off + size <= rd->next || off >= rd->man->upto)
		return 0;
	if (off > rd->next) {
		log_error("%s: the segment at %" PRIu64 " is missing", key,
		    rd->next);
		return -EPROTO;
	}
	if (size > REPL_SEG_MAX)
		return -EFBIG;
	if ((r = s3_get(rd->s3, key, 0, REPL_SEG_MAX, &data, &len)) < 0)
		return r;
	if (len != size) {
		free(data);
		return -EPROTO;
	}
	skip = rd->next - off;
	take = (off + len < rd->man->upto ? off + len : rd->man->upto) -
	    rd->next;
	r = repl_stream_feed(&rd->st, (unsigned char *)data + skip,
	    (size_t)take);
	free(data);
	rd->next += take;
	return r;
}

/* s3_list's callback: each key under the prefix. */
static int
restore_each(void *arg, const char *key, uint64_t size)
{
	struct restore_db *rd = arg;
	size_t pl = strlen(rd->prefix);
	unsigned long long off;
	char *end;

	if (strncmp(key, rd->prefix, pl) != 0)
		return 0;
	errno = 0;
	off = strtoull(key + pl, &end, 16);
	if (*end || errno || end != key + pl + 16)
		return 0;
	return restore_segment(rd, key, (uint64_t)off, size);
}

/* Where the restore writes: the staging directory held open, and the
 * VFS that reaches it by /proc/self/fd/N/NAME. */
struct restore_dir {
	int fd;
	sqlite3_vfs vfs;
	int vfs_registered;
};

#define RESTORE_VFS	"atrium-restore"

/* The name of database i in the directory ("room.db", "workspace.db"). */
static const char *
restore_name(int i)
{
	return i == 0 ? REPL_ROOM_DB_NAME : REPL_WORKSPACE_DB_NAME;
}

/* PRAGMA integrity_check of NAME.restore, through the directory: 0 or
 * -EIO (logged). */
static int
restore_check(struct restore_dir *d, const char *name)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	char path[128];
	int r = -EIO;

	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s.restore", d->fd,
	    name);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, RESTORE_VFS) ==
	    SQLITE_OK && sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
	    &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
	    strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0)
		r = 0;
	if (r < 0)
		log_error("%s: the restored database fails its integrity "
		    "check (%s)", name, db ? sqlite3_errmsg(db) :
		    "out of memory");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}

/* Snapshot and segments of database i into tmp (open fd): 0 or -errno. */
static int
restore_build(struct s3 *s3, const struct repl_opts *o,
    const struct repl_manifest *m, int i, int fd)
{
	struct restore_db rd = { .s3 = s3, .man = &m->db[i] };
	uint64_t size;
	int r;

	if ((r = s3_get_file(s3, m->db[i].snap, fd, &size)) < 0)
		return r;
	repl_stream_init(&rd.st, fd, i == 0 ? WALREC_DB_ROOM :
	    WALREC_DB_WORKSPACE);
	rd.next = m->db[i].from;
	snprintf(rd.prefix, sizeof(rd.prefix), "rooms/%s/%" PRId64 "/%s/seg-",
	    o->room, m->epoch, repl_db_name(i));
	if (rd.next < m->db[i].upto)
		r = s3_list(s3, rd.prefix, restore_each, &rd);
	if (r == 0 && (rd.next != m->db[i].upto ||
	    !repl_stream_at_record(&rd.st))) {
		log_error("%s: segments are missing: the stored stream ends "
		    "at %" PRIu64 ", not at %" PRIu64 " as the manifest says",
		    repl_db_name(i), rd.next, m->db[i].upto);
		r = -EPROTO;
	}
	repl_stream_free(&rd.st);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	return r;
}

/* Remove NAME plus suffix from the directory; a missing one is fine.
 * 0 or -errno. */
static int
restore_unlink(const struct restore_dir *d, const char *name,
    const char *suffix)
{
	char file[64];

	snprintf(file, sizeof(file), "%s%s", name, suffix);
	if (unlinkat(d->fd, file, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

/* Database i, rebuilt and checked into NAME.restore, made new (no link
 * followed, nothing that was there kept): 0 or -errno. */
static int
restore_prepare(struct s3 *s3, const struct repl_opts *o,
    const struct repl_manifest *m, int i, struct restore_dir *d)
{
	const char *name = restore_name(i);
	char tmp[64];
	int fd, r;

	snprintf(tmp, sizeof(tmp), "%s.restore", name);
	if ((r = restore_unlink(d, tmp, "")) < 0 ||
	    (fd = openat(d->fd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) < 0) {
		r = r < 0 ? r : -errno;
		log_error("%s: %s", tmp, strerror(-r));
		return r;
	}
	r = restore_build(s3, o, m, i, fd);
	close(fd);
	if (r == 0)
		r = restore_check(d, name);
	if (r < 0)
		log_error("restoring %s failed: %s", name, strerror(-r));
	return r;
}

/* NAME.restore over NAME, its stale WAL and index gone first: 0 or
 * -errno. */
static int
restore_place(const struct repl_manifest *m, int i,
    const struct restore_dir *d)
{
	const char *name = restore_name(i);
	char tmp[64];
	int r;

	snprintf(tmp, sizeof(tmp), "%s.restore", name);
	if ((r = restore_unlink(d, name, "-wal")) < 0 ||
	    (r = restore_unlink(d, name, "-shm")) < 0)
		return r;
	if (renameat(d->fd, tmp, d->fd, name) < 0)
		return -errno;
	log_info("%s restored: snapshot %s and %" PRIu64 " bytes of records",
	    name, m->db[i].snap, m->db[i].upto - m->db[i].from);
	return 0;
}

/* Both databases rebuilt, then both put in place, or neither: 0 or -1. */
static int
restore_all(struct s3 *s3, const struct repl_opts *o,
    const struct repl_manifest *m, struct restore_dir *d)
{
	static const char *const left[] = { ".restore", ".restore-wal",
	    ".restore-shm" };
	int r = 0;

	for (int i = 0; r == 0 && i < REPL_DBS; i++)
		r = restore_prepare(s3, o, m, i, d);
	for (int i = 0; r == 0 && i < REPL_DBS; i++)
		if ((r = restore_place(m, i, d)) < 0)
			log_error("putting %s in place: %s", restore_name(i),
			    strerror(-r));
	for (int i = 0; r < 0 && i < REPL_DBS; i++)
		for (size_t k = 0; k < sizeof(left) / sizeof(*left); k++)
			restore_unlink(d, restore_name(i), left[k]);
	return r < 0 ? -1 : 0;
}

/* The manifest of o->room into m: 1 read, 0 none, -1 failed (logged). */
static int
restore_manifest(const struct repl_opts *o, struct repl_manifest *m)
{
	struct etcd *e;
	char err[256], key[256], *val = NULL;
	size_t len = 0;
	int r;

	if (!(e = etcd_open(o->etcd, err, sizeof(err)))) {
		log_error("%s", err);
		return -1;
	}
	repl_manifest_key(o->room, key, sizeof(key));
	r = etcd_get(e, key, &val, &len, NULL, NULL);
	etcd_close(e);
	if (r == 0)
		return 0;
	if (r < 0 || repl_manifest_parse(val, len, o->room, m) < 0) {
		log_error("room %s: %s", o->room, r < 0 ? strerror(-r) :
		    "its manifest is malformed");
		free(val);
		return -1;
	}
	free(val);
	return 1;
}

/* The staging directory held open (--dir-fd, or --dir opened now), then
 * root given up (--run-as) and every write outside that directory
 * refused (Landlock), files bounded (--max-bytes) and the VFS that
 * reaches the directory registered: 0 or -1 (logged). */
static int
restore_confine(const struct repl_opts *o, struct restore_dir *d)
{
	struct stat sb;

	d->fd = o->dir_fd >= 0 ? o->dir_fd : open(o->dir, O_PATH |
	    O_DIRECTORY | O_CLOEXEC);
	if (d->fd < 0 || fstat(d->fd, &sb) < 0) {
		log_error("the staging directory %s: %s", o->dir ? o->dir :
		    "(--dir-fd)", strerror(errno));
		return -1;
	}
	if (!S_ISDIR(sb.st_mode)) {
		log_error("the staging directory %s is not a directory",
		    o->dir ? o->dir : "(--dir-fd)");
		return -1;
	}
	if (o->run_uid && (repl_become(o) < 0 ||
	    repl_landlock_dir(d->fd) < 0))
		return -1;
	if (repl_limit_files(o->max_bytes) < 0)
		return -1;
	if (vfs_shim_register_plain(&d->vfs, RESTORE_VFS) < 0)
		return -1;
	d->vfs_registered = 1;
	return 0;
}

int
repl_restore(const struct repl_opts *o, struct s3 *s3)
{
	struct restore_dir d = { .fd = -1 };
	struct repl_manifest m;
	int r, status = 1;

	if (restore_confine(o, &d) < 0)
		goto out;
	if ((r = restore_manifest(o, &m)) <= 0) {
		if (r == 0)
			log_info("room %s has no manifest: nothing to restore",
			    o->room);
		status = r < 0;
		goto out;
	}
	if (o->epoch > 0 && m.epoch == o->epoch) {
		log_info("room %s: the manifest is this host's own last hold's "
		    "(epoch %" PRId64 "), and the copy here has all it names: "
		    "nothing to restore", o->room, m.epoch);
		status = 0;
		goto out;
	}
	status = restore_all(s3, o, &m, &d) < 0 ? 1 : 0;
out:
	if (d.vfs_registered)
		sqlite3_vfs_unregister(&d.vfs);
	if (d.fd >= 0 && d.fd != o->dir_fd)
		close(d.fd);
	return status;
}
