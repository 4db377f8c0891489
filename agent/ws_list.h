/*
 * ws_list.h: the names in one directory of the workspace that start with a
 * prefix (ws_list.c), for the chat's Tab completion of paths after "!".
 *
 * The agent runs as root and the workspace is the room's to fill, so the
 * directory is opened exactly the file tools' way (wsio.h): openat2
 * beneath the workspace root with RESOLVE_BENEATH, with the sandbox uid's
 * credentials; a directory that leads outside fails with -EXDEV.  Nothing
 * is audited: names are listed, nothing is read or run.
 *
 * Contract: done is called exactly once, from the loop and never inside
 * ws_list_start.  A listing still running at shutdown is left to the
 * process's exit.
 */
#ifndef ATRIUM_AGENT_WS_LIST_H
#define ATRIUM_AGENT_WS_LIST_H

#include <json-c/json.h>

#define WS_LIST_MAX		100	/* names given, at most */
#define WS_LIST_MAX_VISIT	20000	/* entries looked at, at most */
#define WS_LIST_MAX_PATH	1024	/* bytes of the directory and prefix */

struct agent;

/* The outcome: err 0 with names (a new array of strings, sorted, each the
 * name with "/" after a directory's; the callee's to put), or -errno with
 * names NULL. */
typedef void ws_list_done_fn(void *arg, int err, json_object *names);

/* Start listing the entries of dir (relative to the workspace root) whose
 * names start with prefix (names starting with "." only when prefix
 * does).  0, -ENAMETOOLONG or -ENOMEM. */
int ws_list_start(struct agent *a, const char *dir, const char *prefix,
    ws_list_done_fn *done, void *arg);

#endif
