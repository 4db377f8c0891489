/*
 * room_stream.h: the monitor's side of streaming a room's writes to the
 * object store (--s3, only with --cluster; room_stream.c): the settings
 * and credentials every room's atrium-replicate gets, and the starts of
 * its two commands, `run` (the shipper, beside the room's writers) and
 * `restore` (before a room starts on a host that just claimed it).
 *
 * The credentials are loaded once by the monitor and handed to each
 * child on a pipe (cluster/s3_creds.h): never in argv, an environment,
 * a log line or a database.  Both give root up for the room's uid
 * (--run-as): the shipper once it has copied the databases, the restore
 * before it asks etcd or the store anything, writing only into the
 * staging directory the monitor opened for it (room_stream.c).
 */
#ifndef ATRIUMD_ROOM_STREAM_H
#define ATRIUMD_ROOM_STREAM_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "s3_creds.h"

struct room_stream {
	const struct config *cfg;	/* --s3, --s3-bucket, --s3-region */
	char node[64];			/* this node's name in etcd */
	const char *etcd;		/* URL[,URL...] */
	char prog[PATH_MAX];		/* atrium-replicate */
	struct s3_creds creds;		/* never logged */
};

/* What one child of a room needs. */
struct room_stream_room {
	const char *name;		/* the room */
	const char *dir;		/* DATA/rooms/ROOM */
	const char *run;		/* DATA/run/ROOM */
	uid_t uid;			/* the room's sandbox identity */
	gid_t gid;
	int64_t epoch;			/* of this host's hold on it */
};

/* With --s3 (which needs --cluster): check the flags, load the
 * credentials (then wiped from the environment) and find the program
 * beside agent_prog.  NULL in *out without --s3.  0, or -errno with the
 * reason logged. */
int room_stream_load(const struct config *cfg, const char *node,
    const char *agent_prog, struct room_stream **out);
void room_stream_free(struct room_stream *st);

/* The room's epoch from its fence page (common/fence.h): > 0, or -errno. */
int64_t room_stream_epoch(int fence_fd);

/* Make DATA/run/ROOM/replicate (the shipper's shadow copies and the
 * restore's staging), the room's own, 0700.  0 or -errno (logged). */
int room_stream_prepare(const struct room_stream_room *rr);

/* Start `atrium-replicate run`: its "ready" line comes on *ready_r (to
 * be read without blocking); writers[0] and writers[1] are the write
 * ends of the room.db and workspace.db streams, for atrium-agent and
 * atrium-fs.  The pid, or -errno (logged). */
pid_t room_stream_run(const struct room_stream *st,
    const struct room_stream_room *rr, int *ready_r, int writers[2]);

/* Start `atrium-replicate restore` into DATA/run/ROOM/replicate/restore
 * (staging, emptied first, handed over open; the restore runs as the
 * room's uid); rr->epoch is this host's last hold of the room (0: none),
 * whose own manifest needs no restore: the copy here has all of it.  It
 * has no deadline of its own: the caller kills it at
 * --s3-restore-timeout.  The pid, or -errno (logged). */
pid_t room_stream_restore(const struct room_stream *st,
    const struct room_stream_room *rr);

/* After a restore that failed or was killed: remove whatever it staged,
 * so that nothing half-restored is ever moved in place.  Failures are
 * logged (the next restore empties the directory first anyway). */
void room_stream_discard(const struct room_stream_room *rr);

/* The bound of a file the restore writes (--max-bytes): twice the larger
 * of --quota and --room-db-quota plus 1 GiB, or 0 (none) without
 * either. */
long long room_stream_max_bytes(const struct config *cfg);

/* After a restore that exited 0: 1 when it staged the room's databases
 * (both, as it stages both or neither), 0 when it staged nothing (no
 * manifest), or -errno (logged). */
int room_stream_staged(const struct room_stream_room *rr);

/* Start `atrium-fs fsck` (prog) of the staged workspace.db before it is
 * put in place: the staging directory handed over open as its fd 3 and
 * the database named through it, and, as root, --run-as the room's uid
 * and gid, so that pages a hostile store made are parsed without root
 * (fs/daemon/mount_confine.h).  The pid, or -errno (logged). */
pid_t room_stream_fsck(const struct room_stream_room *rr, const char *prog);

/* After the fsck of what a restore staged passed: put it in place of the
 * room's databases (their stale -wal and -shm removed first).  1 when
 * something was restored, 0 when there was nothing (no manifest), or
 * -errno (logged; the room's files are as they were when nothing was
 * moved yet). */
int room_stream_install(const struct room_stream_room *rr);

#endif
