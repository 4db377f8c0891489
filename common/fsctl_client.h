/*
 * fsctl_client.h: asking the atrium-fs daemon that has a workspace
 * database mounted for snapshot work, through its control socket DB-ctl
 * (the wire is fs/daemon/control_socket.c's, which serves it).  Used by the
 * atrium-fs command line (fs/fs_main.c), by the agent (agent/undo.c,
 * agent/undo_act.c, agent/snapshots.c) and by room exports
 * (sshd/monitor/room_transfer.c, fs/offline/room_archive.c).
 *
 * Every call but fsctl_commit_send (which never blocks) blocks its caller
 * for at most timeout_s seconds per read or write (SO_RCVTIMEO,
 * SO_SNDTIMEO, the connect too), and every answer line
 * is capped (FSCTL_LINE_MAX, FSCTL_ENTRY_MAX for a diff's entries) before
 * it is stored.  Results, for every call:
 *   0              done
 *   -errno         what the daemon answered (-ENOENT: no such snapshot,
 *                  -EEXIST, -EINVAL, -EDQUOT, ...)
 *   -ECONNREFUSED  nobody serves DB-ctl (not mounted, or a stale socket)
 *   -ECONNRESET    the daemon closed the connection before its answer
 *                  (it died or stopped: the operation may or may not
 *                  have happened)
 *   -EAGAIN        no answer within timeout_s
 *   -EPROTO        an answer that is not the wire's
 *   -EINVAL        a name the request line cannot carry
 */
#ifndef ATRIUM_FSCTL_CLIENT_H
#define ATRIUM_FSCTL_CLIENT_H

#include <stddef.h>

/* A request or answer line, LF included. */
#define FSCTL_LINE_MAX 256
/* A list's snapshot line: a name and five numbers. */
#define FSCTL_LIST_LINE_MAX (FSCTL_LINE_MAX + 128)
/* A diff entry: kind, space, a path of up to 4096 bytes each as %XX. */
#define FSCTL_ENTRY_MAX (3 * 4096 + 8)

/* The control socket's path for db into out: 0 or -ENAMETOOLONG. */
int fsctl_path(const char *db, char *out, size_t size);

/* verb (snapshot, restore, drop) on snapshot name of db. */
int fsctl_request(const char *db, const char *verb, const char *name,
    int timeout_s);

/* One entry of a diff: kind 'A', 'D' or 'M' and the path relative to the
 * workspace (valid during the call).  Non-zero stops it (-ECANCELED). */
typedef int (*fsctl_diff_cb)(void *arg, char kind, const char *path);

/* What changed in db's tree since snapshot name: cb per entry, *more set
 * when the daemon capped the list. */
int fsctl_diff(const char *db, const char *name, int timeout_s,
    fsctl_diff_cb cb, void *arg, int *more);

/* One snapshot of a list (name valid during the call). */
struct fsctl_snapshot {
	const char *name;
	long long created_ns;         /* when taken, since the epoch */
	unsigned long long inodes;    /* inodes it holds */
	unsigned long long shared;    /* bytes it shares with others */
	unsigned long long own;       /* bytes only it names */
};

/* Non-zero stops the list (-ECANCELED). */
typedef int (*fsctl_list_cb)(void *arg, const struct fsctl_snapshot *s);

/* The quota's figures (fs/daemon/control_socket.c's "U" line), in bytes; quota
 * 0: none. keep: what a refused snapshot would have kept. */
struct fsctl_usage {
	unsigned long long quota, used, snap_only, keep;
	unsigned long long inodes, quota_inodes;
};

/* The quota's figures of db's workspace into *out. */
int fsctl_usage(const char *db, int timeout_s, struct fsctl_usage *out);

/* The count of changes made through db's mount (fs_changes) into *out:
 * two counts that differ mean the tree changed between them. */
int fsctl_changes(const char *db, int timeout_s, unsigned long long *out);

/* Snapshot db as name: a named one, or an undo point (undo non-zero:
 * exempt from the quota's check, which the agent keeps by dropping undo
 * points).  -EDQUOT when a named one would not fit: the figures into
 * *why when not NULL (why->quota 0 when the daemon sent none). */
int fsctl_snapshot(const char *db, int undo, const char *name,
    int timeout_s, struct fsctl_usage *why);

/* The snapshots of db, oldest first. */
int fsctl_list(const char *db, int timeout_s, fsctl_list_cb cb, void *arg);

/* Give the pages deletes freed inside db back to the disk
 * (-EOPNOTSUPP: a database without SQLite's pointer map). */
int fsctl_compact(const char *db, int timeout_s);

/* Ask db's daemon to commit what it has answered, in two halves for a
 * caller whose loop must not block (atriumd's monitor) and a process that
 * may wait (the room export's helper, given the connection).
 * fsctl_commit_send connects and sends without blocking: the connection's
 * fd, -ECONNREFUSED when nobody serves db (nothing is uncommitted then),
 * -EAGAIN when the daemon cannot take a connection now, or -errno.
 * fsctl_commit_wait reads the answer on that fd, waiting up to timeout_s,
 * and closes it: 0 once committed; -ECONNRESET when the daemon stopped
 * before it answered. */
int fsctl_commit_send(const char *db);
int fsctl_commit_wait(int fd, int timeout_s);

#endif
