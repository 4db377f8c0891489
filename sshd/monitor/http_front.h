/*
 * http_front.h: the monitor's second front, atriumd-http (http_front.c;
 * the process is sshd/http/).  Only with --http-listen ADDR:PORT: the
 * monitor binds that socket as root before the split, keeps it for the
 * process's life, and starts atriumd-http with it:
 *
 *   fd  what
 *   3   the listening socket, bound and listening, non-blocking
 *   4   the request socket (privsep.h), atriumd-http's end
 *   5   the event socket, atriumd-http's end
 *
 *   argv: atriumd-http MONITOR-PID UID GID USER [--KEY VALUE ...]
 *
 * (the privsep user, as atriumd-net's; only the http-* settings it reads;
 * never an API key).  Its requests are served by monitor.c like the
 * network process's, but for two things:
 *   - the set is smaller: use, agent, why, access, rooms, delete, pipes,
 *     whoami, metrics, cmd_begin, cmd_end, http_relay; anything else
 *     ends the process;
 *   - who a request is for is a token, not a key: the request carries
 *     "token" (the bearer token exactly as the client sent it) and "addr"
 *     (the client's address), and the monitor resolves the token itself
 *     on every request (http_token.h), re-checks its key's line in
 *     authorized_keys as for an SSH session, then applies the token's own
 *     grant: its room list and read-only (monitor_identity.h).
 * A front that breaks the rules, or ends, is logged and started again a
 * second later; atriumd goes on serving SSH meanwhile.  Its people's
 * running commands (cmd_cap.h) are forgotten at its end: their commands
 * ended with their connections.
 */
#ifndef ATRIUMD_HTTP_FRONT_H
#define ATRIUMD_HTTP_FRONT_H

#include <stddef.h>
#include <sys/types.h>

#include <json-c/json.h>

struct monitor;
struct monitor_front;
struct monitor_identity;
struct helpers;
struct privdrop_id;

/* With --http-listen set, bind it (as root) and make srv->http; without,
 * nothing.  Before monitor_loop_init, which starts the process.  0, or
 * -errno with the reason logged (atriumd does not start). */
int http_front_open(struct monitor *srv, const struct helpers *progs,
    const struct privdrop_id *id);

/* Start atriumd-http (fork, execve) and serve its requests.  0 or -errno
 * (logged). */
int http_front_start(struct monitor *srv);

/* The front's monitor_front, or NULL when there is none or it is not
 * running now. */
struct monitor_front *http_front_of(struct monitor *srv);

/* monitor.c ended the process of f (it broke the rules): close f's
 * sockets; it is started again once reaped. */
void http_front_abandoned(struct monitor_front *f);

/* pid was reaped: 1 when it was atriumd-http's (logged; a restart is due
 * in a second unless atriumd stops), 0 when not. */
int http_front_exited(struct monitor *srv, pid_t pid, int status);

/* After each poll: start the process again when its restart is due. */
void http_front_tick(struct monitor *srv);

/* 1 when key is a setting only atriumd-http reads (http-*, but
 * http-listen: that socket is bound by the monitor, as root, at start),
 * so that a reload applies it by restarting atriumd-http. */
int http_front_takes(const char *key);

/* A reload changed such settings: atriumd-http drains (SIGHUP: its
 * running requests finish, 10 s at most) and is started again at once
 * with the settings in force.  Nothing when HTTP is off. */
void http_front_restart(struct monitor *srv);

/* Send sig to the process, if it runs (atriumd stops). */
void http_front_stop(struct monitor *srv, int sig);

/* The front's command counts (cmd_cap.h: emptied at each end, its
 * refusals kept), or NULL without --http-listen. */
struct cmd_cap;
const struct cmd_cap *http_front_cmds(struct monitor *srv);

/* A connection relayed from another node (privsep.h, http_conn): a
 * socket pair whose one end goes to atriumd-http in an http_conn event
 * (addr: the relayed client's numeric address), the other into *fd for
 * the network process.  0, or -errno with why (-ENOENT: no HTTP here). */
int http_front_pass_conn(struct monitor *srv, const char *addr, int *fd,
    char *why, size_t len);

/* 1 when addr can be a numeric address (atriumd-http writes it from the
 * connection, or from a trusted proxy's X-Forwarded-For). */
int http_front_addr_ok(const char *addr);

/* 1 while the process has not been reaped. */
int http_front_running(struct monitor *srv);

/* Close the listener and the sockets, free srv->http. */
void http_front_free(struct monitor *srv);

/* May atriumd-http send a request of this type?  1 or 0. */
int http_front_allowed(const char *type);

/* Who req (from atriumd-http) is for: its token and addr resolved, the
 * key's line re-checked, then the token's grant applied, room (NULL for a
 * request without one) among it.  0 with *id filled; -EPROTO for fields
 * missing or malformed (the process broke the rules); -EACCES with why. */
int http_front_identity(struct monitor *srv, json_object *req,
    const char *room, struct monitor_identity *id, char *why, size_t len);

/* 1 when id's grant lets it see room (any room for an SSH key or a token
 * that names none), 0 when not. */
int http_front_grants(const struct monitor_identity *id, const char *room);

#endif
