/*
 * room_db.c: room.db (room_db.h), the room's record: chat and every stored
 * event, the room's settings, the agent's transcript, turns, the tool journal
 * (the checkpoints that make a turn resumable), the audit of commands and
 * token usage.  Only atrium-agent writes it; one connection, WAL mode,
 * opened through walbuf.h (a commit's WAL frames go out in one or a few
 * pwrite calls, not two per page), whose checkpoints a second connection
 * makes on a thread (wal_checkpointer.h).
 *
 * Schema (user_version 8):
 *
 *   events(seq INTEGER PRIMARY KEY, time TEXT, type TEXT, json TEXT)
 *       every stored event exactly as sent (message, turn_start, tool_call,
 *       tool_result, turn_end, exec_start, shared exec_result, config)
 *   meta(key TEXT PRIMARY KEY, value TEXT)
 *       last_seq: the end of the block of seqs reserved for live events
 *       (journal.c); no seq at or below it or events.seq is handed out
 *       again; model_fit: the window a model server named and its
 *       tokens per byte, for one provider and model (model_fit.c);
 *       exec_open:ID, exec_out:HEX(ID):N:STREAM: a shared command
 *       that has started and not ended, and its output so far (exec.c)
 *   config(key TEXT PRIMARY KEY, value TEXT, user TEXT, time TEXT)
 *       provider, model, approval, allow_list (a JSON array); visibility
 *       (open | private; absent: open); the owner's lowered limit_* and
 *       cap_* values (room_limits.c, caps.c; "0": the operator's)
 *   members(user TEXT PRIMARY KEY, first_seen TEXT, last_seen TEXT)
 *       who has joined (chat or control), and when last
 *   access(user TEXT PRIMARY KEY, role owner|member, by TEXT, time TEXT)
 *       who may enter a private room: at most one owner (a partial
 *       unique index), who made the room; the members the owner or an
 *       admin invited (by).  atriumd reads this table and config's
 *       visibility read-only (sshd/monitor/access_db.c) to decide entry before
 *       it starts a command; keep both in step with it.
 *   turns(id INTEGER PRIMARY KEY, user, prompt, state queued|running|done,
 *       stop_reason, steps, input_tokens, output_tokens, created, started,
 *       ended)
 *   transcript(id INTEGER PRIMARY KEY, turn, step, role user|assistant,
 *       json, input_tokens)  the neutral messages of the conversation, in
 *       order, all kept; input_tokens: on an assistant row, the prompt
 *       tokens the provider counted for the request that answered it
 *       (NULL when unknown)
 *   compactions(id INTEGER PRIMARY KEY, turn, state pending|done, reason
 *       window|refused, cut, upto, summary, input_tokens, output_tokens,
 *       requested, done)  summaries of older turns: the rows with id < cut
 *       are sent as the summary of the latest done row; upto is the last
 *       row when it was made.  A pending row is a summary step asked for
 *       and not yet made (checkpoint: the step is made again after a crash)
 *   tool_journal(id INTEGER PRIMARY KEY, turn, step, idx, call_id, name,
 *       input, state started|ended, status, output, started, ended)
 *       UNIQUE(turn, step, idx): call idx of the assistant message of step
 *   audit(id INTEGER PRIMARY KEY, user, kind exec|tool|term, command, cwd,
 *       exit_code, signal, started, ended, wrote)  wrote: 1 when the
 *       command changed the workspace, 0 when it did not, NULL unknown;
 *       above 1, for a command that reports its changes (the sftp
 *       subsystem: exec.c), the Unix time in ms of the last one it
 *       reported (room_db_audit_changed)
 *   usage(day TEXT, model TEXT, input_tokens, output_tokens, requests,
 *       PRIMARY KEY(day, model))  the room's tokens per UTC day and model
 *   usage_users(day TEXT, user TEXT, model TEXT, input_tokens,
 *       output_tokens, requests, PRIMARY KEY(day, user, model))  the same,
 *       per person who prompted the turn; per turn: turns' token columns
 *   turn_undo(turn INTEGER PRIMARY KEY, step, idx, tool, snapshot, time,
 *       undone, redo, undone_time)
 *       the first call of a turn that may change the workspace (undo.h):
 *       the turn's undo point; snapshot names the workspace snapshot taken
 *       before it (NULL: none, the workspace was not snapshotted, or
 *       retention dropped it); undone is 1 once the turn was undone, redo
 *       names the snapshot taken just before that undo, undone_time when.
 *       redo is a pending redo only: recording a later turn's undo point
 *       sets it to NULL in every undone row (that turn wrote on top of
 *       the undone state, so bringing it back would throw the turn
 *       away); an undone row with redo NULL can be neither redone nor
 *       undone again.  Hence the pending redos are always the undone
 *       turns above every turn not undone, undone newest first
 *       (room_db_undo_target relies on it).
 *
 * Migrations: room_db_migrations[i] takes user_version i to i + 1; each runs
 * in its own transaction with the version bump, so a crash leaves either the
 * old or the new schema.
 *
 * Invariants: a tool_journal row with state 'started' and no end after a
 * restart is a call interrupted by a crash (it is never run again); a
 * transcript never holds an assistant tool_use whose result is missing
 * except while its turn is running.
 */
#include "room_db.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "log.h"
#include "util.h"
#include "wal_checkpointer.h"
#include "walbuf.h"

#define ROOM_DB_CACHE_SLOTS 128	/* about twice the texts this file runs */

/* One kept statement (see "the statement cache" below). */
struct room_db_cached {
	const char *sql;	/* its text (sqlite3_sql: lives as long as st) */
	sqlite3_stmt *st;	/* NULL: an empty slot */
	int in_use;		/* handed out and not yet released */
};

struct room_db {
	sqlite3 *db;
	struct room_db_cached cache[ROOM_DB_CACHE_SLOTS]; /* by text's hash */
	int in_tx;		/* BEGIN issued, COMMIT pending */
	int in_read;		/* room_db_read_begin's BEGIN, not ended */
	int tx_lost;		/* -errno: SQLite rolled the open transaction
				 * back by itself; the next commit or
				 * rollback reports it (0: none) */
	long long epoch;	/* room_db_transcript_epoch */
	unsigned long writes;	/* room_db_writes */
	struct wal_checkpointer *ckpt;	/* its WAL checkpoints, off the loop;
					 * NULL: SQLite's own, in commits */
};

