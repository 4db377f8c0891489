/*
 * room.h: the processes of each room, as atriumd sees them.  A room is cold
 * (no process) until a session needs it; rooms_use starts it: atrium-fs
 * mkfs when workspace.db is missing, then atrium-fs mount (waiting for its
 * "ready" line), then atrium-agent (waiting for its "ready" line).  Every
 * step is a child watched on the event loop, so starting a room never blocks
 * other sessions: callers poll rooms_use each loop turn until it says ready
 * or failed.
 *
 * Deleting a room (rooms_delete) stops it like an idle one, then removes
 * its directories; its record stays, cold, and a later use makes a new
 * room of that name.
 *
 * After start: atrium-agent exiting 0 means idle, so atrium-fs is stopped
 * and the room is cold again; atrium-agent dying otherwise is restarted
 * (its turn resumes from room.db), and so is one that has not answered
 * the watchdog's ping for agent-timeout seconds (agentwatch.h: it is
 * killed first); atrium-fs dying restarts the room.
 *
 * With --s3 (a cluster's host), a start that follows a new hold on the
 * room first runs atrium-replicate restore (then atrium-fs fsck of what
 * it restored), and every start runs atrium-replicate run after mkfs and
 * before the mount (waiting for its "ready" line); the writers get its
 * streams.  Its exit stops the room: the writers' commits fail without
 * it.  A stop whose shipper did not end having stored every commit
 * (killed at the stop's deadline by a store too slow, crashed) keeps the
 * room's home and files: a finishing run (atrium-replicate run with no
 * writer: its snapshot of the databases holds every commit) stores them,
 * and only then is the home given up; until one succeeds the room is
 * held here, a move of it is called off (rooms.kept), and the next use
 * starts it here again (ARCHITECTURE.md, "A room's writes in object
 * storage").  A restore that has not ended within --s3-restore-timeout is
 * killed, what it staged removed, and the room refused with the reason;
 * as any failed start, it then gives its home up, so that its next use
 * claims it anew (here or on another host) and restores it again.
 */
#ifndef ATRIUMD_ROOM_H
#define ATRIUMD_ROOM_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "agentwatch.h"
#include "fswatch.h"
#include "config.h"
#include "helpers.h"
#include "loop.h"
#include "room_ids.h"

enum room_state {
	ROOM_COLD,		/* no process */
	ROOM_RESTORE,		/* atrium-replicate restore running
				 * (--s3: a room this host just claimed) */
	ROOM_FSCK,		/* atrium-fs fsck of what it restored */
	ROOM_MKFS,		/* atrium-fs mkfs running */
	ROOM_SHIPPER,		/* atrium-replicate run started (--s3),
				 * not ready yet */
	ROOM_RETRY,		/* waiting to mount again (DB still locked,
				 * or fusermount3 of a stale mount runs) */
	ROOM_MOUNTING,		/* atrium-fs mount started, not ready yet */
	ROOM_AGENT,		/* atrium-agent started, not ready yet */
	ROOM_READY,		/* agent.sock accepts sessions */
	ROOM_STOPPING,		/* SIGTERM sent, children not all gone */
};

struct room_child {
	pid_t pid;		/* 0 when not running */
	int ready_fd;		/* read end of the ready pipe, or -1 */
	struct watch w;		/* on ready_fd */
	char ready[16];		/* bytes of the ready line so far */
	size_t ready_len;
	const char *what;	/* "atrium-fs", "atrium-agent"... for logs */
	int keys_fd;		/* atrium-agent's keys channel (keys.h), -1 */
};

struct rooms;

struct room {
	struct rooms *rs;		/* owner */
	char name[64];			/* room name (valid) */
	char dir[PATH_MAX + 80];	/* DATA/rooms/ROOM */
	char run[PATH_MAX + 80];	/* DATA/run/ROOM */
	struct room_ids ids;		/* its sandbox uid and gid, decided at
					 * each start (room_ids.h) */
	enum room_state state;
	struct room_child mkfs, fs, agent;
	struct room_child umount;	/* fusermount3 of a stale mount */
	struct room_child repl;		/* atrium-replicate run (--s3) */
	int repl_w[2];			/* its streams' write ends, for the
					 * agent [0] and atrium-fs [1]; -1 */
	int64_t epoch;			/* this host's hold on it (--s3) */
	int64_t restored_epoch;		/* the hold its files were restored
					 * for: a restart keeps them */
	int restoring;			/* the mkfs slot runs a restore */
	int restore_late;		/* it was killed at the deadline */
	long long started_ms;		/* when the current start began */
	long long deadline_ms;		/* of the current step; 0: none */
	int mount_tries;		/* mounts tried in this start */
	int restart;			/* start again once stopped */
	int agent_restarts;		/* abnormal agent exits in the window */
	long long restarts_since_ms;	/* start of that window */
	int deleting;			/* delete once stopped; no start */
	int unstored;			/* --s3: its shipper ended before it
					 * stored every commit (killed at the
					 * stop's deadline, crashed): the home
					 * is kept until a run stores them */
	int finish_tries;		/* finishing runs since (room.c) */
	int repl_ready;			/* the running shipper said "ready":
					 * the writers commit under it */
	struct agentwatch watch;	/* pings the agent while ready */
	struct fswatch fsw;		/* reads atrium-fs's request counts
					 * while it is mounted (fswatch.h) */
	char agent_why[160];		/* why atriumd last killed the agent,
					 * for the chat's notice */
	long long agent_why_ms;		/* when */
	int failed;			/* the last start failed */
	long long failed_ms;
	char error[256];		/* why, for the user */
	struct room *next;
};

