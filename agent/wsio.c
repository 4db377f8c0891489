/*
 * wsio.c: the file tools' workspace I/O (wsio.h).
 *
 * Whose rights.  The agent runs as the room's sandbox uid and gid
 * (confine.h), so the file tools act exactly as a command in the sandbox
 * would: files they create belong to that uid and gid, and what it may
 * not read or write they may not either; the kernel checks them with the
 * agent's own credentials, for the FUSE mount (atrium-fs takes the
 * caller's fsuid and fsgid from each request) as for any directory.
 * Every path is resolved beneath the workspace's root (RESOLVE_BENEATH,
 * no magic links, no other mount).
 *
 * Suspension.  An operation is an SQE submitted with loop_io_submit; the
 * coroutine yields until wsio_io_done resumes it with the result.  The SQE
 * points at the coroutine's stack (paths, open_how, statx buffers), which
 * stays put while it is suspended.
 *
 * Pacing.  wsio_pace suspends on a no-op operation, the same way: the
 * loop then serves whatever else is ready (clients, timers, other I/O)
 * before the no-op's completion resumes the coroutine.  The clock is read
 * at each call (a vDSO read, cheap next to matching one line).
 */
#include "wsio.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "coro.h"
#include "dirworker.h"
#include "log.h"
#include "loop_uring.h"
#include "util.h"

#define WSIO_RESOLVE	(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | \
			 RESOLVE_NO_XDEV)
#define WSIO_READ_CHUNK	(256 * 1024)	/* bytes per read operation */
#define WSIO_STATX	(STATX_TYPE | STATX_MODE | STATX_SIZE | STATX_INO | \
			 STATX_MTIME)

/* ---- the coroutine ----------------------------------------------------- */

static void
wsio_entry(void *arg)
{
	struct wsio *w = arg;

	w->body(w);
	wsio_close_behind(w, w->root);
	w->root = -1;
}

int
wsio_init(struct wsio *w, struct agent *a, void (*body)(struct wsio *w),
    void (*finished)(struct wsio *w), void *arg)
{
	*w = (struct wsio){ .a = a, .body = body, .finished = finished,
	    .arg = arg, .root = -1 };
	w->co = coro_new(wsio_entry, w);
	return w->co ? 0 : -ENOMEM;
}

void
wsio_run(struct wsio *w)
{
	w->running_since = time_mono_ms();
	if (coro_resume(w->co) && w->finished)
		w->finished(w);
}

static long
wsio_kick(struct loop *l, long long id, void *arg)
{
	struct wsio *w = arg;

	w->timer = 0;
	wsio_run(w);
	return LOOP_NOMORE;
}

int
wsio_start(struct wsio *w)
{
	long long t = loop_add_timer(w->a->loop, 0, wsio_kick, w);

	if (t < 0)
		return -ENOMEM;
	w->timer = t;
	return 0;
}

int
wsio_stop(struct wsio *w)
{
	if (w->timer <= 0) {
		wsio_cancel(w);
		return 0;
	}
	/* Never started: nothing in flight, and finished will never run. */
	loop_del_timer(w->a->loop, w->timer);
	w->timer = 0;
	wsio_release(w);
	return 1;
}

int
wsio_abandon(struct wsio *w, const char *what)
{
	if (w->timer > 0)
		loop_del_timer(w->a->loop, w->timer);
	w->timer = 0;
	if (!wsio_release(w))
		return 0;
	log_warn("%s abandoned with I/O in flight", what);
	return 1;
}

void
wsio_budget(struct wsio *w, int seconds)
{
	w->budget_s = seconds > 0 ? seconds : 0;
	w->deadline = seconds > 0 ? time_mono_ms() + seconds * 1000LL : 0;
}

void
wsio_cancel(struct wsio *w)
{
	w->cancelled = 1;
}

int
wsio_release(struct wsio *w)
{
	int busy = w->op != 0;

	if (busy)
		loop_io_forget(w->a->loop, w->op);
	w->op = 0;
	if (!busy) {
		coro_free(w->co);
		w->co = NULL;
	}
	return busy;
}

static void
wsio_io_done(struct loop *l, int res, void *arg)
{
	struct wsio *w = arg;

	w->op = 0;
	w->res = res;
	wsio_run(w);
}

