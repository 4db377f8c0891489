/*
 * front_start.h: a front's start-up, in atriumd-net and atriumd-http
 * (front_start.c): reading what the monitor handed it (front_exec.h has
 * the format), as root, before the drop; and the settings after it.
 *
 *   argv: PROGRAM MONITOR-PID UID GID USER [--KEY VALUE ...]
 *
 * Order, and why: the four numbers, which the drop needs, are read first;
 * then the front gives up root; only then are the settings parsed, and
 * after them every byte of every client.
 */
#ifndef ATRIUMD_FRONT_START_H
#define ATRIUMD_FRONT_START_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "privdrop_id.h"

/* The drop's identity and the monitor's pid from argv[1..4], and an even
 * number of words after them.  0, or -EINVAL with usage printed. */
int front_start_identity(int argc, char **argv, const char *usage,
    struct privdrop_id *id, pid_t *monitor);

/* 0 when each of the n fds is a socket; else -EBADF, logged with prog
 * (the program run by hand, or a monitor out of step). */
int front_start_sockets(const char *prog, const int *fds, size_t n);

/* Keep memory of bursts from staying with the process: glibc's first
 * mmap threshold, fixed (as the monitor's).  A failure is logged. */
void front_start_malloc(void);

/* The settings after argv[4], as --KEY VALUE pairs, over the defaults;
 * a KEY allowed refuses (allowed NULL: any) is refused as not expect (the
 * log's words for what was expected).  0, or -EINVAL (logged). */
int front_start_settings(int argc, char **argv, struct config *cfg,
    int (*allowed)(const char *key), const char *expect);

#endif
