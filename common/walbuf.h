/*
 * walbuf.h: an SQLite VFS that writes a connection's WAL appends in big
 * pieces, one or a few pwrite calls per commit where SQLite makes two per
 * page (walbuf.c says how and what it guarantees).  atrium-fs's writer
 * and checkpointer, and atrium-agent's room.db connection open through it.
 */
#ifndef ATRIUM_WALBUF_H
#define ATRIUM_WALBUF_H

/* The VFS's name for sqlite3_open_v2, registered over the default VFS on
 * first use; NULL when it could not be (then open with the default). */
const char *walbuf_vfs_name(void);
/* The same with a small buffer (128 KiB, not 1 MiB), for a connection of
 * small transactions in a process meant to stay small: what a buffer's
 * largest transaction touched stays resident. */
const char *walbuf_small_vfs_name(void);

/* A room of a cluster (walbuf.c says how): stream every commit made
 * through these VFSs in this process to fd (a blocking pipe) as records
 * of database db (walrec.h: WALREC_DB_ROOM, WALREC_DB_WORKSPACE).
 * Called once at start, before any database is opened.  0 or -EINVAL. */
int walbuf_replicate(int fd, int db);
/* The fence page of the room this process writes (fence.h; NULL: none),
 * set once at start, before the first open: from then on the write of a
 * commit frame fails (SQLITE_IOERR_WRITE, so the transaction fails and
 * nothing of it is announced) once fence_may_commit() says no. */
struct fence_page;
void walbuf_set_fence(const struct fence_page *f);

#endif
