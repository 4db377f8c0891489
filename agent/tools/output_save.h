/*
 * output_save.h: a bash call's whole output, saved in the workspace for
 * the model and the room when the model was sent only its head and tail
 * (output_save.c).
 *
 * The file is /workspace/.atrium/output/bash-TIME-CALL.txt (TIME:
 * YYYYMMDD-HHMMSS-mmm UTC; CALL: the call id with anything but letters,
 * digits, '-' and '_' dropped), written exactly as the file tools write
 * (wsio.h): beneath the workspace root with RESOLVE_BENEATH, as the
 * sandbox uid, so the workspace's quota applies and a symlink planted at
 * .atrium or output leads nowhere.  Only the newest OUTPUT_SAVE_KEEP such
 * files are kept: older ones are removed before a new one is written.
 *
 * Contract: done is called exactly once, from the loop, unless the save
 * was cancelled or abandoned first.
 */
#ifndef ATRIUM_AGENT_OUTPUT_SAVE_H
#define ATRIUM_AGENT_OUTPUT_SAVE_H

#include <stddef.h>

struct agent;
struct output_save;

#define OUTPUT_SAVE_DIR		".atrium/output"
#define OUTPUT_SAVE_KEEP	20		/* files kept, newest */
#define OUTPUT_SAVE_MAX		(16 << 20)	/* bytes of output saved */

/* err is 0 with path (as the sandbox sees it, "/workspace/...") or -errno
 * with path NULL. */
typedef void output_save_done_fn(void *arg, int err, const char *path);

/* Start saving len bytes of data (copied) for call_id.  0 with *out, or
 * -ENOMEM. */
int output_save_start(struct agent *a, const char *call_id, const char *data,
    size_t len, output_save_done_fn *done, void *arg,
    struct output_save **out);

/* Never call done; the save ends and is freed on its own.  NULL is fine. */
void output_save_cancel(struct output_save *s);

/* At shutdown: free now unless I/O is in flight.  NULL is fine. */
void output_save_abandon(struct output_save *s);

/* The file name for call_id at time_ms (UTC), into out.  Pure. */
void output_save_name(char *out, size_t outlen, const char *call_id,
    long long time_ms);

#endif
