/*
 * monitor.h: atriumd's privileged process (monitor.c), the one that stays
 * root.  It keeps the rooms (room.h: mounts, agents, cgroups), the
 * operator socket (ctl.h) and the rooms' access records (access_record.h),
 * and serves the network process's requests (privsep.h) from the same
 * loop (monitor_loop.h: its state).  It never holds a client's
 * connection: the listener and every session live in the network process,
 * atriumd-net, which it forks and executes (monitor_main.c) and watches: when
 * that process ends, the monitor stops every room and exits.  With
 * --http-listen it serves a second front the same way, atriumd-http
 * (http_front.h), which it starts again when it ends.
 */
#ifndef ATRIUMD_MONITOR_H
#define ATRIUMD_MONITOR_H

#include "loop.h"

struct monitor;

/* A front's request socket is readable (w->arg: its struct
 * monitor_front): serve one request.  A request outside the set, or one
 * that fails its checks, is that process misbehaving: it is killed, and
 * for the network process the monitor stops. */
void monitor_serve(struct watch *w, int revents);

/* Tell the network process to end every channel of room with msg. */
void monitor_end_room(struct monitor *srv, const char *room, const char *msg);

/* rooms' changed hook: wake the network process so that channels waiting
 * for a room ask again at once. */
void monitor_wake(void *arg);

#endif