/* A fresh SQE, or NULL (cancelled or ring stuck: *err set). */
static struct io_uring_sqe *
wsio_sqe(struct wsio *w, int *err)
{
	struct io_uring_sqe *sqe;

	if (w->cancelled) {
		*err = -ECANCELED;
		return NULL;
	}
	sqe = loop_io_sqe(w->a->loop);
	if (!sqe)
		*err = -EIO;
	return sqe;
}

/* Submit the prepared sqe and wait for its result. */
static int
wsio_wait(struct wsio *w, struct io_uring_sqe *sqe)
{
	long long id;

	id = loop_io_submit(w->a->loop, sqe, wsio_io_done, w);
	if (id < 0)
		return (int)id;
	w->op = id;
	coro_yield(w->co);
	return w->res;
}

int
wsio_pace(struct wsio *w)
{
	long long now = time_mono_ms();
	struct io_uring_sqe *sqe;
	int r = 0;

	if (w->cancelled)
		return -ECANCELED;
	if (w->deadline && now >= w->deadline)
		return -ETIMEDOUT;
	if (now - w->running_since < WSIO_SLICE_MS)
		return 0;
	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_nop(sqe);
	r = wsio_wait(w, sqe);
	return r < 0 ? r : 0;
}

/* ---- paths and messages ---------------------------------------------- */

/* Append component c (n bytes) to out at *len.  0 or -ENAMETOOLONG. */
static int
wsio_path_add(char *out, size_t outlen, size_t *len, const char *c, size_t n)
{
	size_t need = *len + (*len ? 1 : 0) + n + 1;

	if (need > outlen)
		return -ENAMETOOLONG;
	if (*len)
		out[(*len)++] = '/';
	memcpy(out + *len, c, n);
	*len += n;
	out[*len] = '\0';
	return 0;
}

int
wsio_path(const char *in, char *out, size_t outlen, char *err,
    size_t errlen)
{
	const char *p = in ? in : "";
	size_t len = 0, rootlen = strlen(WSIO_ROOT);
	int depth = 0;

	out[0] = '\0';
	if (strncmp(p, WSIO_ROOT, rootlen) == 0 &&
	    (p[rootlen] == '\0' || p[rootlen] == '/'))
		p += rootlen;
	else if (p[0] == '/') {
		snprintf(err, errlen, "path escapes the workspace: %.300s is "
		    "outside /workspace; give a path relative to /workspace "
		    "or one under /workspace/", in);
		return -EINVAL;
	}
	while (*p) {
		const char *c;
		size_t n;

		while (*p == '/')
			p++;
		c = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - c);
		if (n == 0 || (n == 1 && c[0] == '.'))
			continue;
		depth += n == 2 && c[0] == '.' && c[1] == '.' ? -1 : 1;
		if (depth < 0) {
			snprintf(err, errlen, "path escapes the workspace: "
			    "%.300s goes above /workspace with \"..\"", in);
			return -EINVAL;
		}
		if (wsio_path_add(out, outlen, &len, c, n) < 0) {
			snprintf(err, errlen, "the path %.100s... is too long",
			    in);
			return -EINVAL;
		}
	}
	if (!len)
		snprintf(out, outlen, ".");
	return 0;
}

void
wsio_error(char *out, size_t outlen, const char *path, int err)
{
	switch (-err) {
	case EXDEV:
		snprintf(out, outlen, "path escapes the workspace: %s leads "
		    "outside /workspace (through \"..\", an absolute symbolic "
		    "link or one pointing outside); use a path inside the "
		    "workspace", path);
		break;
	case ELOOP:
		snprintf(out, outlen, "path escapes the workspace or loops: %s "
		    "goes through too many symbolic links or one the workspace "
		    "does not allow", path);
		break;
	case ENOENT:
		snprintf(out, outlen, "%s does not exist (use ls to see what "
		    "is there)", path);
		break;
	case EACCES:
	case EPERM:
		snprintf(out, outlen, "permission denied: %s (the sandbox user "
		    "has no right to it; check its mode and owner with bash "
		    "ls -l)", path);
		break;
	case ENOTDIR:
		snprintf(out, outlen, "%s: a component of the path is not a "
		    "directory", path);
		break;
	case EISDIR:
		snprintf(out, outlen, "%s is a directory (use ls to list it)",
		    path);
		break;
	case ENAMETOOLONG:
		snprintf(out, outlen, "%s: a name in the path is too long (255 "
		    "bytes at most)", path);
		break;
	case ENOSPC:
	case EDQUOT:
		snprintf(out, outlen, "%s: the workspace is full", path);
		break;
	case ECANCELED:
		snprintf(out, outlen, "%s: the call was stopped", path);
		break;
	default:
		snprintf(out, outlen, "%s: %s", path, strerror(-err));
	}
}

