/*
 * ws_file.c: the agent's own reads of the workspace (ws_file.h), on the
 * file tools' confined path (wsio.c).  Shaped like tool_files.c without
 * the audit: the body runs in a coroutine started from a 0 ms timer, so
 * done never comes inside start; cancel only forgets done, and the body
 * unwinds (every later operation fails with -ECANCELED) and frees the read
 * from its finished hook.
 */
#include "ws_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "wsio.h"

#define WS_FILE_MAX_NAME	256	/* bytes of a relative path */

struct ws_file_read {
	struct wsio w;			/* the coroutine's state */
	struct agent *a;
	char rel[WS_FILE_MAX_NAME];	/* beneath the workspace root */
	size_t max;			/* bytes at most */
	int err;			/* the body's result */
	char *data;			/* what it read, until handed over */
	size_t len;
	ws_file_done_fn *done;		/* NULL once cancelled */
	void *arg;
};

static void
ws_file_free(struct ws_file_read *r)
{
	free(r->data);
	free(r);
}

static void
ws_file_body(struct wsio *w)
{
	struct ws_file_read *r = w->arg;

	r->err = wsio_open_root(w);
	if (r->err == 0)
		r->err = wsio_read_file(w, r->rel, r->max, &r->data, &r->len,
		    NULL);
}

/* The body has returned, on the loop's stack: hand over, free. */
static void
ws_file_finished(struct wsio *w)
{
	struct ws_file_read *r = w->arg;
	char *data = r->data;

	wsio_release(w);
	r->data = NULL;
	if (r->err != 0) {
		free(data);
		data = NULL;
		r->len = 0;
	}
	if (r->done)
		r->done(r->arg, r->err, data, r->len);
	else
		free(data);
	ws_file_free(r);
}

int
ws_file_read_start(struct agent *a, const char *rel, size_t max,
    ws_file_done_fn *done, void *arg, struct ws_file_read **out)
{
	struct ws_file_read *r;

	*out = NULL;
	if (strlen(rel) >= WS_FILE_MAX_NAME)
		return -ENAMETOOLONG;
	r = calloc(1, sizeof(*r));
	if (!r || wsio_init(&r->w, a, ws_file_body, ws_file_finished,
	    r) < 0) {
		free(r);
		return -ENOMEM;
	}
	r->a = a;
	snprintf(r->rel, sizeof(r->rel), "%s", rel);
	r->max = max;
	r->done = done;
	r->arg = arg;
	if (wsio_start(&r->w) < 0) {
		wsio_release(&r->w);
		ws_file_free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void
ws_file_read_cancel(struct ws_file_read *r)
{
	if (!r)
		return;
	r->done = NULL;
	if (wsio_stop(&r->w))
		ws_file_free(r);
}

void
ws_file_read_abandon(struct ws_file_read *r)
{
	char what[WS_FILE_MAX_NAME + 16];

	if (!r)
		return;
	snprintf(what, sizeof(what), "read of %s", r->rel);
	if (!wsio_abandon(&r->w, what))
		ws_file_free(r);
}

void
ws_file_why(char *out, size_t outlen, int err)
{
	if (err == -EXDEV || err == -ELOOP)
		snprintf(out, outlen, "it leads outside the workspace (a "
		    "symbolic link out of it, or an absolute one): only "
		    "relative links within the workspace are followed");
	else
		snprintf(out, outlen, "%s", strerror(-err));
}
