/*
 * wsio.h: the file tools' access to the workspace (wsio.c): every operation
 * goes through the agent's io_uring loop, resolved beneath an O_PATH fd of
 * the workspace root, with the sandbox uid's credentials, from a coroutine
 * that is suspended while the operation is in flight.
 *
 * Paths: the model's path is relative to /workspace or absolute under it
 * (wsio_path makes it relative); everything is then opened with openat2
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV relative to the
 * root, so `..`, absolute paths and symlinks that leave the workspace fail
 * (EXDEV), and a path never reaches another mount.
 *
 * The functions marked "in the coroutine" may only be called from the
 * coroutine of a started struct wsio; they return -ECANCELED once the call
 * was cancelled, without touching the workspace.
 *
 * Pacing.  Every operation suspends the coroutine, but work between
 * operations (matching names, lines, patterns) does not: a long scan calls
 * wsio_pace between units of its work, which gives the loop a turn once the
 * coroutine has run WSIO_SLICE_MS without suspending, and ends the scan
 * once the call's time budget (wsio_budget) is spent.
 */
#ifndef ATRIUM_AGENT_WSIO_H
#define ATRIUM_AGENT_WSIO_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

struct agent;
struct coro;

#define WSIO_ROOT	"/workspace"	/* where the sandbox sees the root */
#define WSIO_SLICE_MS	10	/* longest run between two suspensions */

struct wsio {
	struct agent *a;
	struct coro *co;		/* runs body(arg) */
	void (*body)(struct wsio *w);	/* the tool's work, in the coroutine */
	void (*finished)(struct wsio *w);	/* after body returned, on the
						 * loop's stack */
	void *arg;			/* the owner's */
	int root;			/* O_PATH fd of the workspace, or -1 */
	long long op;			/* I/O in flight (loop_io id), or 0 */
	int res;			/* its result once complete */
	int cancelled;			/* stop at the next operation */
	long long running_since;	/* monotonic ms of the last resume */
	long long deadline;		/* monotonic ms the budget ends, or 0 */
	int budget_s;			/* the budget in seconds, or 0 */
	long long timer;		/* wsio_start's timer, until it fires */
	unsigned long long resolve;	/* more RESOLVE_ flags for wsio_open
					 * (RESOLVE_NO_SYMLINKS: no link
					 * anywhere on a path), or 0 */
};

/* Prepare w to run body in a new coroutine.  0 or -ENOMEM. */
int wsio_init(struct wsio *w, struct agent *a, void (*body)(struct wsio *w),
    void (*finished)(struct wsio *w), void *arg);

/* Run (or go on running) the coroutine on the loop's stack; calls
 * finished when the body has returned. */
void wsio_run(struct wsio *w);

/* The lifecycle every workspace job shares (tool_files.c, ws_file.c,
 * ws_skills.c, ws_list.c, output_save.c).  wsio_start runs the body from a
 * 0 ms timer, so finished is never called inside the job's own start
 * function: 0 or -ENOMEM (then wsio_release and free the job). */
int wsio_start(struct wsio *w);

/* Cancel a started job.  1 when its body never ran: the coroutine is
 * released and the caller frees the job now.  0 otherwise: the body
 * unwinds (every later operation fails with -ECANCELED) and finished runs
 * as usual. */
int wsio_stop(struct wsio *w);

/* Drop a job at shutdown, what naming it in the log.  0: released, free
 * the job.  1: an operation was in flight, whose buffers the kernel may
 * still write: the job's memory must be left for the process's exit. */
int wsio_abandon(struct wsio *w, const char *what);

/* Give the call a time budget of seconds from now (0: none), which
 * wsio_pace enforces. */
void wsio_budget(struct wsio *w, int seconds);

/* Cancel: the operation in flight completes, then every operation fails
 * with -ECANCELED and the body unwinds. */
void wsio_cancel(struct wsio *w);

/* Release the coroutine.  When an operation is still in flight (shutdown)
 * its completion is forgotten and 1 is returned: the caller must then keep
 * the memory the operation may still write to.  0 otherwise. */
int wsio_release(struct wsio *w);

