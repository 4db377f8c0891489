/*
 * http_exec.h: one command run in a room for an HTTP request, its stdio
 * streamed through pipes in bounded memory (http_exec.c).  Used by the
 * routes that run a command with a streamed body and answer (api_exec.c);
 * the routes that answer one JSON object (Cloudflare's and Duet's) use the
 * room's captured exec instead (api_capture.c).
 *
 * The caller gets, from the monitor, a connection to the room's agent of
 * kind "exec" (its hello already written) and three pipes (the `pipes`
 * request: 1 MiB each), and hands both over; from then on:
 *
 *   request body  -> http_exec_stdin  -> stdin pipe (0 taken when it is
 *                    full: the caller suspends its upload and is called
 *                    back by on_ready once the command read some)
 *   stdout pipe   -> out[0]  \  each at most HTTP_EXEC_MAX_QUEUED; a pipe
 *   stderr pipe   -> out[1]  /  is read only while its queue has room, so
 *                    a command printing gigabytes to a slow reader waits
 *                    on its pipe and never grows this process
 *   exec_result   -> code and signal, reported once both pipes ended and
 *                    the queues were taken (http_exec_done)
 *
 * on_ready is called whenever something the caller may act on changed
 * (output queued, stdin writable again, the end): the caller looks, it is
 * never told what.  It is never called from inside an http_exec_* call.
 */
#ifndef ATRIUMD_HTTP_EXEC_H
#define ATRIUMD_HTTP_EXEC_H

#include <json-c/json.h>

#include "buf.h"
#include "loop.h"

#define HTTP_EXEC_MAX_QUEUED	(128 * 1024)	/* per stream, read ahead */

struct http_exec;

typedef void (*http_exec_ready_fn)(void *arg);

/* Start the command described by spec (an exec line's command or argv,
 * cwd, env: copied) on agent_fd (kind exec, hello written; owned from now
 * on, also on failure) with the pipes p[3][2] (stdin, stdout, stderr;
 * read end, write end; owned from now on).  *out is the exec, or NULL.
 * 0 or -errno. */
int http_exec_start(struct http_exec **out, struct loop *loop, int agent_fd,
    int p[3][2], json_object *spec, http_exec_ready_fn on_ready, void *arg);

/* Give the command up to n bytes of stdin.  Bytes taken: fewer than n (0
 * too) when the pipe is full (on_ready follows once it takes more), all n
 * once the command stopped reading (discarded).  -errno for a closed
 * stdin. */
long http_exec_stdin(struct http_exec *x, const char *p, size_t n);

/* End of the request body: the command sees EOF on its stdin. */
void http_exec_stdin_close(struct http_exec *x);

/* The queue of stream 0 (stdout) or 1 (stderr): the caller takes bytes
 * from it with buf_consume, then calls http_exec_taken. */
struct buf *http_exec_queue(struct http_exec *x, int stream);

/* The caller took queued bytes: read the pipes again. */
void http_exec_taken(struct http_exec *x);

/* 1 when the command ended and every byte of its output was queued and
 * taken, with *code its exit status (128+N when killed by signal N) and
 * sig its signal's name or "" (at least 16 bytes); else 0. */
int http_exec_done(struct http_exec *x, int *code, char *sig, size_t siglen);

/* The error the room gave instead of running the command ("" if none):
 * the command did not start, or the agent went away while it ran. */
const char *http_exec_error(const struct http_exec *x);

/* Kill the command if it still runs and free everything.  NULL is fine. */
void http_exec_free(struct http_exec *x);

#endif
