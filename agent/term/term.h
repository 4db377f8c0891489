/*
 * term.h: the room's shared terminal, `/term` in the chat (term.c).
 *
 * One pty per room, its slave the controlling terminal of bash in the
 * room's sandbox (the same uid, cgroups and /workspace as every other
 * command of the room), its master and a libvterm screen held here.  Any
 * chat or control connection may attach; each attached member sees the
 * screen (term_screen events, drawn by atriumd from cells: term_encode.h)
 * and its term_input goes to the shell.  The pty is as large as the
 * smallest attached member's area (as tmux sizes a shared window).
 *
 * Protocol (requests.c passes every "term_*" line here):
 *   term_open    cols, rows   attach (starting the terminal if none runs);
 *                             cols x rows is the member's area for it
 *   term_resize  cols, rows   the member's area changed
 *   term_input   data         bytes for the shell (a string, at most
 *                             TERM_MAX_INPUT_LINE bytes)
 *   term_close                detach; the shell runs on
 * To attached connections (live, not stored, without seq: a view of
 * state, never a record of it):
 *   term_screen  full, cols, rows, cursor [x, y, visible], lines [ROW...]
 *                [, members [names]]   full: forget the old screen first
 *   term_end     reason       the shell exited (or could not start)
 *
 * Bounds: a member whose connection has more than TERM_MAX_BEHIND bytes
 * queued gets no updates until it drains, then the whole screen once; the
 * pty is read whatever members do, so nobody slows the shell or the
 * others.  Input waiting for the shell is capped at TERM_MAX_INPUT; more
 * is refused with an error to its sender.
 *
 * The terminal lives until its shell exits or the room stops; it does not
 * keep an idle room running.  Its start and end are audited like every
 * command, once for each person who opened it or typed into it (whose
 * work its changes are, for undo); what goes through it is not
 * recorded.
 */
#ifndef ATRIUM_AGENT_TERM_H
#define ATRIUM_AGENT_TERM_H

#include <json-c/json.h>

#include "protocol.h"

struct agent;
struct conn;

#define TERM_MAX_MEMBERS	64
#define TERM_MAX_TYPISTS	64	/* people who typed, per shell */
#define TERM_MAX_COLS		PROTO_TERM_MAX_COLS
#define TERM_MAX_ROWS		PROTO_TERM_MAX_ROWS
#define TERM_MIN_COLS		10
#define TERM_MIN_ROWS		2
#define TERM_MAX_INPUT		(64 * 1024)
#define TERM_MAX_INPUT_LINE	PROTO_TERM_MAX_INPUT
#define TERM_MAX_BEHIND		(256 * 1024)
#define TERM_MAX_MESSAGE	(256 * 1024)	/* one term_screen line */
#define TERM_FRAME_MS		10	/* updates at most this often */

/* A "term_*" line from c: 1 when type was one of them (answered), else 0. */
int term_line(struct conn *c, const char *type, json_object *req);

/* Send what changed on the screen to the attached members.  Called before
 * conn_flush, every loop turn. */
void term_flush(struct agent *a);

/* c is going: detach it. */
void term_conn_gone(struct agent *a, struct conn *c);

/* Names of the attached members, a new JSON array (deduplicated). */
json_object *term_members(struct agent *a);

/* The room stops: kill the shell, free everything. */
void term_kill(struct agent *a);

#endif
