/*
 * monitor.c: the monitor's side of the request socket (monitor.h; the
 * wire and the request set are privsep.h).  Called by server.c's loop
 * in the monitor process.
 *
 * The network process parses everything clients send, so the monitor
 * trusts it no more than a client: each request is looked up in a fixed
 * table (anything else ends the network process), its fields are checked
 * (room names as a client's, user names as authorized_keys makes them),
 * and the limits are the monitor's own settings, never the request's.
 * What the monitor cannot check is who the user is: the network process
 * authenticates clients (libssh checks the signature in-process), so a
 * subverted network process may claim any user's rooms; it can no longer
 * act as root, read other files of DATA, or reach a room's processes
 * other than through its agent's socket, as any session can.
 */
#include "monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access_db.h"
#include "agentlink.h"
#include "jsonl.h"
#include "log.h"
#include "names.h"
#include "privsep.h"
#include "room_access.h"
#include "room_quota.h"
#include "room_transfer.h"
#include "server.h"

#define MONITOR_PIPE_SIZE	(1024 * 1024)	/* each of a command's pipes */

/* What goes back with an answer. */
struct monitor_fds {
	int fd[PRIVSEP_MAX_FDS];
	int n;
};

/* One request: ans is filled, fds when descriptors go with it.  0, or -1
 * when the request broke the rules. */
typedef int (*monitor_fn)(struct server *srv, json_object *req,
    const char *room, json_object *ans, struct monitor_fds *fds);

struct monitor_req {
	const char *type;	/* the request's "type" */
	int room;		/* needs "room": a valid room name */
	monitor_fn fn;
};

/* Add key: string (NULL: null) to o. */
static void
monitor_put(json_object *o, const char *key, const char *value)
{
	json_object_object_add(o, key, value ? json_object_new_string(value) :
	    NULL);
}

/* The request's "user": a user name as authorized_keys (or --open's
 * guests) make them, or NULL. */
static const char *
monitor_user(json_object *req)
{
	const char *user = json_get_string(req, "user");

	return user && user_name_valid(user) ? user : NULL;
}

/* use {room, user}: count a new room against the user's cap, then start
 * the room if it is cold. */
static int
monitor_use(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	const char *user = monitor_user(req);
	struct room *r = NULL;
	char why[256];
	int rc;

	if (!user)
		return -1;
	room_transfer_clear_stale(srv, room);
	if (room_transfer_importing(srv, room)) {
		monitor_put(ans, "state", "failed");
		monitor_put(ans, "error", "it is being imported now; try again "
		    "once the import is over");
		return 0;
	}
	if (room_quota_admit(srv->cfg->data_dir, room, user,
	    srv->cfg->max_rooms_per_user, room_transfer_counts, srv, why,
	    sizeof(why)) < 0) {
		monitor_put(ans, "state", "refused");
		monitor_put(ans, "error", why);
		return 0;
	}
	rc = rooms_use(&srv->rooms, room, &r);
	monitor_put(ans, "state", rc == 1 ? "ready" : rc == 0 ? "starting" :
	    "failed");
	if (rc < 0)
		monitor_put(ans, "error", r ? r->error : strerror(-rc));
	return 0;
}

/* agent {room}: dial a ready room's agent.sock for the network process,
 * which cannot pass DATA/run/ROOM (root's and the room's group's). */
static int
monitor_agent(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	struct room *r = rooms_find(&srv->rooms, room);
	int s = r && r->state == ROOM_READY ? agentlink_dial(r->run) :
	    -ECONNREFUSED;

	if (s < 0) {
		json_object_object_add(ans, "errno", json_object_new_int(-s));
		return 0;
	}
	json_object_object_add(ans, "fd", json_object_new_boolean(1));
	fds->fd[fds->n++] = s;
	return 0;
}

/* why {room} */
static int
monitor_why(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	monitor_put(ans, "why", rooms_agent_why(rooms_find(&srv->rooms,
	    room)));
	return 0;
}

