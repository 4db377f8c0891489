/*
 * file_requests.c: the workspace's files for a connection (file_requests.h).
 *
 * Shape.  Each request is a job: a coroutine on the file tools' confined
 * path (wsio.h), started from a 0 ms timer, whose body does the I/O and
 * builds the answer; its finished hook, on the loop's stack, records the
 * audit and answers the connection if it is still there (found again by
 * pointer among the live connections and compared by user: it may have
 * gone meanwhile).  The answer to an open carries a descriptor, queued
 * with exactly its line (conn_queue_event_fd).
 *
 * Uploads.  An open for writing makes a temporary file (FILE_TMP_PREFIX,
 * O_EXCL, the target's mode or 0644) in the target's directory, made with
 * its missing parents; the target itself is only checked (not a link, not
 * a directory, writable by the sandbox uid when it exists).  The upload
 * waits on a->uploads, keyed by its connection and request id, with the
 * agent's own descriptor of the file, until file_commit fsyncs that
 * descriptor and renames the file over the target (so a reader sees the
 * old file or the new one, never half of one), or file_abort or the
 * connection's end removes it.  A job takes its upload off the list
 * before it starts, so nothing else can act on it meanwhile.
 *
 * Audit.  Before anything changes, its audit row is on disk
 * (room_db_audit_start, kind file), as for a command; its end says
 * whether it happened (exit code 0 and wrote 1) or not (1 and 0).
 * Listing, stat and reading are not audited, as the chat's completion
 * is not.
 *
 * A job still running at shutdown is left to the process's exit (as
 * ws_list.c's are); so are uploads whose connection ended then: their
 * temporary files are removed at the next start (file_sweep.c).
 */
#include "file_requests.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"
#include "conn.h"
#include "jsonl.h"
#include "log.h"
#include "room_events.h"
#include "room_db.h"
#include "utf8.h"
#include "util.h"
#include "wsio.h"

#define FILE_ID_MAX	64		/* bytes of a request id */
#define FILE_DENTS	(32 * 1024)	/* getdents buffer */
#define FILE_LIST_BUDGET_S 30		/* a listing's time at most */
#define FILE_LIST_BYTES	(768 * 1024)	/* a listing's names at most: the
					 * answer stays one line of
					 * PROTO_MAX_LINE */

enum file_op {
	FILE_READ, FILE_WRITE, FILE_COMMIT, FILE_ABORT, FILE_DROP,
	FILE_LIST, FILE_STAT, FILE_DELETE, FILE_MKDIR
};

struct file_upload {
	struct file_upload *next;
	struct conn *c;			/* compared, never followed */
	char id[FILE_ID_MAX];
	char rel[PATH_MAX];		/* the target */
	char name[NAME_MAX + 1];	/* its last name */
	char tmp[64];			/* the temporary file, beside it */
	int dirfd;			/* O_PATH of their directory */
	int fd;				/* the agent's descriptor of tmp */
	long long audit_id;
};

struct file_job {
	struct wsio w;			/* the coroutine's state */
	struct agent *a;
	struct conn *c;			/* to answer (compared, never
					 * followed), or NULL */
	char user[64];
	char id[FILE_ID_MAX];
	enum file_op op;
	char rel[PATH_MAX];
	int err;			/* the body's result */
	json_object *ans;		/* the answer the body built */
	int fd;				/* to pass with it, or -1 */
	struct file_upload *up;		/* write: the new one; commit, abort,
					 * drop: the one acted on */
	long long audit_id;		/* write, delete, mkdir: its row, or 0 */
};

/* ---- paths and errors (pure) --------------------------------------------- */

int
file_path_rel(const char *in, size_t len, char *out, size_t outlen,
    const char **why)
{
	size_t o = 0, i = 0;

	*why = NULL;
	if (memchr(in, '\0', len)) {
		*why = "a path may not hold a NUL byte";
		return -EINVAL;
	}
	if (len >= PATH_MAX || outlen < 2) {
		*why = "the path is longer than PATH_MAX (4096 bytes)";
		return -ENAMETOOLONG;
	}
	while (i < len) {
		size_t start, n;

		while (i < len && in[i] == '/')
			i++;
		start = i;
		while (i < len && in[i] != '/')
			i++;
		n = i - start;
		if (n == 0)
			continue;
		if ((n == 1 && in[start] == '.') || (n == 2 &&
		    in[start] == '.' && in[start + 1] == '.')) {
			*why = "a path may not have \".\" or \"..\" as a name";
			return -EINVAL;
		}
		if (n > NAME_MAX) {
			*why = "a name in the path is longer than 255 bytes";
			return -ENAMETOOLONG;
		}
		if (o + (o ? 1 : 0) + n + 1 > outlen) {
			*why = "the path is too long";
			return -ENAMETOOLONG;
		}
		if (o)
			out[o++] = '/';
		memcpy(out + o, in + start, n);
		o += n;
	}
	if (!o)
		out[o++] = '.';
	out[o] = '\0';
	return 0;
}

