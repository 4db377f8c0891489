/*
 * placement.h: the monitor's side of --cluster (placement.c), between its
 * loop, its rooms (room.h) and this host's membership of the cluster
 * (cluster/node.h).  Without --cluster none of it runs: srv->cluster
 * stays NULL and every function here does nothing.
 */
#ifndef ATRIUMD_PLACEMENT_H
#define ATRIUMD_PLACEMENT_H

#include <json-c/json.h>

struct monitor;

/* With --cluster: join (the etcd thread starts; rooms wait until it has
 * a lease) and hook the rooms' fence pages and stops.  0, or -errno with
 * the reason logged. */
int placement_start(struct monitor *srv);

/* Leave the cluster: every room's home is given up and the lease
 * revoked.  Only once every room has stopped. */
void placement_stop(struct monitor *srv);

/* First thing after each poll: the fence time, and what etcd answered. */
void placement_tick(struct monitor *srv);

/* For `use` of room: 1 when this host holds it (go on and start it
 * here); 0 when ans has been filled (starting: ask again; remote: where;
 * failed: why; absent: look is set and the room has no home anywhere,
 * which a look does not claim). */
int placement_use(struct monitor *srv, const char *room, int look,
    json_object *ans);

#endif
