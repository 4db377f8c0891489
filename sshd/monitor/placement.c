/*
 * placement.c: the monitor's side of --cluster (placement.h).  The
 * membership itself (lease, claims, fence pages) is cluster/node.c's;
 * this file joins it to the monitor: the flags and the host key, the
 * node's wake-up pipe on the loop, the rooms' hooks (a room's writers get
 * its fence page; a room that stopped for good gives its home up), and
 * the answer to `use` for a room this host does not hold; and the keys'
 * and tokens' sync (cluster/keys_sync.h: DATA/authorized_keys kept in
 * step with the cluster's copy, checked by cluster_keys.h; the tokens'
 * store moved to etcd, tokens_cluster.c).
 *
 * What a user sees (atriumd(8), CLUSTER): while a room's home is claimed
 * the session waits as for a room that starts; a room whose home is
 * another host is answered "remote", with that host's name, address (as
 * a number, resolved off the loop: cluster/resolve.h) and host key (the
 * front door relays there; a session that is not relayed is told where
 * the room is); when this host's hold on a room ends, the room stops at
 * once and its sessions end with a message.  When an operator moves the
 * room (`atriumd cluster move|drain`, cluster/move.h), its sessions here
 * end with a line naming where it goes, it stops as at an idle stop (its
 * shipper stores every commit), and only then is its home given up; the
 * node it goes to starts it as soon as it holds it.  A room whose last
 * commits could not be stored (room.c) is kept: the move is called off
 * (the command says why) and the room serves here again.
 *
 * With --s3 (refused without --cluster), the object store's settings and
 * credentials are loaded here, once (room_stream.h), and every room this
 * host serves streams its writes there and is restored from there when
 * this host takes it at a new epoch (room.c).
 */
#include "placement.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "cluster_keys.h"
#include "keys_sync.h"
#include "log.h"
#include "monitor.h"
#include "monitor_loop.h"
#include "node.h"
#include "room_stream.h"
#include "tokens_db.h"

/* DATA/hostkey's public half, "ssh-ed25519 AAAA...": 0 or -1 (logged). */
static int
placement_hostkey(const struct config *cfg, char *out, size_t len)
{
	char path[PATH_MAX + 16];
	ssh_key key = NULL;
	char *b64 = NULL;
	int r = -1;

	snprintf(path, sizeof(path), "%s/hostkey", cfg->data_dir);
	if (ssh_pki_import_privkey_file(path, NULL, NULL, NULL, &key) == SSH_OK &&
	    ssh_key_type(key) == SSH_KEYTYPE_ED25519 &&
	    ssh_pki_export_pubkey_base64(key, &b64) == SSH_OK &&
	    (size_t)snprintf(out, len, "ssh-ed25519 %s", b64) < len)
		r = 0;
	else
		log_error("cluster: %s: cannot read an ssh-ed25519 host key "
		    "(the hosts of a cluster know each other by it)", path);
	ssh_string_free_char(b64);
	ssh_key_free(key);
	return r;
}

/* The address the other hosts reach this one at: --advertise, else
 * --listen's, with this host's name (not its --node name, which need
 * not resolve) when it listens on every address.  A name is resolved by
 * the front that dials it (cluster/resolve.h). */
static void
placement_advertise(const struct config *cfg, char *out, size_t len)
{
	const char *colon = strrchr(cfg->listen, ':');
	size_t hostlen = colon ? (size_t)(colon - cfg->listen) : 0;
	char host[CLUSTER_NAME_MAX];

	if (cfg->advertise[0]) {
		snprintf(out, len, "%s", cfg->advertise);
	} else if (!colon || hostlen == 0 ||
	    strncmp(cfg->listen, "0.0.0.0:", 8) == 0 ||
	    strncmp(cfg->listen, "[::]:", 5) == 0) {
		/* No name: an address the start refuses, with why. */
		if (gethostname(host, sizeof(host)) < 0)
			host[0] = '\0';
		host[sizeof(host) - 1] = '\0';
		snprintf(out, len, "%s:%s", host, colon ? colon + 1 : "2222");
	} else {
		snprintf(out, len, "%s", cfg->listen);
	}
}

static void
placement_changed(void *arg)
{
	monitor_wake(arg);
}