/* The model's path as a path relative to the workspace root, into out:
 * NULL or "" -> ".", "/workspace/x" -> "x", "./a//b/" -> "a/b".  -EINVAL
 * with a message for the model in err when the path is absolute outside
 * /workspace or its ".." climb above the root.  Pure. */
int wsio_path(const char *in, char *out, size_t outlen, char *err,
    size_t errlen);

/* The message for the model about err (-errno) on path (as the model gave
 * it, or relative).  Pure. */
void wsio_error(char *out, size_t outlen, const char *path, int err);

/* ---- in the coroutine ---- */

/* Between units of CPU work: suspend for one turn of the loop when the
 * coroutine has run WSIO_SLICE_MS since it last suspended.  0, -ECANCELED
 * (cancelled), -ETIMEDOUT (the budget is spent: stop and say so), or
 * -errno when the ring is stuck. */
int wsio_pace(struct wsio *w);

/* Open the root (done once per call, first).  0 or -errno. */
int wsio_open_root(struct wsio *w);

/* openat2 of rel beneath the root (dirfd < 0) or beneath dirfd.  The fd or
 * -errno (-EXDEV: escapes the workspace). */
int wsio_open(struct wsio *w, int dirfd, const char *rel, int flags,
    mode_t mode);

/* statx of an open fd (an O_PATH one too): type, mode, size, inode and
 * mtime. */
int wsio_fstat(struct wsio *w, int fd, struct statx *st);

/* statx of one name in directory dirfd, not following a symlink. */
int wsio_stat_name(struct wsio *w, int dirfd, const char *name,
    struct statx *st);

/* pread: bytes read (0 at the end) or -errno. */
ssize_t wsio_read(struct wsio *w, int fd, void *buf, size_t n, off_t off);

/* Whether a wsio_read of a regular file that asked for asked bytes and
 * got got, leaving the file read up to pos, has reached the end of the
 * size seen at open: a regular file reads short only at its end, so the
 * read that would return 0 need not be made (a round trip saved). */
int wsio_read_ended(size_t asked, ssize_t got, unsigned long long pos,
    unsigned long long size);

/* Write all n bytes at offset 0 onward.  0 or -errno. */
int wsio_write_all(struct wsio *w, int fd, const void *buf, size_t n);

/* Close fd (synchronously once cancelled).  0 or -errno. */
int wsio_close(struct wsio *w, int fd);

/* Close fd without waiting: the close goes with the loop's next
 * submission, and the coroutine goes on at once.  Only for a descriptor
 * whose close has nothing to report: O_PATH, or opened read-only (on the
 * FUSE mount its close is where the kernel asks the daemon to flush the
 * file, a round trip that a read need not wait for).  Accepts -1. */
void wsio_close_behind(struct wsio *w, int fd);

/* mkdirat, renameat (same directory), unlinkat of single names in dirfd
 * (wsio_rmdir: of an empty directory). */
int wsio_mkdir(struct wsio *w, int dirfd, const char *name, mode_t mode);
int wsio_rename(struct wsio *w, int dirfd, const char *from, const char *to);
int wsio_unlink(struct wsio *w, int dirfd, const char *name);
int wsio_rmdir(struct wsio *w, int dirfd, const char *name);

/* fsync of fd: its data and size on the disk.  0 or -errno (-ENOSPC,
 * -EDQUOT: the workspace is full). */
int wsio_fsync(struct wsio *w, int fd);

/* Read a whole regular file rel (at most max bytes) into a malloc'd
 * NUL-terminated buffer; its statx in st when st is not NULL.  0, -EISDIR,
 * -EINVAL (not a regular file), -EFBIG (over max), or -errno. */
int wsio_read_file(struct wsio *w, const char *rel, size_t max, char **data,
    size_t *len, struct statx *st);

/* getdents64 on a directory fd opened beneath the root, run by the
 * agent's directory reader thread (dirworker.h: the ring has no getdents,
 * and a stalled filesystem must not stop the loop) while the coroutine is
 * suspended.  buf must stay put until it returns (the coroutine's stack
 * or the job's memory).  Bytes filled, 0 at the end, or -errno. */
ssize_t wsio_getdents(struct wsio *w, int fd, void *buf, size_t n);

#endif