const char *
file_error_code(int err)
{
	switch (-err) {
	case ENOENT:		return "not_found";
	case EEXIST:		return "exists";
	case ENOTEMPTY:		return "not_empty";
	case EISDIR:		return "is_directory";
	case ENOTDIR:		return "not_directory";
	case EINVAL:		return "bad_path";
	case ENAMETOOLONG:	return "bad_path";
	case ENXIO:		return "not_file";
	case EACCES:
	case EPERM:		return "denied";
	case ELOOP:
	case EXDEV:		return "symlink";
	case ENOSPC:
	case EDQUOT:		return "no_space";
	case EBUSY:		return "busy";
	case EMFILE:		return "too_many";
	case EROFS:		return "read_only";
	default:		return "failed";
	}
}

/* What went wrong with path, for people (the code says it to programs). */
static void
file_error_text(char *out, size_t outlen, const char *path, int err)
{
	switch (-err) {
	case ENOENT:
		snprintf(out, outlen, "%s does not exist", path);
		break;
	case EEXIST:
		snprintf(out, outlen, "%s already exists", path);
		break;
	case ENOTEMPTY:
		snprintf(out, outlen, "%s is a directory that is not empty: "
		    "delete what it holds first", path);
		break;
	case EISDIR:
		snprintf(out, outlen, "%s is a directory", path);
		break;
	case ENOTDIR:
		snprintf(out, outlen, "%s: a name on the path is not a "
		    "directory", path);
		break;
	case ENXIO:
		snprintf(out, outlen, "%s is not a regular file", path);
		break;
	case EACCES:
	case EPERM:
		snprintf(out, outlen, "permission denied: the room's sandbox "
		    "user may not do this to %s (see its mode with ls -l)",
		    path);
		break;
	case ELOOP:
	case EXDEV:
		snprintf(out, outlen, "%s goes through a symbolic link: files "
		    "are reached only by paths without links", path);
		break;
	case ENOSPC:
	case EDQUOT:
		snprintf(out, outlen, "the workspace is full (its quota): "
		    "nothing of %s was kept; delete files and try again", path);
		break;
	case EBUSY:
		snprintf(out, outlen, "%s is the workspace itself, which "
		    "cannot be replaced or deleted", path);
		break;
	case EMFILE:
		snprintf(out, outlen, "too many uploads are open on this "
		    "connection (at most %d): commit or abort one first",
		    FILE_UPLOADS_PER_CONN);
		break;
	default:
		snprintf(out, outlen, "%s: %s", path, strerror(-err));
	}
}

/* An `error` for request id of c about path: message and code. */
static void
file_error(struct conn *c, const char *id, const char *path, int err)
{
	char msg[PATH_MAX + 256];
	json_object *ev;

	file_error_text(msg, sizeof(msg), path, err);
	ev = room_event_new("error");
	json_object_object_add(ev, "message", json_object_new_string(msg));
	json_object_object_add(ev, "id", json_object_new_string(id));
	json_object_object_add(ev, "code",
	    json_object_new_string(file_error_code(err)));
	room_send(c, ev);
}

/* A new answer {type, id, path}. */
static json_object *
file_answer(const struct file_job *j, const char *type)
{
	json_object *ev = room_event_new(type);

	json_object_object_add(ev, "id", json_object_new_string(j->id));
	json_object_object_add(ev, "path", json_object_new_string(j->rel));
	return ev;
}

/* size, mtime (s), mtime_ns and ino of st into ev. */
static void
file_put_stat(json_object *ev, const struct statx *st)
{
	json_object_object_add(ev, "size",
	    json_object_new_int64((int64_t)st->stx_size));
	json_object_object_add(ev, "mtime",
	    json_object_new_int64(st->stx_mtime.tv_sec));
	json_object_object_add(ev, "mtime_ns",
	    json_object_new_int64(st->stx_mtime.tv_nsec));
	json_object_object_add(ev, "ino",
	    json_object_new_int64((int64_t)st->stx_ino));
}