/* This host may no longer write the room: stop it, end its sessions. */
static void
placement_lost(void *arg, const char *room)
{
	struct monitor *srv = arg;
	char msg[256];

	rooms_stop(&srv->rooms, room);
	snprintf(msg, sizeof(msg), "this host no longer serves room %s (its "
	    "hold on it in the cluster ended); connect again to reach it "
	    "where it is served now", room);
	monitor_end_room(srv, room, msg);
}

/* An operator moves the room to node TO: its sessions end, it stops,
 * and its home is given up once it has (cluster_room_stopped). */
static void
placement_moving(void *arg, const char *room, const char *to)
{
	struct monitor *srv = arg;
	char msg[256];

	log_info("cluster: room %s: moving to node %s; stopping it here", room,
	    to);
	/* The sessions are told first: a command the stop kills would
	 * otherwise end its session before the reason. */
	snprintf(msg, sizeof(msg), "atrium: room %s is moving to another host "
	    "(%s); connect again in a few seconds", room, to);
	monitor_end_room(srv, room, msg);
	rooms_stop(&srv->rooms, room);
}

/* The room was just claimed for a move here: start it now. */
static void
placement_warm(void *arg, const char *room)
{
	struct monitor *srv = arg;
	struct room *r = NULL;

	log_info("cluster: room %s: moved here; starting it", room);
	if (rooms_use(&srv->rooms, room, &r) < 0)
		log_warn("cluster: room %s: cannot start it: %s", room,
		    r ? r->error : "out of memory");
}

static int
placement_running(void *arg, const char *room)
{
	struct monitor *srv = arg;

	return rooms_held(&srv->rooms, room);
}

static int
placement_fence_fd(void *arg, const char *room)
{
	return cluster_fence_fd(arg, room);
}

static void
placement_stopped(void *arg, const char *room)
{
	cluster_room_stopped(arg, room);
}

static void
placement_kept(void *arg, const char *room, const char *why)
{
	cluster_room_kept(arg, room, why);
}

static void
placement_wake_cb(struct watch *w, int revents)
{
	placement_tick(w->arg);
}

/* Keep authorized_keys and the tokens in step with etcd (ETCD: the
 * URLs).  0 or -errno (logged). */
static int
placement_keys_start(struct monitor *srv, const char *etcd)
{
	char path[PATH_MAX + 32], err[512];
	struct keys_sync_config kc = { etcd, path, cluster_keys_valid };
	int r;

	snprintf(path, sizeof(path), "%s/authorized_keys", srv->cfg->data_dir);
	if ((r = keys_sync_start(&kc, &srv->tokens->sync, err,
	    sizeof(err))) < 0)
		log_error("cluster: %s", err);
	return r;
}

/* See placement.h. */
int
placement_start(struct monitor *srv)
{
	const struct config *cfg = srv->cfg;
	struct cluster_hooks hooks = {
		.changed = placement_changed, .lost = placement_lost,
		.running = placement_running, .arg = srv,
		.moving = placement_moving, .warm = placement_warm,
	};
	char node[CLUSTER_NAME_MAX], addr[CLUSTER_ADDR_MAX];
	char hostkey[CLUSTER_HOSTKEY_MAX], err[512];
	int wake_fd, r;

	if (!cfg->cluster[0]) {
		if (!cfg->s3[0])
			return 0;
		log_error("--s3 streams the rooms of a cluster's host: it needs "
		    "--cluster (atriumd(8), CLUSTER)");
		return -EINVAL;
	}
	snprintf(node, sizeof(node), "%s", cfg->node);
	if (!node[0] && gethostname(node, sizeof(node)) < 0)
		node[0] = '\0';
	placement_advertise(cfg, addr, sizeof(addr));
	if (placement_hostkey(cfg, hostkey, sizeof(hostkey)) < 0)
		return -EINVAL;
	struct cluster_config cc = { cfg->cluster, node, addr, hostkey,
		cfg->cluster_lease };
	if ((r = room_stream_load(cfg, node, srv->rooms.progs.agent,
	    &srv->stream)) < 0)
		return r;
	if (strncmp(cfg->cluster, "etcd=", 5) == 0 &&
	    (r = placement_keys_start(srv, cfg->cluster + 5)) < 0) {
		room_stream_free(srv->stream);
		srv->stream = NULL;
		return r;
	}
	if ((r = cluster_start(&cc, &hooks, &srv->cluster, &wake_fd, err,
	    sizeof(err))) < 0) {
		log_error("cluster: %s", err);
		room_stream_free(srv->stream);
		srv->stream = NULL;
		return r;
	}
	loop_add(&srv->loop, &srv->cluster_w, wake_fd, POLLIN,
	    placement_wake_cb, srv);
	srv->rooms.fence_fd = placement_fence_fd;
	srv->rooms.stopped = placement_stopped;
	srv->rooms.kept = placement_kept;
	srv->rooms.cluster_arg = srv->cluster;
	srv->rooms.stream = srv->stream;
	log_info("cluster: node %s, advertised at %s, lease %d s, etcd %s",
	    node, addr, cfg->cluster_lease, cfg->cluster + 5);
	if (srv->stream)
		log_info("cluster: each room's writes are streamed to %s, "
		    "bucket %s", cfg->s3, cfg->s3_bucket);
	return 0;
}

