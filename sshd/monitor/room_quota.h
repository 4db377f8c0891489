/*
 * room_quota.h: how many rooms each user has created (room_quota.c), for
 * max-rooms-per-user.  Rooms have no recorded owner yet, so atriumd keeps
 * its own small record, DATA/rooms.created, one line per room it created:
 *
 *   ROOM USER\n
 *
 * appended (O_APPEND) when a user's session is the one that makes the
 * room.  A room counts for the user of its first line only, and only while
 * it exists (DATA/rooms/ROOM, or what the caller's exists() says), so a
 * deleted room frees its place.  A room whose making failed (an import)
 * is forgotten: its lines go (room_quota_forget), so it counts for nobody,
 * not even for whoever makes that name later.  Rooms made before this file
 * existed count for nobody.
 */
#ifndef ATRIUMD_ROOM_QUOTA_H
#define ATRIUMD_ROOM_QUOTA_H

#include <stddef.h>

#define ROOM_QUOTA_FILE		"rooms.created"
#define ROOM_QUOTA_MAX_FILE	(16 << 20)	/* bytes read at most */

/* Rooms in text (the file's contents) whose first line names user and
 * for which exists(room, arg) is 1. */
int room_quota_count(const char *text, size_t len, const char *user,
    int (*exists)(const char *room, void *arg), void *arg);

/* Whether a recorded room counts: 1 when it exists. */
typedef int (*room_quota_exists_fn)(const char *room, void *arg);

/* user is about to use room in DATA: when the room does not exist yet,
 * check the user's count against max (0: no limit) and record the room.
 * The user's rooms count when exists(room, arg) says 1 (NULL: when
 * DATA/rooms/ROOM exists).  0 when the user may go on; -EDQUOT with the
 * reason for the user in err; another -errno (logged) when the record
 * cannot be read or written (the room is then refused: a cap that cannot
 * be counted does not hold). */
int room_quota_admit(const char *data, const char *room, const char *user,
    int max, room_quota_exists_fn exists, void *arg, char *err,
    size_t errlen);

/* Forget room, whose making failed and which no longer exists: the
 * record is written again without its lines (a new file renamed over
 * the old).  0 (also when it had none) or -errno (logged). */
int room_quota_forget(const char *data, const char *room);

#endif
