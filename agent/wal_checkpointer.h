/*
 * wal_checkpointer.h: room.db's WAL checkpoints, made on a thread of their
 * own instead of inside the commit that passes SQLite's threshold.
 *
 * SQLite checkpoints a WAL database from within a commit once the WAL
 * holds 1000 pages: that commit copies them all into the database file
 * and syncs both, on the agent's loop, in the middle of a turn's step
 * (it was the largest of a step's own times, once every 40 steps or so).
 * Here the connection's own checkpoints are turned off and a commit that
 * leaves the WAL past WAL_CHECKPOINTER_PAGES pages only wakes a thread,
 * which checkpoints (PASSIVE: it never blocks the writer, nor waits for a
 * reader) through a connection of its own.  What a commit guarantees does
 * not change: room.db is synchronous=NORMAL, so a commit survives a crash
 * of any process at once, and a power loss once a checkpoint synced it.
 *
 * Single writer as before: the thread's connection only checkpoints, and
 * commits page 1 unchanged to start the WAL over after a checkpoint that
 * copied all of it (the first commit of a new WAL syncs its header, and
 * that sync is then the thread's, not a step's).
 */
#ifndef ATRIUM_AGENT_WAL_CHECKPOINTER_H
#define ATRIUM_AGENT_WAL_CHECKPOINTER_H

#include <sqlite3.h>

#define WAL_CHECKPOINTER_PAGES	1000	/* SQLite's own threshold */
#define WAL_CHECKPOINTER_MIN_PAGES 16	/* the least a bound makes it */

struct wal_checkpointer;

/* Take over the checkpoints of db (a WAL database at path, used from one
 * thread): its automatic checkpoints are replaced by a WAL hook that wakes
 * the thread, which is started, and opens its connection, on the first
 * checkpoint wanted.  0, or -errno (db keeps SQLite's own checkpoints
 * then).  path is copied. */
int wal_checkpointer_start(sqlite3 *db, const char *path,
    struct wal_checkpointer **out);

/* Keep the WAL near bytes: a checkpoint is wanted once it holds that
 * much (at least WAL_CHECKPOINTER_MIN_PAGES pages, at most
 * WAL_CHECKPOINTER_PAGES), and the WAL file is cut back to bytes when it
 * starts over (journal_size_limit), so that what room.db takes on disk,
 * WAL included, stays near what it holds.  Call before the first
 * checkpoint (at start); bytes 0 keeps SQLite's own threshold. */
void wal_checkpointer_bound(struct wal_checkpointer *w, long long bytes);

/* Stop: the thread finishes a checkpoint in progress and ends (joined; a
 * checkpoint of a local file is bounded), its connection is closed, and
 * db gets SQLite's own checkpoints back.  NULL is fine. */
void wal_checkpointer_stop(struct wal_checkpointer *w);

#endif
