/*
 * replicate.h: atrium-replicate, the shipper of one room's commits to the
 * object store and their restore (cluster/replicate_*.c).
 *
 * What is stored where (KEY below is under the bucket of --s3-bucket):
 *
 *   rooms/ROOM/EPOCH/DB/snap-OFFSET   a whole copy of DB (room or
 *                                     workspace) as it was after the
 *                                     records before stream offset OFFSET
 *   rooms/ROOM/EPOCH/DB/seg-OFFSET    the bytes of DB's record stream
 *                                     (walrec.h) from OFFSET on, as they
 *                                     came, cut at most every 250 ms
 *   /atrium/rooms/ROOM/manifest       (etcd) what is durable, JSON:
 *     {"v":1,"epoch":E,"node":"N",
 *      "room":{"snap":KEY,"from":OFF,"upto":OFF},
 *      "workspace":{"snap":KEY,"from":OFF,"upto":OFF}}
 *     a DB is its snapshot with the stream's records in [from, upto)
 *     replayed; upto is always the end of a whole record.  Written only
 *     by etcd_put_if_home (this node, this epoch), after the objects it
 *     names are stored.
 *
 * OFFSET is 16 lower-case hex digits, so that the store lists a DB's
 * objects in stream order.  Each epoch (a tenure of one host) starts its
 * streams at offset 0 with a snapshot of its own (snap-0000000000000000);
 * a shipper run again in the same epoch (the one before it was killed
 * with commits unstored) starts at the next multiple of 2^48 above what
 * the manifest names (replicate_ship.c), with a snapshot there.
 * The shipper removes what the manifest it wrote no longer names
 * (replicate_collect.c): the store holds a room's current snapshots and
 * the segments after them.
 */
#ifndef ATRIUM_REPLICATE_H
#define ATRIUM_REPLICATE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "s3.h"
#include "walrec.h"

#define REPL_DBS		2	/* room.db, workspace.db */
#define REPL_SEG_MAX		(4u << 20)	/* bytes of one segment */
#define REPL_FLUSH_MS		250	/* a segment's bytes wait at most */
#define REPL_ROOM_MAX		64	/* bytes of a room's name */
#define REPL_NODE_MAX		128
#define REPL_MANIFEST_MAX	4096

/* What each DB's part of a manifest says. */
struct repl_db_manifest {
	char snap[S3_KEY_MAX];		/* the snapshot's key */
	uint64_t from, upto;		/* the stream's durable records */
};

struct repl_manifest {
	int64_t epoch;
	char node[REPL_NODE_MAX];
	struct repl_db_manifest db[REPL_DBS];	/* [0] room, [1] workspace */
};

/* The name of DB index i ("room", "workspace"). */
const char *repl_db_name(int i);

/* m as JSON into out: its length, or -E2BIG. */
int repl_manifest_json(const struct repl_manifest *m, char *out,
    size_t outlen);
/* Parse len bytes of JSON into m: 0 or -EPROTO (a field missing or out
 * of range, a key that is not one of ROOM's). */
int repl_manifest_parse(const char *json, size_t len, const char *room,
    struct repl_manifest *m);

/* The etcd key of ROOM's manifest into out. */
void repl_manifest_key(const char *room, char *out, size_t outlen);

/* The object key of ROOM's DB i at epoch, "snap" or "seg", offset. */
int repl_object_key(char *out, size_t outlen, const char *room,
    int64_t epoch, int i, const char *kind, uint64_t off);

/* The numbers of one of a room's object keys. */
struct repl_object {
	int64_t epoch;
	int db;				/* 0 room, 1 workspace */
	int snap;			/* 1 snap, 0 seg */
	uint64_t off;
};

/* Read key (under "rooms/ROOM/") into o: 0, or -EINVAL when it is not a
 * key repl_object_key makes. */
int repl_object_parse(const char *key, const char *room,
    struct repl_object *o);

/* 1 when the object (size bytes) is garbage against manifest m, which
 * this host has just written under its epoch (replicate_collect.c). */
int repl_object_stale(const struct repl_object *o, uint64_t size,
    const struct repl_manifest *m);