static const char *const room_db_migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE events (seq INTEGER PRIMARY KEY, time TEXT NOT NULL,"
	"  type TEXT NOT NULL, json TEXT NOT NULL);"
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE config (key TEXT PRIMARY KEY, value TEXT NOT NULL,"
	"  user TEXT, time TEXT);"
	"CREATE TABLE members (user TEXT PRIMARY KEY, first_seen TEXT NOT NULL,"
	"  last_seen TEXT NOT NULL);"
	"CREATE TABLE turns (id INTEGER PRIMARY KEY, user TEXT NOT NULL,"
	"  prompt TEXT NOT NULL, state TEXT NOT NULL"
	"  CHECK (state IN ('queued','running','done')), stop_reason TEXT,"
	"  steps INTEGER NOT NULL DEFAULT 0,"
	"  input_tokens INTEGER NOT NULL DEFAULT 0,"
	"  output_tokens INTEGER NOT NULL DEFAULT 0,"
	"  created TEXT NOT NULL, started TEXT, ended TEXT);"
	"CREATE TABLE transcript (id INTEGER PRIMARY KEY,"
	"  turn INTEGER NOT NULL, step INTEGER NOT NULL,"
	"  role TEXT NOT NULL CHECK (role IN ('user','assistant')),"
	"  json TEXT NOT NULL);"
	"CREATE TABLE tool_journal (id INTEGER PRIMARY KEY,"
	"  turn INTEGER NOT NULL, step INTEGER NOT NULL, idx INTEGER NOT NULL,"
	"  call_id TEXT NOT NULL, name TEXT NOT NULL, input TEXT NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('started','ended')),"
	"  status TEXT, output TEXT, started TEXT, ended TEXT,"
	"  UNIQUE (turn, step, idx));"
	"CREATE TABLE audit (id INTEGER PRIMARY KEY, user TEXT NOT NULL,"
	"  kind TEXT NOT NULL, command TEXT NOT NULL, cwd TEXT,"
	"  exit_code INTEGER, signal TEXT, started TEXT NOT NULL, ended TEXT);"
	"CREATE TABLE usage (day TEXT NOT NULL, model TEXT NOT NULL,"
	"  input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,"
	"  requests INTEGER NOT NULL, PRIMARY KEY (day, model));",
	/* 1 -> 2: compaction */
	"ALTER TABLE transcript ADD COLUMN input_tokens INTEGER;"
	"CREATE TABLE compactions (id INTEGER PRIMARY KEY,"
	"  turn INTEGER NOT NULL,"
	"  state TEXT NOT NULL CHECK (state IN ('pending','done')),"
	"  reason TEXT NOT NULL, cut INTEGER, upto INTEGER, summary TEXT,"
	"  input_tokens INTEGER NOT NULL DEFAULT 0,"
	"  output_tokens INTEGER NOT NULL DEFAULT 0,"
	"  requested TEXT NOT NULL, done TEXT,"
	"  CHECK (state = 'pending' OR (cut IS NOT NULL AND summary IS NOT NULL)));",
	/* 2 -> 3: access.  A room made before owners were recorded gets as
	 * owner the first person seen in it (joined, or ran a command), and
	 * everyone who joined it becomes a member, so making it private
	 * later keeps them in.  Rooms stay open. */
	"CREATE TABLE access (user TEXT PRIMARY KEY,"
	"  role TEXT NOT NULL CHECK (role IN ('owner','member')),"
	"  by TEXT, time TEXT NOT NULL);"
	"CREATE UNIQUE INDEX access_one_owner ON access (role)"
	"  WHERE role = 'owner';"
	"INSERT INTO access (user, role, by, time)"
	"  SELECT user, 'owner', NULL, t FROM"
	"  (SELECT user, first_seen AS t FROM members UNION ALL"
	"   SELECT user, started FROM audit WHERE kind = 'exec')"
	"  WHERE user != 'agent' ORDER BY t LIMIT 1;"
	"INSERT OR IGNORE INTO access (user, role, by, time)"
	"  SELECT user, 'member', NULL, first_seen FROM members"
	"  WHERE user != 'agent';",
	/* 3 -> 4: usage per person.  Earlier days are not split by person:
	 * the turns table has their totals, not their models. */
	"CREATE TABLE usage_users (day TEXT NOT NULL, user TEXT NOT NULL,"
	"  model TEXT NOT NULL, input_tokens INTEGER NOT NULL,"
	"  output_tokens INTEGER NOT NULL, requests INTEGER NOT NULL,"
	"  PRIMARY KEY (day, user, model));",
	/* 4 -> 5: each turn's undo point (undo.h). */
	"CREATE TABLE turn_undo (turn INTEGER PRIMARY KEY,"
	"  step INTEGER NOT NULL, idx INTEGER NOT NULL, tool TEXT NOT NULL,"
	"  snapshot TEXT, time TEXT NOT NULL);",
	/* 5 -> 6: undo and redo of a turn (undo.h): whether it is undone,
	 * the snapshot taken just before the undo (what a redo restores)
	 * and when it was undone. */
	"ALTER TABLE turn_undo ADD COLUMN undone INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE turn_undo ADD COLUMN redo TEXT;"
	"ALTER TABLE turn_undo ADD COLUMN undone_time TEXT;",
	/* 6 -> 7: a later turn's undo point forgets the pending redos
	 * (room_db_undo_mark).  Before, it did not, and a redo could bring
	 * back a turn undone before another one ran: forget those, known
	 * here by a later turn's undo point taken after the undo. */
	"UPDATE turn_undo SET redo = NULL WHERE undone = 1 AND EXISTS"
	"  (SELECT 1 FROM turn_undo l WHERE l.turn > turn_undo.turn"
	"   AND l.time >= turn_undo.undone_time);",
	/* 7 -> 8: whether a person's command changed the workspace (1), or
	 * only read it (0); NULL: not known, counted as changed.  Undo,
	 * redo and restore ask only those whose commands changed it. */
	"ALTER TABLE audit ADD COLUMN wrote INTEGER;",
};
#define ROOM_DB_NMIGRATIONS \
	(int)(sizeof(room_db_migrations) / sizeof(room_db_migrations[0]))

/* The negative errno for an SQLite result code: what a full disk
 * (-ENOSPC), a read-only file or mount (-EROFS), a lock held elsewhere
 * (-EBUSY) or memory (-ENOMEM) did; -EIO for everything else (I/O errors,
 * corruption, a refused constraint). */
static int
room_db_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

/* After a failed statement (err): SQLite may have rolled the whole
 * transaction back by itself (it does on SQLITE_FULL and some I/O errors);
 * forget it then, so that the next write begins a new one, and remember
 * the loss: the next room_db_commit fails with err, so that writes made
 * after the loss are never committed as if the lost ones were with them
 * (a checkpoint is all of its writes or none). */
static void
room_db_check_tx(struct room_db *db, int err)
{
	if (db->in_tx && sqlite3_get_autocommit(db->db)) {
		log_warn("room.db: the open transaction was rolled back");
		db->in_tx = 0;
		db->tx_lost = err;
		db->epoch++;
	}
}

/* Log an SQLite failure once; its errno (room_db_errno), -EIO at least. */
static int
room_db_fail(struct room_db *db, const char *what)
{
	int r = room_db_errno(sqlite3_extended_errcode(db->db));

	log_error("room.db: %s: %s", what, sqlite3_errmsg(db->db));
	r = r < 0 ? r : -EIO;
	room_db_check_tx(db, r);
	return r;
}

/* Run SQL without results.  0 or a negative errno (room_db_errno). */
static int
room_db_run(struct room_db *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db->db, sql, NULL, NULL, &err), r;

	if (rc != SQLITE_OK) {
		log_error("room.db: %.60s: %s", sql, err ? err : "?");
		sqlite3_free(err);
		r = room_db_errno(rc);
		return r < 0 ? r : -EIO;
	}
	return 0;
}


static int room_db_run1(struct room_db *db, const char *sql);

/* Open a write transaction unless one is open. */
static int
room_db_begin(struct room_db *db)
{
	int r;

	if (db->in_tx)
		return 0;
	if (db->in_read) {
		log_error("room.db: a write inside a read transaction");
		return -EINVAL;
	}
	r = room_db_run1(db, "BEGIN IMMEDIATE");
	if (r == 0)
		db->in_tx = 1;
	return r;
}

int
room_db_commit(struct room_db *db)
{
	int r;

	if (!db)
		return 0;
	if (db->tx_lost) {
		r = db->tx_lost;
		room_db_rollback(db);
		return r;
	}
	if (!db->in_tx)
		return 0;
	r = room_db_run1(db, "COMMIT");
	db->in_tx = 0;
	if (r < 0)
		db->epoch++;
	if (r < 0 && !sqlite3_get_autocommit(db->db))
		room_db_run1(db, "ROLLBACK");
	return r;
}

int
room_db_read_begin(struct room_db *db)
{
	int r;

	if (db->in_tx || db->tx_lost)
		return 0;
	if (db->in_read)
		return -EINVAL;
	if ((r = room_db_run1(db, "BEGIN")) < 0)
		return r;
	db->in_read = 1;
	return 1;
}

void
room_db_read_end(struct room_db *db, int begun)
{
	if (begun <= 0 || !db->in_read)
		return;
	db->in_read = 0;
	/* Nothing was written, so ending it cannot fail; SQLite may already
	 * have ended it after a failed read. */
	if (!sqlite3_get_autocommit(db->db))
		room_db_run1(db, "COMMIT");
}

int
room_db_in_tx(struct room_db *db)
{
	return db && (db->in_tx || db->tx_lost);
}

