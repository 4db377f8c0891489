/*
 * ws_snapshot.h: asking the room's atrium-fs for snapshots of the
 * workspace (ws_snapshot.c), through the control socket the mounting
 * daemon serves next to the database (ROOM_DIR/workspace.db-ctl; the wire
 * is fs/control.c's).  Used by undo.c.
 *
 * Every call blocks the caller for at most its timeout: the agent's loop
 * calls them, so they are kept to the few requests an undo point, an
 * undo or a redo needs, with short bounds (a snapshot copies metadata
 * only).
 */
#ifndef ATRIUM_AGENT_WS_SNAPSHOT_H
#define ATRIUM_AGENT_WS_SNAPSHOT_H

#include <stddef.h>

/* One entry of a diff: kind 'A', 'D' or 'M', the path relative to the
 * workspace (valid during the call).  Non-zero stops the diff. */
typedef int (*ws_diff_cb)(void *arg, char kind, const char *path);

/* The workspace database of the room in room_dir into out.  0 or
 * -ENAMETOOLONG. */
int ws_snapshot_db(const char *room_dir, char *out, size_t size);

/* verb (snapshot, restore, drop) on snapshot name of db, waiting at most
 * timeout_s.  0, the -errno the daemon answered, -ECONNREFUSED when no
 * daemon serves db (the workspace is not an atrium-fs mount), -EAGAIN
 * when it did not answer in time. */
int ws_snapshot_request(const char *db, const char *verb, const char *name,
    int timeout_s);

/* What changed in db's tree since snapshot name: cb per entry, *more when
 * the daemon capped the list.  0 or -errno as ws_snapshot_request. */
int ws_snapshot_diff(const char *db, const char *name, int timeout_s,
    ws_diff_cb cb, void *arg, int *more);

/* One snapshot of a list: its name, when it was taken (ns since the
 * epoch) and the bytes of data it names.  Non-zero stops the list. */
typedef int (*ws_list_cb)(void *arg, const char *name, long long created_ns,
    unsigned long long bytes);

/* The snapshots of db, oldest first.  0 or -errno as ws_snapshot_request. */
int ws_snapshot_list(const char *db, int timeout_s, ws_list_cb cb,
    void *arg);

#endif
