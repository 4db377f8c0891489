/*
 * ws_skills.c: the workspace's skills read on the confined path
 * (ws_skills.h).  Shaped like ws_file.c: the body runs in a coroutine
 * started from a 0 ms timer, so done never comes inside start; cancel only
 * forgets done, and the body unwinds (every later operation fails with
 * -ECANCELED) and frees the read from its finished hook.  getdents64 runs
 * on the directory reader thread (wsio_getdents); the walk is paced by
 * wsio_pace.
 */
#include "ws_skills.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "skills.h"
#include "ws_file.h"
#include "wsio.h"

#define WS_SKILLS_DENTS		(32 * 1024)	/* getdents buffer */

struct ws_skills {
	struct wsio w;			/* first: the coroutine's state */
	struct agent *a;
	int err;			/* the body's result */
	json_object *found;		/* skills read, until handed over */
	ws_skills_done_fn *done;	/* NULL once cancelled */
	void *arg;
};

static void
ws_skills_free(struct ws_skills *r)
{
	json_object_put(r->found);
	free(r);
}

/* The directory names of fd that could name a skill, into names.  0 or
 * -errno. */
static int
ws_skills_names(struct wsio *w, int fd, char *dents, json_object *names)
{
	long visited = 0;
	ssize_t n;
	int r = 0;

	while (r == 0 && (n = wsio_getdents(w, fd, dents, WS_SKILLS_DENTS)) > 0) {
		for (ssize_t off = 0; r == 0 && off < n;) {
			struct dirent64 *d = (struct dirent64 *)(dents + off);

			off += d->d_reclen;
			if (++visited > WS_SKILLS_MAX_VISIT)
				return 0;
			if ((r = wsio_pace(w)) < 0 || d->d_name[0] == '.' ||
			    !skills_name_valid(d->d_name))
				continue;
			json_object_array_add(names,
			    json_object_new_string(d->d_name));
		}
	}
	return n < 0 ? (int)n : r;
}

/* Read and parse one skill's SKILL.md; a file that cannot be read or
 * parsed is skipped with a log line (none when it is simply missing).
 * 0, or -ECANCELED. */
static int
ws_skills_one(struct ws_skills *r, const char *dir)
{
	char rel[sizeof(WS_SKILLS_DIR) + SKILLS_MAX_NAME + 16], why[256];
	char *data = NULL;
	size_t len = 0;
	json_object *s;
	int e;

	snprintf(rel, sizeof(rel), "%s/%s/%s", WS_SKILLS_DIR, dir,
	    WS_SKILLS_FILE);
	e = wsio_read_file(&r->w, rel, SKILLS_MAX_BODY, &data, &len, NULL);
	if (e == -ECANCELED)
		return e;
	if (e == -EFBIG)
		snprintf(why, sizeof(why), "it is over %d bytes",
		    SKILLS_MAX_BODY);
	else if (e < 0)
		ws_file_why(why, sizeof(why), e);
	if (e < 0) {
		if (e != -ENOENT && e != -ENOTDIR)
			log_warn("skill %s not read: %s", rel, why);
		return 0;
	}
	s = skills_parse(data, len, dir, NULL, "workspace", why, sizeof(why));
	free(data);
	if (!s)
		log_warn("skill %s skipped: %s", rel, why);
	else if (!skills_add(r->found, s))
		log_warn("skill %s skipped: its name is taken or the room has "
		    "%d skills already", rel, SKILLS_MAX);
	return 0;
}

static int
ws_skills_cmp(const void *a, const void *b)
{
	return strcmp(json_object_get_string(*(json_object *const *)a),
	    json_object_get_string(*(json_object *const *)b));
}

static void
ws_skills_body(struct wsio *w)
{
	struct ws_skills *r = w->arg;
	json_object *names = json_object_new_array();
	char *dents = malloc(WS_SKILLS_DENTS);
	int fd = -1;

	r->err = dents ? wsio_open_root(w) : -ENOMEM;
	if (r->err == 0) {
		fd = wsio_open(w, -1, WS_SKILLS_DIR, O_RDONLY | O_DIRECTORY, 0);
		r->err = fd < 0 ? fd : ws_skills_names(w, fd, dents, names);
		wsio_close_behind(w, fd);
	}
	free(dents);
	if (r->err == -ENOENT || r->err == -ENOTDIR)
		r->err = 0;	/* no skills in this workspace */
	json_object_array_sort(names, ws_skills_cmp);
	for (size_t i = 0; r->err == 0 && i < json_object_array_length(names)
	    && json_object_array_length(r->found) < SKILLS_MAX; i++)
		r->err = ws_skills_one(r, json_object_get_string(
		    json_object_array_get_idx(names, i)));
	json_object_put(names);
}

/* The body has returned, on the loop's stack: hand over, free. */
static void
ws_skills_finished(struct wsio *w)
{
	struct ws_skills *r = w->arg;
	json_object *found = r->err == 0 ? r->found : NULL;

	wsio_release(w);
	if (found)
		r->found = NULL;
	if (r->done)
		r->done(r->arg, r->err, found);
	else
		json_object_put(found);
	ws_skills_free(r);
}

int
ws_skills_read_start(struct agent *a, ws_skills_done_fn *done, void *arg,
    struct ws_skills **out)
{
	struct ws_skills *r;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->found = json_object_new_array()) ||
	    wsio_init(&r->w, a, ws_skills_body, ws_skills_finished, r) < 0) {
		if (r)
			json_object_put(r->found);
		free(r);
		return -ENOMEM;
	}
	r->a = a;
	r->done = done;
	r->arg = arg;
	if (wsio_start(&r->w) < 0) {
		wsio_release(&r->w);
		ws_skills_free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void
ws_skills_read_cancel(struct ws_skills *r)
{
	if (!r)
		return;
	r->done = NULL;
	if (wsio_stop(&r->w))
		ws_skills_free(r);
}

void
ws_skills_read_abandon(struct ws_skills *r)
{
	if (r && !wsio_abandon(&r->w, "read of the workspace's skills"))
		ws_skills_free(r);
}