unsigned long
room_db_writes(const struct room_db *db)
{
	return db->writes;
}

void
room_db_rollback(struct room_db *db)
{
	if (!db)
		return;
	db->tx_lost = 0;
	db->epoch++;
	if (!db->in_tx)
		return;
	db->in_tx = 0;
	if (!sqlite3_get_autocommit(db->db))
		room_db_run1(db, "ROLLBACK");
}

const char *
room_db_strerror(int err)
{
	switch (err) {
	case -ENOSPC:
		return "the disk holding room.db is full";
	case -EROFS:
		return "room.db is read-only";
	case -EBUSY:
		return "room.db is locked by another process";
	default:
		return strerror(err < 0 ? -err : err);
	}
}

/* ---- the statement cache ----------------------------------------------
 *
 * Every statement this file runs is one of a few dozen fixed SQL texts, and
 * a step of a turn runs a dozen of them: preparing each anew was about a
 * quarter of a step's own time.  So each text is prepared once
 * (SQLITE_PREPARE_PERSISTENT), kept in db->cache, and after each use reset
 * with its bindings cleared (room_db_release), so that it holds no lock, no
 * open read and no caller's text between uses.  A text already in use
 * further up the stack (a callback that queries again) gets a statement of
 * its own, finalized at release.  Everything is finalized at close.  SQLite
 * re-prepares a kept statement itself after a schema change (migrations).
 */

/* Where sql's statement lives or would go in db->cache: the slot holding
 * it, else the first empty slot on its probe sequence; NULL when the table
 * is full (the caller then uses a statement of its own). */
static struct room_db_cached *
room_db_cache_slot(struct room_db *db, const char *sql)
{
	unsigned long h = 5381;

	for (const char *p = sql; *p; p++)
		h = h * 33 + (unsigned char)*p;
	for (unsigned i = 0; i < ROOM_DB_CACHE_SLOTS; i++) {
		struct room_db_cached *c =
		    &db->cache[(h + i) % ROOM_DB_CACHE_SLOTS];

		if (!c->st || c->sql == sql || strcmp(c->sql, sql) == 0)
			return c;
	}
	return NULL;
}

/* sql's statement, ready to bind: the cached one when it is free, else a
 * new one (cached when there is room).  NULL on failure (logged). */
static sqlite3_stmt *
room_db_stmt_get(struct room_db *db, const char *sql)
{
	struct room_db_cached *c = room_db_cache_slot(db, sql);
	sqlite3_stmt *st;

	if (c && c->st && !sqlite3_stmt_busy(c->st) && !c->in_use) {
		c->in_use = 1;
		return c->st;
	}
	if (sqlite3_prepare_v3(db->db, sql, -1, c && !c->st ?
	    SQLITE_PREPARE_PERSISTENT : 0, &st, NULL) != SQLITE_OK) {
		room_db_fail(db, sql);
		return NULL;
	}
	if (c && !c->st) {
		c->st = st;
		c->sql = sqlite3_sql(st);
		c->in_use = 1;
	}
	return st;
}

/* Give st back after use: a cached statement is reset and its bindings
 * cleared; any other is finalized.  NULL is ignored. */
static void
room_db_release(struct room_db *db, sqlite3_stmt *st)
{
	struct room_db_cached *c;

	if (!st)
		return;
	c = room_db_cache_slot(db, sqlite3_sql(st));
	if (c && c->st == st) {
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		c->in_use = 0;
		return;
	}
	sqlite3_finalize(st);
}

/* Finalize every cached statement (before the connection closes). */
static void
room_db_cache_clear(struct room_db *db)
{
	for (unsigned i = 0; i < ROOM_DB_CACHE_SLOTS; i++) {
		sqlite3_finalize(db->cache[i].st);
		db->cache[i].st = NULL;
		db->cache[i].in_use = 0;
	}
}

/*
 * sql's statement with arguments bound as fmt describes: 's' text (NULL
 * binds NULL), 'i' int, 'I' long long.  Give it back with room_db_release.
 * NULL on failure (logged).
 */
static sqlite3_stmt *
room_db_vquery(struct room_db *db, const char *sql, const char *fmt,
    va_list ap)
{
	sqlite3_stmt *st = room_db_stmt_get(db, sql);
	int i = 1, rc = SQLITE_OK;

	if (!st)
		return NULL;
	for (const char *f = fmt; *f && rc == SQLITE_OK; f++, i++) {
		if (*f == 's') {
			const char *s = va_arg(ap, const char *);

			rc = s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT)
			    : sqlite3_bind_null(st, i);
		} else if (*f == 'i') {
			rc = sqlite3_bind_int(st, i, va_arg(ap, int));
		} else {
			rc = sqlite3_bind_int64(st, i, va_arg(ap, long long));
		}
	}
	if (rc != SQLITE_OK) {
		room_db_fail(db, sql);
		room_db_release(db, st);
		return NULL;
	}
	return st;
}

static sqlite3_stmt *
room_db_query(struct room_db *db, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *st;
	va_list ap;

	va_start(ap, fmt);
	st = room_db_vquery(db, sql, fmt, ap);
	va_end(ap);
	return st;
}

/* Run one statement without arguments or results through the cache (the
 * transaction's BEGIN, COMMIT and ROLLBACK, run at every checkpoint).  0 or
 * a negative errno (room_db_errno), logged. */
static int
room_db_run1(struct room_db *db, const char *sql)
{
	sqlite3_stmt *st = room_db_stmt_get(db, sql);
	int rc, r = 0;

	if (!st)
		return -EIO;
	rc = sqlite3_step(st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		log_error("room.db: %s: %s", sql, sqlite3_errmsg(db->db));
		r = room_db_errno(sqlite3_extended_errcode(db->db));
		r = r < 0 ? r : -EIO;
	}
	room_db_release(db, st);
	return r;
}

/* Does sql change what a copy of the transcript in memory holds, other
 * than by adding a row (room_db_transcript_epoch)?  Any statement on the
 * transcript or compactions tables but the two that add a transcript row,
 * so that a new one (an update, a delete) is counted without being
 * listed here. */
static int
room_db_rewrites_transcript(const char *sql)
{
	static const char add[] = "INSERT INTO transcript ";

	if (strncmp(sql, add, sizeof(add) - 1) == 0)
		return 0;
	return strstr(sql, "transcript") || strstr(sql, "compactions");
}

/* Run one write statement inside the lazy transaction.  0 or a negative
 * errno (room_db_errno). */
static int
room_db_write(struct room_db *db, const char *sql, const char *fmt, ...)
{
	sqlite3_stmt *st;
	va_list ap;
	int rc, r;

	if ((r = room_db_begin(db)) < 0)
		return r;
	db->writes++;
	if (room_db_rewrites_transcript(sql))
		db->epoch++;
	va_start(ap, fmt);
	st = room_db_vquery(db, sql, fmt, ap);
	va_end(ap);
	if (!st)
		return -EIO;
	rc = sqlite3_step(st);
	room_db_release(db, st);
	if (rc != SQLITE_DONE) {
		r = room_db_fail(db, sql);
		return r;
	}
	return 0;
}

/* Apply every migration above the file's user_version. */
static int
room_db_migrate(struct room_db *db)
{
	int v = room_db_version(db);
	char sql[64];

	if (v > ROOM_DB_NMIGRATIONS) {
		log_error("room.db has schema version %d, newer than this "
		    "atrium-agent knows (%d): upgrade atrium-agent", v,
		    ROOM_DB_NMIGRATIONS);
		return -EPROTO;
	}
	for (; v < ROOM_DB_NMIGRATIONS; v++) {
		if (room_db_run(db, "BEGIN IMMEDIATE") < 0)
			return -EIO;
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
		if (room_db_run(db, room_db_migrations[v]) < 0 ||
		    room_db_run(db, sql) < 0 || room_db_run(db, "COMMIT") < 0) {
			room_db_run(db, "ROLLBACK");
			return -EIO;
		}
		log_info("room.db migrated to schema version %d", v + 1);
	}
	return 0;
}

