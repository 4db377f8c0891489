/*
 * access_db.h: a room's access list read from its room.db, read-only, once,
 * for a room made before atriumd kept its own record (access_record.h).
 * room.db is atrium-agent's; the rows read here are its access table and
 * config key "visibility" (schema version 3 and later, atrium-agent(8)
 * ROOM.DB).
 */
#ifndef ATRIUMD_ACCESS_DB_H
#define ATRIUMD_ACCESS_DB_H

#include "access.h"

#define ACCESS_DB_VERSION	3	/* the room.db schema with access */

/* Read the access list of the room in room_dir (DATA/rooms/ROOM) into
 * out.  A room with no room.db yet, or one whose room.db predates access
 * (its agent migrates it at its next start, and it stays open), reads as
 * open with no owner.  0, or -EIO (logged) when room.db cannot be read:
 * callers refuse then (fail closed). */
int access_db_read(const char *room_dir, struct access_list *out);

#endif
