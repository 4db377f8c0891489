/*
 * journal.h: the one layer that records, commits and then announces the
 * room's events (journal.c's head says how).  It owns the room-wide
 * sequence numbers and each connection's committed watermark; nothing
 * below it (room_db, the turn, the tools) writes to a client, and the
 * connection layer (conn.h) writes only what it announced.  Every commit
 * and rollback of room.db goes through it (journal_commit, journal_abort),
 * so that what a failed commit undid is never announced.
 *
 * Every function returns 0 or a negative errno unless it says otherwise;
 * room_db_strerror says what an error means to people.
 */
#ifndef ATRIUM_AGENT_JOURNAL_H
#define ATRIUM_AGENT_JOURNAL_H

#include <json-c/json.h>

struct agent;
struct conn;
struct journal;

/* Live events take seqs reserved this far ahead in room.db (meta
 * last_seq), so that they go out without a commit each and a crash never
 * hands out a seq twice; a restart skips what was reserved and not used. */
#define JOURNAL_SEQ_RESERVE	1000
/* Announcements waiting for their commit, at most (a loop turn's worth:
 * the before-sleep commit announces them). */
#define JOURNAL_MAX_PENDING	100000

/* The journal of a's room (a->db open): the next seq follows the highest
 * ever handed out. */
int journal_new(struct agent *a, struct journal **out);
/* Free j; what still waits for a commit is dropped, never announced. */
void journal_free(struct journal *j);

/* Record ev (stamped with the next seq and the time) in room.db's open
 * transaction, as its type's constructor makes it (stored_event.h); it is
 * announced to every member by the journal_commit that stores it.  Takes
 * ev.  On failure nothing is recorded or announced: -EINVAL (logged) when
 * ev is not what its constructor makes (a bug), else room.db's error, and
 * then the next journal_commit fails too (room_db_commit). */
int journal_record(struct journal *j, json_object *ev);
/* Stamp a live event (not stored: deltas, presence, notices) and announce
 * it once its seq is durable and what was stamped before it is announced.
 * Takes ev. */
int journal_live(struct journal *j, json_object *ev);
/* Commit room.db's open transaction, then announce what it made durable,
 * in seq order.  When the commit fails, the recorded events of the
 * transaction are dropped unannounced (they were rolled back), the journal
 * is marked failed (journal_failed) until a later commit stores something,
 * and the error is returned for the caller to handle. */
int journal_commit(struct journal *j);
/* A write for the open transaction failed with err: roll it back, drop
 * what it recorded (unannounced) and mark the journal failed, as a failed
 * commit does. */
void journal_abort(struct journal *j, int err);
/* The error of the last commit that failed, while no commit with writes
 * has succeeded since; 0 when room.db takes writes. */
int journal_failed(const struct journal *j);
/* Watch the open transaction, which holds writes that stay uncommitted
 * across loop turns (journal_hold): journal_watched then says what became
 * of it, since someone else's commit may end it meanwhile.  0 while it is
 * open, 1 once committed, or the -errno of the failure that rolled it back
 * (journal_watched stays so until the next journal_watch). */
void journal_watch(struct journal *j);
int journal_watched(const struct journal *j);

/* Leave the open transaction uncommitted at the loop's sleeps for up to
 * ms: the turn's answer and the calls that change nothing, which commit
 * with the calls' ends (turn.c's head).  The hold ends at once when
 * anything else is written to room.db or waits to be announced, when ms
 * have passed, and at any commit or abort; then journal_before_sleep
 * commits as usual.  Nothing is held while live events wait. */
void journal_hold(struct journal *j, long ms);
/* The loop is about to sleep: commit (journal_commit) what this loop turn
 * recorded, unless a hold stands.  0 or the commit's -errno. */
int journal_before_sleep(struct journal *j);

/* The seq of the last announced event: what a reply to one connection and
 * the welcome carry (they take no seq of their own, so a client that
 * reconnects with since=seq sees no gap). */
long long journal_seq(const struct journal *j);
/* Stamp ev as a reply (journal_seq, the time) for one connection. */
void journal_stamp_reply(const struct journal *j, json_object *ev);

/* A member joins: queue to c the stored events with seq > since (since <
 * 0: the latest limit of them; limit <= 0 with since < 0: none), marked as
 * a replay, up to the last announced event, and start c's watermark
 * there, so that it gets every later event exactly once. */
int journal_join(struct journal *j, struct conn *c, long long since,
    long limit);

/* Queue to c the stored events f lets through, announced ones only (f's
 * before is lowered to them), marked as a replay: a `history` request.
 * Each is rebuilt from its row through its type's constructor
 * (stored_event.h); a row that is no stored event is left out (logged).
 * -EINVAL when f's match is too long. */
struct room_db_filter;
int journal_replay(struct journal *j, struct conn *c,
    struct room_db_filter *f);

#endif
