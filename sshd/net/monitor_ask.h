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
#include "ask_queue.h"
#include "buf.h"
#include "loop.h"
#include "token_args.h"

struct server;
struct session;

#define MONITOR_ASK_REFUSED	(-2)	/* monitor_ask_use: over the cap */
#define MONITOR_ASK_REMOTE	(-3)	/* monitor_ask_use: lives elsewhere */
#define MONITOR_ASK_ABSENT	(-4)	/* monitor_ask_use: exists nowhere */

/*
 * Requests that act for a user take the session: they carry its user, the
 * fingerprint of the key it authenticated with and the client's address,
 * from which the monitor finds the user's rights itself
 * (monitor_identity.h).  A session whose key the monitor no longer lets
 * in (removed from authorized_keys, expired) is refused like any other
 * refusal of that request.
 */

struct relay_home;

/* s's user (who may have to be counted against max-rooms-per-user) wants
 * s's room: 1 ready, 0 starting (ask again next turn), MONITOR_ASK_REFUSED
 * when creating it would pass the user's max-rooms-per-user or the key
 * may not create it, MONITOR_ASK_REMOTE when another node of the cluster
 * serves it (*home says which, and where: relay.h), MONITOR_ASK_ABSENT
 * when create is 0 and no node has it (it is not made), -1 when it
 * failed to start; why in err. */
int monitor_ask_use(const struct session *s, int create, char *err,
    size_t errlen, struct relay_home *home);

/* A connection to this host's atriumd-http for relayed session s
 * (http_bridge.h; privsep.h, http_conn): the fd, or -errno with the
 * monitor's reason in why. */
int monitor_ask_http_conn(const struct session *s, char *why, size_t len);

/* May a relay authenticated with hostkey ("TYPE BASE64") come in?  1 when
 * it is the host key of a current node of this host's cluster (its name
 * into node), 0 when not (why: the monitor's reason, or that this host
 * is in no cluster), -errno when the monitor cannot be asked. */
int monitor_ask_relay(struct server *srv, const char *hostkey, char *node,
    size_t nodelen, char *why, size_t whylen);

/* What a connection to a room's agent is for: the monitor writes the
 * hello (agent/requests.c) with these and who s is. */
struct monitor_hello {
	const char *kind;	/* "chat", "control", "exec" or "feed" (the
				 * room's events for every chat session of
				 * this process in the room: chat_feed.h) */
	int feed;		/* chat: the room's events come on the feed,
				 * not on this connection */
	long long history;	/* events to replay, 0..PROTO_MAX_HISTORY */
	long long since;	/* or those after this seq; -1: history */
};

/* A new connection to s's ready room's agent.sock (non-blocking,
 * CLOEXEC) on which the monitor has written the hello h describes, or
 * -errno (-ECONNREFUSED, -ENOENT while the agent restarts, -EACCES when
 * the monitor refused who s is). */
int monitor_ask_agent(const struct session *s, const struct monitor_hello *h);

/* Why s's room's agent was just restarted, into out ("" when it was not
 * within the last seconds, or s's user may not enter the room). */
void monitor_ask_why(const struct session *s, char *out, size_t len);

/* The monitor's decision on s's room for s's user (its reading of the
 * room's record and of the key's line, not the network process's). */
struct monitor_access {
	int exists;		/* the room was created */
	int may_enter;		/* a member, the owner or an admin */
	int may_manage;		/* the owner or an admin */
	int may_create;		/* the key's rooms= allows the name */
	int cluster;		/* not on this host, which is a cluster's:
				 * it may live on another node */
	struct access_list list;	/* owner, visibility, members: only
					 * when may_enter (else empty) */
	char why[256];		/* when the monitor refused who s is */
};

/* Ask for that decision into *a, for what (what the session asks to do:
 * "exec", "export", "import", "sftp", "the atrium subsystem", "chat",
 * "subsystem rooms" or "delete"; the monitor's log says it when it
 * refuses): 1 the room exists, 0 it does not, or -errno when it cannot be
 * read now (-EACCES: the monitor refused s's key, why in a->why). */
int monitor_ask_access(const struct session *s, const char *what,
    struct monitor_access *a);

/*
 * A request answered later: the network process goes on serving its
 * sessions while the monitor works (the rooms listing reads a record per
 * room).  Answers come in the order of the requests; one that arrives
 * while a request is waited for is kept, and each is handed to its done
 * callback from the loop (monitor_ask_deliver), outside every other
 * callback (ask_queue.h).  The one who asked cancels (ask_queue_cancel)
 * before it goes: the answer is then dropped.
 */

/* The rooms s's user may enter, as the `rooms` event (room_access.h):
 * done(arg, ev) gets it later (ev NULL when refused, or the monitor is
 * gone; borrowed: done keeps none of it).  A handle for ask_queue_cancel,
 * or NULL when it could not be asked (done is not called then). */
struct ask_pending *monitor_ask_rooms(const struct session *s,
    void (*done)(void *arg, json_object *ev), void *arg);

/* Hand the answers that came to their done callbacks, in order.  Called
 * by server.c at each loop turn. */
void monitor_ask_deliver(struct server *srv);

/* Set srv's queue of requests answered later up, on srv->mon_fd (-1
 * until the request socket exists).  Called by server.c. */
void monitor_ask_init(struct server *srv);

/* Delete s's room, which s's user must own (or be an admin: the monitor
 * checks).  0 or -errno. */
int monitor_ask_delete(const struct session *s);

/* Three pipes (p[i][0] reads, p[i][1] writes; CLOEXEC, blocking), 1 MiB
 * each, for a command's stdin, stdout and stderr.  0 or -errno. */
int monitor_ask_pipes(struct server *srv, int p[3][2]);

/* A room archive's pipes (room_transfer.h) for s's room: an export
 * (fds: stdout, stderr, status, to read), or with import an import of
 * the new room for s's user (fds: stdin to write, stderr, status).  0, or
 * -errno with the monitor's reason for the user in why. */
int monitor_ask_transfer(const struct session *s, int import, int fds[3],
    char *why, size_t len);

/* The monitor's answer to atrium-token a (create, list or revoke) for
 * s's user: 0 with out (initialised here; the caller frees it) holding
 * what to print on stdout (for create, the new token's line first), or
 * -EPERM with the monitor's reason in why, or another -errno (why says
 * what to tell the client). */
int monitor_ask_token(const struct session *s, const struct token_args *a,
    struct buf *out, char *why, size_t len);

/* One more command for s's user (cmd_begin: max-commands-per-user over
 * SSH and HTTP together, sshd/monitor/cmd_cap.h): 0 when counted; 1 when
 * refused, with the monitor's words for the user in why; -errno (why
 * says so). */
int monitor_ask_cmd_begin(const struct session *s, char *why, size_t len);

/* n of user's commands counted by monitor_ask_cmd_begin are over
 * (cmd_end).  Not waited for. */
void monitor_ask_cmd_end(struct server *srv, const char *user, int n);

/* Report the network process's counts v (net_stats.h) for GET /metrics
 * (net_stats).  Not waited for. */
void monitor_ask_stats(struct server *srv, const long long *v);

/* DATA/authorized_keys open for reading, or -errno. */
int monitor_ask_authkeys(struct server *srv);

/* The event socket is readable: take one event from the monitor
 * (end_room ends that room's channels; wake only wakes the loop, so that
 * channels waiting for a room ask again). */
void monitor_ask_event(struct watch *w, int revents);

#endif
