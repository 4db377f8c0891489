/*
 * wal_checkpointer.c: room.db's WAL checkpoints on a thread of their own
 * (wal_checkpointer.h).
 *
 * The loop's side is the WAL hook, called by SQLite after each commit of
 * the agent's connection with the WAL's size in pages: past the threshold
 * it sets want and signals cv (the first time it starts the thread).
 * The thread waits on cv, clears want and checkpoints with mu released,
 * so the hook never waits for a checkpoint, only for mu, which is held
 * for a few instructions.  PASSIVE copies the frames no reader still
 * needs and syncs; frames it could not copy stay in the WAL for the next
 * one.  A failed checkpoint loses nothing (the WAL keeps every frame): it
 * is logged and tried again at the next commit past the threshold.
 *
 * When a checkpoint has copied the whole WAL, the thread also starts the
 * WAL over with a commit of its own that changes nothing, so that the
 * header sync that SQLite makes at the first commit of a new WAL is not
 * the loop's (wal_checkpointer_restart).
 *
 * When the thread cannot be started, the hook checkpoints on the loop
 * itself, as SQLite would have.
 *
 * Ownership: want, stopping and started are under mu; ckdb is the
 * thread's alone.  The thread blocks every signal (the agent takes its
 * signals on a signalfd).
 */
#include "wal_checkpointer.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "room_db.h"
#include "sqlite_int.h"
#include "walbuf.h"

#define WAL_CHECKPOINTER_STACK	(256 * 1024)	/* SQLite's checkpoint
						 * needs little stack */
#define WAL_CHECKPOINTER_RESTART_WAIT_MS 1000	/* for the loop's transaction
						 * before starting the WAL
						 * over (PASSIVE checkpoints
						 * never wait) */

struct wal_checkpointer {
	sqlite3 *db;			/* the agent's connection (loop) */
	char *path;			/* room.db */
	sqlite3 *ckdb;			/* the thread's connection, NULL until
					 * its first checkpoint */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* want or stopping set */
	int want;			/* a checkpoint is due (mu) */
	int stopping;			/* wal_checkpointer_stop called (mu) */
	int started;			/* the thread runs (mu) */
	int failed;			/* the thread could not be started:
					 * checkpoint on the loop (loop) */
	int pages;			/* WAL pages that want a checkpoint;
					 * set at start, before the thread */
	long long size_limit;		/* journal_size_limit of both
					 * connections (-1: SQLite's none);
					 * set at start, before the thread */
};

/* journal_size_limit = limit on db (when not -1; logged when refused). */
static void
wal_checkpointer_size_limit(sqlite3 *db, long long limit)
{
	char sql[64];

	if (limit < 0)
		return;
	snprintf(sql, sizeof(sql), "PRAGMA journal_size_limit=%lld", limit);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		log_warn("room.db: cannot bound its WAL: %s", sqlite3_errmsg(db));
}

/* The thread's connection, opened on first use; NULL when it cannot be
 * (logged). */
static sqlite3 *
wal_checkpointer_conn(struct wal_checkpointer *w)
{
	if (w->ckdb)
		return w->ckdb;
	/* Through the same VFS as the agent's connection (walbuf.h), which
	 * keeps a path through /proc/self/fd as it is (confine.h). */
	if (sqlite3_open_v2(w->path, &w->ckdb, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, walbuf_small_vfs_name()) != SQLITE_OK) {
		log_error("room.db's checkpoints: cannot open %s: %s", w->path,
		    w->ckdb ? sqlite3_errmsg(w->ckdb) : "out of memory");
		sqlite3_close(w->ckdb);
		w->ckdb = NULL;
		return NULL;
	}
	/* As the agent's connection: sync the WAL, then the database, at
	 * each checkpoint; keep little in memory; keep the WAL file and make
	 * no temporary one (room_db_keep_files). */
	room_db_keep_files(w->ckdb);
	room_db_busy_wait(w->ckdb, WAL_CHECKPOINTER_RESTART_WAIT_MS);
	if (sqlite3_exec(w->ckdb, "PRAGMA synchronous=NORMAL;"
	    " PRAGMA cache_size=16; PRAGMA temp_store=MEMORY", NULL, NULL,
	    NULL) != SQLITE_OK)
		log_warn("room.db's checkpoints: %s", sqlite3_errmsg(w->ckdb));
	/* This connection starts the WAL over (wal_checkpointer_restart),
	 * which is when SQLite cuts the file back. */
	wal_checkpointer_size_limit(w->ckdb, w->size_limit);
	return w->ckdb;
}

/* Start the WAL over from here, after a checkpoint that copied all of it.
 * The first commit into a WAL started over writes a new header and syncs
 * it before any frame (SQLite's rule, so that a power loss never mixes
 * frames of two generations): an fsync, a millisecond here and far more
 * on a busy disk, that the loop's next commit would otherwise make in the
 * middle of a step.  A commit of page 1 as it is (the user_version
 * written back unchanged) makes it on this thread.  When the loop's
 * connection is writing, it waits for that transaction to end, up to
 * WAL_CHECKPOINTER_RESTART_WAIT_MS (room_db_busy_wait): giving up at once
 * left the sync to the loop's next commit, which then held a chat line
 * back by the sync's time (32 ms on a busy disk).  When the wait runs
 * out, or a reader still uses the WAL (SQLite then appends the frame
 * instead), the next commit starts the WAL over as before.  The loop
 * itself waits for this commit in steps of ROOM_DB_BUSY_STEP_US, so a
 * commit that meets it waits no longer than it lasts. */
