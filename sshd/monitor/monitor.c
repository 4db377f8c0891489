/*
 * monitor.c: the monitor's side of the request socket (monitor.h; the
 * wire and the request set are privsep.h).  Called by monitor_loop.c's loop
 * in the monitor process, for each front: the network process, and the
 * HTTP process when --http-listen is set (http_front.h: a smaller set of
 * requests, and who each is for is a token the monitor resolves, not a
 * key; the rest of this head says "network process" for both).
 *
 * The network process parses everything clients send, so the monitor
 * trusts it no more than a client: each request is looked up in a fixed
 * table (anything else ends the network process), its fields are checked
 * (room names as a client's, user names as authorized_keys makes them),
 * and the limits are the monitor's own settings, never the request's.
 * A request that acts for a user says who (monitor_identity.h): the user
 * and the key the session authenticated with, which the monitor looks up
 * in authorized_keys itself; the user's rights (atrium-admin, rooms=) are
 * the monitor's reading of that key's line, and each request checks them
 * against the room (delete: owner or admin; export and why: may enter;
 * use and import: rooms= for a new room; agent: the hello the monitor
 * writes; access: the decision for that user, and the room's list only
 * for one who may enter it; token: a key's own line, its rooms= and its
 * forced command, tokens_serve.c; cmd_begin: max-commands-per-user over
 * both fronts, cmd_cap.h, while cmd_end acts for nobody, so that a key
 * removed meanwhile still gives its count back; net_stats: the network
 * process's own counts, from it alone).
 * What the monitor cannot check is that a client proved the key: the
 * network process authenticates (libssh checks the signature in-process)
 * and holds every public key of authorized_keys, so a subverted one may
 * act for any listed user with that user's rights, never with more; it
 * cannot act as root, read other files of DATA, or reach a room's
 * processes other than through its agent's socket, as any session can.
 */
#include "monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access_record.h"
#include "agentlink.h"
#include "http_front.h"
#include "jsonl.h"
#include "log.h"
#include "monitor_identity.h"
#include "monitor_loop.h"
#include "names.h"
#include "node.h"
#include "placement.h"
#include "privsep.h"
#include "protocol.h"
#include "room_list.h"
#include "room_quota.h"
#include "room_transfer.h"
#include "tokens.h"

#define MONITOR_PIPE_SIZE	(1024 * 1024)	/* each of a command's pipes */

/* What goes back with an answer. */
struct monitor_fds {
	int fd[PRIVSEP_MAX_FDS];
	int n;
};

/* One request: ans is filled, fds when descriptors go with it; id is who
 * it is for (monitor_identity.h), NULL for a request that acts for nobody.
 * 0, or -1 when the request broke the rules. */
typedef int (*monitor_fn)(struct monitor *srv, json_object *req,
    const char *room, const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds);

struct monitor_req {
	const char *type;	/* the request's "type" */
	int room;		/* needs "room": a valid room name */
	int who;		/* acts for a user: needs user, key, addr */
	monitor_fn fn;
};

/* The counts of net_stats, in the order of srv->net_stats. */
static const char *const monitor_net_stats[MONITOR_NET_STATS] = {
	"connections", "chat", "exec", "sftp", "control", "refused",
};

/* Add key: string (NULL: null) to o. */
static void
monitor_put(json_object *o, const char *key, const char *value)
{
	json_object_object_add(o, key, value ? json_object_new_string(value) :
	    NULL);
}

/* DATA/rooms/ROOM into out; 1 when it is a directory (the room exists),
 * 0 when not. */
