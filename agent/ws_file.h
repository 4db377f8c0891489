/*
 * ws_file.h: a small file of the workspace read for the agent's own use
 * (ws_file.c): AGENTS.md for the system prompt, and whatever else the
 * agent ever takes from the workspace besides the model's tool calls.
 *
 * The agent runs as root, and the workspace is the room's to fill: a
 * plain open() of RUN/workspace/AGENTS.md would follow a symlink to
 * /etc/shadow, the host key or another room's room.db, and put that file
 * in the prompt.  So these reads go exactly the file tools' way (wsio.h):
 * openat2 beneath the workspace root with RESOLVE_BENEATH, with the
 * sandbox uid's credentials, on the io_uring loop from a coroutine.  A
 * symlink that stays inside the workspace (a relative one) is followed; one
 * that leaves it fails with -EXDEV, and so does an absolute one.
 *
 * Contract: done is called exactly once, from the loop and never inside
 * ws_file_read_start, unless the read was cancelled or abandoned first.
 */
#ifndef ATRIUM_AGENT_WS_FILE_H
#define ATRIUM_AGENT_WS_FILE_H

#include <stddef.h>

struct agent;
struct ws_file_read;

/* The outcome: err is 0 with data (malloc'd, NUL-terminated, the callee's
 * to free) and len, or -errno (-ENOENT: no such file; -EXDEV or -ELOOP:
 * it leads outside the workspace; -EFBIG: over max) with data NULL. */
typedef void ws_file_done_fn(void *arg, int err, char *data, size_t len);

/* Start reading the regular file rel (relative to the workspace root, at
 * most max bytes).  0 with *out, or -ENOMEM. */
int ws_file_read_start(struct agent *a, const char *rel, size_t max,
    ws_file_done_fn *done, void *arg, struct ws_file_read **out);

/* Never call done; the read ends and is freed on its own.  NULL is fine. */
void ws_file_read_cancel(struct ws_file_read *r);

/* At shutdown: free now, unless the kernel may still write into it (then
 * its memory is left to the process's exit).  NULL is fine. */
void ws_file_read_abandon(struct ws_file_read *r);

/* Why a read of name failed, for the log: "it leads outside the
 * workspace..." for -EXDEV and -ELOOP, else strerror.  Pure. */
void ws_file_why(char *out, size_t outlen, int err);

#endif