void
room_db_keep_files(struct sqlite3 *db)
{
	int one = 1;

	sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &one);
}

/* SQLite's busy handler of room_db_busy_wait: another try after
 * ROOM_DB_BUSY_STEP_US, until the budget (ms, in arg) is spent. */
static int
room_db_busy(void *arg, int tries)
{
	long long budget_us = (long long)(intptr_t)arg * 1000;
	struct timespec step = { 0, ROOM_DB_BUSY_STEP_US * 1000 };

	if ((long long)tries * ROOM_DB_BUSY_STEP_US >= budget_us)
		return 0;
	nanosleep(&step, NULL);
	return 1;
}

void
room_db_busy_wait(struct sqlite3 *db, int ms)
{
	sqlite3_busy_handler(db, room_db_busy, (void *)(intptr_t)ms);
}

#define ROOM_DB_WAL_KEEP	"67108864"	/* bytes a WAL keeps on disk
						 * after a checkpoint, until a
						 * bound is set */

int
room_db_open(const char *path, struct room_db **out)
{
	struct room_db *db = calloc(1, sizeof(*db));
	int r;

	*out = NULL;
	if (!db)
		return -ENOMEM;
	/* Through walbuf.h: a commit's WAL frames in one or a few writes. */
	if (sqlite3_open_v2(path, &db->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, walbuf_small_vfs_name())
	    != SQLITE_OK) {
		log_error("cannot open %s: %s", path, sqlite3_errmsg(db->db));
		sqlite3_close(db->db);
		free(db);
		return -EIO;
	}
	room_db_busy_wait(db->db, 5000);
	/* The agent may not add or remove a file in the room's directory
	 * (confine.h): keep room.db-wal and -shm when the last connection
	 * closes, and make no temporary file (statement journals and sorts
	 * stay in memory).  With a journal_size_limit, a clean close leaves
	 * the kept WAL empty, not frames that a room.db put in its place
	 * (a restored copy) would take as its own. */
	room_db_keep_files(db->db);
	r = room_db_run(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
	    " PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY;"
	    " PRAGMA journal_size_limit=" ROOM_DB_WAL_KEEP);
	if (r == 0)
		r = room_db_migrate(db);
	if (r < 0) {
		room_db_close(db);
		return r;
	}
	if ((r = wal_checkpointer_start(db->db, path, &db->ckpt)) < 0)
		log_warn("room.db's checkpoints stay in its commits: %s",
		    strerror(-r));
	*out = db;
	return 0;
}

void
room_db_close(struct room_db *db)
{
	if (!db)
		return;
	room_db_commit(db);
	wal_checkpointer_stop(db->ckpt);
	room_db_cache_clear(db);
	sqlite3_close(db->db);
	free(db);
}

/* One integer from a query (def when no row). */
static long long
room_db_int(struct room_db *db, long long def, const char *sql,
    const char *fmt, ...)
{
	sqlite3_stmt *st;
	long long v = def;
	va_list ap;

	va_start(ap, fmt);
	st = room_db_vquery(db, sql, fmt, ap);
	va_end(ap);
	if (!st)
		return def;
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	room_db_release(db, st);
	return v;
}

long long
room_db_used_bytes(struct room_db *db)
{
	long long psize = room_db_int(db, 0, "PRAGMA page_size", "");
	long long pages = room_db_int(db, 0, "PRAGMA page_count", "");
	long long free_pages = room_db_int(db, 0, "PRAGMA freelist_count", "");

	return (pages - free_pages) * psize;
}

long long
room_db_wal_bytes(struct room_db *db)
{
	const char *path = sqlite3_db_filename(db->db, "main");
	char wal[4200];
	struct stat sb;

	if (!path || !*path || (size_t)snprintf(wal, sizeof(wal), "%s-wal",
	    path) >= sizeof(wal) || stat(wal, &sb) < 0)
		return 0;
	return (long long)sb.st_size;
}

void
room_db_wal_bound(struct room_db *db, long long bytes)
{
	wal_checkpointer_bound(db->ckpt, bytes);
}

int
room_db_version(struct room_db *db)
{
	return (int)room_db_int(db, 0, "PRAGMA user_version", "");
}

/* The schema as one text: every table, index, trigger and view with its
 * SQL, in order; SQLite's own statistics tables (which PRAGMA optimize may
 * add) left out.  NULL when it cannot be read (logged). */
char *
room_db_schema_text(struct room_db *db)
{
	static const char sql[] =
	    "SELECT group_concat(x, char(10)) FROM (SELECT type || ' ' || name"
	    " || ' ' || tbl_name || ' ' || ifnull(sql, '') AS x FROM"
	    " sqlite_master WHERE name NOT LIKE 'sqlite_stat%' ORDER BY type,"
	    " name)";
	sqlite3_stmt *st = room_db_query(db, sql, "");
	const unsigned char *t;
	char *out = NULL;

	if (!st)
		return NULL;
	if (sqlite3_step(st) == SQLITE_ROW) {
		t = sqlite3_column_text(st, 0);
		out = strdup(t ? (const char *)t : "");
	}
	room_db_release(db, st);
	return out;
}

/* ---- events ---------------------------------------------------------- */

int
room_db_event_add(struct room_db *db, long long seq, const char *time,
    const char *type, const char *json)
{
	return room_db_write(db, "INSERT INTO events (seq, time, type, json)"
	    " VALUES (?, ?, ?, ?)", "Isss", seq, time, type, json);
}

int
room_db_events_each(struct room_db *db, long long since, long limit,
    room_db_event_fn *fn, void *arg)
{
	struct room_db_filter f = { .since = since, .limit = limit };

	return room_db_events_find(db, &f, fn, arg);
}

/* LIKE's pattern for text inside anything: %text% with %, _ and \
 * escaped by \.  NULL when it would not fit. */
static char *
room_db_like(const char *text, char *out, size_t len)
{
	size_t o = 0;

	if (len < 3)
		return NULL;
	out[o++] = '%';
	for (const char *p = text; *p; p++) {
		if (o + 4 > len)
			return NULL;
		if (*p == '%' || *p == '_' || *p == '\\')
			out[o++] = '\\';
		out[o++] = *p;
	}
	out[o++] = '%';
	out[o] = '\0';
	return out;
}

int
room_db_events_find(struct room_db *db, const struct room_db_filter *f,
    room_db_event_fn *fn, void *arg)
{
	char like[1024];
	sqlite3_stmt *st;
	int rc;

	if (f->match && !room_db_like(f->match, like, sizeof(like)))
		return -EINVAL;
	/* A row whose text is not JSON (room.db is a file anyone with the
	 * disk could have written) is passed on for fn to refuse: the CASE
	 * keeps json_extract from failing the whole search on it. */
	st = room_db_query(db, "SELECT seq, time, json FROM (SELECT seq, time,"
	    " json, CASE WHEN json_valid(json) THEN json END AS j FROM events"
	    " WHERE seq > ? AND (? <= 0 OR seq < ?)"
	    " AND (? IS NULL OR (type IN ('message', 'prompt', 'exec_start')"
	    "   AND json_extract(j, '$.user') = ?))"
	    " AND (? IS NULL OR (coalesce(json_extract(j, '$.text'), '')"
	    "   || ' ' || coalesce(json_extract(j, '$.command'), '')"
	    "   || ' ' || coalesce(json_extract(j, '$.output'), '')"
	    "   || ' ' || coalesce(json_extract(j, '$.stdout'), '')"
	    "   || ' ' || coalesce(json_extract(j, '$.stderr'), ''))"
	    "   LIKE ? ESCAPE '\\')"
	    " ORDER BY seq DESC LIMIT ?) ORDER BY seq", "IIIssssI", f->since,
	    f->before, f->before, f->user, f->user, f->match ? like : NULL,
	    f->match ? like : NULL, f->limit > 0 ? (long long)f->limit : -1LL);
	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (fn(sqlite3_column_int64(st, 0),
		    (const char *)sqlite3_column_text(st, 1),
		    (const char *)sqlite3_column_text(st, 2), arg))
			break;
	room_db_release(db, st);
	return rc == SQLITE_ERROR ? room_db_fail(db, "events") : 0;
}