/* ---- operations (in the coroutine) ------------------------------------ */

int
wsio_open_root(struct wsio *w)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_openat(sqe, AT_FDCWD, w->a->workspace, O_PATH |
	    O_DIRECTORY | O_CLOEXEC, 0);
	r = wsio_wait(w, sqe);
	if (r >= 0)
		w->root = r;
	else
		log_warn("cannot open the workspace %s: %s", w->a->workspace,
		    strerror(-r));
	return r < 0 ? r : 0;
}

int
wsio_open(struct wsio *w, int dirfd, const char *rel, int flags, mode_t mode)
{
	struct open_how how = { .flags = (unsigned)(flags | O_CLOEXEC),
	    .mode = flags & O_CREAT ? mode : 0, .resolve = WSIO_RESOLVE |
	    w->resolve };
	struct io_uring_sqe *sqe;
	int r = 0;

	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_openat2(sqe, dirfd >= 0 ? dirfd : w->root, rel, &how);
	return wsio_wait(w, sqe);
}

int
wsio_fstat(struct wsio *w, int fd, struct statx *st)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_statx(sqe, fd, "", AT_EMPTY_PATH, WSIO_STATX, st);
	return wsio_wait(w, sqe);
}

int
wsio_stat_name(struct wsio *w, int dirfd, const char *name, struct statx *st)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (strchr(name, '/'))
		return -EINVAL;
	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_statx(sqe, dirfd, name, AT_SYMLINK_NOFOLLOW, WSIO_STATX,
	    st);
	return wsio_wait(w, sqe);
}

ssize_t
wsio_read(struct wsio *w, int fd, void *buf, size_t n, off_t off)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_read(sqe, fd, buf, (unsigned)(n > WSIO_READ_CHUNK ?
	    WSIO_READ_CHUNK : n), (__u64)off);
	return wsio_wait(w, sqe);
}

int
wsio_read_ended(size_t asked, ssize_t got, unsigned long long pos,
    unsigned long long size)
{
	if (asked > WSIO_READ_CHUNK)
		asked = WSIO_READ_CHUNK;
	return got >= 0 && (size_t)got < asked && pos >= size;
}

int
wsio_write_all(struct wsio *w, int fd, const void *buf, size_t n)
{
	const char *p = buf;
	size_t done = 0;

	while (done < n) {
		struct io_uring_sqe *sqe;
		size_t chunk = n - done > WSIO_READ_CHUNK ? WSIO_READ_CHUNK :
		    n - done;
		int r = 0;

		if (!(sqe = wsio_sqe(w, &r)))
			return r;
		io_uring_prep_write(sqe, fd, p + done, (unsigned)chunk,
		    (__u64)done);
		r = wsio_wait(w, sqe);
		if (r < 0)
			return r;
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

int
wsio_close(struct wsio *w, int fd)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (fd < 0)
		return 0;
	if (w->cancelled || !(sqe = wsio_sqe(w, &r)))
		return close(fd) < 0 ? -errno : 0;
	io_uring_prep_close(sqe, fd);
	return wsio_wait(w, sqe);
}

void
wsio_close_behind(struct wsio *w, int fd)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (fd < 0)
		return;
	if (w->cancelled || !(sqe = wsio_sqe(w, &r))) {
		close(fd);
		return;
	}
	io_uring_prep_close(sqe, fd);
	if (loop_io_submit(w->a->loop, sqe, NULL, NULL) < 0)
		close(fd);	/* the SQE became a no-op */
}

int
wsio_mkdir(struct wsio *w, int dirfd, const char *name, mode_t mode)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (strchr(name, '/'))
		return -EINVAL;
	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_mkdirat(sqe, dirfd, name, mode);
	return wsio_wait(w, sqe);
}

int
wsio_rename(struct wsio *w, int dirfd, const char *from, const char *to)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (strchr(from, '/') || strchr(to, '/'))
		return -EINVAL;
	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_renameat(sqe, dirfd, from, dirfd, to, 0);
	return wsio_wait(w, sqe);
}

