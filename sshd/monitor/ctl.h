/*
 * ctl.h: atriumd's operator socket, DATA/run/atriumd.sock (0600, root's),
 * through which `atriumd room ...` (room_cli.h) reaches a running atriumd.
 * One JSON object a line each way, one request per connection:
 *
 *   {"type":"rooms"}               -> {"type":"rooms","rooms":[...]}
 *   {"type":"delete","room":NAME}  -> {"type":"deleted","room":NAME}
 *                                     once its directories are gone
 *   anything else, or a failure    -> {"type":"error","message":...}
 *
 * Only a peer with atriumd's own uid (root) is served.
 */
#ifndef ATRIUMD_CTL_H
#define ATRIUMD_CTL_H

#include "loop.h"
#include "util.h"

#define CTL_SOCKET_NAME		"atriumd.sock"	/* in DATA/run/ */
#define CTL_MAX_LINE		4096		/* a request */
#define CTL_MAX_CONNS		16		/* served at once */
#define CTL_DELETE_WAIT_MS	30000		/* a deletion's answer */

struct monitor;
struct ctl_conn;

struct ctl {
	struct monitor *srv;		/* owner */
	int fd;				/* the listening socket, -1: none */
	struct watch w;			/* on fd */
	char path[4200];		/* DATA/run/atriumd.sock */
	struct file_id id;		/* the socket bound there, removed
					 * at the end only if still there */
	struct ctl_conn *conns;		/* being served */
	int nconns;
};

/* Listen on DATA/run/atriumd.sock (a stale one, that nothing answers
 * on, is replaced: called only with DATA's lock held).  0 or -errno
 * (logged; atriumd runs on without it). */
int ctl_init(struct ctl *ctl, struct monitor *srv);

/* Answer deletions that finished or timed out; reap connections.  Every
 * loop turn, outside callbacks. */
void ctl_tick(struct ctl *ctl);

/* Close everything and remove the socket, if it is still the one
 * ctl_init made. */
void ctl_free(struct ctl *ctl);

#endif
