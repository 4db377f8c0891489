/*
 * protocol.h: the room protocol, spoken on a room's agent socket
 * (DATA/run/ROOM/agent.sock, owned by atrium-agent) and, through atriumd, by
 * clients of the `atrium` SSH subsystem.  One JSON object per line, UTF-8,
 * at most PROTO_MAX_LINE bytes.  Unknown fields are ignored; an unknown type
 * or a malformed line gets an `error` event for that connection only.
 *
 * Connection start (atriumd -> agent only; a subsystem client never sends it,
 * atriumd refuses `hello` from clients so a user cannot be forged):
 *   hello     user, kind ("chat" | "control" | "exec"), history (N latest
 *             stored events to replay, default 0), since (replay seq > since),
 *             admin (the key has atrium-admin), may_create (the key may
 *             create this room: it becomes the owner of a room without one)
 *   -> welcome  room, user, seq (latest), provider, model, approval, owner,
 *      visibility; then the replayed events (each with "replay": true),
 *      then live ones.  Or, when the room may not be entered (access.h),
 *      access_denied, and the connection ends.
 *   kind "exec" connections are not members: no presence, no broadcasts
 *   except the results of their own execs.
 *
 * From a client:
 *   chat      text                  a line to the room; mentioning "@agent"
 *                                   also makes it a prompt to the agent
 *   prompt    text                  to the agent alone (queued if a turn runs)
 *   approve   id, approve (bool)    answer an approval_request
 *   stop                            end the agent's turn now
 *   exec      id, command | argv, cwd, stdin, share, tty, env{}, fds
 *             command: run by bash -c; argv: run directly.
 *             fds = 3 (or 1 with tty): the line was sent with SCM_RIGHTS
 *             carrying stdin, stdout, stderr (or one pty slave); the command
 *             uses them and exec_result carries only the status.  Only
 *             atriumd passes fds.
 *             Without fds: stdin (string) is its input, and exec_result
 *             carries stdout and stderr (each capped at PROTO_MAX_CAPTURE,
 *             "truncated": true when cut).
 *             share = true: everyone in the room sees exec_start,
 *             exec_output and exec_result (the chat's "!cmd").
 *   signal    id, signal ("INT", "TERM", "KILL", "HUP")   to a running exec
 *   config    model, provider, approval, allow_list[], skills[], mcp[],
 *             seed_git
 *   history   since, before, limit, user, match
 *                                   replay stored events with since < seq
 *                                   < before (before 0: no bound), the
 *                                   latest `limit` of them (at most
 *                                   PROTO_MAX_HISTORY, also when 0); user:
 *                                   only that user's message, prompt and
 *                                   exec_start; match: only events whose
 *                                   text, command or output holds it (any
 *                                   case, at most 300 bytes)
 *   who                             -> presence
 *   typing                          -> typing (user) to the members, live
 *   complete  id, path              -> completions (id, path, names): the
 *                                   workspace's names completing path,
 *                                   listed through the confined path
 *                                   (agent/ws_list.h)
 *   usage                           -> usage (day, input_tokens,
 *                                   output_tokens): the model's tokens in
 *                                   this room today (UTC)
 *   invite    user                  make user a member      } the owner's
 *   kick      user                  remove, end its sessions} and admins'
 *   visibility visibility ("open" | "private")              } only
 *   access                          -> access (to this client)
 *   rooms, delete (room)            atriumd's own, never sent to the agent
 *                                   (sshd/room_access.h)
 *   term_open cols, rows            attach to the room's shared terminal
 *                                   (started when none runs); cols x rows
 *                                   is the area this client gives it
 *   term_resize cols, rows          that area changed
 *   term_input data                 bytes (a string, at most
 *                                   PROTO_TERM_MAX_INPUT) for its shell
 *   term_close                      detach (the shell runs on)
 *
 * From the room (each has type, seq and time; seq is room-wide and rises;
 * events marked * are stored in room.db and replayed, the others are live
 * only):
 *   welcome          see above (also usage_today {input_tokens,
 *                    output_tokens})
 *   typing           user                 a member is typing (live)
 *   usage            day, input_tokens, output_tokens   (to the asker)
 *   message*         user, text [, turn]  a person's line, or the agent's
 *                    finished text (user "agent") repeating its deltas
 *   agent_delta      turn, text           streamed text of the agent
 *   agent_discard    turn, step, attempt, retry   the attempt's streamed
 *                    text is void (it failed mid-answer): drop it; retry
 *                    says another attempt follows
 *   turn_start*      turn, user           a turn began (who prompted)
 *   tool_call*       turn, id, name, input
 *   approval_request id, tool, input, seconds
 *   tool_output      id, stream ("stdout" | "stderr"), text
 *   tool_result*     id, status (ok | error | denied | interrupted |
 *                    stopped), output
 *   turn_end*        turn, stop_reason, usage {input_tokens, output_tokens}
 *   exec_start*      id, user, command    (shared execs only)
 *   exec_output      id, stream, text     (shared execs only)
 *   exec_result      id, exitCode [, signal (name, e.g. "KILL")], stdout,
 *                    stderr [, truncated]   (stored when shared)
 *   presence         users [names], idle {name: s}, term [names in the
 *                    shared terminal], joined | left (name)
 *   config*          provider, model, approval, allow_list, skills, mcp, user,
 *                    changed
 *   compaction*      turn, reason (window | refused), summarized, kept,
 *                    tokens_before, context_window, summary, usage: older
 *                    turns were summarised for the model; history stays
 *                    whole
 *   access*          owner, visibility, members, change (owner | invite |
 *                    kick | visibility), user, by: after a change; live and
 *                    without change when asked
 *   access_denied    room, message, owner: to one connection, its last
 *   notice           text                 e.g. "model busy, retrying in 4 s"
 *   term_screen      full, cols, rows, cursor [x, y, visible], lines
 *                    [[y, [[x, w, attrs, fg, bg, text], ...]], ...]
 *                    [, members]: the shared terminal's screen as cells
 *                    (agent/term_encode.h), to attached clients only;
 *                    no seq: a live view, never stored or replayed
 *   term_end         reason               the terminal ended (no seq)
 *   error            message [, id]       what was wrong, what to do
 *
 * time is UTC, "2026-11-30T03:44:26.123Z".
 */
#ifndef ATRIUM_PROTOCOL_H
#define ATRIUM_PROTOCOL_H

#define PROTO_MAX_LINE		(1024 * 1024)	/* one JSON line */
#define PROTO_MAX_TEXT		(64 * 1024)	/* chat / prompt text */
#define PROTO_MAX_CAPTURE	(1024 * 1024)	/* captured stdout/stderr */
#define PROTO_MAX_FDS		3		/* fds passed with one exec */
#define PROTO_TERM_MAX_COLS	500		/* the shared terminal's size */
#define PROTO_TERM_MAX_ROWS	200
#define PROTO_TERM_MAX_INPUT	4096		/* one term_input's data */
#define PROTO_MAX_HISTORY	500		/* events one history answers */

#define AGENT_SOCKET_NAME	"agent.sock"	/* in DATA/run/ROOM/ */
#define WORKSPACE_DIR_NAME	"workspace"	/* mount point in DATA/run/ROOM/ */
#define WORKSPACE_DB_NAME	"workspace.db"	/* in DATA/rooms/ROOM/ */
#define ROOM_DB_NAME		"room.db"	/* in DATA/rooms/ROOM/ */

#endif