/* What a mode is, in a listing's words. */
static const char *
file_kind(mode_t mode)
{
	if (S_ISREG(mode))
		return "file";
	if (S_ISDIR(mode))
		return "directory";
	if (S_ISLNK(mode))
		return "symlink";
	return "other";
}

/* Split rel into its directory (into dir) and last name.  NULL when rel
 * names the root. */
static const char *
file_split(const char *rel, char *dir, size_t dirlen)
{
	const char *slash = strrchr(rel, '/');

	if (strcmp(rel, ".") == 0)
		return NULL;
	snprintf(dir, dirlen, "%.*s", slash ? (int)(slash - rel) : 1,
	    slash ? rel : ".");
	return slash ? slash + 1 : rel;
}

/* ---- the bodies (in the coroutine) --------------------------------------- */

/* An O_PATH descriptor of directory dir, made with its missing parents
 * (the sandbox uid's, 0755) when make.  The fd or -errno. */
static int
file_dir(struct wsio *w, const char *dir, int make)
{
	char prefix[PATH_MAX], name[NAME_MAX + 1];
	const char *p = dir;
	int fd, parent = -1, r;

	fd = wsio_open(w, -1, dir, O_PATH | O_DIRECTORY, 0);
	if (fd != -ENOENT || !make)
		return fd;
	fd = -1;
	while (*p) {
		const char *c = p;

		while (*p && *p != '/')
			p++;
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(p - dir), dir);
		snprintf(name, sizeof(name), "%.*s", (int)(p - c), c);
		parent = fd;
		fd = wsio_open(w, -1, prefix, O_PATH | O_DIRECTORY, 0);
		if (fd == -ENOENT) {
			r = wsio_mkdir(w, parent >= 0 ? parent : w->root, name,
			    0755);
			fd = r < 0 && r != -EEXIST ? r : wsio_open(w, -1,
			    prefix, O_PATH | O_DIRECTORY, 0);
		}
		wsio_close_behind(w, parent);
		if (fd < 0)
			return fd;
		if (*p)
			p++;
	}
	return fd;
}

/* The entry name of dirfd: its statx, -ELOOP for a link. */
static int
file_stat_name(struct wsio *w, int dirfd, const char *name,
    struct statx *st)
{
	int r = wsio_stat_name(w, dirfd, name, st);

	return r == 0 && S_ISLNK(st->stx_mode) ? -ELOOP : r;
}

