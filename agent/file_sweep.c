/*
 * file_sweep.c: the temporary files of uploads a shutdown or a crash cut
 * (file_requests.h: file_requests_recover).
 *
 * An upload's temporary file lives beside its target until the commit
 * renames it or the abort removes it; a SIGKILL or a crash does neither.
 * Its audit row ("put PATH", kind file) is on disk before the file is
 * made and is ended by the commit or abort, so the rows without an end
 * name every directory where such a file can be: only those are looked
 * at, never the whole workspace.  In them only names of the exact shape
 * the uploads make (file_tmp_stale) are removed, and only one no upload
 * of this agent can be writing (made before it started), through the
 * confined path (wsio.h, no symbolic link on the way), as the sandbox
 * uid.  The rows are ended as not done, so undo and the audit say the
 * upload did not happen.
 *
 * The rows are read and ended before the loop runs (no connection can
 * start an upload meanwhile); the removal runs as one job on the loop.
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
#include <time.h>

#include "agent.h"
#include "journal.h"
#include "log.h"
#include "room_db.h"
#include "util.h"
#include "wsio.h"

#define SWEEP_DENTS	(32 * 1024)	/* getdents buffer */
#define SWEEP_MAX_ROWS	1000		/* cut uploads looked at, at most */
#define SWEEP_SLACK_S	2		/* a wall clock's coarse ticks */

struct file_sweep {
	struct wsio w;			/* first: the coroutine's state */
	json_object *dirs;		/* the directories, each once */
	long long start_ms, start_s;	/* the agent's start */
	int removed;			/* files removed */
};

/* A decimal number at *p (advanced past it): 0, or -1 for none. */
static int
sweep_number(const char **p, long long *v)
{
	const char *s = *p;

	*v = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (*v > (LLONG_MAX - 9) / 10)
			return -1;
		*v = *v * 10 + (*s - '0');
	}
	*p = s;
	return 0;
}

int
file_tmp_stale(const char *name, long long mtime_s, long long start_ms,
    long long start_s)
{
	const char *p = name;
	long long pid, ms, n;

	if (strncmp(p, FILE_TMP_PREFIX, strlen(FILE_TMP_PREFIX)) != 0)
		return 0;
	p += strlen(FILE_TMP_PREFIX);
	if (sweep_number(&p, &pid) < 0 || *p++ != '-' ||
	    sweep_number(&p, &ms) < 0 || *p++ != '-' ||
	    sweep_number(&p, &n) < 0 || *p)
		return 0;
	return ms < start_ms || mtime_s < start_s - SWEEP_SLACK_S;
}

/* room_db_audit_open_each's callback: the directory of "put PATH" into
 * the set arg (a JSON object used as a set). */
static int
sweep_collect(long long id, const char *command, void *arg)
{
	char rel[PATH_MAX];
	const char *path = command + 4, *slash;

	(void)id;
	if (strncmp(command, "put ", 4) != 0 || !*path)
		return 0;
	slash = strrchr(path, '/');
	snprintf(rel, sizeof(rel), "%.*s", slash ? (int)(slash - path) : 1,
	    slash ? path : ".");
	json_object_object_add(arg, rel, NULL);
	return 0;
}

/* The stale temporary files of directory rel.  0 or -errno. */
static int
sweep_dir(struct file_sweep *sw, const char *rel)
{
	char *dents = malloc(SWEEP_DENTS);
	struct statx st;
	ssize_t n;
	int fd, r = dents ? 0 : -ENOMEM;

	fd = r ? r : wsio_open(&sw->w, -1, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) {
		free(dents);
		return fd == -ENOENT || fd == -ENOTDIR ? 0 : fd;
	}
	while (r == 0 && (n = wsio_getdents(&sw->w, fd, dents,
	    SWEEP_DENTS)) != 0) {
		if (n < 0) {
			r = (int)n;
			break;
		}
		for (ssize_t off = 0; r == 0 && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);

			off += d->d_reclen;
			if (d->d_type != DT_REG && d->d_type != DT_UNKNOWN)
				continue;
			if (strncmp(d->d_name, FILE_TMP_PREFIX,
			    strlen(FILE_TMP_PREFIX)) != 0 ||
			    wsio_stat_name(&sw->w, fd, d->d_name, &st) < 0 ||
			    !S_ISREG(st.stx_mode) ||
			    !file_tmp_stale(d->d_name, st.stx_mtime.tv_sec,
			    sw->start_ms, sw->start_s))
				continue;
			if ((r = wsio_unlink(&sw->w, fd, d->d_name)) == 0)
				sw->removed++;
			else if (r == -ENOENT)
				r = 0;
		}
	}
	wsio_close_behind(&sw->w, fd);
	free(dents);
	return r;
}

static void
sweep_body(struct wsio *w)
{
	struct file_sweep *sw = w->arg;
	int r;

	w->resolve = RESOLVE_NO_SYMLINKS;
	if ((r = wsio_open_root(w)) < 0) {
		log_warn("cut uploads' temporary files not removed: %s",
		    strerror(-r));
		return;
	}
	json_object_object_foreach(sw->dirs, rel, unused) {
		(void)unused;
		if ((r = sweep_dir(sw, rel)) < 0)
			log_warn("cut uploads' temporary files in %s not "
			    "removed: %s", rel, strerror(-r));
	}
}

static void
sweep_finished(struct wsio *w)
{
	struct file_sweep *sw = w->arg;

	wsio_release(w);
	if (sw->removed)
		log_info("%d temporary file%s of cut uploads removed",
		    sw->removed, sw->removed == 1 ? "" : "s");
	json_object_put(sw->dirs);
	free(sw);
}

/* End the cut uploads' rows as not done, for the next commit.  0 or
 * -errno. */
static int
sweep_end_rows(struct agent *a)
{
	int r = room_db_audit_end_open(a->db, "file", "put ", 1);

	if (r > 0 && (r = journal_commit(a->journal)) >= 0)
		return 0;
	return r;
}

void
file_requests_recover(struct agent *a)
{
	struct file_sweep *sw = calloc(1, sizeof(*sw));
	int r = sw && (sw->dirs = json_object_new_object()) ? 0 : -ENOMEM;

	if (r == 0)
		r = room_db_audit_open_each(a->db, "file", "put ",
		    SWEEP_MAX_ROWS, sweep_collect, sw->dirs);
	if (r > 0)
		r = sweep_end_rows(a);
	if (r < 0)
		log_error("cut uploads could not be looked for: %s",
		    room_db_strerror(r));
	if (r < 0 || !json_object_object_length(sw->dirs)) {
		if (sw)
			json_object_put(sw->dirs);
		free(sw);
		return;
	}
	sw->start_ms = time_mono_ms();
	sw->start_s = (long long)time(NULL);
	if (wsio_init(&sw->w, a, sweep_body, sweep_finished, sw) < 0) {
		r = -ENOMEM;
	} else if (wsio_start(&sw->w) < 0) {
		wsio_release(&sw->w);
		r = -ENOMEM;
	}
	if (r < 0) {
		log_error("cut uploads' temporary files not removed: out of "
		    "memory");
		json_object_put(sw->dirs);
		free(sw);
	}
}