/* See placement.h. */
void
placement_stop(struct monitor *srv)
{
	if (srv->tokens) {
		keys_sync_stop(srv->tokens->sync);
		srv->tokens->sync = NULL;
	}
	if (!srv->cluster)
		return;
	loop_del(&srv->cluster_w);
	srv->rooms.fence_fd = NULL;
	srv->rooms.stopped = NULL;
	srv->rooms.kept = NULL;
	cluster_stop(srv->cluster, 1);
	srv->cluster = NULL;
	srv->rooms.stream = NULL;
	room_stream_free(srv->stream);
	srv->stream = NULL;
}

/* See placement.h. */
void
placement_tick(struct monitor *srv)
{
	if (srv->cluster)
		loop_wake_at(&srv->loop, cluster_tick(srv->cluster));
}

/* ans for a room whose home is another host: where it is, and what a
 * session that is not relayed there tells its user. */
static void
placement_remote(json_object *ans, const char *room,
    const struct cluster_remote *rem)
{
	char msg[512];
	const char *colon = strrchr(rem->addr, ':');

	json_object_object_add(ans, "state", json_object_new_string("remote"));
	json_object_object_add(ans, "node", json_object_new_string(rem->node));
	/* The front dials a number (its network process resolves no
	 * names); people are told the address as advertised. */
	json_object_object_add(ans, "addr", json_object_new_string(rem->dial));
	json_object_object_add(ans, "hostkey",
	    json_object_new_string(rem->hostkey));
	snprintf(msg, sizeof(msg), "room %s is served by host %s (%s) now; "
	    "connect there: ssh -p %s %s@%.*s", room, rem->node, rem->addr,
	    colon ? colon + 1 : "22", room,
	    colon ? (int)(colon - rem->addr) : (int)strlen(rem->addr),
	    rem->addr);
	json_object_object_add(ans, "error", json_object_new_string(msg));
}

/* See placement.h. */
int
placement_use(struct monitor *srv, const char *room, int look,
    json_object *ans)
{
	struct cluster_remote rem;
	char why[256];

	if (!srv->cluster)
		return 1;
	switch (cluster_place(srv->cluster, room, look, &rem, why,
	    sizeof(why))) {
	case CLUSTER_HERE:
		return 1;
	case CLUSTER_ABSENT:
		json_object_object_add(ans, "state",
		    json_object_new_string("absent"));
		return 0;
	case CLUSTER_WAIT:
		json_object_object_add(ans, "state",
		    json_object_new_string("starting"));
		return 0;
	case CLUSTER_REMOTE:
		/* Asked for every relayed request: the relay's own lines
		 * (atriumd-net's link, atriumd-http's request) say it. */
		log_debug("cluster: room %s is served by %s (%s, %s)", room,
		    rem.node, rem.addr, rem.dial);
		placement_remote(ans, room, &rem);
		return 0;
	default:
		json_object_object_add(ans, "state",
		    json_object_new_string("failed"));
		json_object_object_add(ans, "error", json_object_new_string(why));
		return 0;
	}
}
