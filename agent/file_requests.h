/*
 * file_requests.h: the workspace's files for a connection (file_requests.c),
 * so that a program that is not in the sandbox (atriumd-http) reads and
 * writes them with exactly the rights the room's commands have:
 *
 *   file_open {id, path, mode: read|write}
 *       read: `file_opened` {id, path, mode, size, mtime, mtime_ns, ino,
 *       fds: 1} with the file's descriptor passed on that line
 *       (SCM_RIGHTS, conn_queue_event_fd).  write: a new temporary file
 *       beside the path (FILE_TMP_PREFIX, a name listings hide) is
 *       passed instead, with created (the path did not exist); the path
 *       is untouched until file_commit.
 *   file_commit {id}   fsync the temporary file, rename it over the path:
 *       `file_done` {id, path, op, size}
 *   file_abort {id}    remove it: `file_done`.  A connection that ends
 *       with uploads open has them removed the same way, so a cut upload
 *       leaves the old file and no stray.
 *   file_list {id, path}   `file_listing` {id, path, entries: [{name,
 *       type, size, mtime}], truncated}, sorted by name
 *   file_stat {id, path}   `file_info` {id, path, kind, size, mtime,
 *       mtime_ns, ino}
 *   file_delete {id, path} a file, or an empty directory: `file_done`
 *   file_mkdir {id, path}  (its missing parents too): `file_done`
 *
 * Paths are relative to the workspace root (file_path_rel): no "." or
 * ".." component, no NUL, at most PATH_MAX bytes and NAME_MAX a name; each
 * is opened as the file tools open (wsio.h: openat2 beneath the root with
 * the sandbox uid's credentials) and, more strictly than they do, with no
 * symbolic link anywhere on it (RESOLVE_NO_SYMLINKS; a link as the last
 * name is refused too).  A failure is an `error` {id, message, code}
 * whose code a program maps: not_found, exists, not_empty, is_directory,
 * not_directory, not_file, denied, symlink, bad_path, no_space, busy,
 * too_many, read_only, failed.
 *
 * What changes the workspace (a committed upload, a delete, a mkdir) is
 * audited like a command (room.db's audit, kind file: "put PATH",
 * "delete PATH", "mkdir PATH"), with wrote set, so undo asks its author
 * like anyone whose command changed the workspace.
 */
#ifndef ATRIUM_AGENT_FILE_REQUESTS_H
#define ATRIUM_AGENT_FILE_REQUESTS_H

#include <stddef.h>

#include <json-c/json.h>

struct agent;
struct conn;

#define FILE_TMP_PREFIX		".atrium-tmp-"	/* an upload not committed */
#define FILE_LIST_MAX		5000	/* entries in one listing */
#define FILE_UPLOADS_PER_CONN	16	/* open for writing at once */

/* The request type (one of the above) from c. */
void file_request(struct conn *c, const char *type, json_object *req);

/* c is going: remove the temporary files of its uploads. */
void file_requests_conn_gone(struct agent *a, struct conn *c);

/* At the agent's start, before any connection is served: the uploads a
 * shutdown or crash cut (their audit rows never ended) are ended as not
 * done, and their temporary files removed (file_sweep.c). */
void file_requests_recover(struct agent *a);

/* ---- pure, unit-tested ---- */

/* 1 when name is a temporary file of an upload (FILE_TMP_PREFIX, then
 * PID-MS-N in decimal, as file_requests.c makes them) made before
 * start_ms (time_mono_ms) or, after a reboot reset that clock, last
 * changed before start_s (wall clock): one that no upload of this agent
 * can be writing. */
int file_tmp_stale(const char *name, long long mtime_s, long long start_ms,
    long long start_s);

/* The path in[0..len) as the request's relative path, into out: "" or
 * "/" alone (and leading or doubled slashes) -> "."; "a//b/" -> "a/b".
 * 0, or -EINVAL with why (NUL, a "." or ".." component) or -ENAMETOOLONG
 * (over PATH_MAX, or a name over NAME_MAX). */
int file_path_rel(const char *in, size_t len, char *out, size_t outlen,
    const char **why);

/* The error code an -errno maps to (see above). */
const char *file_error_code(int err);

#endif
