/*
 * room_ids.h: the uid and gid a room's commands run as.
 *
 * Every room has its own sandbox identity, so that one room's processes
 * cannot signal or ptrace another's and per-uid kernel limits (inotify
 * watches, processes, locked memory) are each room's own.  atriumd decides
 * a room's identity once, when it first starts the room, and records it in
 * DATA/rooms/ROOM/uid; from then on it never changes (a restart, a moved
 * DATA, a changed range: the file wins).
 *
 *   DATA/rooms/ROOM/uid   "UID:GID\n", both decimal, written once
 *
 * How a room without the file gets its identity (room_ids_assign):
 *   - a room that already has a workspace.db was made before rooms had
 *     their own uids: its files belong to the old single identity, the
 *     sandbox-uid and sandbox-gid settings (64222 by default), which is
 *     recorded first; atriumd then gives it a uid of its own at once
 *     (room_ids_unshare below), as a room recorded with that identity
 *     gets one at its next start;
 *   - a new room gets the lowest uid of sandbox-uid-base ..
 *     base + sandbox-uid-count - 1 that no room directory under DATA/rooms
 *     records (nor the old identity), with the gid of the same number.  None
 *     free: -ENOSPC, and no room is made.
 *
 * Only atriumd assigns, from its single loop, so two rooms never race for
 * one uid; atrium-agent only reads (room_ids_get).  A deleted room's uid is
 * free again once its directory is gone.
 */
#ifndef ATRIUM_ROOM_IDS_H
#define ATRIUM_ROOM_IDS_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

#define ROOM_IDS_FILE	"uid"	/* in DATA/rooms/ROOM/ */
/* The identity a room's files still have while atrium-fs reown gives them
 * to the room's own (room_ids_unshare); gone once it has. */
#define ROOM_IDS_REOWN_FILE	"uid.reown"

struct room_ids {
	uid_t uid;	/* the room's sandbox uid */
	gid_t gid;	/* and its gid (also its DATA/run/ROOM's group) */
};

/* Parse "UID:GID" with an optional newline; both from 1 to 2^31-1.
 * 0 or -EINVAL. */
int room_ids_parse(const char *text, struct room_ids *out);

/* Read room_dir's record.  0, -ENOENT when the room has none, -EINVAL when
 * it is damaged, or -errno. */
int room_ids_read(const char *room_dir, struct room_ids *out);

/* The identity of the room at room_dir for atrium-agent: its record, or
 * the old single identity of cfg when it has none (a room atriumd has not
 * started since rooms got their own uids).  0, or -errno of a damaged or
 * unreadable record. */
int room_ids_get(const char *room_dir, const struct config *cfg,
    struct room_ids *out);

/* The identity of room name under rooms_dir (DATA/rooms), deciding and
 * recording it as the head says when the room has none (making the room's
 * directory, 0700).  0; or -ENOSPC when the range is exhausted, -EINVAL for
 * a damaged record, -errno otherwise, with a message for the user in err. */
int room_ids_assign(const char *rooms_dir, const char *name,
    const struct config *cfg, struct room_ids *out, char *err, size_t errlen);

/* A room whose identity *ids is still the one all rooms once shared gets
 * one of its own: recorded, with the old one kept in ROOM_IDS_REOWN_FILE
 * until its workspace's files are given to the new one (atrium-fs reown,
 * which atriumd runs before the mount, then room_ids_reown_done).  1 when
 * *ids changed, 0 when it was the room's own already, or -errno with a
 * message for the user in err (-ENOSPC: no uid free). */
int room_ids_unshare(const char *rooms_dir, const char *name,
    const struct config *cfg, struct room_ids *ids, char *err, size_t errlen);

/* The identity room_dir's files still have (ROOM_IDS_REOWN_FILE): 0,
 * -ENOENT when none waits, -EINVAL or -errno. */
int room_ids_reown_from(const char *room_dir, struct room_ids *from);

/* The files are the room's own now: forget the old identity.  0 or
 * -errno. */
int room_ids_reown_done(const char *room_dir);

#endif