struct rooms {
	const struct config *cfg;	/* settings passed to each agent */
	const struct keys *keys;	/* the API keys, piped to each agent
					 * (keys.h); NULL: none */
	struct loop *loop;		/* the event loop */
	struct helpers progs;		/* atrium-fs and atrium-agent */
	char data[PATH_MAX];		/* absolute DATA */
	int shutting_down;		/* no start, no restart */
	struct room *list;
	void (*changed)(void *arg);	/* a room became ready or failed (so
					 * the network process asks again) */
	void *changed_arg;
	struct model_totals models;	/* every agent's model requests
					 * (model_totals.h) */
	struct fsops_totals fsops;	/* every workspace's requests
					 * (fswatch.h) */
	/* On a cluster's host (cluster/node.h), else NULL: the fd of a
	 * room's fence page for its writers (-errno: this host does not
	 * hold the room, so it does not start), and a room that stopped
	 * and will not start again by itself. */
	int (*fence_fd)(void *arg, const char *room);
	void (*stopped)(void *arg, const char *room);
	/* A room that stopped with commits the object store does not have
	 * yet (--s3): its home is kept, and a move of it is called off
	 * with WHY (cluster_room_kept). */
	void (*kept)(void *arg, const char *room, const char *why);
	void *cluster_arg;
	/* --s3 (room_stream.h), else NULL: each room's writes streamed. */
	const struct room_stream *stream;
};

struct keys;

/* The keys each agent gets on its --keys-fd channel (kept, not copied). */
void rooms_set_keys(struct rooms *rs, const struct keys *keys);

/* The keys changed (a reload): send them to every running agent, which
 * uses them from its next model request on.  Logs each room it could not
 * reach. */
void rooms_send_keys(struct rooms *rs);

void rooms_init(struct rooms *rs, const struct config *cfg, struct loop *loop,
    const struct helpers *progs);

/* Ask for room name (valid).  1 when ready (*out set), 0 while starting,
 * -1 when it could not start (reason in (*out)->error), -ENOMEM. */
int rooms_use(struct rooms *rs, const char *name, struct room **out);

/* Stop room name at once, not to start again by itself (its host's hold
 * on it in the cluster ended, or it moves to another host).  Nothing when
 * it is not running. */
void rooms_stop(struct rooms *rs, const char *name);

/* The record of room name, or NULL. */
struct room *rooms_find(const struct rooms *rs, const char *name);

/* 1 when this host must keep its hold on the room: it runs, or it holds
 * commits the object store does not have yet (unstored). */
int rooms_held(const struct rooms *rs, const char *name);

/* 1 when room name has processes (starting, running or stopping). */
int rooms_running(const struct rooms *rs, const char *name);

/* 1 while room name is being deleted. */
int rooms_deleting(const struct rooms *rs, const char *name);

/* Delete room name (valid): stop its processes, then remove its
 * directories (rooms_remove_dirs); rooms_use refuses it meanwhile.  The
 * caller ends its sessions.  0, -EALREADY when under way, -ENOMEM. */
int rooms_delete(struct rooms *rs, const char *name);

/* Remove DATA/rooms/NAME and DATA/run/NAME and everything in them,
 * never crossing into a mount (a workspace still mounted stays, and the
 * call fails).  Only with DATA's lock held (datalock.h: the monitor, or
 * `atriumd room delete` when none runs), so that what it removes is no
 * other atriumd's.  0 or -errno (logged). */
int rooms_remove_dirs(const char *data, const char *name);

/* A child exited (from waitpid).  1 if it was one of the rooms'. */
int rooms_child_exited(struct rooms *rs, pid_t pid, int status);

/* What atriumd last did to the room's agent and why ("stopped answering
 * for 10 s and was restarted"), when that was within the last few seconds,
 * else NULL: for a chat that lost its connection to say why. */
const char *rooms_agent_why(const struct room *r);

/* Timeouts, retries and the agents' watchdog; call every loop turn. */
void rooms_tick(struct rooms *rs);

/* Stop every room (SIGTERM; SIGKILL when force). */
void rooms_shutdown(struct rooms *rs, int force);

/* 1 when no room has a process left. */
int rooms_all_stopped(const struct rooms *rs);

/* Free the rooms (after all stopped), unmounting what is left. */
void rooms_free(struct rooms *rs);

#endif