long long
room_db_last_seq(struct room_db *db)
{
	long long a = room_db_int(db, 0, "SELECT max(seq) FROM events", "");
	long long b = room_db_int(db, 0, "SELECT CAST(value AS INTEGER) FROM"
	    " meta WHERE key = 'last_seq'", "");

	return a > b ? a : b;
}

int
room_db_seq_mark(struct room_db *db, long long seq)
{
	char v[32];

	snprintf(v, sizeof(v), "%lld", seq);
	return room_db_write(db, "INSERT INTO meta (key, value) VALUES"
	    " ('last_seq', ?) ON CONFLICT (key) DO UPDATE SET value ="
	    " excluded.value", "s", v);
}

/* ---- shared commands not yet ended ------------------------------------ */

/* meta's keys "exec_open:ID", one per shared command whose exec_start is
 * stored and whose exec_result is not: the commands a restart cut. */
#define ROOM_DB_EXEC_OPEN	"exec_open:"

int
room_db_exec_open(struct room_db *db, const char *id, const char *user)
{
	return room_db_write(db, "INSERT INTO meta (key, value) VALUES"
	    " ('" ROOM_DB_EXEC_OPEN "' || ?, ?) ON CONFLICT (key) DO UPDATE"
	    " SET value = excluded.value", "ss", id, user);
}

/* meta's keys "exec_out:HEX(ID):N:STREAM": the output of an open command,
 * piece by piece (the id in hex, so no id's keys fall in another's
 * range). */
#define ROOM_DB_EXEC_OUT	"exec_out:"

int
room_db_exec_closed(struct room_db *db, const char *id)
{
	int r = room_db_write(db, "DELETE FROM meta WHERE key = '"
	    ROOM_DB_EXEC_OPEN "' || ?", "s", id);

	if (r == 0)
		r = room_db_write(db, "DELETE FROM meta WHERE key > '"
		    ROOM_DB_EXEC_OUT "' || hex(?) || ':' AND key < '"
		    ROOM_DB_EXEC_OUT "' || hex(?) || ';'", "ss", id, id);
	return r;
}

int
room_db_exec_output_add(struct room_db *db, const char *id, int stream,
    int n, const char *text, size_t len)
{
	char tail[32];

	if (memchr(text, '\0', len))
		return -EINVAL;	/* utf8_repair never makes one */
	snprintf(tail, sizeof(tail), ":%08d:%d", n, stream ? 1 : 0);
	return room_db_write(db, "INSERT OR REPLACE INTO meta (key, value)"
	    " VALUES ('" ROOM_DB_EXEC_OUT "' || hex(?) || ?, ?)", "sss", id,
	    tail, text);
}

int
room_db_exec_output_each(struct room_db *db, const char *id,
    struct buf *out, int *truncated)
{
	sqlite3_stmt *st = room_db_query(db, "SELECT substr(key, -1), value"
	    " FROM meta WHERE key > '" ROOM_DB_EXEC_OUT "' || hex(?) || ':'"
	    " AND key < '" ROOM_DB_EXEC_OUT "' || hex(?) || ';' ORDER BY key",
	    "ss", id, id);
	int rc;

	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		const void *v = sqlite3_column_text(st, 1);
		int len = sqlite3_column_bytes(st, 1);

		if (v && len > 0 && buf_append(&out[s && *s == '1'], v,
		    (size_t)len) < 0)
			*truncated = 1;
	}
	room_db_release(db, st);
	return rc == SQLITE_ERROR ? room_db_fail(db, "meta") : 0;
}

int
room_db_exec_open_each(struct room_db *db, room_db_exec_fn *fn, void *arg)
{
	/* A range of the primary key: ';' follows ':'. */
	sqlite3_stmt *st = room_db_query(db, "SELECT substr(key, 11), value"
	    " FROM meta WHERE key > '" ROOM_DB_EXEC_OPEN "' AND key <"
	    " 'exec_open;' ORDER BY key", "");
	int rc, n = 0;

	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && n < 1000) {
		n++;
		if (fn((const char *)sqlite3_column_text(st, 0),
		    (const char *)sqlite3_column_text(st, 1), arg))
			break;
	}
	room_db_release(db, st);
	return rc == SQLITE_ERROR ? room_db_fail(db, "meta") : n;
}

/* The value of key in table (meta or config) into out: 1 found, 0 not,
 * -EIO. */
static int
room_db_value_get(struct room_db *db, const char *sql, const char *key,
    char *out, size_t outlen)
{
	sqlite3_stmt *st = room_db_query(db, sql, "s", key);
	int found = 0;

	if (!st)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		snprintf(out, outlen, "%s", sqlite3_column_text(st, 0));
		found = 1;
	}
	room_db_release(db, st);
	return found;
}

int
room_db_meta_get(struct room_db *db, const char *key, char *out,
    size_t outlen)
{
	return room_db_value_get(db, "SELECT value FROM meta WHERE key = ?",
	    key, out, outlen);
}

int
room_db_meta_set(struct room_db *db, const char *key, const char *value)
{
	return room_db_write(db, "INSERT INTO meta (key, value) VALUES (?, ?)"
	    " ON CONFLICT (key) DO UPDATE SET value = excluded.value", "ss",
	    key, value);
}

/* ---- config, members -------------------------------------------------- */

int
room_db_config_set(struct room_db *db, const char *key, const char *value,
    const char *user)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "INSERT INTO config (key, value, user, time)"
	    " VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET"
	    " value = excluded.value, user = excluded.user,"
	    " time = excluded.time", "ssss", key, value, user, now);
}

int
room_db_config_get(struct room_db *db, const char *key, char *out,
    size_t outlen)
{
	return room_db_value_get(db, "SELECT value FROM config WHERE key = ?",
	    key, out, outlen);
}

int
room_db_member_seen(struct room_db *db, const char *user)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "INSERT INTO members (user, first_seen,"
	    " last_seen) VALUES (?, ?, ?) ON CONFLICT (user) DO UPDATE SET"
	    " last_seen = excluded.last_seen", "sss", user, now, now);
}

/* ---- access ------------------------------------------------------------ */

int
room_db_access_load(struct room_db *db, struct access_list *out)
{
	char vis[16];
	sqlite3_stmt *st;
	int rc;

	access_list_init(out);
	if (room_db_config_get(db, "visibility", vis, sizeof(vis)) == 1 &&
	    access_visibility_parse(vis, &out->visibility) < 0)
		out->visibility = ACCESS_PRIVATE;	/* unknown: fail closed */
	st = room_db_query(db, "SELECT user, role FROM access ORDER BY time,"
	    " user", "");
	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *user = (const char *)sqlite3_column_text(st, 0);
		const char *role = (const char *)sqlite3_column_text(st, 1);

		if (strcmp(role, "owner") == 0)
			snprintf(out->owner, sizeof(out->owner), "%s", user);
		else
			access_list_add(out, user);
	}
	room_db_release(db, st);
	return rc == SQLITE_DONE ? 0 : room_db_fail(db, "access");
}

int
room_db_access_set(struct room_db *db, const char *user, const char *role,
    const char *by)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "INSERT INTO access (user, role, by, time)"
	    " VALUES (?, ?, ?, ?) ON CONFLICT (user) DO UPDATE SET role ="
	    " excluded.role, by = excluded.by, time = excluded.time", "ssss",
	    user, role, by, now);
}

int
room_db_access_remove(struct room_db *db, const char *user)
{
	return room_db_write(db, "DELETE FROM access WHERE user = ? AND role ="
	    " 'member'", "s", user);
}

/* ---- turns ------------------------------------------------------------- */

