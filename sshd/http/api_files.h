/*
 * api_files.h: a room's workspace files over HTTP (api_files.c), rows of
 * http_routes.c:
 *
 *   GET    /api/rooms/{room}/files[/{path...}]   a file's bytes (Range: one
 *          range, 206; 416 outside), or a directory's listing as JSON
 *          [{"name","type","size","mtime"}]; HEAD the same without a body;
 *          typed as api_files_meta.h says, 304 for a copy that is current
 *   PUT    /api/rooms/{room}/files/{path...}     the body becomes the file:
 *          201 (created) or 204 (replaced); parents are made
 *   DELETE /api/rooms/{room}/files/{path...}     a file or an empty
 *          directory: 204; 409 for one that is not empty
 *   PUT, GET /c/{name}/file/workspace/{path...}  Cloudflare's workspace
 *          example: the same, raw body, octet-stream; any other path
 *          under /c/{name}/file/ answers 400
 *
 * Nothing here opens a path: the room's agent does, beneath the workspace,
 * as the room's sandbox uid, with no symbolic link on the path, and passes
 * the open file (agent/file_requests.h); this process then reads or
 * writes that descriptor, a block at a time, so a body of any size goes
 * through in bounded memory.  An upload goes to a temporary file that only
 * the agent's commit, after the whole body, renames into place: a client
 * that hangs up midway leaves the old file and no stray.
 */
#ifndef ATRIUMD_API_FILES_H
#define ATRIUMD_API_FILES_H

#include <stddef.h>
#include <sys/types.h>

struct http_req;

int api_files_get(struct http_req *r);
int api_files_put(struct http_req *r);
ssize_t api_files_put_body(struct http_req *r, const char *data, size_t len);
int api_files_delete(struct http_req *r);
int api_files_cf_get(struct http_req *r);
int api_files_cf_put(struct http_req *r);
ssize_t api_files_cf_put_body(struct http_req *r, const char *data,
    size_t len);
/* Any other path under /c/{name}/file/: 400. */
int api_files_cf_outside(struct http_req *r);
ssize_t api_files_cf_outside_body(struct http_req *r, const char *data,
    size_t len);

/* ---- pure, unit-tested ---- */

/* The one range of a Range header value for a file of size bytes:
 * 1 with [*first, *last] (inclusive), 0 when the header is to be ignored
 * (absent, not bytes=, several ranges, not well formed: the whole file
 * is served), -1 when it is not satisfiable (416). */
int api_files_range(const char *value, unsigned long long size,
    unsigned long long *first, unsigned long long *last);

/* The HTTP status for the agent's error code (file_requests.h) on a
 * request of method. */
unsigned api_files_status(const char *code, const char *method);

#endif
