/*
 * room_db.h: room.db, the room's record, owned by atrium-agent (its only
 * writer).  Schema and migrations are described at the head of room_db.c and
 * in atrium-agent(8).
 *
 * Writes open a transaction lazily (BEGIN IMMEDIATE on the first write) and
 * room_db_commit ends it; the event loop commits before each sleep, and the
 * turn commits explicitly at each checkpoint, so nothing is announced to the
 * room before it is on disk.
 *
 * Every function returns 0 or a negative errno, unless it says otherwise:
 * -ENOSPC when the disk is full, -EROFS when room.db is read-only, -EBUSY
 * when it is locked, -EIO for any other SQLite error (logged with the
 * statement).  A failed write may roll back the whole open transaction:
 * whoever must know that a row is on disk before acting on it (a stored
 * event before it is announced, an audit row before its command runs)
 * commits at once and acts only when the commit returned 0.
 */
#ifndef ATRIUM_AGENT_ROOM_DB_H
#define ATRIUM_AGENT_ROOM_DB_H

#include <json-c/json.h>

#include "access.h"
#include "buf.h"

#define ROOM_DB_VERSION	8	/* PRAGMA user_version of the current schema */

struct room_db;

struct sqlite3;

/* Keep room.db-wal and -shm when db's connection is the last to close
 * (SQLITE_FCNTL_PERSIST_WAL): the agent cannot make them again in the
 * room's directory (confine.h). */
void room_db_keep_files(struct sqlite3 *db);

/* When db finds room.db locked by the other connection (the checkpoints'
 * thread starting the WAL over, wal_checkpointer.c), try again every
 * ROOM_DB_BUSY_STEP_US for up to ms, instead of SQLite's own handler,
 * which sleeps 1, 2, 5, 10, 15, 20 ms...: a lock held 20 ms kept a commit
 * (and the chat line it records) waiting 33 ms. */
#define ROOM_DB_BUSY_STEP_US	200
void room_db_busy_wait(struct sqlite3 *db, int ms);

/* Open (creating and migrating forward) the database at path. */
int room_db_open(const char *path, struct room_db **out);
void room_db_close(struct room_db *db);

/* Its schema as one text (every object and its SQL, in order), to compare
 * with a new database's (room_import.c): malloc'd, or NULL. */
char *room_db_schema_text(struct room_db *db);

/* Its schema version (user_version), for tests. */
int room_db_version(struct room_db *db);

/* Commit the open transaction, if any; on failure it is rolled back.  When
 * a failed write made SQLite roll the transaction back by itself, the
 * commit after it fails with that write's error (and rolls back what was
 * written since), so a checkpoint is all of its writes or none. */
int room_db_commit(struct room_db *db);
/* 1 while a transaction is open (a write since the last commit). */
int room_db_in_tx(struct room_db *db);
/* Write statements run so far: whoever leaves the open transaction
 * uncommitted for a while (journal_hold) learns whether anyone wrote in it
 * meanwhile. */
unsigned long room_db_writes(const struct room_db *db);
/* Roll back the open transaction, if any: the writes since the last
 * commit are undone. */
void room_db_rollback(struct room_db *db);
/* Several reads in one read transaction: one snapshot, and one lock of the
 * WAL instead of one per statement (a step's reads before its request).
 * 1 when one was begun (end it with room_db_read_end), 0 when a write
 * transaction is open (the reads are in it) or was lost (room_db_commit
 * reports it; the reads run each alone), or a negative errno.  No write
 * may come before room_db_read_end: it fails with -EINVAL. */
int room_db_read_begin(struct room_db *db);
/* End what room_db_read_begin returned begun (> 0) for. */
void room_db_read_end(struct room_db *db, int begun);
/* Why a write failed, for people: "the disk holding room.db is full". */
const char *room_db_strerror(int err);

/* --- events: everything the room sent that is replayed to late joiners */
int room_db_event_add(struct room_db *db, long long seq, const char *time,
    const char *type, const char *json);
/* One stored event's row: its seq, time and JSON text as stored (which
 * may be anything the file holds: stored_event_from_row checks it).  A
 * non-zero result stops the walk. */
typedef int room_db_event_fn(long long seq, const char *time,
    const char *json, void *arg);
/* Call fn with each stored event, oldest first: those with seq > since,
 * at most limit (<= 0: no limit) of the latest ones. */
int room_db_events_each(struct room_db *db, long long since, long limit,
    room_db_event_fn *fn, void *arg);