static void
wal_checkpointer_restart(sqlite3 *db)
{
	char sql[64];
	sqlite3_int64 v;

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return;
	if ((v = sqlite_int(db, "PRAGMA user_version")) >= 0) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version=%lld",
		    (long long)v);
		if (sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK &&
		    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
			return;
	}
	log_debug("room.db: the WAL is started over by the next commit (%s)",
	    sqlite3_errmsg(db));
	sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

/* One PASSIVE checkpoint of db, then the WAL started over when it copied
 * every frame and restart says so (the thread's connection); failures are
 * logged (SQLITE_BUSY: another checkpoint, maybe another process's, is
 * running: the next one will do). */
static void
wal_checkpointer_run(sqlite3 *db, const char *dbname, int restart)
{
	int frames = 0, copied = 0;
	int rc = sqlite3_wal_checkpoint_v2(db, dbname,
	    SQLITE_CHECKPOINT_PASSIVE, &frames, &copied);

	if (rc == SQLITE_OK) {
		log_debug("room.db checkpoint: %d of %d WAL frames copied",
		    copied, frames);
		if (restart && frames > 0 && copied == frames)
			wal_checkpointer_restart(db);
	} else if (rc == SQLITE_BUSY)
		log_debug("room.db checkpoint: busy, left for the next one");
	else
		log_warn("room.db checkpoint failed (the WAL keeps every "
		    "commit; it is tried again later): %s",
		    sqlite3_errmsg(db));
}

static void *
wal_checkpointer_main(void *arg)
{
	struct wal_checkpointer *w = arg;
	sqlite3 *db;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->want && !w->stopping)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stopping)
			break;
		w->want = 0;
		pthread_mutex_unlock(&w->mu);
		if ((db = wal_checkpointer_conn(w)))
			wal_checkpointer_run(db, "main", 1);
		pthread_mutex_lock(&w->mu);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Start the thread, signals blocked in it.  0 or -errno. */
static int
wal_checkpointer_spawn(struct wal_checkpointer *w)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int r;

	if ((r = pthread_attr_init(&attr)) != 0)
		return -r;
	pthread_attr_setstacksize(&attr, WAL_CHECKPOINTER_STACK);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&w->thread, &attr, wal_checkpointer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return -r;
}

/* SQLite's WAL hook: after each commit of the agent's connection. */
static int
wal_checkpointer_hook(void *arg, sqlite3 *db, const char *dbname, int pages)
{
	struct wal_checkpointer *w = arg;
	int r = 0;

	if (pages < w->pages)
		return SQLITE_OK;
	if (w->failed) {
		wal_checkpointer_run(db, dbname, 0);
		return SQLITE_OK;
	}
	pthread_mutex_lock(&w->mu);
	if (!w->started && (r = wal_checkpointer_spawn(w)) == 0)
		w->started = 1;
	w->want = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (r < 0) {
		log_warn("room.db's checkpoints: cannot start their thread "
		    "(%s): made in the commits again", strerror(-r));
		w->failed = 1;
		wal_checkpointer_run(db, dbname, 0);
	}
	return SQLITE_OK;
}

int
wal_checkpointer_start(sqlite3 *db, const char *path,
    struct wal_checkpointer **out)
{
	struct wal_checkpointer *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->db = db;
	w->pages = WAL_CHECKPOINTER_PAGES;
	w->size_limit = -1;
	if (!(w->path = strdup(path)) ||
	    pthread_mutex_init(&w->mu, NULL) != 0) {
		free(w->path);
		free(w);
		return -ENOMEM;
	}
	if (pthread_cond_init(&w->cv, NULL) != 0) {
		pthread_mutex_destroy(&w->mu);
		free(w->path);
		free(w);
		return -ENOMEM;
	}
	/* Replaces SQLite's own hook, which is its automatic checkpoint. */
	sqlite3_wal_hook(db, wal_checkpointer_hook, w);
	*out = w;
	return 0;
}

void
wal_checkpointer_bound(struct wal_checkpointer *w, long long bytes)
{
	long long psize, pages;

	if (!w || bytes <= 0 || (psize = sqlite_int(w->db,
	    "PRAGMA page_size")) <= 0)
		return;
	pages = bytes / psize;
	if (pages < WAL_CHECKPOINTER_MIN_PAGES)
		pages = WAL_CHECKPOINTER_MIN_PAGES;
	if (pages > WAL_CHECKPOINTER_PAGES)
		pages = WAL_CHECKPOINTER_PAGES;
	w->pages = (int)pages;
	w->size_limit = pages * psize;
	wal_checkpointer_size_limit(w->db, w->size_limit);
}

void
wal_checkpointer_stop(struct wal_checkpointer *w)
{
	int started;

	if (!w)
		return;
	sqlite3_wal_autocheckpoint(w->db, WAL_CHECKPOINTER_PAGES);
	pthread_mutex_lock(&w->mu);
	w->stopping = 1;
	started = w->started;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	if (started)
		pthread_join(w->thread, NULL);
	sqlite3_close(w->ckdb);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	free(w->path);
	free(w);
}