int
room_db_turn_add(struct room_db *db, const char *user, const char *prompt,
    long long *id)
{
	char now[40];
	int r;

	time_now_iso(now, sizeof(now));
	r = room_db_write(db, "INSERT INTO turns (user, prompt, state, created)"
	    " VALUES (?, ?, 'queued', ?)", "sss", user, prompt, now);
	if (r == 0 && id)
		*id = sqlite3_last_insert_rowid(db->db);
	if (r == 0)
		r = room_db_commit(db);	/* on disk before the command runs */
	return r;
}

int
room_db_turn_next(struct room_db *db, struct room_db_turn *t)
{
	sqlite3_stmt *st;
	const char *state;
	int found = 0;

	memset(t, 0, sizeof(*t));
	st = room_db_query(db, "SELECT id, user, prompt, state, steps,"
	    " input_tokens, output_tokens FROM turns WHERE state != 'done'"
	    " ORDER BY state = 'running' DESC, id LIMIT 1", "");
	if (!st)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		t->id = sqlite3_column_int64(st, 0);
		snprintf(t->user, sizeof(t->user), "%s",
		    sqlite3_column_text(st, 1));
		t->prompt = strdup((const char *)sqlite3_column_text(st, 2));
		state = (const char *)sqlite3_column_text(st, 3);
		t->state = strcmp(state, "running") == 0 ? TURN_RUNNING :
		    TURN_QUEUED;
		t->steps = sqlite3_column_int(st, 4);
		t->input_tokens = (long)sqlite3_column_int64(st, 5);
		t->output_tokens = (long)sqlite3_column_int64(st, 6);
		found = t->prompt ? 1 : -ENOMEM;
	}
	room_db_release(db, st);
	return found;
}

int
room_db_turns_queued(struct room_db *db)
{
	return (int)room_db_int(db, 0, "SELECT count(*) FROM turns WHERE"
	    " state = 'queued'", "");
}

int
room_db_turn_start(struct room_db *db, long long id)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "UPDATE turns SET state = 'running', started ="
	    " ? WHERE id = ?", "sI", now, id);
}

int
room_db_turn_end(struct room_db *db, long long id, const char *stop_reason)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "UPDATE turns SET state = 'done', stop_reason"
	    " = ?, ended = ? WHERE id = ?", "ssI", stop_reason, now, id);
}

int
room_db_turn_step(struct room_db *db, long long id, long in, long out)
{
	return room_db_write(db, "UPDATE turns SET steps = steps + 1,"
	    " input_tokens = input_tokens + ?, output_tokens = output_tokens"
	    " + ? WHERE id = ?", "III", (long long)in, (long long)out, id);
}

/* ---- transcript -------------------------------------------------------- */

int
room_db_transcript_add(struct room_db *db, long long turn, int step,
    const char *role, json_object *msg)
{
	return room_db_write(db, "INSERT INTO transcript (turn, step, role,"
	    " json) VALUES (?, ?, ?, ?)", "Iiss", turn, step, role,
	    json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
}

long long
room_db_transcript_epoch(struct room_db *db)
{
	return db->epoch;
}

int
room_db_transcript_last(struct room_db *db, struct room_db_msg *m)
{
	sqlite3_stmt *st;
	int found = 0;

	memset(m, 0, sizeof(*m));
	st = room_db_query(db, "SELECT id, turn, step, role, json FROM"
	    " transcript ORDER BY id DESC LIMIT 1", "");
	if (!st)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		m->rowid = sqlite3_column_int64(st, 0);
		m->turn = sqlite3_column_int64(st, 1);
		m->step = sqlite3_column_int(st, 2);
		snprintf(m->role, sizeof(m->role), "%s",
		    sqlite3_column_text(st, 3));
		m->msg = json_tokener_parse(
		    (const char *)sqlite3_column_text(st, 4));
		found = m->msg ? 1 : -EBADMSG;
	}
	room_db_release(db, st);
	return found;
}

int
room_db_transcript_replace(struct room_db *db, long long rowid,
    json_object *msg)
{
	return room_db_write(db, "UPDATE transcript SET json = ? WHERE id = ?",
	    "sI", json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN),
	    rowid);
}

int
room_db_transcript_answer(struct room_db *db, long long turn, int step,
    json_object *msg, long input_tokens)
{
	return room_db_write(db, "INSERT INTO transcript (turn, step, role,"
	    " json, input_tokens) VALUES (?, ?, 'assistant', ?, ?)", "IisI",
	    turn, step, json_object_to_json_string_ext(msg,
	    JSON_C_TO_STRING_PLAIN), (long long)input_tokens);
}

void
room_db_rows_free(struct room_db_msg *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++)
		json_object_put(rows[i].msg);
	free(rows);
}

/* Fill m from the current row of a SELECT id, turn, step, role, json,
 * input_tokens.  0, or -EBADMSG when the JSON is unreadable. */
static int
room_db_row_read(sqlite3_stmt *st, struct room_db_msg *m)
{
	const char *json = (const char *)sqlite3_column_text(st, 4);

	memset(m, 0, sizeof(*m));
	m->rowid = sqlite3_column_int64(st, 0);
	m->turn = sqlite3_column_int64(st, 1);
	m->step = sqlite3_column_int(st, 2);
	snprintf(m->role, sizeof(m->role), "%s", sqlite3_column_text(st, 3));
	m->input_tokens = (long)sqlite3_column_int64(st, 5);
	m->bytes = json ? strlen(json) : 0;
	m->msg = json ? json_tokener_parse(json) : NULL;
	return m->msg ? 0 : -EBADMSG;
}

int
room_db_transcript_rows(struct room_db *db, long long from,
    struct room_db_msg **rows, size_t *n)
{
	long long count = room_db_int(db, -1, "SELECT count(*) FROM transcript"
	    " WHERE id >= ?", "I", from);
	struct room_db_msg *out;
	sqlite3_stmt *st;
	size_t k = 0;
	int rc;

	*rows = NULL;
	*n = 0;
	if (count < 0)
		return -EIO;
	if (count > ROOM_DB_MAX_ROWS) {
		log_error("room.db: %lld transcript rows to load, more than %d",
		    count, ROOM_DB_MAX_ROWS);
		return -EFBIG;
	}
	out = calloc((size_t)count + 1, sizeof(*out));
	if (!out)
		return -ENOMEM;
	st = room_db_query(db, "SELECT id, turn, step, role, json,"
	    " coalesce(input_tokens, 0) FROM transcript WHERE id >= ?"
	    " ORDER BY id", "I", from);
	if (!st) {
		free(out);
		return -EIO;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW && k < (size_t)count) {
		if (room_db_row_read(st, &out[k]) == 0)
			k++;
		else
			log_warn("room.db: unreadable transcript row skipped");
	}
	room_db_release(db, st);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		room_db_rows_free(out, k);
		return room_db_fail(db, "transcript");
	}
	*rows = out;
	*n = k;
	return 0;
}

/* ---- compactions ------------------------------------------------------- */

int
room_db_compaction_get(struct room_db *db, int pending,
    struct room_db_compaction *c)
{
	sqlite3_stmt *st;
	const char *summary;
	int found = 0;

	memset(c, 0, sizeof(*c));
	st = room_db_query(db, "SELECT id, turn, reason, coalesce(cut, 0),"
	    " coalesce(upto, 0), summary FROM compactions WHERE state = ?"
	    " ORDER BY id DESC LIMIT 1", "s", pending ? "pending" : "done");
	if (!st)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		c->id = sqlite3_column_int64(st, 0);
		c->turn = sqlite3_column_int64(st, 1);
		c->pending = pending;
		snprintf(c->reason, sizeof(c->reason), "%s",
		    sqlite3_column_text(st, 2));
		c->cut = sqlite3_column_int64(st, 3);
		c->upto = sqlite3_column_int64(st, 4);
		summary = (const char *)sqlite3_column_text(st, 5);
		found = 1;
		if (summary && !(c->summary = strdup(summary)))
			found = -ENOMEM;
	}
	room_db_release(db, st);
	if (found < 0)
		memset(c, 0, sizeof(*c));
	return found;
}

