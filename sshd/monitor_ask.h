/*
 * monitor_ask.h: the network process's requests to the monitor
 * (monitor_ask.c; the wire is privsep.h).  Each call sends one request
 * and waits for its answer: the monitor answers from its own loop at once
 * (nothing it does for a request waits on a child), so the wait is a
 * round trip on a socketpair.  When the monitor is gone every call fails
 * with -EPIPE and the network process stops (srv->stopping).  A room or
 * user name the monitor would refuse (it ends this process for one) is
 * not sent: the call fails with -EINVAL.
 */
#ifndef ATRIUMD_MONITOR_ASK_H
#define ATRIUMD_MONITOR_ASK_H

#include <stddef.h>

#include <json-c/json.h>

#include "access.h"
#include "loop.h"

struct server;

#define MONITOR_ASK_REFUSED	(-2)	/* monitor_ask_use: over the cap */

/* user (who may have to be counted against max-rooms-per-user) wants
 * room: 1 ready, 0 starting (ask again next turn), MONITOR_ASK_REFUSED
 * when creating it would pass the user's max-rooms-per-user, -1 when it
 * failed to start; why in err. */
int monitor_ask_use(struct server *srv, const char *room, const char *user,
    char *err, size_t errlen);

/* A new connection to the ready room's agent.sock (non-blocking,
 * CLOEXEC), or -errno (-ECONNREFUSED, -ENOENT while the agent restarts). */
int monitor_ask_agent(struct server *srv, const char *room);

/* Why the room's agent was just restarted, into out ("" when it was not
 * within the last seconds). */
void monitor_ask_why(struct server *srv, const char *room, char *out,
    size_t len);

/* The room's access list into *l: 1, or 0 when the room does not exist
 * (was never created), or -errno when it cannot be read. */
int monitor_ask_access(struct server *srv, const char *room,
    struct access_list *l);

/* The rooms user may enter, as the `rooms` event (room_access.h), or
 * NULL. */
json_object *monitor_ask_rooms(struct server *srv, const char *user,
    int admin);

/* Delete room (the caller checked the user may).  0 or -errno. */
int monitor_ask_delete(struct server *srv, const char *room);

/* Three pipes (p[i][0] reads, p[i][1] writes; CLOEXEC, blocking), 1 MiB
 * each, for a command's stdin, stdout and stderr.  0 or -errno. */
int monitor_ask_pipes(struct server *srv, int p[3][2]);

/* A room archive's pipes (room_transfer.h): an export of room when user
 * is NULL (fds: stdout, stderr, status, to read), else an import of the
 * new room for user (fds: stdin to write, stderr, status).  0, or -errno
 * with the monitor's reason for the user in why. */
int monitor_ask_transfer(struct server *srv, const char *room,
    const char *user, int fds[3], char *why, size_t len);

/* DATA/authorized_keys open for reading, or -errno. */
int monitor_ask_authkeys(struct server *srv);

/* The event socket is readable: take one event from the monitor
 * (end_room ends that room's channels; wake only wakes the loop, so that
 * channels waiting for a room ask again). */
void monitor_ask_event(struct watch *w, int revents);

#endif