static int
file_read_body(struct file_job *j)
{
	struct statx st;
	int fd, r;

	fd = wsio_open(&j->w, -1, j->rel, O_RDONLY | O_NOCTTY | O_NONBLOCK |
	    O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	r = wsio_fstat(&j->w, fd, &st);
	if (r == 0 && S_ISDIR(st.stx_mode))
		r = -EISDIR;
	else if (r == 0 && !S_ISREG(st.stx_mode))
		r = -ENXIO;
	/* O_NONBLOCK was for the open (a FIFO must not hang it); the peer
	 * reads a regular file, which it must see block as usual. */
	if (r == 0 && fcntl(fd, F_SETFL, 0) < 0)
		r = -errno;
	if (r < 0) {
		wsio_close_behind(&j->w, fd);
		return r;
	}
	j->fd = fd;
	j->ans = file_answer(j, "file_opened");
	json_object_object_add(j->ans, "mode", json_object_new_string("read"));
	file_put_stat(j->ans, &st);
	return 0;
}

/* The target name in dirfd may be replaced: 0 with *mode and *existed,
 * or -errno (a link, a directory, not regular, not writable). */
static int
file_write_target(struct wsio *w, int dirfd, const char *name, mode_t *mode,
    int *existed)
{
	struct statx st;
	int fd, r;

	*existed = 0;
	*mode = 0644;
	r = file_stat_name(w, dirfd, name, &st);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (S_ISDIR(st.stx_mode))
		return -EISDIR;
	if (!S_ISREG(st.stx_mode))
		return -ENXIO;
	*existed = 1;
	*mode = st.stx_mode & 07777;
	fd = wsio_open(w, dirfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK, 0);
	if (fd < 0)
		return fd;
	wsio_close(w, fd);
	return 0;
}

static int
file_write_body(struct file_job *j)
{
	struct file_upload *up = j->up;
	char dir[PATH_MAX];
	const char *name = file_split(j->rel, dir, sizeof(dir));
	mode_t mode;
	int existed, fd = -EEXIST, r;

	if (!name)
		return -EBUSY;
	if (strncmp(name, FILE_TMP_PREFIX, strlen(FILE_TMP_PREFIX)) == 0)
		return -EINVAL;
	snprintf(up->name, sizeof(up->name), "%s", name);
	if ((up->dirfd = file_dir(&j->w, dir, 1)) < 0)
		return up->dirfd;
	if ((r = file_write_target(&j->w, up->dirfd, name, &mode, &existed)) < 0)
		return r;
	for (int i = 0; i < 8 && fd == -EEXIST; i++) {
		snprintf(up->tmp, sizeof(up->tmp), FILE_TMP_PREFIX "%d-%lld-%d",
		    (int)getpid(), time_mono_ms(), i);
		fd = wsio_open(&j->w, up->dirfd, up->tmp, O_WRONLY | O_CREAT |
		    O_EXCL | O_NOFOLLOW, mode);
	}
	if (fd < 0)
		return fd;
	up->fd = fd;
	if ((j->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
		r = -errno;
		wsio_unlink(&j->w, up->dirfd, up->tmp);
		return r;
	}
	j->ans = file_answer(j, "file_opened");
	json_object_object_add(j->ans, "mode", json_object_new_string("write"));
	json_object_object_add(j->ans, "created",
	    json_object_new_boolean(!existed));
	return 0;
}

/* Close an upload's descriptors (its temporary file stays as it is). */
static void
file_upload_close(struct wsio *w, struct file_upload *up)
{
	if (up->fd >= 0)
		wsio_close(w, up->fd);
	wsio_close_behind(w, up->dirfd);
	up->fd = up->dirfd = -1;
}

static int
file_commit_body(struct file_job *j)
{
	struct file_upload *up = j->up;
	struct statx st;
	int r;

	r = wsio_fsync(&j->w, up->fd);
	if (r == 0)
		r = wsio_fstat(&j->w, up->fd, &st);
	if (r == 0)
		r = wsio_close(&j->w, up->fd);	/* a late error shows here */
	up->fd = -1;
	if (r == 0)
		r = wsio_rename(&j->w, up->dirfd, up->tmp, up->name);
	if (r < 0)
		wsio_unlink(&j->w, up->dirfd, up->tmp);
	file_upload_close(&j->w, up);
	if (r < 0)
		return r;
	j->ans = file_answer(j, "file_done");
	json_object_object_add(j->ans, "op", json_object_new_string("commit"));
	json_object_object_add(j->ans, "size",
	    json_object_new_int64((int64_t)st.stx_size));
	return 0;
}

/* abort and drop: the temporary file goes. */
static int
file_abort_body(struct file_job *j)
{
	struct file_upload *up = j->up;
	int r;

	if (up->fd >= 0)
		wsio_close(&j->w, up->fd);
	up->fd = -1;
	r = wsio_unlink(&j->w, up->dirfd, up->tmp);
	if (r < 0)
		log_warn("upload of %s: its temporary file %s not removed: %s",
		    up->rel, up->tmp, strerror(-r));
	file_upload_close(&j->w, up);
	j->ans = file_answer(j, "file_done");
	json_object_object_add(j->ans, "op", json_object_new_string("abort"));
	return 0;
}

/* One entry of a listing, or 0 without adding one (skipped). */
static int
file_list_entry(struct file_job *j, int fd, const char *name,
    json_object *entries)
{
	struct statx st;
	json_object *e;
	int r;

	if (!strcmp(name, ".") || !strcmp(name, "..") ||
	    !strncmp(name, FILE_TMP_PREFIX, strlen(FILE_TMP_PREFIX)))
		return 0;
	/* A name that is not UTF-8 cannot be said in JSON as it is: it is
	 * left out (ssh shows it) rather than shown as another name. */
	if (!utf8_valid(name, strlen(name)))
		return 0;
	if ((r = wsio_stat_name(&j->w, fd, name, &st)) < 0)
		return r == -ENOENT ? 0 : r;	/* gone meanwhile */
	e = json_object_new_object();
	json_object_object_add(e, "name", json_object_new_string(name));
	json_object_object_add(e, "type",
	    json_object_new_string(file_kind(st.stx_mode)));
	json_object_object_add(e, "size",
	    json_object_new_int64((int64_t)st.stx_size));
	json_object_object_add(e, "mtime",
	    json_object_new_int64(st.stx_mtime.tv_sec));
	json_object_array_add(entries, e);
	return 0;
}

static int
file_list_cmp(const void *a, const void *b)
{
	return strcmp(json_get_string(*(json_object *const *)a, "name"),
	    json_get_string(*(json_object *const *)b, "name"));
}

/* The entries of directory fd into entries; *truncated set when there
 * were more than a listing holds.  0 or -errno. */
static int
file_list_read(struct file_job *j, int fd, json_object *entries,
    int *truncated)
{
	char *dents = malloc(FILE_DENTS);
	size_t bytes = 0;
	ssize_t n;
	int r = dents ? 0 : -ENOMEM;

	while (r == 0 && (n = wsio_getdents(&j->w, fd, dents,
	    FILE_DENTS)) != 0) {
		if (n < 0) {
			r = (int)n;
			break;
		}
		for (ssize_t off = 0; r == 0 && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);

			off += d->d_reclen;
			if (json_object_array_length(entries) >= FILE_LIST_MAX ||
			    bytes > FILE_LIST_BYTES) {
				*truncated = 1;
				free(dents);
				return 0;
			}
			bytes += strlen(d->d_name) + 64;
			if ((r = wsio_pace(&j->w)) == 0)
				r = file_list_entry(j, fd, d->d_name, entries);
		}
	}
	free(dents);
	return r;
}

static int
file_list_body(struct file_job *j)
{
	json_object *entries = json_object_new_array();
	int fd, r, truncated = 0;

	fd = wsio_open(&j->w, -1, j->rel, O_RDONLY | O_DIRECTORY, 0);
	r = fd < 0 ? fd : file_list_read(j, fd, entries, &truncated);
	wsio_close_behind(&j->w, fd);
	if (r < 0) {
		json_object_put(entries);
		return r == -ETIMEDOUT ? -EBUSY : r;
	}
	json_object_array_sort(entries, file_list_cmp);
	j->ans = file_answer(j, "file_listing");
	json_object_object_add(j->ans, "entries", entries);
	json_object_object_add(j->ans, "truncated",
	    json_object_new_boolean(truncated));
	return 0;
}

static int
file_stat_body(struct file_job *j)
{
	struct statx st;
	int fd, r;

	fd = wsio_open(&j->w, -1, j->rel, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	r = wsio_fstat(&j->w, fd, &st);
	wsio_close_behind(&j->w, fd);
	if (r == 0 && S_ISLNK(st.stx_mode))
		r = -ELOOP;
	if (r < 0)
		return r;
	j->ans = file_answer(j, "file_info");
	json_object_object_add(j->ans, "kind",
	    json_object_new_string(file_kind(st.stx_mode)));
	file_put_stat(j->ans, &st);
	return 0;
}

/* delete and mkdir. */
static int
file_change_body(struct file_job *j)
{
	char dir[PATH_MAX];
	const char *name = file_split(j->rel, dir, sizeof(dir));
	struct statx st;
	int dirfd, r;

	if (!name)
		return j->op == FILE_MKDIR ? -EEXIST : -EBUSY;
	if ((dirfd = file_dir(&j->w, dir, j->op == FILE_MKDIR)) < 0)
		return dirfd;
	if (j->op == FILE_MKDIR) {
		r = wsio_mkdir(&j->w, dirfd, name, 0755);
	} else if ((r = file_stat_name(&j->w, dirfd, name, &st)) == 0) {
		r = S_ISDIR(st.stx_mode) ? wsio_rmdir(&j->w, dirfd, name) :
		    wsio_unlink(&j->w, dirfd, name);
	}
	wsio_close_behind(&j->w, dirfd);
	if (r < 0)
		return r;
	j->ans = file_answer(j, "file_done");
	json_object_object_add(j->ans, "op", json_object_new_string(
	    j->op == FILE_MKDIR ? "mkdir" : "delete"));
	return 0;
}

static void
file_body(struct wsio *w)
{
	struct file_job *j = w->arg;

	w->resolve = RESOLVE_NO_SYMLINKS;
	if (j->op == FILE_COMMIT) {
		j->err = file_commit_body(j);
		return;
	}
	if (j->op == FILE_ABORT || j->op == FILE_DROP) {
		j->err = file_abort_body(j);
		return;
	}
	if ((j->err = wsio_open_root(w)) < 0)
		return;
	switch (j->op) {
	case FILE_READ:		j->err = file_read_body(j); break;
	case FILE_WRITE:	j->err = file_write_body(j); break;
	case FILE_LIST:		j->err = file_list_body(j); break;
	case FILE_STAT:		j->err = file_stat_body(j); break;
	default:		j->err = file_change_body(j); break;
	}
}

/* ---- jobs, on the loop's stack ------------------------------------------- */

/* The connection a job answers, if it is still there. */
static struct conn *
file_conn(struct file_job *j)
{
	struct conn *c = j->a->conns;

	if (!j->c)
		return NULL;
	while (c && c != j->c)
		c = c->next;
	return c && !c->closing && !c->ending &&
	    strcmp(c->user, j->user) == 0 ? c : NULL;
}

static void
file_job_free(struct file_job *j)
{
	if (j->fd >= 0)
		close(j->fd);
	json_object_put(j->ans);
	free(j->up);
	free(j);
}

/* The end of audit row id: done (1: it happened and changed the
 * workspace) or not. */
static void
file_audit_end(struct agent *a, long long id, int done)
{
	int r;

	if (id <= 0)
		return;
	r = room_db_audit_end(a->db, id, done ? 0 : 1, NULL);
	if (r == 0)
		r = room_db_audit_wrote(a->db, id, done);
	if (r < 0)
		log_error("the end of audit row %lld not recorded: %s", id,
		    room_db_strerror(r));
}

static int file_job_start(struct agent *a, struct conn *c, enum file_op op,
    const char *id, const char *rel, struct file_upload *up,
    long long audit_id);

/* An upload whose connection is gone: its temporary file goes. */
static void
file_upload_drop(struct agent *a, struct file_upload *up)
{
	if (file_job_start(a, NULL, FILE_DROP, up->id, up->rel, up,
	    up->audit_id) == 0)
		return;
	/* No memory for a job: remove it here (one unlink, on the loop). */
	if (unlinkat(up->dirfd, up->tmp, 0) < 0)
		log_warn("upload of %s: %s not removed: %s", up->rel, up->tmp,
		    strerror(errno));
	file_audit_end(a, up->audit_id, 0);
	close(up->fd);
	close(up->dirfd);
	free(up);
}

/* A write open has finished: its upload waits for c's commit, or goes
 * when c went meanwhile or the open failed. */
static void
file_write_finished(struct file_job *j, struct conn *c)
{
	struct file_upload *up = j->up;

	j->up = NULL;
	if (j->err < 0) {
		file_audit_end(j->a, up->audit_id, 0);
		if (up->fd >= 0)
			close(up->fd);
		if (up->dirfd >= 0)
			close(up->dirfd);
		free(up);
	} else if (!c) {
		file_upload_drop(j->a, up);
	} else {
		up->next = j->a->uploads;
		j->a->uploads = up;
	}
}

static void
file_finished(struct wsio *w)
{
	struct file_job *j = w->arg;
	struct conn *c = file_conn(j);
	int fd = j->fd;

	wsio_release(w);
	if (j->op == FILE_WRITE)
		file_write_finished(j, c);
	else if (j->op == FILE_COMMIT || j->op == FILE_ABORT ||
	    j->op == FILE_DROP)
		file_audit_end(j->a, j->audit_id, j->op == FILE_COMMIT &&
		    j->err == 0);
	else if (j->op == FILE_DELETE || j->op == FILE_MKDIR)
		file_audit_end(j->a, j->audit_id, j->err == 0);
	if (!c) {
		/* nobody to tell */
	} else if (j->err < 0) {
		file_error(c, j->id, j->rel, j->err);
	} else if (fd >= 0) {
		j->fd = -1;
		json_object_object_add(j->ans, "fds", json_object_new_int(1));
		if (conn_queue_event_fd(c, j->ans, fd) < 0)
			log_warn("%s: %s not passed: the connection is "
			    "closing or too far behind", c->user, j->rel);
	} else {
		room_send(c, j->ans);
		j->ans = NULL;
	}
	file_job_free(j);
}

/* Start op for c (NULL: no answer).  Takes up.  0 or -ENOMEM (up is
 * still the caller's). */
static int
file_job_start(struct agent *a, struct conn *c, enum file_op op,
    const char *id, const char *rel, struct file_upload *up,
    long long audit_id)
{
	struct file_job *j = calloc(1, sizeof(*j));

	if (!j || wsio_init(&j->w, a, file_body, file_finished, j) < 0) {
		free(j);
		return -ENOMEM;
	}
	j->a = a;
	j->c = c;
	if (c)
		snprintf(j->user, sizeof(j->user), "%s", c->user);
	snprintf(j->id, sizeof(j->id), "%s", id);
	snprintf(j->rel, sizeof(j->rel), "%s", rel);
	j->op = op;
	j->fd = -1;
	j->up = up;
	j->audit_id = audit_id;
	if (op == FILE_LIST)
		wsio_budget(&j->w, FILE_LIST_BUDGET_S);
	if (wsio_start(&j->w) < 0) {
		wsio_release(&j->w);
		free(j);
		return -ENOMEM;
	}
	return 0;
}

/* ---- requests ------------------------------------------------------------ */

static const struct {
	const char *type;
	enum file_op op;
} file_types[] = {
	{ "file_list", FILE_LIST },
	{ "file_stat", FILE_STAT },
	{ "file_delete", FILE_DELETE },
	{ "file_mkdir", FILE_MKDIR },
	{ "file_commit", FILE_COMMIT },
	{ "file_abort", FILE_ABORT },
	{ "file_open", FILE_READ },	/* or FILE_WRITE: its mode */
};

/* c's upload of request id, taken off the list, or NULL. */
static struct file_upload *
file_upload_take(struct agent *a, struct conn *c, const char *id)
{
	for (struct file_upload **pp = &a->uploads; *pp; pp = &(*pp)->next) {
		struct file_upload *up = *pp;

		if (up->c == c && strcmp(up->id, id) == 0) {
			*pp = up->next;
			up->next = NULL;
			return up;
		}
	}
	return NULL;
}

/* How many uploads c has open, and whether one has request id. */
static int
file_uploads_of(struct agent *a, struct conn *c, const char *id, int *dup)
{
	int n = 0;

	*dup = 0;
	for (struct file_upload *up = a->uploads; up; up = up->next)
		if (up->c == c) {
			n++;
			*dup |= strcmp(up->id, id) == 0;
		}
	return n;
}

/* commit and abort of c's upload id. */
static void
file_finish_upload(struct conn *c, enum file_op op, const char *id)
{
	struct file_upload *up = file_upload_take(c->a, c, id);

	if (!up) {
		file_error(c, id, id, -ENOENT);
		return;
	}
	if (file_job_start(c->a, c, op, id, up->rel, up, up->audit_id) < 0) {
		/* Back on the list: the connection's end removes it. */
		up->next = c->a->uploads;
		c->a->uploads = up;
		file_error(c, id, up->rel, -ENOMEM);
	}
}

/* A new upload of rel for c's request id, its audit row on disk first.
 * NULL (error sent) when it may not start. */
static struct file_upload *
file_upload_new(struct conn *c, const char *id, const char *rel)
{
	struct file_upload *up;
	char what[PATH_MAX + 16];
	int dup, r;

	if (file_uploads_of(c->a, c, id, &dup) >= FILE_UPLOADS_PER_CONN) {
		file_error(c, id, rel, -EMFILE);
		return NULL;
	}
	if (dup) {
		room_error(c, id, "an upload with id %s is already open on this "
		    "connection: give each its own id", id);
		return NULL;
	}
	if (!(up = calloc(1, sizeof(*up)))) {
		file_error(c, id, rel, -ENOMEM);
		return NULL;
	}
	up->c = c;
	up->fd = up->dirfd = -1;
	snprintf(up->id, sizeof(up->id), "%s", id);
	snprintf(up->rel, sizeof(up->rel), "%s", rel);
	snprintf(what, sizeof(what), "put %s", rel);
	if ((r = room_db_audit_start(c->a->db, c->user, "file", what,
	    WSIO_ROOT, &up->audit_id)) < 0) {
		room_error(c, id, "%s was not written: the room could not "
		    "record it in its audit (%s)", rel, room_db_strerror(r));
		free(up);
		return NULL;
	}
	return up;
}

/* The op a request asks for (file_open's by its mode), or -1 (error
 * sent). */
static int
file_request_op(struct conn *c, const char *type, const char *id,
    json_object *req)
{
	const char *mode = json_get_string(req, "mode");

	for (size_t i = 0; i < sizeof(file_types) / sizeof(file_types[0]);
	    i++) {
		if (strcmp(file_types[i].type, type) != 0)
			continue;
		if (file_types[i].op != FILE_READ)
			return (int)file_types[i].op;
		if (mode && strcmp(mode, "read") == 0)
			return FILE_READ;
		if (mode && strcmp(mode, "write") == 0)
			return FILE_WRITE;
		room_error(c, id, "file_open needs a mode: read or write");
		return -1;
	}
	room_error(c, id, "unknown request type \"%s\"", type);
	return -1;
}

/* The request's path, checked, into rel.  0 or -1 (error sent). */
static int
file_request_path(struct conn *c, const char *id, json_object *req,
    char *rel, size_t rellen)
{
	json_object *p = NULL;
	const char *why;
	int r;

	if (!json_object_object_get_ex(req, "path", &p) ||
	    !json_object_is_type(p, json_type_string)) {
		room_error(c, id, "a file request needs a \"path\" (relative "
		    "to the workspace)");
		return -1;
	}
	r = file_path_rel(json_object_get_string(p),
	    (size_t)json_object_get_string_len(p), rel, rellen, &why);
	if (r < 0) {
		json_object *ev = room_event_new("error");

		json_object_object_add(ev, "message",
		    json_object_new_string(why));
		json_object_object_add(ev, "id", json_object_new_string(id));
		json_object_object_add(ev, "code",
		    json_object_new_string("bad_path"));
		room_send(c, ev);
		return -1;
	}
	return 0;
}

/* The audit row of a delete or mkdir, on disk before it runs: its id, or
 * -1 (error sent). */
static long long
file_audit_start(struct conn *c, const char *id, const char *verb,
    const char *rel)
{
	char what[PATH_MAX + 16];
	long long row = 0;
	int r;

	snprintf(what, sizeof(what), "%s %s", verb, rel);
	r = room_db_audit_start(c->a->db, c->user, "file", what, WSIO_ROOT,
	    &row);
	if (r < 0) {
		room_error(c, id, "nothing was changed: the room could not "
		    "record the %s of %s in its audit (%s)", verb, rel,
		    room_db_strerror(r));
		return -1;
	}
	return row;
}

void
file_request(struct conn *c, const char *type, json_object *req)
{
	const char *id = json_get_string(req, "id");
	char rel[PATH_MAX];
	struct file_upload *up = NULL;
	long long audit = 0;
	int op;

	if (!id || !*id || strlen(id) >= FILE_ID_MAX) {
		room_error(c, NULL, "%s needs an \"id\" of 1 to %d bytes", type,
		    FILE_ID_MAX - 1);
		return;
	}
	if ((op = file_request_op(c, type, id, req)) < 0)
		return;
	if (op == FILE_COMMIT || op == FILE_ABORT) {
		file_finish_upload(c, (enum file_op)op, id);
		return;
	}
	if (file_request_path(c, id, req, rel, sizeof(rel)) < 0)
		return;
	if (op == FILE_WRITE && c->read_only) {
		json_object *ev = room_event_new("error");

		json_object_object_add(ev, "message", json_object_new_string(
		    "read-only: this connection's token may read the "
		    "workspace, not write to it"));
		json_object_object_add(ev, "id", json_object_new_string(id));
		json_object_object_add(ev, "code",
		    json_object_new_string("read_only"));
		room_send(c, ev);
		return;
	}
	if (op == FILE_WRITE && !(up = file_upload_new(c, id, rel)))
		return;
	if ((op == FILE_DELETE || op == FILE_MKDIR) && (audit =
	    file_audit_start(c, id, op == FILE_DELETE ? "delete" : "mkdir",
	    rel)) < 0)
		return;
	if (file_job_start(c->a, c, (enum file_op)op, id, rel, up,
	    up ? up->audit_id : audit) < 0) {
		file_audit_end(c->a, up ? up->audit_id : audit, 0);
		free(up);
		file_error(c, id, rel, -ENOMEM);
	}
}

void
file_requests_conn_gone(struct agent *a, struct conn *c)
{
	struct file_upload **pp = &a->uploads, *up;

	while ((up = *pp)) {
		if (up->c != c) {
			pp = &up->next;
			continue;
		}
		*pp = up->next;
		up->next = NULL;
		up->c = NULL;
		file_upload_drop(a, up);
	}
}