int
room_db_compaction_request(struct room_db *db, long long turn,
    const char *reason)
{
	char now[40];

	if (room_db_int(db, 0, "SELECT count(*) FROM compactions WHERE state ="
	    " 'pending'", "") > 0)
		return 0;
	time_now_iso(now, sizeof(now));
	return room_db_write(db, "INSERT INTO compactions (turn, state, reason,"
	    " requested) VALUES (?, 'pending', ?, ?)", "Iss", turn, reason,
	    now);
}

int
room_db_compaction_done(struct room_db *db, long long id, long long cut,
    long long upto, const char *summary, long in, long out)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "UPDATE compactions SET state = 'done', cut ="
	    " ?, upto = ?, summary = ?, input_tokens = ?, output_tokens = ?,"
	    " done = ? WHERE id = ?", "IIsIIsI", cut, upto, summary,
	    (long long)in, (long long)out, now, id);
}

int
room_db_compaction_drop(struct room_db *db, long long id)
{
	return room_db_write(db, "DELETE FROM compactions WHERE id = ? AND"
	    " state = 'pending'", "I", id);
}

/* ---- tool journal ------------------------------------------------------ */

int
room_db_tool_start(struct room_db *db, long long turn, int step, int idx,
    const char *call_id, const char *name, const char *input)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "INSERT INTO tool_journal (turn, step, idx,"
	    " call_id, name, input, state, started) VALUES (?, ?, ?, ?, ?, ?,"
	    " 'started', ?)", "Iiissss", turn, step, idx, call_id, name, input,
	    now);
}

int
room_db_tool_end(struct room_db *db, long long turn, int step, int idx,
    const char *call_id, const char *name, const char *input,
    const char *status, const char *output)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "INSERT INTO tool_journal (turn, step, idx,"
	    " call_id, name, input, state, status, output, ended) VALUES"
	    " (?, ?, ?, ?, ?, ?, 'ended', ?, ?, ?) ON CONFLICT (turn, step, idx)"
	    " DO UPDATE SET state = 'ended', status = excluded.status,"
	    " output = excluded.output, ended = excluded.ended", "Iiissssss",
	    turn, step, idx, call_id, name, input, status, output, now);
}

int
room_db_tool_get(struct room_db *db, long long turn, int step, int idx,
    struct room_db_tool *t)
{
	sqlite3_stmt *st;
	int found = 0;

	memset(t, 0, sizeof(*t));
	st = room_db_query(db, "SELECT started IS NOT NULL, state, status,"
	    " output FROM tool_journal WHERE turn = ? AND step = ? AND idx = ?",
	    "Iii", turn, step, idx);
	if (!st)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		found = 1;
		t->started = sqlite3_column_int(st, 0);
		t->ended = strcmp((const char *)sqlite3_column_text(st, 1),
		    "ended") == 0;
		if (t->ended) {
			snprintf(t->status, sizeof(t->status), "%s",
			    sqlite3_column_text(st, 2));
			t->output = strdup(sqlite3_column_text(st, 3) ?
			    (const char *)sqlite3_column_text(st, 3) : "");
			if (!t->output)
				found = -ENOMEM;
		}
	}
	room_db_release(db, st);
	return found;
}

/* ---- undo points (undo.h) --------------------------------------------- */

int
room_db_undo_mark(struct room_db *db, long long turn, int step, int idx,
    const char *tool, const char *snapshot)
{
	char now[40];
	int r;

	time_now_iso(now, sizeof(now));
	r = room_db_write(db, "INSERT OR IGNORE INTO turn_undo (turn, step,"
	    " idx, tool, snapshot, time) VALUES (?, ?, ?, ?, ?, ?)", "Iiisss",
	    turn, step, idx, tool, snapshot, now);
	/* This turn is about to write on top of whatever an undo left: the
	 * turns undone before it can no longer come back (a redo would
	 * take this turn's work back).  Idempotent, so a resumed call or a
	 * later call of the same turn changes nothing. */
	if (r == 0)
		r = room_db_write(db, "UPDATE turn_undo SET redo = NULL WHERE"
		    " undone = 1 AND redo IS NOT NULL AND turn < ?", "I", turn);
	return r;
}

int
room_db_undo_get(struct room_db *db, long long turn, int *step, int *idx)
{
	sqlite3_stmt *st = room_db_query(db, "SELECT step, idx FROM turn_undo"
	    " WHERE turn = ?", "I", turn);
	int found = 0;

	if (!st)
		return -EIO;
	if (sqlite3_step(st) == SQLITE_ROW) {
		*step = sqlite3_column_int(st, 0);
		*idx = sqlite3_column_int(st, 1);
		found = 1;
	}
	room_db_release(db, st);
	return found;
}

/* Copy column i of st into out (size bytes), "" for NULL. */
static void
room_db_undo_text(sqlite3_stmt *st, int i, char *out, size_t size)
{
	const char *t = (const char *)sqlite3_column_text(st, i);

	snprintf(out, size, "%s", t ? t : "");
}

int
room_db_undo_target(struct room_db *db, int redo, struct room_db_undo *u)
{
	/* Undo: the latest turn with a snapshot not undone (so repeated
	 * undos go back turn by turn).
	 *
	 * Redo: the turn undone last, which is the lowest undone turn with
	 * a pending redo.  That holds because undo always takes the highest
	 * turn not undone and redo the lowest pending one (a stack), and
	 * because a new turn's undo point forgets every pending redo
	 * (room_db_undo_mark), so no turn not undone sits above a pending
	 * one.  Never pick by undone_time (clocks step) nor by the highest
	 * undone turn (after undo 3, undo 2, redo brings back 2 first).
	 * Whether the workspace still is what that undo left is undo.c's
	 * check, against the snapshot returned here. */
	static const char undo_sql[] = "SELECT turn, snapshot, NULL, time"
	    " FROM turn_undo WHERE snapshot IS NOT NULL AND undone = 0"
	    " ORDER BY turn DESC LIMIT 1";
	static const char redo_sql[] = "SELECT turn, snapshot, redo, NULL"
	    " FROM turn_undo WHERE undone = 1 AND redo IS NOT NULL"
	    " AND snapshot IS NOT NULL ORDER BY turn LIMIT 1";
	sqlite3_stmt *st = room_db_query(db, redo ? redo_sql : undo_sql, "");
	int rc, found = 0;

	memset(u, 0, sizeof(*u));
	if (!st)
		return -EIO;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		u->turn = sqlite3_column_int64(st, 0);
		room_db_undo_text(st, 1, u->snapshot, sizeof(u->snapshot));
		room_db_undo_text(st, 2, u->redo, sizeof(u->redo));
		room_db_undo_text(st, 3, u->since, sizeof(u->since));
		found = 1;
	}
	room_db_release(db, st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? found : -EIO;
}

int
room_db_undo_set(struct room_db *db, long long turn, int undone,
    const char *redo)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "UPDATE turn_undo SET undone = ?,"
	    " redo = coalesce(?, redo), undone_time = ? WHERE turn = ?", "issI",
	    undone, redo, now, turn);
}

