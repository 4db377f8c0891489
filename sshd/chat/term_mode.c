/*
 * term_mode.c: the chat's `/term` mode (term_mode.h).  Glue between the
 * chat's link and frames and the view's model and drawing: no state of
 * its own but the view.  Input goes out in term_input lines of at most
 * TERM_VIEW_INPUT_CHUNK client bytes (PROTO_TERM_MAX_INPUT once
 * repaired), and only while the agent link holds less than half its cap:
 * a member pasting without end waits on the SSH window, not in memory.
 */
#include "term_mode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "term_view.h"

struct term_mode {
	struct term_mode_host h;
	struct term_view *view;
};

/* A new request {"type": type}. */
static json_object *
term_mode_req(const char *type)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string(type));
	return o;
}

/* Send a term_open or term_resize with this window's area.  0 or -errno
 * from agentlink_send. */
static int
term_mode_send_size(struct term_mode *m, const char *type)
{
	json_object *o = term_mode_req(type);
	int cols, rows, r;

	term_view_area(m->h.c->cols, m->h.c->rows, &cols, &rows);
	json_object_object_add(o, "cols", json_object_new_int(cols));
	json_object_object_add(o, "rows", json_object_new_int(rows));
	r = agentlink_send(m->h.link, o);
	json_object_put(o);
	return r;
}

void
term_mode_redraw(struct term_mode *m)
{
	term_view_redraw(m->view, m->h.frame, m->h.c->cols, m->h.c->rows,
	    m->h.c->s->room);
}

struct term_mode *
term_mode_enter(const struct term_mode_host *h, int color, char *err,
    size_t errlen)
{
	struct term_mode *m = calloc(1, sizeof(*m));

	if (!m || !(m->view = term_view_new(color))) {
		snprintf(err, errlen, "out of memory: /term did not start");
		free(m);
		return NULL;
	}
	m->h = *h;
	if (term_mode_send_size(m, "term_open") < 0) {
		snprintf(err, errlen, "the room is not taking lines now; wait "
		    "a moment and type /term again");
		term_view_free(m->view);
		free(m);
		return NULL;
	}
	term_mode_redraw(m);
	m->h.queue(m->h.arg);
	return m;
}

int
term_mode_event(struct term_mode *m, const char *type, json_object *o,
    int *ended, char *notice, size_t len)
{
	*ended = 0;
	if (strcmp(type, "term_end") == 0) {
		snprintf(notice, len, "the room's terminal ended: %s",
		    json_get_string(o, "reason") ?: "?");
		*ended = 1;
		return 1;
	}
	if (strcmp(type, "term_screen") != 0)
		return 0;
	if (term_view_apply(m->view, o, m->h.frame, m->h.c->cols,
	    m->h.c->rows, m->h.c->s->room) == 0)
		m->h.queue(m->h.arg);
	else
		buf_reset(m->h.frame);
	return 1;
}

size_t
term_mode_input(struct term_mode *m, const char *p, size_t n, int *leave)
{
	struct buf b;
	size_t used = 0;
	json_object *req;

	*leave = 0;
	buf_init(&b, 3 * TERM_VIEW_INPUT_CHUNK + 16);
	while (used < n && !*leave &&
	    agentlink_pending(m->h.link) < AGENTLINK_MAX_OUT / 2) {
		buf_reset(&b);
		used += term_view_input(m->view, p + used, n - used, &b, leave);
		if (!b.len)
			continue;
		req = term_mode_req("term_input");
		json_object_object_add(req, "data",
		    json_object_new_string_len(b.data, (int)b.len));
		agentlink_send(m->h.link, req);
		json_object_put(req);
	}
	buf_free(&b);
	return used;
}

void
term_mode_news(struct term_mode *m, const char *news)
{
	term_view_news(m->view, news, m->h.frame, m->h.c->cols, m->h.c->rows,
	    m->h.c->s->room);
	m->h.queue(m->h.arg);
}

void
term_mode_resize(struct term_mode *m)
{
	term_mode_send_size(m, "term_resize");
	term_mode_redraw(m);
	m->h.queue(m->h.arg);
}

void
term_mode_free(struct term_mode *m)
{
	if (!m)
		return;
	term_view_free(m->view);
	free(m);
}

void
term_mode_leave(struct term_mode *m, int detach)
{
	json_object *req;

	if (!m)
		return;
	if (detach) {
		req = term_mode_req("term_close");
		agentlink_send(m->h.link, req);
		json_object_put(req);
	}
	term_view_leave(m->h.frame);
	m->h.queue(m->h.arg);
	term_mode_free(m);
}
