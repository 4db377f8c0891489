/*
 * privsep.h: the wire between atriumd's two processes (privsep.c).  The
 * network process (unprivileged, no capabilities, seccomp: every byte from
 * a client is parsed there) asks the monitor (root: starts rooms, mounts,
 * cgroups) on the request socket and waits for the answer (but for the
 * rooms listing's, which it takes when it comes: monitor_ask.h), and the
 * monitor answers the requests in the order they came; the monitor tells
 * the network process what happened on its own (a room deleted by the
 * operator, a room that became ready) on the event socket.  Both are unix
 * stream socketpairs made before the fork; atriumd-net gets its ends as
 * fds 5 and 6 (sshd/net/net_main.c).
 *
 * A message is one frame:
 *
 *   offset  size  field
 *   0       4     length N of the body, host byte order, 1 .. max
 *   4       N     one JSON object, with "type"
 *
 * An answer may carry file descriptors (SCM_RIGHTS, on the length bytes, at
 * most PRIVSEP_MAX_FDS); its body then says "fd": true.  So may the two
 * events below.  Requests never carry one: the monitor takes none.
 *
 * The request set, each checked by the monitor (monitor.c) as it would
 * check a client.  WHO is who a request acts for: user, key (the SHA256 fingerprint
 * of the public key the session authenticated with) and addr (the client's
 * address); the monitor finds the key's line in authorized_keys itself and
 * takes the user's rights from it (monitor_identity.h).  A WHO the monitor
 * does not accept (the key is not that user's, or no longer allowed) gets
 * {errno: EACCES, rc: -EACCES, error} instead of the request's answer.
 *
 *   use {room, WHO}         rooms= for a room not made yet, quota, then
 *                           start the room if cold
 *                           -> {state: ready|starting|refused|failed, error}
 *                              | {state: remote, node, addr, hostkey}: in
 *                              a cluster, another node serves the room
 *                              (addr HOST:PORT, numeric; hostkey "TYPE
 *                              BASE64"): the session is relayed there
 *                              (sshd/net/relay.h)
 *   agent {room, WHO, kind, feed, history | since}
 *                           connect to a ready room's agent.sock and write
 *                           the connection's hello on it (user, kind,
 *                           admin, may_create: the monitor's, never for
 *                           kind feed; feed (chat only), history or
 *                           since: the session's)
 *                           -> {fd: true} + the socket, or {errno}
 *   why {room, WHO}         -> {why}: why the agent was just restarted
 *                              ("" unless the user may enter the room)
 *   access {room, WHO, for} the monitor's decision for the user ("for":
 *                           exec, chat, delete... for its log)
 *                           -> {exists, may_enter, may_manage, may_create,
 *                              and owner, visibility, members only when
 *                              may_enter} | {errno}; on a cluster's host, a
 *                              room not here adds cluster: true (it may
 *                              live on another node: `use` says where)
 *   rooms {WHO}             -> the `rooms` event of the room protocol
 *                              (every room for a key with atrium-admin)
 *   delete {room, WHO}      the room's owner or an admin only
 *                           -> {rc}: the room stops and its files go
 *   authkeys {}             -> {fd: true} + DATA/authorized_keys read-only
 *   pipes {}                -> {fd: true} + three pipes for a command's
 *                              stdin, stdout, stderr (read end, write end
 *                              each), 1 MiB each: resizing a pipe past the
 *                              per-user soft limit (fs.pipe-user-pages-soft)
 *                              needs a privilege the network process lacks
 *   export {room, WHO}      whoever may enter the room
 *                           -> {fd: true} + the read ends of the room
 *                              archive's stdout, stderr and status
 *                              (room_transfer.h), or {error}
 *   import {room, WHO}      a key whose rooms= allows the name
 *                           -> {fd: true} + the write end of a new room's
 *                              archive and the read ends of stderr and
 *                              status, or {error}
 *   token {WHO, op, rooms, expires, read_only, name, id}
 *                           atrium-token (token_args.h: op create, list
 *                           or revoke; rooms an array or null, expires
 *                           "30d", "12h" or "never" for create, id for
 *                           revoke; each checked as the command's words
 *                           are); a key in authorized_keys only (no
 *                           --open guest), rooms within its rooms=, no
 *                           forced command but that very atrium-token one
 *                           -> {text} (to print; create: and {token},
 *                              shown this once) | {error}
 *
 *   whoami {WHO}            -> {user, admin, read_only, token_id}: who
 *                              the monitor takes the request to be for
 *   metrics {}              -> {rooms_ready, rooms_starting,
 *                              rooms_stopping, ssh_connections, ssh_chat,
 *                              ssh_exec, ssh_sftp, ssh_control,
 *                              ssh_refused, commands_ssh,
 *                              commands_http, cap_refused_ssh,
 *                              cap_refused_http, token_refused, models:
 *                              [{provider, requests, input_tokens,
 *                              output_tokens, errors}]}: counts for
 *                              GET /metrics
 *   cmd_begin {WHO}         one more command of the user, if under
 *                           max-commands-per-user over both fronts
 *                           (sshd/monitor/cmd_cap.h)
 *                           -> {ok: true, user} (counted for this front)
 *                              | {refused: "cap", error: the words to show}
 *   net_stats {connections, chat, exec, sftp, control, refused}
 *                           the network process's counts (authenticated
 *                           connections, channels by kind, connections
 *                           refused over a limit), kept for GET /metrics
 *                           (sshd/net/net_stats.h); from it alone -> {}
 *   relay {hostkey}         may a relay (sshd/net/relay.h) authenticated
 *                           with hostkey ("TYPE BASE64") come in?  Only a
 *                           current node's host key (/atrium/nodes/NODE in
 *                           etcd); always refused without --cluster
 *                           -> {ok: true, node} | {error}
 *   http_conn {room, WHO}   a relay session's atrium-http subsystem
 *                           (sshd/net/http_bridge.h): from the network
 *                           process only; the monitor hands one end of a
 *                           new socket pair to atriumd-http (event
 *                           http_conn) -> {fd: true} + the other end
 *                           | {errno, error} ("this host serves no HTTP")
 *   cmd_end {user, n}       n of the user's commands over this front are
 *                           over (no WHO: a key removed meanwhile still
 *                           gives its count back) -> {}
 *
 * atriumd-http (sshd/http/) is a second front on a pair of its own
 * (sshd/monitor/http_front.h): its WHO is {token, addr} (the bearer token
 * as the client sent it, resolved by the monitor on every request), and
 * it may send only use, agent, why, access, rooms, delete, pipes, whoami,
 * metrics, cmd_begin, cmd_end and:
 *
 *   http_relay {room, WHO, relayed}
 *                           where does the room live, for a request
 *                           naming it (sshd/http/http_proxy.h)?
 *                           -> {here: true} (cluster: false too when
 *                              this host is in none: not asked again)
 *                              | {state: starting} (ask
 *                              again at the next wake) | {moving: true}
 *                              (relayed set: never relayed on) | {fd:
 *                              true, node} + one end of a socket pair
 *                              whose other end goes to the network
 *                              process (event http_relay) | {errno,
 *                              error}
 *
 * Events: end_room {room, message} (end the room's channels), wake {};
 * both go to each front.  With a descriptor: http_relay {room, user,
 * key, addr, node, home, hostkey} + a socket, to the network process
 * (relay that socket to the home: sshd/net/http_relay.h); http_conn
 * {addr} + a socket, to atriumd-http (serve it as a connection from
 * addr: sshd/http/http_server.h).
 */
