/*
 * replicate_restore.c: `atrium-replicate restore`, run on a host that has
 * just claimed a room, before the room starts: rebuild room.db and
 * workspace.db from what the manifest in etcd names (replicate.h).
 *
 * For each database: the snapshot is fetched into DB.restore (a file
 * beside the database, in pieces: memory stays one piece), the segments
 * of its epoch that cover [from, upto) are fetched one at a time and fed
 * to a repl_stream that applies them to that file, the file is synced and
 * checked (PRAGMA integrity_check).  Once both are, DB-wal and DB-shm
 * are removed (a stale WAL would be replayed over the restored file) and
 * each file renamed over its DB.  A failure before that leaves both
 * databases as they were, removes the DB.restore files and fails the
 * command (exit 1): the room must not start on half a restore.  No manifest (a room never streamed): nothing is done
 * (exit 0); nor with --epoch E when the manifest is E's, the caller's own
 * last hold (its copy has every commit the store has, and maybe more).
 * `atrium-fs fsck` of workspace.db is the caller's next step.
 *
 * Everything fetched is hostile: the manifest's keys must be the room's,
 * segments are parsed as records (repl_stream), and a gap in the
 * segments or a stream that does not end exactly at upto fails.
 */
#include "replicate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etcd.h"
#include "log.h"

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

/* PRAGMA integrity_check of path: 0 or -EIO (logged). */
static int
restore_check(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int r = -EIO;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) ==
	    SQLITE_OK && sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1,
	    &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
	    strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0)
		r = 0;
	if (r < 0)
		log_error("%s: the restored database fails its integrity "
		    "check", path);
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

/* Database i, rebuilt and checked into DB.restore: 0 or -errno. */
static int
restore_prepare(struct s3 *s3, const struct repl_opts *o,
    const struct repl_manifest *m, int i)
{
	char tmp[4096];
	int fd, r;

	snprintf(tmp, sizeof(tmp), "%s.restore", o->db_path[i]);
	if ((fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0) {
		r = -errno;
		log_error("%s: %s", tmp, strerror(errno));
		return r;
	}
	r = restore_build(s3, o, m, i, fd);
	close(fd);
	if (r == 0)
		r = restore_check(tmp);
	if (r < 0)
		log_error("restoring %s failed: %s", o->db_path[i], strerror(-r));
	return r;
}

/* DB.restore over DB, its stale WAL and index gone first: 0 or -errno. */
static int
restore_place(const struct repl_opts *o, const struct repl_manifest *m,
    int i)
{
	const char *db = o->db_path[i];
	char tmp[4096], side[4096];

	snprintf(tmp, sizeof(tmp), "%s.restore", db);
	for (int k = 0; k < 2; k++) {
		snprintf(side, sizeof(side), "%s%s", db, k ? "-shm" : "-wal");
		if (unlink(side) < 0 && errno != ENOENT)
			return -errno;
	}
	if (rename(tmp, db) < 0)
		return -errno;
	log_info("%s restored: snapshot %s and %" PRIu64 " bytes of records",
	    db, m->db[i].snap, m->db[i].upto - m->db[i].from);
	return 0;
}

/* Both databases rebuilt, then both put in place, or neither: 0 or -1. */
static int
restore_all(struct s3 *s3, const struct repl_opts *o,
    const struct repl_manifest *m)
{
	char tmp[4096];
	int r = 0;

	for (int i = 0; r == 0 && i < REPL_DBS; i++)
		r = restore_prepare(s3, o, m, i);
	for (int i = 0; r == 0 && i < REPL_DBS; i++)
		if ((r = restore_place(o, m, i)) < 0)
			log_error("putting %s in place: %s", o->db_path[i],
			    strerror(-r));
	for (int i = 0; r < 0 && i < REPL_DBS; i++) {
		snprintf(tmp, sizeof(tmp), "%s.restore", o->db_path[i]);
		unlink(tmp);
	}
	return r < 0 ? -1 : 0;
}

int
repl_restore(const struct repl_opts *o, struct s3 *s3)
{
	struct repl_manifest m;
	struct etcd *e;
	char err[256], key[256], *val = NULL;
	size_t len = 0;
	int r;

	if (!(e = etcd_open(o->etcd, err, sizeof(err)))) {
		log_error("%s", err);
		return 1;
	}
	repl_manifest_key(o->room, key, sizeof(key));
	r = etcd_get(e, key, &val, &len, NULL, NULL);
	etcd_close(e);
	if (r == 0) {
		log_info("room %s has no manifest: nothing to restore", o->room);
		return 0;
	}
	if (r < 0 || repl_manifest_parse(val, len, o->room, &m) < 0) {
		log_error("room %s: %s", o->room, r < 0 ? strerror(-r) :
		    "its manifest is malformed");
		free(val);
		return 1;
	}
	free(val);
	if (o->epoch > 0 && m.epoch == o->epoch) {
		log_info("room %s: the manifest is this host's own last hold's "
		    "(epoch %" PRId64 "), and the copy here has all it names: "
		    "nothing to restore", o->room, m.epoch);
		return 0;
	}
	return restore_all(s3, o, &m) < 0 ? 1 : 0;
}