int
room_db_undo_people(struct room_db *db, const char *since,
    int (*cb)(void *arg, const char *user), void *arg)
{
	/* A command that was running at since counts too: it may have
	 * written after it.  One that reports its changes counts only when
	 * its last one came at or after since. */
	sqlite3_stmt *st = room_db_query(db, "SELECT DISTINCT user FROM audit"
	    " WHERE user != 'agent' AND (((wrote IS NULL OR wrote = 1) AND"
	    " (started >= ?1 OR ended IS NULL OR ended >= ?1)) OR (wrote > 1"
	    " AND wrote >= CAST(round((julianday(?1) - 2440587.5) * 86400000)"
	    " AS INTEGER))) ORDER BY user LIMIT 100", "s", since);
	int rc;

	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (cb(arg, (const char *)sqlite3_column_text(st, 0)) != 0)
			break;
	room_db_release(db, st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

int
room_db_undo_prompters(struct room_db *db, const char *since,
    int (*cb)(void *arg, const char *user), void *arg)
{
	/* A turn's undo point is taken before its first write, so a turn
	 * that wrote after since has its point at or after it, or was still
	 * running then (a snapshot named during a turn); one undone already
	 * has nothing left to take back. */
	sqlite3_stmt *st = room_db_query(db, "SELECT DISTINCT t.user FROM"
	    " turn_undo u JOIN turns t ON t.id = u.turn WHERE u.undone = 0"
	    " AND (u.time >= ?1 OR t.ended IS NULL OR t.ended >= ?1)"
	    " AND t.user != 'agent' ORDER BY t.user LIMIT 100", "s", since);
	int rc;

	if (!st)
		return -EIO;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (cb(arg, (const char *)sqlite3_column_text(st, 0)) != 0)
			break;
	room_db_release(db, st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -EIO;
}

int
room_db_undo_retire(struct room_db *db, long long turn)
{
	return room_db_write(db, "UPDATE turn_undo SET snapshot = NULL,"
	    " redo = NULL WHERE turn = ?", "I", turn);
}

int
room_db_undo_expired(struct room_db *db, int keep, const char *before,
    long long *turn, char *snapshot, size_t size)
{
	/* Beyond the newest keep, or taken before `before`. */
	sqlite3_stmt *st = room_db_query(db, "SELECT turn, snapshot FROM"
	    " turn_undo WHERE snapshot IS NOT NULL AND (time < ? OR turn NOT IN"
	    " (SELECT turn FROM turn_undo WHERE snapshot IS NOT NULL"
	    " ORDER BY turn DESC LIMIT ?)) ORDER BY turn LIMIT 1", "si",
	    before, keep);
	int rc, found = 0;

	if (!st)
		return -EIO;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		*turn = sqlite3_column_int64(st, 0);
		room_db_undo_text(st, 1, snapshot, size);
		found = 1;
	}
	room_db_release(db, st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? found : -EIO;
}

/* ---- audit, usage ------------------------------------------------------ */

int
room_db_audit_add(struct room_db *db, const char *user, const char *kind,
    const char *command, const char *cwd, long long *id)
{
	char now[40];
	int r;

	time_now_iso(now, sizeof(now));
	r = room_db_write(db, "INSERT INTO audit (user, kind, command, cwd,"
	    " started) VALUES (?, ?, ?, ?, ?)", "sssss", user, kind, command,
	    cwd, now);
	if (r == 0 && id)
		*id = sqlite3_last_insert_rowid(db->db);
	return r;
}

int
room_db_audit_start(struct room_db *db, const char *user, const char *kind,
    const char *command, const char *cwd, long long *id)
{
	int r = room_db_audit_add(db, user, kind, command, cwd, id);

	if (r == 0)
		r = room_db_commit(db);	/* on disk before the command runs */
	return r;
}

int
room_db_audit_end(struct room_db *db, long long id, int exit_code,
    const char *signal)
{
	char now[40];

	time_now_iso(now, sizeof(now));
	return room_db_write(db, "UPDATE audit SET exit_code = ?, signal = ?,"
	    " ended = ? WHERE id = ?", "issI", exit_code, signal, now, id);
}

int
room_db_audit_open_each(struct room_db *db, const char *kind,
    const char *prefix, int max, room_db_audit_fn *fn, void *arg)
{
	sqlite3_stmt *st = room_db_query(db, "SELECT id, command FROM audit"
	    " WHERE ended IS NULL AND kind = ? AND substr(command, 1, ?) = ?"
	    " ORDER BY id", "sis", kind, (int)strlen(prefix), prefix);
	int rc, n = 0;

	if (!st)
		return -EIO;
	while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		n++;
		if (fn(sqlite3_column_int64(st, 0),
		    (const char *)sqlite3_column_text(st, 1), arg))
			break;
	}
	room_db_release(db, st);
	return n < max && rc == SQLITE_ERROR ? room_db_fail(db, "audit") : n;
}

int
room_db_audit_end_open(struct room_db *db, const char *kind,
    const char *prefix, int exit_code)
{
	char now[40];
	int r;

	time_now_iso(now, sizeof(now));
	r = room_db_write(db, "UPDATE audit SET exit_code = ?, ended = ?,"
	    " wrote = 0 WHERE ended IS NULL AND kind = ? AND"
	    " substr(command, 1, ?) = ?", "issis", exit_code, now, kind,
	    (int)strlen(prefix), prefix);
	return r < 0 ? r : sqlite3_changes(db->db);
}

int
room_db_audit_changed(struct room_db *db, long long id, long long ago_ms)
{
	struct timespec ts;
	long long ms;

	if (ago_ms < 0 || ago_ms > ROOM_DB_MAX_CHANGE_AGO_MS)
		ago_ms = 0;	/* nonsense: the time it was told */
	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - ago_ms;
	/* Never earlier than a change it was told of before. */
	return room_db_write(db, "UPDATE audit SET wrote = max(coalesce(wrote,"
	    " 0), ?) WHERE id = ?", "II", ms > 1 ? ms : 2, id);
}

int
room_db_audit_wrote(struct room_db *db, long long id, int wrote)
{
	return room_db_write(db, "UPDATE audit SET wrote = ? WHERE id = ?",
	    "iI", wrote, id);
}

int
room_db_usage_today(struct room_db *db, long long *in, long long *out)
{
	char day[40];

	time_now_iso(day, sizeof(day));
	day[10] = '\0';
	*in = room_db_int(db, 0, "SELECT coalesce(sum(input_tokens), 0) FROM"
	    " usage WHERE day = ?", "s", day);
	*out = room_db_int(db, 0, "SELECT coalesce(sum(output_tokens), 0) FROM"
	    " usage WHERE day = ?", "s", day);
	return 0;
}

/* Add one request's tokens to the room's and user's rows of today. */
int
room_db_usage_add(struct room_db *db, const char *user, const char *model,
    long in, long out)
{
	char day[40];
	int r;

	time_now_iso(day, sizeof(day));
	day[10] = '\0';
	r = room_db_write(db, "INSERT INTO usage (day, model, input_tokens,"
	    " output_tokens, requests) VALUES (?, ?, ?, ?, 1) ON CONFLICT"
	    " (day, model) DO UPDATE SET input_tokens = input_tokens +"
	    " excluded.input_tokens, output_tokens = output_tokens +"
	    " excluded.output_tokens, requests = requests + 1", "ssII", day,
	    model, (long long)in, (long long)out);
	if (r < 0)
		return r;
	return room_db_write(db, "INSERT INTO usage_users (day, user, model,"
	    " input_tokens, output_tokens, requests) VALUES (?, ?, ?, ?, ?, 1)"
	    " ON CONFLICT (day, user, model) DO UPDATE SET input_tokens ="
	    " input_tokens + excluded.input_tokens, output_tokens ="
	    " output_tokens + excluded.output_tokens, requests = requests + 1",
	    "sssII", day, user, model, (long long)in, (long long)out);
}

int
room_db_usage_rows(struct room_db *db, const char *period, int by_user,
    room_db_usage_fn *fn, void *arg)
{
	static const char *const sql[2] = {
		"SELECT model, '', sum(input_tokens), sum(output_tokens),"
		" sum(requests) FROM usage WHERE substr(day, 1, length(?1)) ="
		" ?1 GROUP BY model ORDER BY model",
		"SELECT user, model, sum(input_tokens), sum(output_tokens),"
		" sum(requests) FROM usage_users WHERE substr(day, 1,"
		" length(?1)) = ?1 GROUP BY user, model ORDER BY user, model",
	};
	sqlite3_stmt *st = room_db_query(db, sql[by_user ? 1 : 0], "s", period);
	int rc, r = 0;

	if (!st)
		return -EIO;
	while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		r = fn((const char *)sqlite3_column_text(st, 0),
		    (const char *)sqlite3_column_text(st, 1),
		    sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3),
		    sqlite3_column_int64(st, 4), arg);
	if (r == 0 && rc != SQLITE_DONE)
		r = room_db_fail(db, "usage rows");
	room_db_release(db, st);
	return r;
}