/* What a `history` request asks for (requests.c): events with since < seq <
 * before (before <= 0: no bound), the latest limit of them; with user set,
 * only that user's own lines (message, prompt, exec_start); with match
 * set, only events whose text, command or output holds it (any case). */
struct room_db_filter {
	long long since, before;
	long limit;
	const char *user;	/* NULL: anyone */
	const char *match;	/* NULL: anything */
};
/* Call fn with each stored event that f lets through, oldest first. */
int room_db_events_find(struct room_db *db, const struct room_db_filter *f,
    room_db_event_fn *fn, void *arg);
/* Tokens the model used today (UTC day), all models together. */
int room_db_usage_today(struct room_db *db, long long *in, long long *out);
/* The highest seq ever handed out (stored events and the meta high-water). */
long long room_db_last_seq(struct room_db *db);
/* Remember that every seq up to seq may have been handed out (live events
 * are not stored; journal.c reserves ahead), in the open transaction. */
int room_db_seq_mark(struct room_db *db, long long seq);

/* --- shared commands (!CMD) whose start is stored and whose end is not
 * yet: kept in meta (exec_open:ID -> user) in the transactions of their
 * exec_start and exec_result, so that a restart finds the ones it cut.
 * 0 or -errno; each: fn per command (at most 1000; nonzero stops), the
 * count or -errno. */
int room_db_exec_open(struct room_db *db, const char *id, const char *user);
int room_db_exec_closed(struct room_db *db, const char *id);
typedef int room_db_exec_fn(const char *id, const char *user, void *arg);
int room_db_exec_open_each(struct room_db *db, room_db_exec_fn *fn,
    void *arg);
/* Its output, kept beside its mark piece by piece as it comes (meta's
 * exec_out:HEX(ID):N:STREAM, N counting pieces, STREAM 0 stdout or 1
 * stderr), in the open transaction, so that a command a restart cut keeps
 * in the record what it had shown; room_db_exec_closed drops them.
 * _each: the pieces, in order, appended to out[STREAM] (*truncated set
 * when one did not fit).  0 or -errno. */
int room_db_exec_output_add(struct room_db *db, const char *id, int stream,
    int n, const char *text, size_t len);
int room_db_exec_output_each(struct room_db *db, const char *id,
    struct buf *out, int *truncated);

/* meta's value of key into out: 1 found, 0 not, -EIO. */
int room_db_meta_get(struct room_db *db, const char *key, char *out,
    size_t outlen);

/* Set meta's key to value.  0 or -EIO. */
int room_db_meta_set(struct room_db *db, const char *key, const char *value);

/* --- config: the room's own settings (provider, model, approval,
 * allow_list) overriding the command line.  get: 1 found, 0 not. */
int room_db_config_set(struct room_db *db, const char *key, const char *value,
    const char *user);
int room_db_config_get(struct room_db *db, const char *key, char *out,
    size_t outlen);

/* --- members: who has ever joined, and when last. */
int room_db_member_seen(struct room_db *db, const char *user);

/* --- access: the room's owner, members (access table) and visibility
 * (config key "visibility"); access.h decides with them. */
int room_db_access_load(struct room_db *db, struct access_list *out);
/* Make user the room's owner or a member (role "owner" | "member"), by
 * whom (NULL: the room itself).  -EIO when a second owner is refused. */
int room_db_access_set(struct room_db *db, const char *user,
    const char *role, const char *by);
/* Remove a member (never the owner). */
int room_db_access_remove(struct room_db *db, const char *user);

/* --- turns */
enum room_db_turn_state { TURN_QUEUED, TURN_RUNNING, TURN_DONE };
struct room_db_turn {
	long long id;
	char user[64];
	char *prompt;		/* malloc'd */
	enum room_db_turn_state state;
	int steps;
	long input_tokens, output_tokens;
};
int room_db_turn_add(struct room_db *db, const char *user, const char *prompt,
    long long *id);
/* The turn to work on: a running one, else the oldest queued.  1 found (free
 * t->prompt), 0 none. */
int room_db_turn_next(struct room_db *db, struct room_db_turn *t);
/* Turns waiting behind the current one. */
int room_db_turns_queued(struct room_db *db);
int room_db_turn_start(struct room_db *db, long long id);
int room_db_turn_end(struct room_db *db, long long id, const char *stop_reason);
/* Count one model step and its tokens. */
int room_db_turn_step(struct room_db *db, long long id, long in, long out);

/* --- transcript: neutral-form messages, one row each. */
int room_db_transcript_add(struct room_db *db, long long turn, int step,
    const char *role, json_object *msg);