#ifndef ATRIUMD_PRIVSEP_H
#define ATRIUMD_PRIVSEP_H

#include <json-c/json.h>

#define PRIVSEP_MAX_REQUEST	(16 * 1024)		/* network -> monitor */
#define PRIVSEP_MAX_ANSWER	(8 * 1024 * 1024)	/* monitor -> network */
#define PRIVSEP_MAX_FDS		6	/* with one answer */
#define PRIVSEP_IO_TIMEOUT_MS	5000	/* the monitor waits no longer for
					 * a frame to finish or be taken */

/* Send obj as one frame on sock (blocking), with fds[0..nfds) attached
 * (nfds <= PRIVSEP_MAX_FDS).  0 or -errno. */
int privsep_send(int sock, json_object *obj, const int *fds, int nfds);

/* Receive one frame of at most max bytes (blocking).  *out is the object
 * (the caller's); the descriptors that came with it are stored in
 * fds[0..*nfds) (more than maxfds fail the call, and so does any when fds
 * is NULL).  0, -EPIPE at end of stream, -EPROTO for a
 * frame too long, not a JSON object, or with too many fds, another
 * -errno. */
int privsep_recv(int sock, size_t max, json_object **out, int *fds,
    int *nfds, int maxfds);

/* Bound each blocking read and write on sock to timeout_ms.  0 or -errno. */
int privsep_set_timeout(int sock, int timeout_ms);

#endif
