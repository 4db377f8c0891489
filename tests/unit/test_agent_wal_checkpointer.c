/*
 * test_agent_wal_checkpointer.c: room.db's WAL checkpoints off the
 * committing thread (agent/wal_checkpointer.c).  The shim VFS of
 * shim_vfs.h holds every sync while asked to, as a slow disk does; with
 * synchronous=NORMAL only a checkpoint syncs.  Checked: with syncs held,
 * commits that pass the WAL's threshold still return (the checkpoint
 * waits on its own thread, not in a commit); once syncs go, the
 * database file holds the committed pages; after a checkpoint that
 * copied the whole WAL, the next commit makes no sync (the thread started
 * the WAL over, and synced its new header, itself), also when the
 * committing connection held a write transaction at that moment (the
 * thread waits for it rather than leave the sync to the next commit);
 * stopping with a checkpoint due ends cleanly.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../agent/room_db.h"
#include "../../agent/wal_checkpointer.h"
#include "unit.h"

#include "shim_vfs.h"

static char path[64];

#define ROWS	1500	/* one commit each, a page or more each */

struct writer {
	sqlite3 *db;
	int done;		/* every commit returned (mu) */
	int failed;		/* one did not succeed */
	pthread_mutex_t mu;
};

/* Commit ROWS rows of 4000 bytes, one transaction each. */
static void *
writer_main(void *arg)
{
	struct writer *w = arg;
	sqlite3_stmt *st;
	char blob[4000];

	memset(blob, 'x', sizeof(blob));
	if (sqlite3_prepare_v2(w->db, "INSERT INTO t (b) VALUES (?)", -1, &st,
	    NULL) != SQLITE_OK)
		w->failed = 1;
	for (int i = 0; !w->failed && i < ROWS; i++) {
		sqlite3_bind_blob(st, 1, blob, sizeof(blob), SQLITE_STATIC);
		if (sqlite3_step(st) != SQLITE_DONE)
			w->failed = 1;
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	pthread_mutex_lock(&w->mu);
	w->done = 1;
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* 1 once the writer is done, 0 if not within secs seconds. */
static int
writer_done_within(struct writer *w, int secs)
{
	for (int i = 0; i < secs * 100; i++) {
		int done;

		pthread_mutex_lock(&w->mu);
		done = w->done;
		pthread_mutex_unlock(&w->mu);
		if (done)
			return 1;
		usleep(10000);
	}
	return 0;
}

static long long
file_size(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* The database file holds at least bytes within secs seconds. */
static int
db_file_reaches(long long bytes, int secs)
{
	for (int i = 0; i < secs * 100; i++) {
		if (file_size(path) >= bytes)
			return 1;
		usleep(10000);
	}
	return 0;
}

static sqlite3 *
open_wal(void)
{
	sqlite3 *db = NULL;

	CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK);
	/* As room.db's connection: a commit meeting the thread's start of
	 * a new WAL waits for it. */
	room_db_busy_wait(db, 5000);
	CHECK(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA "
	    "synchronous=NORMAL; CREATE TABLE IF NOT EXISTS t (b BLOB)", NULL,
	    NULL, NULL) == SQLITE_OK);
	return db;
}

static void
test_commits_do_not_wait_for_checkpoints(void)
{
	struct writer w = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct wal_checkpointer *ck;
	pthread_t th;

	w.db = open_wal();
	CHECK_INT(wal_checkpointer_start(w.db, path, &ck), 0);
	shim_hold_syncs();
	CHECK_INT(pthread_create(&th, NULL, writer_main, &w), 0);
	/* SQLite's own checkpoint would sync inside a commit, and wait. */
	CHECK(writer_done_within(&w, 60));
	CHECK(!w.failed);
	CHECK(shim_sync_waiting(10));	/* the thread's checkpoint does */
	shim_release_syncs();
	pthread_join(th, NULL);
	/* The checkpoint lands: every row is in the database file. */
	CHECK(db_file_reaches((long long)ROWS * 4096, 60));
	wal_checkpointer_stop(ck);
	CHECK(sqlite3_close(w.db) == SQLITE_OK);
}

/* The checkpoint sequence number in the WAL's header (bytes 12 to 15, big
 * endian), one higher each time the WAL starts over; -1 when unread.  From
 * the file, not through SQLite: a connection that asked could copy frames
 * itself, and the next commit would start the WAL over again. */
static long
wal_ckpt_seq(void)
{
	unsigned char h[16];
	char name[96];
	FILE *f;
	long seq = -1;

	snprintf(name, sizeof(name), "%s-wal", path);
	if ((f = fopen(name, "rb"))) {
		if (fread(h, 1, sizeof(h), f) == sizeof(h))
			seq = (long)h[12] << 24 | h[13] << 16 | h[14] << 8 | h[15];
		fclose(f);
	}
	return seq;
}

/* 1 once the WAL's checkpoint sequence moves from seq, 0 if it does not
 * within secs seconds. */
static int
wal_started_over_within(long seq, int secs)
{
	for (int i = 0; i < secs * 100; i++) {
		if (wal_ckpt_seq() != seq)
			return 1;
		usleep(10000);
	}
	return 0;
}

static void
test_commit_after_a_whole_checkpoint_makes_no_sync(void)
{
	struct writer w = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct wal_checkpointer *ck;
	long seq, syncs;

	w.db = open_wal();
	CHECK_INT(wal_checkpointer_start(w.db, path, &ck), 0);
	/* The first commit makes the WAL and syncs its header.  Then, syncs
	 * held, the thread's checkpoint cannot end while the rows are
	 * committed, so no commit finds the WAL all copied and this
	 * thread's commits only append. */
	CHECK(sqlite3_exec(w.db, "INSERT INTO t (b) VALUES (x'00')", NULL, NULL,
	    NULL) == SQLITE_OK);
	shim_hold_syncs();
	writer_main(&w);
	CHECK(!w.failed);
	CHECK(shim_sync_waiting(10));
	seq = wal_ckpt_seq();
	CHECK(seq >= 0);
	shim_release_syncs();
	/* The thread copies the rest, then starts the WAL over. */
	CHECK(wal_started_over_within(seq, 60));
	syncs = shim_thread_syncs;
	CHECK(sqlite3_exec(w.db, "INSERT INTO t (b) VALUES (x'00')", NULL, NULL,
	    NULL) == SQLITE_OK);
	CHECK_INT(shim_thread_syncs - syncs, 0);
	wal_checkpointer_stop(ck);
	CHECK(sqlite3_close(w.db) == SQLITE_OK);
}

/* 1 once a connection met the WAL's write lock taken after count such
 * meetings, 0 if none does within secs seconds. */
static int
write_lock_busy_within(long count, int secs)
{
	for (int i = 0; i < secs * 1000; i++) {
		if (__atomic_load_n(&shim_write_lock_busy, __ATOMIC_RELAXED) >
		    count)
			return 1;
		usleep(1000);
	}
	return 0;
}

static void
test_whole_checkpoint_waits_for_a_write_transaction(void)
{
	struct writer w = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct wal_checkpointer *ck;
	long seq, syncs, busy;

	w.db = open_wal();
	CHECK_INT(wal_checkpointer_start(w.db, path, &ck), 0);
	CHECK(sqlite3_exec(w.db, "INSERT INTO t (b) VALUES (x'00')", NULL, NULL,
	    NULL) == SQLITE_OK);
	shim_hold_syncs();
	/* One commit past the threshold: one checkpoint asked for, so the
	 * thread has one chance to start the WAL over. */
	CHECK(sqlite3_exec(w.db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
	writer_main(&w);
	CHECK(!w.failed);
	CHECK(sqlite3_exec(w.db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
	CHECK(shim_sync_waiting(10));
	seq = wal_ckpt_seq();
	CHECK(seq >= 0);
	/* This connection takes the write lock, as the agent's loop does
	 * for a step, when the thread has copied the whole WAL. */
	CHECK(sqlite3_exec(w.db, "BEGIN IMMEDIATE", NULL, NULL, NULL) ==
	    SQLITE_OK);
	busy = __atomic_load_n(&shim_write_lock_busy, __ATOMIC_RELAXED);
	shim_release_syncs();
	CHECK(write_lock_busy_within(busy, 60));	/* the thread meets it */
	CHECK(sqlite3_exec(w.db, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK);
	/* The thread, not this connection's next commit, starts the WAL
	 * over and syncs its header. */
	CHECK(wal_started_over_within(seq, 10));
	syncs = shim_thread_syncs;
	CHECK(sqlite3_exec(w.db, "INSERT INTO t (b) VALUES (x'00')", NULL, NULL,
	    NULL) == SQLITE_OK);
	CHECK_INT(shim_thread_syncs - syncs, 0);
	wal_checkpointer_stop(ck);
	CHECK(sqlite3_close(w.db) == SQLITE_OK);
}

static void
test_stop_with_a_checkpoint_due(void)
{
	struct writer w = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct wal_checkpointer *ck;

	w.db = open_wal();
	CHECK_INT(wal_checkpointer_start(w.db, path, &ck), 0);
	writer_main(&w);
	CHECK(!w.failed);
	wal_checkpointer_stop(ck);
	wal_checkpointer_stop(NULL);
	/* SQLite's own checkpoints are back: the last close empties the
	 * WAL into the file. */
	CHECK(sqlite3_close(w.db) == SQLITE_OK);
	CHECK(file_size(path) >= (long long)ROWS * 2 * 4096);
}

int
main(void)
{
	char name[96];

	shim_install();
	snprintf(path, sizeof(path), "/tmp/test_agent_wal_ckpt.%d",
	    (int)getpid());
	TEST(test_commits_do_not_wait_for_checkpoints);
	TEST(test_commit_after_a_whole_checkpoint_makes_no_sync);
	TEST(test_whole_checkpoint_waits_for_a_write_transaction);
	TEST(test_stop_with_a_checkpoint_due);
	unlink(path);
	snprintf(name, sizeof(name), "%s-wal", path);
	unlink(name);
	snprintf(name, sizeof(name), "%s-shm", path);
	unlink(name);
	return unit_done("test_agent_wal_checkpointer");
}