static int
monitor_room_dir(struct monitor *srv, const char *room, char *out, size_t len)
{
	struct stat sb;

	snprintf(out, len, "%s/rooms/%s", srv->cfg->data_dir, room);
	return stat(out, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Read room's access list (its record) into l: 1 read, 0 when the room
 * does not exist, -EIO when it cannot be read (callers fail closed). */
static int
monitor_room_list(struct monitor *srv, const char *room, struct access_list *l)
{
	char dir[PATH_MAX + 80];

	access_list_init(l);
	if (!monitor_room_dir(srv, room, dir, sizeof(dir)))
		return 0;
	return access_record_get(dir, 1, l) < 0 ? -EIO : 1;
}

/* The room is this host's: start it if it is cold; its state into ans. */
static int
monitor_use_here(struct monitor *srv, const char *room, json_object *ans)
{
	struct room *r = NULL;
	int rc = rooms_use(&srv->rooms, room, &r);

	monitor_put(ans, "state", rc == 1 ? "ready" : rc == 0 ? "starting" :
	    "failed");
	if (rc < 0)
		monitor_put(ans, "error", r ? r->error : strerror(-rc));
	return 0;
}

/* use {room, user, key, addr, create}: may the user enter the room (or
 * create it: rooms=, unless create is false)?  Then count a new room
 * against the user's cap, and start the room if it is cold. */
static int
monitor_use(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	const char *user = id->user;
	struct access_list l;
	char why[256];
	int rc;

	room_transfer_clear_stale(srv, room);
	/* The network process decided first (room_access_admit): only a
	 * subverted one, or a change between the two, gets refused here. */
	rc = monitor_room_list(srv, room, &l);
	/* A use that may not create the room (a command, sftp), of a room
	 * that is not here, on a cluster's host: where it lives, with no
	 * claim (its home decides who enters), or "absent".  One this host
	 * holds after all (a restore to come) goes the usual way. */
	if (rc == 0 && srv->cluster && !json_get_bool(req, "create", 1) &&
	    !placement_use(srv, room, 1, ans))
		return 0;
	if ((rc == 0 && !monitor_identity_may_create(id, room)) || rc < 0 ||
	    (rc > 0 && !access_may_enter(&l, user, id->admin))) {
		log_warn("monitor: %s may not %s room '%s'", user, rc == 0 ?
		    "create" : "enter", room);
		monitor_put(ans, "state", "refused");
		monitor_put(ans, "error", rc == 0 ? "this key may not create a "
		    "room of that name" : "you may not enter this room");
		return 0;
	}
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
	/* On a cluster's host: claim the room first, or say where it is. */
	if (!placement_use(srv, room, 0, ans))
		return 0;
	return monitor_use_here(srv, room, ans);
}

/* The hello the monitor writes for the network process (privsep.h,
 * agent): who the connection is for and what that user's key allows,
 * from the monitor's own parse, and what the session asked for (kind,
 * history or since), checked.  NULL when those are not well formed. */
static json_object *
monitor_hello(json_object *req, const char *room,
    const struct monitor_identity *id)
{
	const char *kind = json_get_string(req, "kind");
	long long history = json_get_int(req, "history", 0);
	long long since = json_get_int(req, "since", -1);
	json_object *h;

	int feed = strcmp(kind ? kind : "", "feed") == 0;

	if (!kind || (strcmp(kind, "chat") != 0 && strcmp(kind, "control") !=
	    0 && strcmp(kind, "exec") != 0 && !feed) || history < 0 ||
	    history > PROTO_MAX_HISTORY || since < -1 ||
	    !(h = json_object_new_object()))
		return NULL;
	monitor_put(h, "type", "hello");
	monitor_put(h, "user", id->user);
	monitor_put(h, "kind", kind);
	json_object_object_add(h, "admin", json_object_new_boolean(id->admin));
	/* A feed (the room's events once for the network process's chat
	 * sessions) is for a user who may enter, never one who makes the
	 * room its owner's. */
	json_object_object_add(h, "may_create", json_object_new_boolean(
	    !feed && monitor_identity_may_create(id, room)));
	if (strcmp(kind, "chat") == 0 && json_get_bool(req, "feed", 0))
		json_object_object_add(h, "feed", json_object_new_boolean(1));
	if (id->read_only)
		json_object_object_add(h, "read_only",
		    json_object_new_boolean(1));
	if (since >= 0)
		json_object_object_add(h, "since", json_object_new_int64(since));
	else
		json_object_object_add(h, "history",
		    json_object_new_int64(history));
	return h;
}

/* Write hello as the first line on s, a new connection (its buffer is
 * empty: a line this short always fits).  0 or -errno. */
static int
monitor_send_hello(int s, json_object *hello)
{
	const char *text = json_object_to_json_string_ext(hello,
	    JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);
	char line[1024];
	ssize_t n;

	if (len + 1 >= sizeof(line))
		return -EMSGSIZE;
	memcpy(line, text, len);
	line[len++] = '\n';
	do
		n = send(s, line, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EAGAIN;
}

/* agent {room, user, key, addr, kind, history | since}: dial a ready
 * room's agent.sock for the network process, which cannot pass
 * DATA/run/ROOM (root's and the room's group's), and write the hello
 * first: the agent takes one hello per connection, its first line
 * (agent/requests.c), so who the connection is for and whether the key
 * is an admin's is the monitor's word, not the network process's. */
static int
monitor_agent(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	struct room *r = rooms_find(&srv->rooms, room);
	json_object *hello = monitor_hello(req, room, id);
	int s, e;

	if (!hello)
		return -1;
	s = r && r->state == ROOM_READY ? agentlink_dial(r->run) :
	    -ECONNREFUSED;
	if (s >= 0 && (e = monitor_send_hello(s, hello)) < 0) {
		close(s);
		s = e;
	}
	json_object_put(hello);
	if (s < 0) {
		json_object_object_add(ans, "errno", json_object_new_int(-s));
		return 0;
	}
	json_object_object_add(ans, "fd", json_object_new_boolean(1));
	fds->fd[fds->n++] = s;
	return 0;
}

/* Read room's access list into l for id: 1 when the room exists and id
 * may enter it (a member, the owner or an admin), 0 when it does not
 * exist or id may not, -EIO when it cannot be read. */
static int
monitor_room_entered(struct monitor *srv, const char *room,
    const struct monitor_identity *id, struct access_list *l)
{
	int r = monitor_room_list(srv, room, l);

	return r > 0 ? access_may_enter(l, id->user, id->admin) : r;
}

/* why {room, user, key, addr}: why the room's agent was just restarted,
 * for a user who may enter the room ("" for anyone else: what went wrong
 * in a private room is its members' business). */
static int
monitor_why(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	struct access_list l;

	monitor_put(ans, "why", monitor_room_entered(srv, room, id, &l) > 0 ?
	    rooms_agent_why(rooms_find(&srv->rooms, room)) : "");
	return 0;
}

/* What an access request may say it is for (its "for"), for the log. */
static const char *const monitor_access_for[] = {
	"exec", "export", "import", "sftp", "the atrium subsystem", "chat",
	"subsystem rooms", "delete", "http",
};

/* access {room, user, key, addr, for}: the monitor's decision for that
 * user from the room's record (access_record.h): whether the room exists,
 * whether the user may enter it, manage it (owner or admin) and create
 * it (rooms=).  Its owner, visibility and members go only to a user who
 * may enter: an outsider learns that a room it may not enter is there,
 * as its refusal says anyway, and nothing about whose it is; the
 * operator's log names the owner of a room someone was refused. */
static int
monitor_access(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	const char *what = json_get_string(req, "for");
	struct access_list l;
	size_t i, n = sizeof(monitor_access_for) / sizeof(monitor_access_for[0]);
	int r, enter;

	for (i = 0; what && i < n; i++)
		if (strcmp(what, monitor_access_for[i]) == 0)
			break;
	if (!what || i == n)
		return -1;
	room_transfer_clear_stale(srv, room);
	if (room_transfer_importing(srv, room)) {
		json_object_object_add(ans, "errno", json_object_new_int(EBUSY));
		return 0;
	}
	if ((r = monitor_room_list(srv, room, &l)) < 0) {
		json_object_object_add(ans, "errno", json_object_new_int(EIO));
		return 0;
	}
	enter = r > 0 && access_may_enter(&l, id->user, id->admin);
	if (r > 0 && !enter)
		log_info("monitor: %s refused %s in room '%s': private, owner %s, "
		    "not a member", id->user, what, room,
		    l.owner[0] ? l.owner : "(none)");
	json_object_object_add(ans, "exists", json_object_new_boolean(r > 0));
	/* On a cluster's host a room not here may live on another host. */
	if (r == 0 && srv->cluster)
		json_object_object_add(ans, "cluster",
		    json_object_new_boolean(1));
	json_object_object_add(ans, "may_create", json_object_new_boolean(
	    monitor_identity_may_create(id, room)));
	json_object_object_add(ans, "may_enter",
	    json_object_new_boolean(enter));
	json_object_object_add(ans, "may_manage", json_object_new_boolean(
	    r > 0 && access_may_manage(&l, id->user, id->admin)));
	if (!enter)
		return 0;
	access_record_fields(ans, &l);
	return 0;
}

/* The rooms of a listing less those being imported (not made yet),
 * those an import cut short by a crash left (removed now) and those a
 * token does not name (http_front_grants). */
static json_object *
monitor_rooms_made(struct monitor *srv, json_object *rooms,
    const struct monitor_identity *id)
{
	json_object *out = json_object_new_array();
	size_t n = json_object_array_length(rooms);

	for (size_t i = 0; out && i < n; i++) {
		json_object *r = json_object_array_get_idx(rooms, i);
		const char *name = json_get_string(r, "room");

		if (!name || (!room_transfer_importing(srv, name) &&
		    !room_transfer_clear_stale(srv, name) &&
		    http_front_grants(id, name)))
			json_object_array_add(out, json_object_get(r));
	}
	return out;
}

/* rooms {user, key, addr}: the listing the user may see (every room for
 * a key with atrium-admin). */
static int
monitor_rooms(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	json_object *ev, *rooms;

	monitor_put(ans, "type", "rooms");
	ev = room_list(srv->cfg->data_dir, &srv->rooms, id->user,
	    id->admin);
	if (ev && json_object_object_get_ex(ev, "rooms", &rooms))
		json_object_object_add(ans, "rooms", monitor_rooms_made(srv,
		    rooms, id));
	if (ev && json_get_bool(ev, "truncated", 0))
		json_object_object_add(ans, "truncated",
		    json_object_new_boolean(1));
	json_object_put(ev);
	return 0;
}

/* delete {room, user, key, addr}: the room's owner or an admin only. */
static int
monitor_delete(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	struct access_list l;
	int r = monitor_room_list(srv, room, &l);

	if (r > 0 && !access_may_manage(&l, id->user, id->admin)) {
		log_warn("monitor: %s may not delete room '%s': refused",
		    id->user, room);
		r = -EPERM;
	} else if (r >= 0) {
		r = rooms_delete(&srv->rooms, room);
	}
	json_object_object_add(ans, "rc", json_object_new_int(r));
	return 0;
}

/* authkeys {}: DATA/authorized_keys, read-only, so that the network
 * process sees each edit without being able to read DATA. */
static int
monitor_authkeys(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
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
monitor_pipes(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
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

/* export {room, user, key, addr}: the room's archive (room_transfer.h),
 * for whoever may enter the room. */
static int
monitor_export(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	int f[ROOM_TRANSFER_FDS];
	struct access_list l;
	char why[256];
	int r = monitor_room_list(srv, room, &l);

	if (r < 0 || (r > 0 && !access_may_enter(&l, id->user, id->admin))) {
		log_warn("monitor: %s may not export room '%s': refused",
		    id->user, room);
		monitor_put(ans, "error", r < 0 ? "cannot read who may enter "
		    "the room now; try again" : "you may not export this room");
		return 0;
	}
	monitor_transfer_answer(ans, fds, room_transfer_export(srv, room, f,
	    why, sizeof(why)), f, why);
	return 0;
}

/* import {room, user, key, addr}: a new room from an archive
 * (room_transfer.h), for a key that may create it (rooms=); the room's
 * absence and the rest are room_transfer_import's checks. */
static int
monitor_import(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	int f[ROOM_TRANSFER_FDS];
	char why[256];

	if (!monitor_identity_may_create(id, room)) {
		log_warn("monitor: %s may not create room '%s' (rooms=): import "
		    "refused", id->user, room);
		monitor_put(ans, "error", "this key may not create a room of "
		    "that name");
		return 0;
	}
	monitor_transfer_answer(ans, fds, room_transfer_import(srv, room,
	    id->user,
	    f, why, sizeof(why)), f, why);
	return 0;
}

/* whoami {WHO}: who the request is for, as the monitor took it (the
 * HTTP process authenticates each request with it: http_front.h). */
static int
monitor_whoami(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	monitor_put(ans, "user", id->user);
	json_object_object_add(ans, "admin", json_object_new_boolean(id->admin));
	json_object_object_add(ans, "read_only",
	    json_object_new_boolean(id->read_only));
	if (id->token_id[0])
		monitor_put(ans, "token_id", id->token_id);
	return 0;
}

/* The commands user runs over both fronts (cmd_cap.h). */
static int
monitor_cmds_of(struct monitor *srv, const char *user)
{
	struct monitor_front *h = http_front_of(srv);

	return cmd_cap_running(&srv->net.cmds, user) +
	    (h ? cmd_cap_running(&h->cmds, user) : 0);
}

/* cmd_begin {WHO}: may the user start one more command
 * (max-commands-per-user, counted over both fronts: cmd_cap.h)?  "ok"
 * and "user" (whom to name in its cmd_end), counted for the asking
 * front; or "refused": "cap" and "error", the words both fronts show. */
static int
monitor_cmd_begin(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	struct monitor_front *f = srv->asking;
	int max = srv->cfg->max_commands_per_user;
	int running = monitor_cmds_of(srv, id->user), r;
	char words[400];

	if (max > 0 && running >= max) {
		f->cmds.refused++;
		log_info("monitor: %s: command refused over %s, %d running (the "
		    "max-commands-per-user cap)", id->user, f->name, running);
		cmd_cap_words(words, sizeof(words), running, max);
		monitor_put(ans, "refused", "cap");
		monitor_put(ans, "error", words);
		return 0;
	}
	if ((r = cmd_cap_add(&f->cmds, id->user)) < 0) {
		log_error("monitor: cannot count a command of %s: %s", id->user,
		    strerror(-r));
		monitor_put(ans, "refused", "full");
		monitor_put(ans, "error", "command refused: the server counts "
		    "too many commands now; try again soon");
		return 0;
	}
	json_object_object_add(ans, "ok", json_object_new_boolean(1));
	monitor_put(ans, "user", id->user);
	return 0;
}

/* cmd_end {user, n}: n of the user's commands over the asking front are
 * over.  No identity: a key removed (or a token revoked) while its
 * command ran must still give its count back.  A front may lower only
 * its own counts. */
static int
monitor_cmd_end(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	const char *user = json_get_string(req, "user");
	long long n = json_get_int(req, "n", 1);

	if (!user || !user_name_valid(user) || n < 1 || n > 1000000)
		return -1;
	if (cmd_cap_drop(&srv->asking->cmds, user, (int)n) != n)
		log_warn("monitor: %s ended %lld commands of %s it had not "
		    "begun", srv->asking->name, n, user);
	return 0;
}

/* The commands counts of metrics: running and refused over the cap, per
 * front; tokens refused. */
static void
monitor_metrics_cmds(struct monitor *srv, json_object *ans)
{
	const struct cmd_cap *h = http_front_cmds(srv);

	json_object_object_add(ans, "commands_ssh",
	    json_object_new_int64(srv->net.cmds.running));
	json_object_object_add(ans, "commands_http",
	    json_object_new_int64(h ? h->running : 0));
	json_object_object_add(ans, "cap_refused_ssh",
	    json_object_new_int64((long long)srv->net.cmds.refused));
	json_object_object_add(ans, "cap_refused_http",
	    json_object_new_int64(h ? (long long)h->refused : 0));
	json_object_object_add(ans, "token_refused",
	    json_object_new_int64((long long)srv->token_refused));
	for (int i = 0; i < MONITOR_NET_STATS; i++) {
		char key[32];

		snprintf(key, sizeof(key), "ssh_%s", monitor_net_stats[i]);
		json_object_object_add(ans, key,
		    json_object_new_int64(srv->net_stats[i]));
	}
}

/* net_stats {connections, chat, exec, sftp, control, refused}: the
 * network process's counts, kept for GET /metrics.  Its own word about
 * itself, so only checked to be counts. */
static int
monitor_net_stats_set(struct monitor *srv, json_object *req,
    const char *room, const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	long long v[MONITOR_NET_STATS];

	if (srv->asking != &srv->net)
		return -1;
	for (int i = 0; i < MONITOR_NET_STATS; i++)
		if ((v[i] = json_get_int(req, monitor_net_stats[i], -1)) < 0)
			return -1;
	memcpy(srv->net_stats, v, sizeof(v));
	return 0;
}

/* The node of this host's cluster whose host key ("TYPE BASE64") is key,
 * into node: 1, 0 when no current node has it, -ENOTCONN when this host
 * is in no cluster (no --cluster). */
static int
monitor_node_of_key(struct monitor *srv, const char *key, char *node,
    size_t len)
{
	snprintf(node, len, "%s", "");
	if (!srv->cluster)
		return -ENOTCONN;
	return cluster_node_of_key(srv->cluster, key, node, len);
}

/* relay {hostkey}: may a relay that authenticated with hostkey come in
 * (sshd/net/relay.h)?  Only a current node's host key, as etcd lists it,
 * and never without --cluster.  From the network process only.
 * -> {ok, node} | {error} */
static int
monitor_relay(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	const char *key = json_get_string(req, "hostkey");
	char node[64];
	int r;

	(void)room; (void)id; (void)fds;
	if (srv->asking != &srv->net || !key || strlen(key) > 1024)
		return -1;
	r = monitor_node_of_key(srv, key, node, sizeof(node));
	if (r == 1) {
		json_object_object_add(ans, "ok", json_object_new_boolean(1));
		monitor_put(ans, "node", node);
		return 0;
	}
	monitor_put(ans, "error", r == -ENOTCONN ? "this host is in no "
	    "cluster (atriumd --cluster): it takes no relays" :
	    "the key is no current node's host key");
	log_warn("monitor: relay refused: %s", json_get_string(ans, "error"));
	return 0;
}

/* http_conn {room, WHO}: a connection to this host's atriumd-http for
 * a relay session's HTTP (sshd/net/http_bridge.h), from the relayed
 * user's address.  From the network process only; atriumd-http checks
 * the request's own token as for any client.
 * -> {fd: true} + the socket | {errno, error} */
static int
monitor_http_conn(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	char why[200];
	int fd, r;

	(void)room; (void)id;
	if (srv->asking != &srv->net)
		return -1;
	r = http_front_pass_conn(srv, json_get_string(req, "addr"), &fd, why,
	    sizeof(why));
	if (r == -EPROTO)
		return -1;
	if (r < 0) {
		json_object_object_add(ans, "errno", json_object_new_int(-r));
		monitor_put(ans, "error", why);
		return 0;
	}
	json_object_object_add(ans, "fd", json_object_new_boolean(1));
	fds->fd[fds->n++] = fd;
	return 0;
}

/* The http_relay event for the network process: whom and where to
 * relay to (privsep.h), with the network process's end of the pair. */
static int
monitor_http_relay_tell(struct monitor *srv, const char *room,
    const struct monitor_identity *id, const char *addr, json_object *where,
    int fd)
{
	json_object *ev = json_object_new_object();
	int r;

	if (!ev)
		return -ENOMEM;
	monitor_put(ev, "type", "http_relay");
	monitor_put(ev, "room", room);
	monitor_put(ev, "user", id->user);
	monitor_put(ev, "key", id->token_key);
	monitor_put(ev, "addr", addr);
	monitor_put(ev, "node", json_get_string(where, "node"));
	monitor_put(ev, "home", json_get_string(where, "addr"));
	monitor_put(ev, "hostkey", json_get_string(where, "hostkey"));
	r = srv->net.ev_fd >= 0 && srv->net.pid > 0 ?
	    privsep_send(srv->net.ev_fd, ev, &fd, 1) : -EPIPE;
	json_object_put(ev);
	return r;
}

/* http_relay {room, token, addr}: the room lives on another node of the
 * cluster: a socket pair for atriumd-http to send the request through,
 * whose other end goes to the network process with where the room
 * lives and whom it is for (sshd/net/http_relay.h).  From the HTTP
 * process only.
 * -> {here: true, cluster: false} (no cluster: never ask again)
 *    | {here: true} (serve it here)
 *    | {state: starting} (being looked up: ask again at the next wake)
 *    | {fd: true, node} + the socket | {moving: true} (relayed: true,
 *    and the room is not here either) | {errno, error} */
static int
monitor_http_relay(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	const char *addr = json_get_string(req, "addr");
	json_object *where = json_object_new_object();
	const char *state = NULL;
	int sp[2] = { -1, -1 }, r = -ENOMEM;

	if (!srv->asking || !srv->asking->http || !addr ||
	    !http_front_addr_ok(addr)) {
		json_object_put(where);
		return -1;
	}
	/* In no cluster every room is here, and atriumd-http need not ask
	 * again (a cluster is joined only at start). */
	if (!srv->cluster) {
		json_object_object_add(ans, "here", json_object_new_boolean(1));
		json_object_object_add(ans, "cluster",
		    json_object_new_boolean(0));
		json_object_put(where);
		return 0;
	}
	if (where && (placement_use(srv, room, 1, where) ||
	    !(state = json_get_string(where, "state")) ||
	    strcmp(state, "remote") != 0)) {
		/* Being looked up: ask again at the next wake.  Any other
		 * answer (here, absent, failed) is the local routes' to
		 * give, as without a cluster. */
		if (state && strcmp(state, "starting") == 0)
			monitor_put(ans, "state", "starting");
		else
			json_object_object_add(ans, "here",
			    json_object_new_boolean(1));
		json_object_put(where);
		return 0;
	}
	/* A request another node relayed here is never relayed on: the two
	 * disagree for a moment about where the room lives. */
	if (where && json_get_bool(req, "relayed", 0)) {
		json_object_object_add(ans, "moving", json_object_new_boolean(1));
		json_object_put(where);
		return 0;
	}
	if (where && id->token_key[0] &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		r = -errno;
	else if (where && id->token_key[0])
		r = monitor_http_relay_tell(srv, room, id, addr, where, sp[1]);
	if (sp[1] >= 0)
		close(sp[1]);
	if (r < 0) {
		if (sp[0] >= 0)
			close(sp[0]);
		json_object_object_add(ans, "errno", json_object_new_int(
		    r == -ENOMEM ? ENOMEM : EIO));
		monitor_put(ans, "error", "this host cannot relay to the room's "
		    "host now; try again");
		json_object_put(where);
		return 0;
	}
	json_object_object_add(ans, "fd", json_object_new_boolean(1));
	monitor_put(ans, "node", json_get_string(where, "node"));
	fds->fd[fds->n++] = sp[0];
	json_object_put(where);
	return 0;
}

/* The model counts of metrics: every agent's requests, tokens and
 * failed requests by provider (model_totals.h). */
static void
monitor_metrics_models(struct monitor *srv, json_object *ans)
{
	const struct model_totals *t = &srv->rooms.models;
	json_object *list = json_object_new_array(), *o;

	for (int i = 0; list && i < MODEL_TOTALS_PROVIDERS; i++) {
		if (!t->p[i].provider[0] || !(o = json_object_new_object()))
			continue;
		monitor_put(o, "provider", t->p[i].provider);
		for (int k = 0; k < MODEL_COUNTS; k++)
			json_object_object_add(o, model_count_names[k],
			    json_object_new_int64((long long)t->p[i].v[k]));
		json_object_array_add(list, o);
	}
	json_object_object_add(ans, "models", list);
}

/* The workspace counts of metrics: every mount's requests by kind, each
 * a list of count, summed nanoseconds and the buckets, each alone
 * (fswatch.h). */
static void
monitor_metrics_workspace(struct monitor *srv, json_object *ans)
{
	static const char *const kinds[FSSTATS_KINDS] = FSSTATS_KIND_NAMES;
	struct fsops_totals *t = &srv->rooms.fsops;
	json_object *o = json_object_new_object(), *a;

	/* Someone reads them: the mounts are asked from now on, until a
	 * while after the last read (fswatch.h). */
	t->wanted_until_ms = time_mono_ms() + FSWATCH_WANTED_MS;

	for (int k = 0; o && k < FSSTATS_KINDS; k++) {
		if (!(a = json_object_new_array()))
			continue;
		for (int f = 0; f < FSWATCH_FIELDS; f++)
			json_object_array_add(a,
			    json_object_new_int64((long long)t->v[k][f]));
		json_object_object_add(o, kinds[k], a);
	}
	json_object_object_add(ans, "workspace", o);
}

/* metrics {}: the monitor's counts for GET /metrics (the HTTP process
 * decides who may read them): rooms by state, commands per front,
 * refusals, model use, workspace requests. */
static int
monitor_metrics(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	long long ready = 0, starting = 0, stopping = 0;

	for (const struct room *r = srv->rooms.list; r; r = r->next) {
		if (r->state == ROOM_READY)
			ready++;
		else if (r->state == ROOM_STOPPING)
			stopping++;
		else if (r->state != ROOM_COLD)
			starting++;
	}
	json_object_object_add(ans, "rooms_ready", json_object_new_int64(ready));
	json_object_object_add(ans, "rooms_starting",
	    json_object_new_int64(starting));
	json_object_object_add(ans, "rooms_stopping",
	    json_object_new_int64(stopping));
	monitor_metrics_cmds(srv, ans);
	monitor_metrics_models(srv, ans);
	monitor_metrics_workspace(srv, ans);
	return 0;
}

/* token {user, key, addr, op, rooms, expires, read_only, name, id}:
 * atrium-token's create, list or revoke (tokens.h). */
static int
monitor_token(struct monitor *srv, json_object *req, const char *room,
    const struct monitor_identity *id, json_object *ans,
    struct monitor_fds *fds)
{
	return tokens_serve(srv, req, id, ans);
}

static const struct monitor_req monitor_reqs[] = {
	{ "use", 1, 1, monitor_use },
	{ "agent", 1, 1, monitor_agent },
	{ "why", 1, 1, monitor_why },
	{ "access", 1, 1, monitor_access },
	{ "rooms", 0, 1, monitor_rooms },
	{ "delete", 1, 1, monitor_delete },
	{ "authkeys", 0, 0, monitor_authkeys },
	{ "pipes", 0, 0, monitor_pipes },
	{ "export", 1, 1, monitor_export },
	{ "import", 1, 1, monitor_import },
	{ "whoami", 0, 1, monitor_whoami },
	{ "metrics", 0, 0, monitor_metrics },
	{ "token", 0, 1, monitor_token },
	{ "cmd_begin", 0, 1, monitor_cmd_begin },
	{ "cmd_end", 0, 0, monitor_cmd_end },
	{ "net_stats", 0, 0, monitor_net_stats_set },
	{ "relay", 0, 0, monitor_relay },
	{ "http_conn", 1, 1, monitor_http_conn },
	{ "http_relay", 1, 1, monitor_http_relay },
};

/* A front broke the rules (or went away): end it.  The network
 * process's end is the monitor's too (its exit stops the rooms:
 * monitor_loop.c); the HTTP process is started again (http_front.h). */
static void
monitor_abandon(struct monitor_front *f, const char *why)
{
	loop_del(&f->w);
	if (f->pid > 0) {
		log_error("%s (pid %d): %s; ending it", f->name, (int)f->pid,
		    why);
		kill(f->pid, SIGKILL);
	}
	if (f->http) {
		http_front_abandoned(f);
		return;
	}
	f->srv->stopping = 1;
	f->srv->exit_code = 1;
}

/* Refuse a request for a user its key does not make it (or no longer
 * does): an answer, not the end of the network process, since a key
 * removed or expired while its session lives gets here too.  Every
 * request's caller reads errno or error (monitor_ask.c). */
static void
monitor_refuse(struct monitor *srv, json_object *ans, const char *type,
    const char *why)
{
	if (srv->asking && srv->asking->http)
		srv->token_refused++;
	log_warn("monitor: %s request refused: %s", type, why);
	json_object_object_add(ans, "errno", json_object_new_int(EACCES));
	json_object_object_add(ans, "rc", json_object_new_int(-EACCES));
	monitor_put(ans, "error", why);
}

/* Run entry e for req, from front f, once its fields and who it is for
 * are checked: a key for the network process (monitor_identity.h), a
 * token for the HTTP process (http_front.h).  0, or -1 when it broke the
 * rules. */
static int
monitor_run(struct monitor_front *f, const struct monitor_req *e,
    json_object *req, json_object *ans, struct monitor_fds *fds)
{
	struct monitor *srv = f->srv;
	const char *room = json_get_string(req, "room");
	struct monitor_identity id;
	char why[400];
	int r;

	if (e->room && !(room && room_name_valid(room)))
		return -1;
	if (f->http && !http_front_allowed(e->type))
		return -1;
	if (!e->who)
		return e->fn(srv, req, room, NULL, ans, fds);
	r = f->http ? http_front_identity(srv, req, room, &id, why,
	    sizeof(why)) : monitor_identity_get(srv, req, &id, why,
	    sizeof(why));
	if (r == -EACCES) {
		monitor_refuse(srv, ans, e->type, why);
		return 0;
	}
	return r < 0 ? -1 : e->fn(srv, req, room, &id, ans, fds);
}

/* Look req up and run it.  0, or -1 when it broke the rules. */
static int
monitor_dispatch(struct monitor_front *f, json_object *req, json_object *ans,
    struct monitor_fds *fds)
{
	const char *type = json_get_string(req, "type");

	for (size_t i = 0; type && i < sizeof(monitor_reqs) /
	    sizeof(monitor_reqs[0]); i++)
		if (strcmp(type, monitor_reqs[i].type) == 0)
			return monitor_run(f, &monitor_reqs[i], req, ans,
			    fds);
	return -1;
}

/* See monitor.h. */
void
monitor_serve(struct watch *w, int revents)
{
	struct monitor_front *f = w->arg;
	json_object *req = NULL, *ans;
	struct monitor_fds fds = { .n = 0 };
	int r;

	(void)revents;
	r = privsep_recv(f->req_fd, PRIVSEP_MAX_REQUEST, &req, NULL, NULL, 0);
	if (r == -EPIPE && f->srv->stopping) {
		/* It closed its sessions and exited, as asked. */
		loop_del(&f->w);
		return;
	}
	if (r < 0) {
		monitor_abandon(f, r == -EPIPE ? "closed its request socket" :
		    "sent a malformed request");
		return;
	}
	if (!(ans = json_object_new_object())) {
		json_object_put(req);
		monitor_abandon(f, "out of memory for an answer");
		return;
	}
	f->srv->asking = f;
	r = monitor_dispatch(f, req, ans, &fds);
	f->srv->asking = NULL;
	if (r < 0) {
		/* Never the request itself: an HTTP one holds a token. */
		log_error("refused request of type %.40s",
		    json_get_string(req, "type") ?: "(none)");
		monitor_abandon(f, "asked for something it may not");
	} else if ((r = privsep_send(f->req_fd, ans, fds.fd, fds.n)) < 0) {
		monitor_abandon(f, "does not take its answers");
	}
	for (int i = 0; i < fds.n; i++)
		close(fds.fd[i]);
	json_object_put(req);
	json_object_put(ans);
}

/* Send ev to front f; a front that does not take it is ended. */
static void
monitor_tell_front(struct monitor_front *f, json_object *ev)
{
	/* Once stopping (or once it is gone) nothing is owed to it. */
	if (f && f->ev_fd >= 0 && ev && !f->srv->stopping && f->pid > 0 &&
	    privsep_send(f->ev_fd, ev, NULL, 0) < 0)
		monitor_abandon(f, "does not take its events");
}

/* Send an event to both fronts (each serves clients of every room). */
static void
monitor_tell(struct monitor *srv, json_object *ev)
{
	monitor_tell_front(&srv->net, ev);
	monitor_tell_front(http_front_of(srv), ev);
	json_object_put(ev);
}

/* See monitor.h. */
void
monitor_end_room(struct monitor *srv, const char *room, const char *msg)
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
