/*
 * move.h: planned moves of a room between the hosts of a cluster, as
 * etcd holds them (move.c): the move request an operator's command
 * writes, the drained mark of a node, and the choice of a node to move
 * a room to.  Read by the nodes' etcd threads (cluster/node.c) and by
 * `atriumd cluster move|drain|undrain` (cluster/cluster_move.c).
 *
 * Keys (prefix /atrium/):
 *   moves/ROOM   {"from":"A","epoch":E,"to":"B"}: room ROOM, held by node
 *                A at epoch E, is to move to node B.  Made only if absent,
 *                attached to the command's own lease (MOVE_WAIT_S and a
 *                little): the request ends with the command, or by itself
 *                when the command is gone, so the claims that respect it
 *                respect it for a bounded time.
 *   moving/ROOM  REV, the request's creation revision, put by the home
 *                under its own lease when it saw the request and began:
 *                the command knows the home is alive and on it (and that
 *                it is not, when this does not come).  The command
 *                deletes it at its end.  "REV kept: WHY" when the home
 *                called the move off and keeps the room (its last
 *                commits could not be stored: cluster_room_kept); the
 *                home then removes the request (only while it holds the
 *                room at its epoch, and only that request), so that
 *                every node sends the room's sessions to it again at
 *                once, and ignores it should it last all the same.
 *   drain/NODE   "drained", attached to NODE's lease: NODE claims no room
 *                (a restart of NODE, a new lease, ends it, and so does
 *                `atriumd cluster undrain NODE`).
 *
 * A move is a release and a claim, nothing else: the home key, its epoch
 * and the fence stay the only authority on who writes a room.  The home
 * A gives the room up (its epoch-checked delete) once the room stopped
 * and its shipper stored every commit; B claims it as any node claims a
 * free room; every other node, asked for the room while the request
 * lasts, points at B.
 *
 * Everything read here was written by some node or command: names are
 * checked (cluster_valid_node, room_name_valid) and a request that is
 * not well formed is ignored as if absent.
 */
#ifndef ATRIUM_CLUSTER_MOVE_H
#define ATRIUM_CLUSTER_MOVE_H

#include <stddef.h>
#include <stdint.h>

#include "node.h"

#define MOVES_PREFIX	"/atrium/moves/"
#define DRAIN_PREFIX	"/atrium/drain/"
#define MOVING_PREFIX	"/atrium/moving/"
#define MOVE_WAIT_S	30	/* a command waits this long for a move */
#define MOVE_REQ_MAX	512	/* bytes of a request's value */

struct etcd;

struct move_req {
	char room[64];
	char from[CLUSTER_NAME_MAX];	/* the home when it was asked */
	char to[CLUSTER_NAME_MAX];	/* the node to move it to */
	int64_t epoch;			/* from's epoch then */
	int64_t rev;			/* the request key's creation
					 * revision, when read from etcd */
};

/* Parse the request under KEY (MOVES_PREFIX ROOM) whose value is VAL
 * (LEN bytes): 0, or -EPROTO when either is not well formed. */
int move_req_parse(const char *key, const char *val, size_t len,
    struct move_req *out);

/* The request's JSON value, malloc'd (free it), or NULL. */
char *move_req_json(const struct move_req *m);

/* The move request of ROOM: 1 with *out, 0 none (or not well formed),
 * -errno. */
int move_req_get(struct etcd *e, const char *room, struct move_req *out);

/* 1 when NODE is drained, 0 not, -errno. */
int move_drained(struct etcd *e, const char *node);

/* A node to move a room to: alive, not drained, not AVOID, holding the
 * fewest rooms (the moves to it under way counted), the first by name
 * among equals.  1 with its name in out, 0 when there is none, -errno. */
int move_pick(struct etcd *e, const char *avoid, char *out, size_t len);

#endif