/* access {room}: whether it exists, and its access list from room.db. */
static int
monitor_access(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	char dir[PATH_MAX + 80];
	struct access_list l;
	struct stat sb;
	json_object *m;

	snprintf(dir, sizeof(dir), "%s/rooms/%s", srv->cfg->data_dir, room);
	room_transfer_clear_stale(srv, room);
	if (room_transfer_importing(srv, room)) {
		json_object_object_add(ans, "errno", json_object_new_int(EBUSY));
		return 0;
	}
	if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
		json_object_object_add(ans, "exists",
		    json_object_new_boolean(0));
		return 0;
	}
	if (access_db_read(dir, &l) < 0) {
		json_object_object_add(ans, "errno", json_object_new_int(EIO));
		return 0;
	}
	json_object_object_add(ans, "exists", json_object_new_boolean(1));
	monitor_put(ans, "owner", l.owner);
	monitor_put(ans, "visibility", access_visibility_name(l.visibility));
	m = json_object_new_array();
	for (int i = 0; i < l.nmembers; i++)
		json_object_array_add(m, json_object_new_string(l.members[i]));
	json_object_object_add(ans, "members", m);
	return 0;
}

/* The rooms of a listing less those being imported (not made yet) and
 * those an import cut short by a crash left (removed now). */
static json_object *
monitor_rooms_made(struct server *srv, json_object *rooms)
{
	json_object *out = json_object_new_array();
	size_t n = json_object_array_length(rooms);

	for (size_t i = 0; out && i < n; i++) {
		json_object *r = json_object_array_get_idx(rooms, i);
		const char *name = json_get_string(r, "room");

		if (!name || (!room_transfer_importing(srv, name) &&
		    !room_transfer_clear_stale(srv, name)))
			json_object_array_add(out, json_object_get(r));
	}
	return out;
}

/* rooms {user, admin}: the listing a session's user may see. */
static int
monitor_rooms(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	const char *user = monitor_user(req);
	json_object *ev, *rooms;

	if (!user)
		return -1;
	monitor_put(ans, "type", "rooms");
	ev = room_access_list(srv->cfg->data_dir, &srv->rooms, user,
	    json_get_bool(req, "admin", 0));
	if (ev && json_object_object_get_ex(ev, "rooms", &rooms))
		json_object_object_add(ans, "rooms", monitor_rooms_made(srv,
		    rooms));
	if (ev && json_get_bool(ev, "truncated", 0))
		json_object_object_add(ans, "truncated",
		    json_object_new_boolean(1));
	json_object_put(ev);
	return 0;
}

/* delete {room} */
static int
monitor_delete(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	json_object_object_add(ans, "rc", json_object_new_int(
	    rooms_delete(&srv->rooms, room)));
	return 0;
}

/* authkeys {}: DATA/authorized_keys, read-only, so that the network
 * process sees each edit without being able to read DATA. */
static int
monitor_authkeys(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	char path[PATH_MAX + 32];
	int f;

	snprintf(path, sizeof(path), "%s/authorized_keys", srv->cfg->data_dir);
	f = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (f < 0) {
		json_object_object_add(ans, "errno", json_object_new_int(errno));
		return 0;
	}
	json_object_object_add(ans, "fd", json_object_new_boolean(1));
	fds->fd[fds->n++] = f;
	return 0;
}

/* pipes {}: a command's three pipes, made and sized here: past the
 * per-user soft limit the kernel lets only a privileged process grow a
 * pipe, and the network process is not one (with 64 KiB pipes, 50
 * uploads at once ran at half speed and held twice the memory). */
static int
monitor_pipes(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	int p[2];

	for (int i = 0; i < 3; i++) {
		if (pipe2(p, O_CLOEXEC) < 0) {
			json_object_object_add(ans, "errno",
			    json_object_new_int(errno));
			while (fds->n > 0)
				close(fds->fd[--fds->n]);
			return 0;
		}
		fcntl(p[0], F_SETPIPE_SZ, MONITOR_PIPE_SIZE);
		fds->fd[fds->n++] = p[0];
		fds->fd[fds->n++] = p[1];
	}
	json_object_object_add(ans, "fd", json_object_new_boolean(1));
	return 0;
}

/* The answer to export or import: the three pipes, or why not. */
static void
monitor_transfer_answer(json_object *ans, struct monitor_fds *fds, int r,
    const int f[ROOM_TRANSFER_FDS], const char *why)
{
	if (r < 0) {
		monitor_put(ans, "error", why);
		return;
	}
	json_object_object_add(ans, "fd", json_object_new_boolean(1));
	for (int i = 0; i < ROOM_TRANSFER_FDS; i++)
		fds->fd[fds->n++] = f[i];
}

/* export {room}: the room's archive (room_transfer.h). */
static int
monitor_export(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	int f[ROOM_TRANSFER_FDS];
	char why[256];

	monitor_transfer_answer(ans, fds, room_transfer_export(srv, room, f,
	    why, sizeof(why)), f, why);
	return 0;
}

/* import {room, user}: a new room from an archive (room_transfer.h);
 * the network process checked the user may create it (rooms=), the
 * monitor checks the rest. */
