/*
 * node.h: this host as a member of a cluster (--cluster), for atriumd's
 * monitor: the node's lease in etcd and its renewal, the claim of a
 * room's home on `use`, the answer for a room whose home is elsewhere,
 * each room's fence page (common/fence.h), the release of a room that
 * stopped idle, and an operator's planned moves (cluster/move.h).
 * node.c has the rules; cluster/etcd.h the client.
 *
 * Everything that talks to etcd runs on one thread of its own; the
 * functions here are called from the monitor's loop and never wait for
 * etcd: what they need and do not have yet, they ask for and say "wait".
 */
#ifndef ATRIUM_CLUSTER_NODE_H
#define ATRIUM_CLUSTER_NODE_H

#include <stddef.h>
#include <stdint.h>

#define CLUSTER_NAME_MAX	64	/* bytes of a node's name, with NUL */
#define CLUSTER_ADDR_MAX	128	/* of an advertise address */
#define CLUSTER_HOSTKEY_MAX	256	/* of "ssh-ed25519 AAAA..." */

struct cluster;

/* What this node is, from the flags (atriumd(8), CLUSTER). */
struct cluster_config {
	const char *etcd;		/* URL[,URL...] */
	const char *node;		/* this node's name */
	const char *advertise;		/* HOST:PORT */
	const char *hostkey;		/* public host key, "ssh-ed25519 AAAA..." */
	int lease_s;			/* TTL of the node's lease */
};

/* Where a room lives, as cluster_place answers. */
enum cluster_place {
	CLUSTER_HERE,		/* its home is this node: serve it */
	CLUSTER_WAIT,		/* being claimed or looked up: ask again */
	CLUSTER_REMOTE,		/* another node's: *remote says which */
	CLUSTER_FAILED,		/* cannot say now: why says why */
	CLUSTER_ABSENT,		/* a look found no home anywhere */
};

struct cluster_remote {
	char node[CLUSTER_NAME_MAX];
	char addr[CLUSTER_ADDR_MAX];	/* as the node advertises it */
	char dial[CLUSTER_ADDR_MAX];	/* addr as a number (resolve.h):
					 * what the front door dials */
	char hostkey[CLUSTER_HOSTKEY_MAX];
};

/* What the loop is told (from cluster_tick, on the loop's thread). */
struct cluster_hooks {
	/* A claim or a look-up ended: whoever waits for a room asks again. */
	void (*changed)(void *arg);
	/* This node may no longer write ROOM (its fence time passed, or its
	 * lease is gone): stop it at once, and end its sessions. */
	void (*lost)(void *arg, const char *room);
	/* 1 when this node must keep ROOM's home: it has processes here
	 * (starting, running or stopping), or commits the object store
	 * does not have yet. */
	int (*running)(void *arg, const char *room);
	void *arg;
	/* An operator moves ROOM to node TO (cluster/move.h): end its
	 * sessions and stop it as at an idle stop; its home is given up
	 * once it stopped (cluster_room_stopped). */
	void (*moving)(void *arg, const char *room, const char *to);
	/* ROOM was just claimed for a move to this node: start it now, so
	 * that it is ready when its people connect again. */
	void (*warm)(void *arg, const char *room);
};

/* Check the configuration and start the etcd thread (it grants the
 * lease and registers the node; rooms wait until it has).  wake_fd:
 * *wake_fd is an fd the loop watches for POLLIN and then calls
 * cluster_tick.  0, or -errno with the reason in err. */
int cluster_start(const struct cluster_config *cc,
    const struct cluster_hooks *hooks, struct cluster **out, int *wake_fd,
    char *err, size_t errlen);

/* Stop the thread; with release, give up every home this node holds and
 * revoke its lease (a clean stop: other nodes may take the rooms at
 * once).  Waits for the thread's etcd call under way and the revoke: a
 * quarter of the lease per endpoint at most each.  NULL is fine. */
void cluster_stop(struct cluster *c, int release);

/* Where ROOM lives (see enum cluster_place).  Asks the etcd thread for
 * what it does not know, and then says CLUSTER_WAIT.  A room with no
 * home is claimed for this node, unless look: then it is CLUSTER_ABSENT
 * (a command for a room that exists nowhere creates none). */
enum cluster_place cluster_place(struct cluster *c, const char *room,
    int look, struct cluster_remote *remote, char *why, size_t whylen);

/* The fence page's fd of ROOM, which this node holds (for the room's
 * processes, fence.h), or -EPERM when it does not hold it now. */
int cluster_fence_fd(struct cluster *c, const char *room);

/* ROOM's processes all ended and it will not start again by itself
 * (idle, deleted, failed): give its home up (a txn that deletes it only
 * while it is still this node's, at this epoch). */
void cluster_room_stopped(struct cluster *c, const char *room);

/* ROOM stopped for a move but has commits the object store lacks (its
 * shipper could not store them, sshd/monitor/room.c): the move is
 * called off, this node keeps the home and serves the room again, and
 * the move's command is told WHY (MOVING_PREFIX ROOM, cluster/move.h).
 * Nothing when ROOM is not moving. */
void cluster_room_kept(struct cluster *c, const char *room, const char *why);

/* On the loop, after each poll and before anything else: check the fence
 * time (after a stop such as kill -STOP too), and take what the etcd
 * thread finished.  Returns the monotonic ms at which to be called again
 * at the latest. */
long long cluster_tick(struct cluster *c);

/* The current node whose host key is hostkey ("ssh-ed25519 AAAA..."),
 * as last read from etcd: 1 with its name in node; 0 when no node known
 * has it (the list is read again at once, for a node that just joined).
 * For a relay another node makes to this one (sshd/net/relay.h). */
int cluster_node_of_key(struct cluster *c, const char *hostkey, char *node,
    size_t len);

/* Valid node name: 1 to 63 of [A-Za-z0-9._-], not starting with '.' or
 * '-'.  Valid advertise address: HOST:PORT of [A-Za-z0-9.:_[]-].  Valid
 * host key: "ssh-ed25519 " and base64.  1 or 0. */
int cluster_valid_node(const char *s);
int cluster_valid_addr(const char *s);
int cluster_valid_hostkey(const char *s);

#endif
