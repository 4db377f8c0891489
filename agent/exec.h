/*
 * exec.h: people's commands in the room's sandbox (exec.c): `exec` with
 * passed fds (atriumd's ssh exec), with captured output, and shared ("!cmd"
 * in the chat, streamed to everyone).  Each is audited in room.db.
 */
#ifndef ATRIUM_AGENT_EXEC_H
#define ATRIUM_AGENT_EXEC_H

#include <json-c/json.h>

struct agent;
struct conn;

#define EXEC_MAX_RUNNING	64	/* commands running at once per room */

/* Start the command that req (an `exec` line from c) describes.  Errors
 * are reported to c as `error` events. */
void exec_request(struct agent *a, struct conn *c, json_object *req);
/* An exec line refused before exec_request saw it (input_limits.c): its
 * exec_done all the same, or atriumd would count the command as running
 * for ever (see exec.c's head). */
void exec_refused(struct conn *c);

/* An `exec_changed` line from atriumd (c, CONN_EXEC): its command, one
 * that reports its changes (the sftp subsystem), changed the workspace;
 * "pending": some of them may still be under way.  Stamped into the
 * command's audit row (exec.c's head). */
void exec_changed(struct agent *a, struct conn *c, json_object *req);

/* Forward a `signal` line to c's running command. */
void exec_signal(struct agent *a, struct conn *c, json_object *req);

/* c is closing: kill its commands. */
void exec_conn_gone(struct agent *a, struct conn *c);

/* What the room shows, and stores, as the end of a shared command that a
 * restart cut. */
#define EXEC_INTERRUPTED_TEXT	"interrupted by a restart"

/* At start: record the end of every shared command a restart or crash
 * cut (its exec_result: exitCode -1, interrupted, text), and announce
 * them. */
void exec_recover(struct agent *a);

/* Kill every command and wait for them (shutdown). */
void exec_kill_all(struct agent *a);

/* Commands running now. */
int exec_count(struct agent *a);

#endif