struct room_db_msg {
	long long rowid, turn;
	int step;
	char role[16];
	json_object *msg;	/* caller's reference */
	long input_tokens;	/* assistant rows: the request's prompt tokens
				 * as the provider counted them; 0 unknown */
	size_t bytes;		/* length of the stored JSON */
};
/* The last message: 1 found, 0 empty transcript. */
int room_db_transcript_last(struct room_db *db, struct room_db_msg *m);
int room_db_transcript_replace(struct room_db *db, long long rowid,
    json_object *msg);
/* Store the model's answer with the prompt tokens of its request. */
int room_db_transcript_answer(struct room_db *db, long long turn, int step,
    json_object *msg, long input_tokens);
#define ROOM_DB_MAX_ROWS	200000	/* transcript rows loaded at once */
/* A number that changes whenever rows of the transcript or compactions
 * tables may have changed other than by a transcript row being added: a
 * row replaced or deleted, a summary asked for, made or dropped, a
 * transaction rolled back (room_db_rollback, a failed commit, or SQLite
 * by itself).  A copy of the transcript kept in memory stays true while
 * it is unchanged, by reading only the rows added after its last. */
long long room_db_transcript_epoch(struct room_db *db);
/* The rows with id >= from, oldest first, into a new array *rows of *n
 * (free with room_db_rows_free).  -EFBIG past ROOM_DB_MAX_ROWS. */
int room_db_transcript_rows(struct room_db *db, long long from,
    struct room_db_msg **rows, size_t *n);
void room_db_rows_free(struct room_db_msg *rows, size_t n);

/* --- compactions: summaries of the older transcript (compact_context.h). */
struct room_db_compaction {
	long long id;		/* 0: none */
	long long turn;		/* the turn whose step made it */
	int pending;		/* asked for, summary not yet made */
	char reason[16];	/* window (the estimate) or refused (the
				 * provider said the prompt was too long) */
	long long cut;		/* done: first transcript row sent in full */
	long long upto;		/* done: last transcript row when made */
	char *summary;		/* done: malloc'd; NULL while pending */
};
/* The latest done compaction (pending 0) or the pending request (1).
 * 1 found (free c->summary), 0 none (c zeroed). */
int room_db_compaction_get(struct room_db *db, int pending,
    struct room_db_compaction *c);
/* Ask for a summary step (a pending row), unless one is pending. */
int room_db_compaction_request(struct room_db *db, long long turn,
    const char *reason);
/* The pending row id is made: its cut, upto, summary and tokens. */
int room_db_compaction_done(struct room_db *db, long long id, long long cut,
    long long upto, const char *summary, long in, long out);
/* Forget the pending request id (nothing could be summarised). */
int room_db_compaction_drop(struct room_db *db, long long id);

/* --- tool journal: a call (turn, step, idx) is started, then ended.
 * Denied and interrupted calls are ended without a start. */
int room_db_tool_start(struct room_db *db, long long turn, int step, int idx,
    const char *call_id, const char *name, const char *input);
int room_db_tool_end(struct room_db *db, long long turn, int step, int idx,
    const char *call_id, const char *name, const char *input,
    const char *status, const char *output);
struct room_db_tool {
	int started, ended;
	char status[16];
	char *output;		/* malloc'd, NULL until ended */
};
/* 1 found (free t->output), 0 no row. */
int room_db_tool_get(struct room_db *db, long long turn, int step, int idx,
    struct room_db_tool *t);

/* --- undo points: the first call of a turn that may change the
 * workspace (undo.h).  mark records it unless the turn has one, and
 * forgets the pending redos of the turns before it (in the open
 * transaction; snapshot may be NULL); 0 or -errno.  get: 1 with
 * *step and *idx, 0 when the turn has none, -EIO. */
int room_db_undo_mark(struct room_db *db, long long turn, int step, int idx,
    const char *tool, const char *snapshot);
int room_db_undo_get(struct room_db *db, long long turn, int *step,
    int *idx);

/* The turn an undo (redo 0) or a redo (redo 1) would act on: the turn
 * undone last for a redo, the latest one not undone for an undo (the rule
 * is at room_db_undo_target in room_db.c).  1 found, 0 none, -EIO. */
struct room_db_undo {
	long long turn;
	char snapshot[160];	/* turn-N: what an undo restores, and what
				 * the workspace must still be for a redo */
	char redo[160];		/* redo-N: what a redo restores ("" for an
				 * undo) */
	char since[40];		/* an undo's: since when people's commands
				 * are taken back too ("" for a redo) */
};
int room_db_undo_target(struct room_db *db, int redo,
    struct room_db_undo *u);
