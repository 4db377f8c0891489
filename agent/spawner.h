/*
 * spawner.h: the process that forks the agent's sandboxes (spawner.c).
 *
 * The agent becomes multi-threaded (libcurl's threaded resolver, the
 * directory reader of dirworker.h), and a fork() of a threaded process may
 * inherit a lock another thread held, and copies the agent's whole address
 * space while its loop waits.  So atrium-agent starts a spawner first
 * thing, before any thread and before any key is read, and every sandboxed
 * command is forked by it: a small, single-threaded process.
 */
#ifndef ATRIUM_AGENT_SPAWNER_H
#define ATRIUM_AGENT_SPAWNER_H

#include "sandbox.h"

struct config;
struct reslimits;

/* Fork the spawner (call while the process has one thread); its command
 * line (main's argv, rewritten in its copy) becomes "atrium-spawner
 * --room-dir ROOM_DIR".  sb and cfg name the room for good: the spawner
 * keeps its copies and takes nothing a request says in their place.  The
 * agent's end of its socket, or -errno
 * (logged). */
int spawner_start(int argc, char **argv, const char *room_dir,
    const struct sandbox *sb, const struct config *cfg);

/* Start a command as sandbox_spawn would (sandbox.h), the fork done by the
 * spawner on socket sock: the command is still the caller's child (reap
 * it, watch its pidfd, kill it as before).  0 with *p filled, or -errno
 * (logged; -EPIPE when the spawner has gone). */
int spawner_spawn(int sock, const struct sandbox *sb,
    const struct sandbox_cmd *cmd, struct sandbox_proc *p);

/* Lower the room's group to the operator's limits with the owner's values
 * (reslimits_nest); the spawner computes them, so they are never above
 * the operator's.  0 or -errno. */
int spawner_relimit(int sock, const struct reslimits *owner);

/* The agent stops: remove the room's group, and its listening socket if
 * that is still the inode sock_dev, sock_ino (conn_bind).  0 or -errno. */
int spawner_close_room(int sock, dev_t sock_dev, ino_t sock_ino);

/* Close the agent's end; the spawner exits when it sees that.  -1 is
 * fine. */
void spawner_stop(int sock);

#endif
