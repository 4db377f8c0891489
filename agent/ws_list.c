/*
 * ws_list.c: one directory's matching names (ws_list.h).  Called by
 * requests.c for a `complete` request.  The body runs in a coroutine (wsio.h)
 * started from a 0 ms timer, so done never runs inside start; getdents64
 * runs on the directory reader thread (wsio_getdents), the walk is paced
 * by wsio_pace, and it stops after
 * WS_LIST_MAX_VISIT entries.
 */
#include "ws_list.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent.h"
#include "wsio.h"

#define WS_LIST_DENTS		(32 * 1024)	/* getdents buffer */

struct ws_list {
	struct wsio w;			/* first: the coroutine's state */
	struct agent *a;
	char dir[WS_LIST_MAX_PATH];
	char prefix[WS_LIST_MAX_PATH];
	int err;			/* the body's result */
	json_object *names;		/* found, until handed over */
	ws_list_done_fn *done;
	void *arg;
};

/* 1 when the entry d of directory fd is a directory. */
static int
ws_list_isdir(struct wsio *w, int fd, struct dirent64 *d)
{
	struct statx st;

	if (d->d_type != DT_UNKNOWN)
		return d->d_type == DT_DIR;
	return wsio_stat_name(w, fd, d->d_name, &st) == 0 &&
	    S_ISDIR(st.stx_mode);
}

/* Add the entries of fd that match, into l->names.  0 or -errno. */
static int
ws_list_read(struct ws_list *l, int fd, char *dents)
{
	size_t plen = strlen(l->prefix);
	long visited = 0;
	ssize_t n;
	int r = 0;

	while (r == 0 && (n = wsio_getdents(&l->w, fd, dents, WS_LIST_DENTS)) > 0) {
		for (ssize_t off = 0; r == 0 && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);
			char name[NAME_MAX + 2];

			off += d->d_reclen;
			if (++visited > WS_LIST_MAX_VISIT ||
			    json_object_array_length(l->names) >= WS_LIST_MAX)
				return 0;
			if ((r = wsio_pace(&l->w)) < 0 ||
			    strncmp(d->d_name, l->prefix, plen) != 0 ||
			    (d->d_name[0] == '.' && l->prefix[0] != '.') ||
			    !strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
				continue;
			snprintf(name, sizeof(name), "%s%s", d->d_name,
			    ws_list_isdir(&l->w, fd, d) ? "/" : "");
			json_object_array_add(l->names,
			    json_object_new_string(name));
		}
	}
	return r;
}

static int
ws_list_cmp(const void *a, const void *b)
{
	return strcmp(json_object_get_string(*(json_object *const *)a),
	    json_object_get_string(*(json_object *const *)b));
}

static void
ws_list_body(struct wsio *w)
{
	struct ws_list *l = w->arg;
	char *dents = malloc(WS_LIST_DENTS);
	int fd;

	l->err = dents ? wsio_open_root(w) : -ENOMEM;
	if (l->err == 0) {
		fd = wsio_open(w, -1, l->dir, O_RDONLY | O_DIRECTORY, 0);
		l->err = fd < 0 ? fd : ws_list_read(l, fd, dents);
		wsio_close_behind(w, fd);
	}
	free(dents);
	if (l->err == 0)
		json_object_array_sort(l->names, ws_list_cmp);
}

/* The body has returned, on the loop's stack: hand over, free. */
static void
ws_list_finished(struct wsio *w)
{
	struct ws_list *l = w->arg;

	wsio_release(w);
	if (l->err == 0) {
		l->done(l->arg, 0, l->names);
	} else {
		json_object_put(l->names);
		l->done(l->arg, l->err, NULL);
	}
	free(l);
}

/* See ws_list.h. */
int
ws_list_start(struct agent *a, const char *dir, const char *prefix,
    ws_list_done_fn *done, void *arg)
{
	struct ws_list *l;

	if (strlen(dir) >= WS_LIST_MAX_PATH ||
	    strlen(prefix) >= WS_LIST_MAX_PATH)
		return -ENAMETOOLONG;
	l = calloc(1, sizeof(*l));
	if (!l || !(l->names = json_object_new_array()) ||
	    wsio_init(&l->w, a, ws_list_body, ws_list_finished, l) < 0) {
		if (l)
			json_object_put(l->names);
		free(l);
		return -ENOMEM;
	}
	l->a = a;
	snprintf(l->dir, sizeof(l->dir), "%s", dir);
	snprintf(l->prefix, sizeof(l->prefix), "%s", prefix);
	l->done = done;
	l->arg = arg;
	wsio_budget(&l->w, 5);
	if (wsio_start(&l->w) < 0) {
		wsio_release(&l->w);
		json_object_put(l->names);
		free(l);
		return -ENOMEM;
	}
	return 0;
}
