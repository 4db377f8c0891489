/*
 * seed.h: `seed_git` (seed.c): fill an empty workspace with a clone of a
 * git repository, once, at the request of the room's owner.
 *
 * The source is either an https URL, cloned by git in the room's sandbox
 * with the host's network for that one command (sandbox.h), or a local
 * repository (an absolute path or a file:// URL) beneath the directory the
 * operator allows (--seed-dir), bound read-only into the sandbox at /seed
 * after being resolved with RESOLVE_BENEATH: nothing else on the host is
 * reachable, by a symlink or "..".  The clone runs as the room's uid, in
 * its cgroup, for at most SEED_TIMEOUT_S; git works in the sandbox's own
 * /tmp, which no other command of the room can reach, with its hooks off
 * and no config file the room could write, and the finished clone is
 * copied into the workspace (seed.c says what runs and why); its start,
 * its end and git's last words reach the room as notices, and it is
 * audited (kind seed).
 * A workspace that is not empty is left alone: the asker gets an `error`
 * when the listing before the clone finds an entry, and the room a notice
 * when the sandbox's own check does (a file made in between).
 */
#ifndef ATRIUM_AGENT_SEED_H
#define ATRIUM_AGENT_SEED_H

#include <stddef.h>

struct agent;
struct conn;

#define SEED_TIMEOUT_S	600	/* the clone's wall-clock limit */
#define SEED_MAX_SOURCE	2048	/* bytes of a URL or path */

/* Check the source of c's `seed_git` (len bytes as sent), list the
 * workspace's root (asynchronously, ws_list.h) and, when it is empty,
 * start the clone; a refusal goes to c as an `error` saying why, unless c
 * has left by then.  The caller has checked that c may change the room's
 * settings. */
void seed_request(struct agent *a, struct conn *c, const char *src,
    size_t len);

/* At shutdown: kill a running clone and forget it. */
void seed_shutdown(struct agent *a);

#endif