/* Mark turn undone (1, with redo: the snapshot taken before the undo) or
 * redone (0, redo NULL keeps it).  In the open transaction; 0 or -errno. */
int room_db_undo_set(struct room_db *db, long long turn, int undone,
    const char *redo);
/* cb for each person (never the agent) whose command ran at or after
 * since and changed the workspace (or may have: audit.wrote not 0), by
 * name, at most 100.  0 or -EIO. */
int room_db_undo_people(struct room_db *db, const char *since,
    int (*cb)(void *arg, const char *user), void *arg);
/* cb for each person who prompted a turn of the agent's that is not
 * undone and that wrote after since (its undo point was taken at or
 * after since, or it was still running then), by name, at most 100:
 * for undo, the people whose asking made those changes.  0 or -EIO. */
int room_db_undo_prompters(struct room_db *db, const char *since,
    int (*cb)(void *arg, const char *user), void *arg);
/* Retention: the oldest turn whose snapshot is beyond the newest keep or
 * taken before `before` (an ISO time): 1 with *turn and its snapshot name,
 * 0 none, -EIO.  retire forgets the turn's snapshots once dropped. */
int room_db_undo_expired(struct room_db *db, int keep, const char *before,
    long long *turn, char *snapshot, size_t size);
int room_db_undo_retire(struct room_db *db, long long turn);

/* --- audit: every command run in the sandbox.  audit_start commits the
 * open transaction with its row: a command may run only when it returned
 * 0 (nothing runs unaudited).  audit_add writes the row in the open
 * transaction only, for a caller that commits it with more (the turn: a
 * tool call's journal start and its audit row in one commit); the command
 * may run only once that commit succeeded. */
int room_db_audit_start(struct room_db *db, const char *user,
    const char *kind, const char *command, const char *cwd, long long *id);
int room_db_audit_add(struct room_db *db, const char *user,
    const char *kind, const char *command, const char *cwd, long long *id);
int room_db_audit_end(struct room_db *db, long long id, int exit_code,
    const char *signal);
/* The rows of kind whose command starts with prefix and that have no
 * end (what a shutdown or crash cut), oldest first, at most max: fn per
 * row (nonzero stops).  The count, or -errno. */
typedef int room_db_audit_fn(long long id, const char *command, void *arg);
int room_db_audit_open_each(struct room_db *db, const char *kind,
    const char *prefix, int max, room_db_audit_fn *fn, void *arg);
/* End those rows with exit_code, as having changed nothing, in the open
 * transaction.  The rows ended, or -errno. */
int room_db_audit_end_open(struct room_db *db, const char *kind,
    const char *prefix, int exit_code);
/* Whether the command of row id changed the workspace (1) or not (0):
 * undo.c's attribution (room_db_undo_people).  In the open transaction. */
int room_db_audit_wrote(struct room_db *db, long long id, int wrote);
/* The command of row id, which reports its changes, changed the
 * workspace ago_ms before now (wrote: that time in ms; an ago_ms out of
 * 0..ROOM_DB_MAX_CHANGE_AGO_MS counts as 0).  In the open
 * transaction. */
#define ROOM_DB_MAX_CHANGE_AGO_MS	60000
int room_db_audit_changed(struct room_db *db, long long id,
    long long ago_ms);

/* --- usage: tokens per day and model, and per person who prompted.
 * add: one model request's tokens on today's rows (UTC), in the open
 * transaction.  0 or -errno. */
int room_db_usage_add(struct room_db *db, const char *user,
    const char *model, long in, long out);
/* One row of room_db_usage_rows: by model (user is the model, model "")
 * or by user and model.  Returns 0 to go on, else stops with that. */
typedef int room_db_usage_fn(const char *user, const char *model,
    long long in, long long out, long long requests, void *arg);
/* Call fn for each model (by_user 0) or user and model (by_user 1) with
 * the sums of the days that start with period ("2026-12-01": that day,
 * "2026-12": that month).  0, fn's non-zero, or -EIO. */
int room_db_usage_rows(struct room_db *db, const char *period, int by_user,
    room_db_usage_fn *fn, void *arg);

/* The bytes room.db's pages hold (free pages, which new rows reuse, not
 * counted; nor the WAL: room_db_wal_bytes). */
long long room_db_used_bytes(struct room_db *db);

/* The bytes of room.db's WAL file as the disk holds them (0: none). */
long long room_db_wal_bytes(struct room_db *db);

/* Keep room.db's WAL near bytes (wal_checkpointer_bound): at start, when
 * the room's cap is known.  bytes 0: SQLite's own threshold. */
void room_db_wal_bound(struct room_db *db, long long bytes);

#endif
