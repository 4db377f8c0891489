/*
 * monitor.h: atriumd's privileged process (monitor.c), the one that stays
 * root.  It keeps the rooms (room.h: mounts, agents, cgroups), the
 * operator socket (ctl.h) and the rooms' access records (access_record.h),
 * and serves the network process's requests (privsep.h) from the same
 * loop (monitor_loop.h: its state).  It never holds a client's
 * connection: the listener and every session live in the network process,
 * atriumd-net, which it forks and executes (main.c) and watches: when that
 * process ends, the monitor stops every room and exits.
 */
#ifndef ATRIUMD_MONITOR_H
#define ATRIUMD_MONITOR_H

#include "loop.h"

struct monitor;

/* The request socket is readable: serve one request.  A request outside
 * the set, or one that fails its checks, is the network process
 * misbehaving: it is killed and the monitor stops. */
void monitor_serve(struct watch *w, int revents);

/* Tell the network process to end every channel of room with msg. */
void monitor_end_room(struct monitor *srv, const char *room, const char *msg);

/* rooms' changed hook: wake the network process so that channels waiting
 * for a room ask again at once. */
void monitor_wake(void *arg);

#endif