static int
monitor_import(struct server *srv, json_object *req, const char *room,
    json_object *ans, struct monitor_fds *fds)
{
	const char *user = monitor_user(req);
	int f[ROOM_TRANSFER_FDS];
	char why[256];

	if (!user)
		return -1;
	monitor_transfer_answer(ans, fds, room_transfer_import(srv, room, user,
	    f, why, sizeof(why)), f, why);
	return 0;
}

static const struct monitor_req monitor_reqs[] = {
	{ "use", 1, monitor_use },
	{ "agent", 1, monitor_agent },
	{ "why", 1, monitor_why },
	{ "access", 1, monitor_access },
	{ "rooms", 0, monitor_rooms },
	{ "delete", 1, monitor_delete },
	{ "authkeys", 0, monitor_authkeys },
	{ "pipes", 0, monitor_pipes },
	{ "export", 1, monitor_export },
	{ "import", 1, monitor_import },
};

/* The network process broke the rules (or went away): end it, and the
 * monitor with it; its exit stops the rooms (server.c). */
static void
monitor_abandon(struct server *srv, const char *why)
{
	loop_del(&srv->mon_w);
	if (srv->net_pid > 0) {
		log_error("network process (pid %d): %s; ending it",
		    (int)srv->net_pid, why);
		kill(srv->net_pid, SIGKILL);
	}
	srv->stopping = 1;
	srv->exit_code = 1;
}

/* Look req up and run it.  0, or -1 when it broke the rules. */
static int
monitor_dispatch(struct server *srv, json_object *req, json_object *ans,
    struct monitor_fds *fds)
{
	const char *type = json_get_string(req, "type");
	const char *room = json_get_string(req, "room");

	for (size_t i = 0; type && i < sizeof(monitor_reqs) /
	    sizeof(monitor_reqs[0]); i++) {
		if (strcmp(type, monitor_reqs[i].type) != 0)
			continue;
		if (monitor_reqs[i].room && !(room && room_name_valid(room)))
			return -1;
		return monitor_reqs[i].fn(srv, req, room, ans, fds);
	}
	return -1;
}

/* See monitor.h. */
void
monitor_serve(struct watch *w, int revents)
{
	struct server *srv = w->arg;
	json_object *req = NULL, *ans;
	struct monitor_fds fds = { .n = 0 };
	int r;

	(void)revents;
	r = privsep_recv(srv->mon_fd, PRIVSEP_MAX_REQUEST, &req, NULL, NULL,
	    0);
	if (r == -EPIPE && srv->stopping) {
		/* It closed its sessions and exited, as asked. */
		loop_del(&srv->mon_w);
		return;
	}
	if (r < 0) {
		monitor_abandon(srv, r == -EPIPE ? "closed its request socket" :
		    "sent a malformed request");
		return;
	}
	if (!(ans = json_object_new_object())) {
		json_object_put(req);
		monitor_abandon(srv, "out of memory for an answer");
		return;
	}
	if (monitor_dispatch(srv, req, ans, &fds) < 0) {
		log_error("refused request: %.200s",
		    json_object_to_json_string(req));
		monitor_abandon(srv, "asked for something it may not");
	} else if ((r = privsep_send(srv->mon_fd, ans, fds.fd, fds.n)) < 0) {
		monitor_abandon(srv, "does not take its answers");
	}
	for (int i = 0; i < fds.n; i++)
		close(fds.fd[i]);
	json_object_put(req);
	json_object_put(ans);
}

/* Send an event; a network process that does not take it is ended. */
static void
monitor_tell(struct server *srv, json_object *ev)
{
	/* Once stopping (or once it is gone) nothing is owed to it. */
	if (srv->ev_fd >= 0 && ev && !srv->stopping && srv->net_pid > 0 &&
	    privsep_send(srv->ev_fd, ev, NULL, 0) < 0)
		monitor_abandon(srv, "does not take its events");
	json_object_put(ev);
}

/* See monitor.h. */
void
monitor_end_room(struct server *srv, const char *room, const char *msg)
{
	json_object *ev = json_object_new_object();

	if (ev) {
		monitor_put(ev, "type", "end_room");
		monitor_put(ev, "room", room);
		monitor_put(ev, "message", msg);
	}
	monitor_tell(srv, ev);
}

/* See monitor.h. */
void
monitor_wake(void *arg)
{
	json_object *ev = json_object_new_object();

	if (ev)
		monitor_put(ev, "type", "wake");
	monitor_tell(arg, ev);
}