/* unlinkat of one name in dirfd with flags (0 or AT_REMOVEDIR). */
static int
wsio_unlinkat(struct wsio *w, int dirfd, const char *name, int flags)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (strchr(name, '/'))
		return -EINVAL;
	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_unlinkat(sqe, dirfd, name, flags);
	return wsio_wait(w, sqe);
}

int
wsio_unlink(struct wsio *w, int dirfd, const char *name)
{
	return wsio_unlinkat(w, dirfd, name, 0);
}

int
wsio_rmdir(struct wsio *w, int dirfd, const char *name)
{
	return wsio_unlinkat(w, dirfd, name, AT_REMOVEDIR);
}

int
wsio_fsync(struct wsio *w, int fd)
{
	struct io_uring_sqe *sqe;
	int r = 0;

	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	io_uring_prep_fsync(sqe, fd, 0);
	return wsio_wait(w, sqe);
}

/* Read all of fd (size bytes expected, at most max) into a new buffer. */
static int
wsio_slurp(struct wsio *w, int fd, size_t size, size_t max, char **data,
    size_t *len)
{
	size_t cap = size + 1, n = 0, asked;
	char *p = malloc(cap + 1);
	ssize_t got;

	if (!p)
		return -ENOMEM;
	for (;;) {
		if (n == cap) {	/* the file grew: take more, up to max */
			char *q;

			if (cap > max) {
				free(p);
				return -EFBIG;
			}
			cap *= 2;
			q = realloc(p, cap + 1);
			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
		}
		asked = cap - n;
		got = wsio_read(w, fd, p + n, asked, (off_t)n);
		if (got < 0) {
			free(p);
			return (int)got;
		}
		if (got == 0)
			break;
		n += (size_t)got;
		if (wsio_read_ended(asked, got, n, size))
			break;
	}
	if (n > max) {
		free(p);
		return -EFBIG;
	}
	p[n] = '\0';
	*data = p;
	*len = n;
	return 0;
}

int
wsio_read_file(struct wsio *w, const char *rel, size_t max, char **data,
    size_t *len, struct statx *st)
{
	struct statx sx;
	int fd, r;

	*data = NULL;
	*len = 0;
	fd = wsio_open(w, -1, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	r = wsio_fstat(w, fd, &sx);
	if (r == 0 && S_ISDIR(sx.stx_mode))
		r = -EISDIR;
	else if (r == 0 && !S_ISREG(sx.stx_mode))
		r = -EINVAL;
	else if (r == 0 && sx.stx_size > max)
		r = -EFBIG;
	if (r == 0)
		r = wsio_slurp(w, fd, (size_t)sx.stx_size, max, data, len);
	wsio_close_behind(w, fd);
	if (r == 0 && st)
		*st = sx;
	return r;
}

/* The agent's directory reader, started on first use.  NULL on -ENOMEM. */
static struct dirworker *
wsio_dirworker(struct agent *a)
{
	if (!a->dirworker)
		a->dirworker = dirworker_new();
	return a->dirworker;
}

ssize_t
wsio_getdents(struct wsio *w, int fd, void *buf, size_t n)
{
	struct dirworker *d = wsio_dirworker(w->a);
	struct dirworker_job *j;
	struct io_uring_sqe *sqe;
	int r = 0;

	if (!(sqe = wsio_sqe(w, &r)))
		return r;
	j = calloc(1, sizeof(*j));
	if (!d || !j) {
		free(j);
		io_uring_prep_nop(sqe);
		wsio_wait(w, sqe);
		return -ENOMEM;
	}
	*j = (struct dirworker_job){ .fd = fd, .buf = buf, .n = n };
	j->efd = eventfd(0, EFD_CLOEXEC);
	r = j->efd < 0 ? -errno : dirworker_post(d, j);
	if (r < 0) {
		if (j->efd >= 0)
			close(j->efd);
		free(j);
		io_uring_prep_nop(sqe);
		wsio_wait(w, sqe);
		return r;
	}
	io_uring_prep_read(sqe, j->efd, &j->count, sizeof(j->count), 0);
	r = wsio_wait(w, sqe);
	if (r != (int)sizeof(j->count)) {
		/* The ring would not take the read (out of slots): wait for
		 * the worker here, since it will still write to j and buf. */
		eventfd_t v;

		while (eventfd_read(j->efd, &v) < 0 && errno == EINTR)
			;
	}
	r = (int)j->res;
	close(j->efd);
	free(j);
	return r;
}