/* Remove at most REPL_COLLECT_MAX of ROOM's stored objects that m no
 * longer names: how many, or -errno; *more when some are left. */
#define REPL_COLLECT_MAX	256
int repl_collect(struct s3 *s3, const char *room,
    const struct repl_manifest *m, int *more);

/* 1 when room is a room's name Atrium makes ([a-z0-9-], 1 to 63). */
int repl_room_ok(const char *room);

/*
 * A record stream being read (from a pipe, or from a store's segments)
 * and applied to a database file as it comes: bytes can be fed at any
 * boundary.  Memory: one frame.
 */
struct repl_stream {
	int fd;				/* the file pages go to, or -1 */
	int db;				/* WALREC_DB_* expected */
	unsigned char hdr[WALREC_HDR];
	size_t hdr_len;			/* header bytes held */
	struct walrec_hdr h;		/* the record being read */
	uint32_t frames_left;		/* its frames still to come */
	unsigned char *frame;		/* one frame being gathered */
	size_t frame_len;
	uint64_t off;			/* bytes fed */
	uint64_t rec_end;		/* offset after the last whole record */
	uint64_t seq;			/* the last whole record's; 0: none */
	uint64_t records;		/* whole records read */
};

void repl_stream_init(struct repl_stream *s, int fd, int db);
void repl_stream_free(struct repl_stream *s);
/* Feed n bytes: 0, -EPROTO for a malformed record or a sequence gap
 * (logged), or -errno of writing the file. */
int repl_stream_feed(struct repl_stream *s, const unsigned char *p, size_t n);
/* 1 when the stream stands between records. */
int repl_stream_at_record(const struct repl_stream *s);

/* The commands (replicate_main.c parses their options). */
struct repl_opts {
	char room[REPL_ROOM_MAX];
	char node[REPL_NODE_MAX];
	int64_t epoch;
	const char *etcd;		/* endpoints, comma-separated */
	struct s3_config s3;
	int creds_fd;
	int in_fd[REPL_DBS];		/* the record streams (run) */
	const char *db_path[REPL_DBS];	/* room.db, workspace.db */
	const char *state_dir;		/* the shadow copies (run) */
	int snapshot_every;		/* seconds between snapshots */
	int ready_fd;			/* "ready\n" once started, or -1 */
	uid_t run_uid;			/* become this uid and gid (run: once
					 * the databases are copied; restore:
					 * before etcd or the store is asked) */
	gid_t run_gid;			/* 0: stay as started */
	int dir_fd;			/* restore: the staging directory,
					 * held open (--dir-fd), or -1 */
	const char *dir;		/* restore: its path (--dir) */
	long long max_bytes;		/* restore: bytes of a file it
					 * writes; 0: no bound */
};

/* The names restore writes in its directory (and NAME.restore while it
 * builds them): fixed, never taken from what it fetches. */
#define REPL_ROOM_DB_NAME	"room.db"
#define REPL_WORKSPACE_DB_NAME	"workspace.db"

/* atrium-replicate run / restore: the exit status. */
int repl_ship(const struct repl_opts *o, struct s3 *s3);
int repl_restore(const struct repl_opts *o, struct s3 *s3);

/* replicate_confine.c: "UID:GID", neither 0, into *uid and *gid: 0 or
 * -EINVAL. */
int repl_parse_ids(const char *v, uid_t *uid, gid_t *gid);

/* Give root up for good: o->run_uid and o->run_gid, no capability,
 * no_new_privs, the parent's death signal set again.  0 or -errno
 * (logged). */
int repl_become(const struct repl_opts *o);

/* Allow this process, from now on, to write only beneath the directory
 * open as dir_fd, and to read only the system's trees (Landlock; no_new_privs
 * must be set: repl_become does).  0 (also on a kernel without Landlock,
 * said) or -errno (logged). */
int repl_landlock_dir(int dir_fd);

/* Bound every file this process writes to max bytes (RLIMIT_FSIZE; a
 * write past it fails with EFBIG rather than a signal); 0: none.  0 or
 * -errno (logged). */
int repl_limit_files(long long max);

#endif
