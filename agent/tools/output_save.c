/*
 * output_save.c: saving a bash call's whole output in the workspace
 * (output_save.h).  Called by tool_bash.c when a command's output was more
 * than the model is sent.
 *
 * The work runs in a wsio coroutine started from a zero timer (never
 * inside the caller's callback): open the root, make .atrium and
 * .atrium/output when missing (as directories only: an existing name of
 * another kind, or a symlink, fails the save), remove the oldest of our
 * files beyond OUTPUT_SAVE_KEEP - 1, write the new file under a name
 * nobody else has (O_EXCL) and remove it again when the write fails (a
 * full quota), so a partial file is never left behind.
 */
#include "output_save.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "log.h"
#include "wsio.h"

#define OUTPUT_SAVE_PREFIX	"bash-"
#define OUTPUT_SAVE_NAME_MAX	128
#define OUTPUT_SAVE_SCAN_MAX	4096	/* names looked at when pruning */

struct output_save {
	struct agent *a;
	struct wsio w;
	char name[OUTPUT_SAVE_NAME_MAX];	/* the file's name */
	char *data;			/* what to write (ours) */
	size_t len;
	int err;			/* the body's outcome */
	output_save_done_fn *done;	/* NULL once cancelled */
	void *arg;
};

void
output_save_name(char *out, size_t outlen, const char *call_id,
    long long time_ms)
{
	time_t s = (time_t)(time_ms / 1000);
	struct tm tm;
	char id[65];
	size_t n = 0;

	for (const char *p = call_id; *p && n < sizeof(id) - 1; p++)
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_')
			id[n++] = *p;
	id[n] = '\0';
	gmtime_r(&s, &tm);
	snprintf(out, outlen, OUTPUT_SAVE_PREFIX "%04d%02d%02d-%02d%02d%02d-"
	    "%03lld%s%s.txt", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	    tm.tm_hour, tm.tm_min, tm.tm_sec, time_ms % 1000, n ? "-" : "",
	    id);
}

/* The directory name beneath dirfd (-1: the root), made when missing.
 * An O_RDONLY directory fd or -errno. */
static int
output_save_dir(struct wsio *w, int dirfd, const char *name)
{
	int r = wsio_mkdir(w, dirfd < 0 ? w->root : dirfd, name, 0755);

	if (r < 0 && r != -EEXIST)
		return r;
	return wsio_open(w, dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
	    0);
}

static int
output_save_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Our files' names in dirfd (malloc'd, the caller frees each and the
 * array), sorted oldest first.  The count, or -errno. */
static int
output_save_list(struct wsio *w, int dirfd, char ***names)
{
	char ents[8192], **v = calloc(OUTPUT_SAVE_SCAN_MAX, sizeof(*v));
	ssize_t got;
	int n = 0;

	*names = v;
	if (!v)
		return -ENOMEM;
	while (n < OUTPUT_SAVE_SCAN_MAX &&
	    (got = wsio_getdents(w, dirfd, ents, sizeof(ents))) > 0) {
		for (ssize_t off = 0; off < got && n < OUTPUT_SAVE_SCAN_MAX;) {
			struct dirent64 *d = (struct dirent64 *)(ents + off);

			if ((d->d_type == DT_REG || d->d_type == DT_UNKNOWN) &&
			    strncmp(d->d_name, OUTPUT_SAVE_PREFIX,
			    strlen(OUTPUT_SAVE_PREFIX)) == 0 &&
			    (v[n] = strdup(d->d_name)))
				n++;
			off += d->d_reclen;
		}
	}
	qsort(v, (size_t)n, sizeof(*v), output_save_cmp);
	return n;
}

/* Remove the oldest of our files so that one more makes KEEP. */
static void
output_save_prune(struct wsio *w, int dirfd)
{
	char **names;
	int n = output_save_list(w, dirfd, &names);

	for (int i = 0; i < n; i++) {
		if (i < n - (OUTPUT_SAVE_KEEP - 1))
			wsio_unlink(w, dirfd, names[i]);
		free(names[i]);
	}
	free(names);
}

/* Write the file in dirfd; on failure remove what was written. */
static int
output_save_write(struct wsio *w, struct output_save *s, int dirfd)
{
	int fd = wsio_open(w, dirfd, s->name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW, 0644), r, rc;

	if (fd < 0)
		return fd;
	r = wsio_write_all(w, fd, s->data, s->len);
	rc = wsio_close(w, fd);
	if (r == 0)
		r = rc;
	if (r < 0)
		wsio_unlink(w, dirfd, s->name);
	return r;
}

static void
output_save_body(struct wsio *w)
{
	struct output_save *s = w->arg;
	int top = -1, dir = -1;

	s->err = wsio_open_root(w);
	if (s->err == 0 && (top = output_save_dir(w, -1, ".atrium")) < 0)
		s->err = top;
	if (s->err == 0 && (dir = output_save_dir(w, top, "output")) < 0)
		s->err = dir;
	if (s->err == 0) {
		output_save_prune(w, dir);
		s->err = output_save_write(w, s, dir);
	}
	wsio_close_behind(w, dir);
	wsio_close_behind(w, top);
}

static void
output_save_free(struct output_save *s)
{
	free(s->data);
	free(s);
}

static void
output_save_finished(struct wsio *w)
{
	struct output_save *s = w->arg;
	char path[sizeof(WSIO_ROOT) + sizeof(OUTPUT_SAVE_DIR) + sizeof(s->name)];

	wsio_release(w);
	snprintf(path, sizeof(path), WSIO_ROOT "/" OUTPUT_SAVE_DIR "/%s",
	    s->name);
	if (s->err < 0)
		log_warn("the output of a bash call was not saved in %s: %s",
		    path, strerror(-s->err));
	if (s->done)
		s->done(s->arg, s->err, s->err < 0 ? NULL : path);
	output_save_free(s);
}

int
output_save_start(struct agent *a, const char *call_id, const char *data,
    size_t len, output_save_done_fn *done, void *arg,
    struct output_save **out)
{
	struct output_save *s = calloc(1, sizeof(*s));
	struct timespec now;

	*out = NULL;
	if (!s || !(s->data = malloc(len ? len : 1)) ||
	    wsio_init(&s->w, a, output_save_body, output_save_finished,
	    s) < 0) {
		if (s)
			free(s->data);
		free(s);
		return -ENOMEM;
	}
	memcpy(s->data, data, len);
	s->len = len;
	s->a = a;
	s->done = done;
	s->arg = arg;
	clock_gettime(CLOCK_REALTIME, &now);
	output_save_name(s->name, sizeof(s->name), call_id,
	    (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
	if (wsio_start(&s->w) < 0) {
		wsio_release(&s->w);
		output_save_free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void
output_save_cancel(struct output_save *s)
{
	if (!s)
		return;
	s->done = NULL;
	if (wsio_stop(&s->w))
		output_save_free(s);
}

void
output_save_abandon(struct output_save *s)
{
	if (s && !wsio_abandon(&s->w, "an output save"))
		output_save_free(s);
}
