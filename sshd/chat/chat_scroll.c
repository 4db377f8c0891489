/*
 * chat_scroll.c: what the chat loads from the room's stored history
 * (chat_int.h), each as a "batch": a `history` request followed by a
 * `sync`, whose `synced` (id "b<kind><n>") ends it.  The room answers a
 * connection's lines in order, so the replayed events between the two
 * belong to that batch; live events (without "replay") still come in
 * between and are drawn as usual.
 *
 *   join    hello's replay (asked by hello itself): drawn as usual
 *   input   this user's own lines, for Up (tui_history.h)
 *   scroll  events older than the oldest line held, drawn into a model
 *           of their own and put before the scrollback's (PgUp)
 *   search  /history TEXT: the matching events, drawn with TEXT in
 *           reverse video, then their count
 *
 * Scrolling back: the view is placed by the rows below it (offset, in
 * rows as tui_view.h counts them; 0 is live) among the lines of the
 * scrollback and of the screen model, so that every view is full and the
 * highest is the one whose top row is the oldest line's first.  Lines
 * that arrive meanwhile go into the model, the offset grows by their rows
 * (the view stays where it is) and they are counted as new, for "N new
 * lines below".  PgUp within two screens of the top asks for
 * CHAT_SCROLL_LOAD older events, up to CHAT_SCROLL_MAX bytes in all; the
 * top reads as the room's first line only once the room had nothing
 * older.  End and a sent line return to the live view.  A reply of the
 * chat's own too long for the screen (/help) is shown from its first
 * line, as a view scrolled back with the rest below it.
 *
 * Once older lines are loaded, the screen model keeps as many bytes as
 * the scrollback (CHAT_SCROLL_MAX), so that no line drops out between the
 * two while the room talks.  When it still drops its oldest lines, the
 * loaded ones no longer join it: they are forgotten and loaded again from
 * the model's oldest line on, so the scrollback never has a gap.
 */
#include "chat_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_feed.h"
#include "event_time.h"
#include "log.h"
#include "tui_time.h"
#include "tui_view.h"

/* See chat_int.h. */
int
chat_batch_ask(struct chat *ch, enum chat_batch kind, json_object *req)
{
	json_object *sync;
	char id[32];
	int r = -1;

	if (ch->nbatch == CHAT_MAX_BATCH ||
	    (req && agentlink_send(&ch->link, req) < 0))
		goto out;
	snprintf(id, sizeof(id), "b%c%lu", (char)kind, ++ch->nsync);
	if (!(sync = chat_req("sync")))
		goto out;
	json_object_object_add(sync, "id", json_object_new_string(id));
	r = agentlink_send(&ch->link, sync);
	json_object_put(sync);
	if (r == 0)
		ch->batch[ch->nbatch++] = (char)kind;
out:
	json_object_put(req);
	return r < 0 ? -1 : 0;
}

/* See chat_int.h. */
void
chat_batch_reset(struct chat *ch)
{
	ch->nbatch = 0;
	ch->scroll.loading = 0;
}

/* One of this user's stored lines, for Up: a message or prompt's text,
 * a command as "!CMD". */
static void
chat_batch_input(struct chat *ch, const char *type, json_object *o)
{
	const char *cmd = json_get_string(o, "command");
	char *line;

	if (strcmp(type, "exec_start") != 0) {
		tui_history_add(&ch->hist, json_get_string(o, "text"), 1);
		return;
	}
	if (!cmd || !(line = malloc(strlen(cmd) + 2)))
		return;
	sprintf(line, "!%s", cmd);
	tui_history_add(&ch->hist, line, 1);
	free(line);
}

/* Draw an older event into the scroll batch's model: the screen's
 * model, date line, live stream and streamed tool are set aside. */
static void
chat_batch_scroll(struct chat *ch, const char *type, json_object *o)
{
	struct tui_model live = ch->draw.model;
	int day = ch->draw.day, streaming = ch->draw.streaming;
	char streamed[sizeof(ch->streamed)];
	long long ms = 0;

	memcpy(streamed, ch->streamed, sizeof(streamed));
	ch->draw.model = ch->scroll.batch;
	ch->draw.day = ch->scroll.batch_day;
	ch->draw.streaming = 0;
	event_time_ms(json_get_string(o, "time"), &ms);
	tui_draw_set_time(&ch->draw, ms);
	ch->draw.model.tag = json_get_int(o, "seq", 0);
	tui_status_timing(&ch->status, type, o, ms);	/* blocks' durations */
	if (ms)
		ch->scroll.batch_ms = ms;
	ch->render_only = 1;
	chat_dispatch(ch, type, o);
	ch->render_only = 0;
	tui_draw_set_time(&ch->draw, 0);
	ch->scroll.batch = ch->draw.model;
	ch->scroll.batch_day = ch->draw.day;
	ch->draw.model = live;
	ch->draw.day = day;
	ch->draw.streaming = streaming;
	memcpy(ch->streamed, streamed, sizeof(streamed));
}

/* A match of /history TEXT, drawn as it comes with TEXT highlighted. */
static void
chat_batch_search(struct chat *ch, const char *type, json_object *o)
{
	long long ms = 0;

	ch->scroll.hits++;
	event_time_ms(json_get_string(o, "time"), &ms);
	tui_draw_set_time(&ch->draw, ms);
	snprintf(ch->draw.highlight, sizeof(ch->draw.highlight), "%s",
	    ch->scroll.match);
	chat_dispatch(ch, type, o);
	ch->draw.highlight[0] = '\0';
	tui_draw_set_time(&ch->draw, 0);
}

/* The lines a batch goes before start with a date line (each batch, and
 * the join, is drawn from a fresh date): when the batch ended on that
 * date, the line only repeats it, and goes. */
static void
chat_batch_scroll_date(struct chat *ch)
{
	struct tui_model *next = ch->scroll.older.lines.len ?
	    &ch->scroll.older : &ch->draw.model;
	char row[128];
	const char *line;
	size_t len;

	if (!ch->scroll.batch_ms || !tui_model_first(next, &line, &len))
		return;
	tui_draw_date_row(ch->scroll.batch_ms, row, sizeof(row));
	if (len == strlen(row) && memcmp(line, row, len) == 0)
		tui_model_drop_first(next);
}

/* The scroll batch is in: put it before the scrollback and draw.  A
 * batch asked before a gap was found (chat_scroll_gap) does not join the
 * lines held now: it is dropped. */
static void
chat_batch_scroll_done(struct chat *ch)
{
	ch->scroll.loading = 0;
	if (ch->scroll.stale) {
		ch->scroll.stale = 0;
	} else if (!ch->scroll.batch.lines.len) {
		ch->scroll.exhausted = 1;
	} else if (ch->scroll.batch.lines.len + ch->scroll.older.lines.len >
	    CHAT_SCROLL_MAX) {
		ch->scroll.exhausted = ch->scroll.capped = 1;
	} else {
		chat_batch_scroll_date(ch);
		if (tui_model_prepend(&ch->scroll.older,
		    &ch->scroll.batch) < 0)
			ch->scroll.exhausted = ch->scroll.capped = 1;
		/* The screen's lines join the loaded ones: they are kept as
		 * long, so that none drops out between the two. */
		tui_model_set_max(&ch->draw.model, CHAT_SCROLL_MAX);
	}
	ch->scroll.rows_cols = 0;		/* older changed */
	tui_model_free(&ch->scroll.batch);
	tui_model_init_max(&ch->scroll.batch, CHAT_SCROLL_MAX);
	ch->scroll.batch_day = 0;
	ch->scroll.batch_ms = 0;
	if (ch->scroll.offset)
		chat_scroll_draw(ch);
}

/* A batch ended (its synced came). */
static void
chat_batch_done(struct chat *ch, char kind)
{
	char text[256];

	if (kind == CHAT_BATCH_JOIN) {
		chat_feed_live(ch);	/* the room's events follow it */
	} else if (kind == CHAT_BATCH_SCROLL) {
		chat_batch_scroll_done(ch);
	} else if (kind == CHAT_BATCH_SEARCH) {
		if (ch->scroll.hits)
			snprintf(text, sizeof(text), "%d events of the room's "
			    "history hold \"%s\" (the latest %d at most)",
			    ch->scroll.hits, ch->scroll.match,
			    CHAT_SEARCH_MAX);
		else
			snprintf(text, sizeof(text), "no event of the room's "
			    "history holds \"%s\"", ch->scroll.match);
		chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	}
}

/* See chat_int.h. */
int
chat_batch_line(struct chat *ch, const char *type, json_object *o)
{
	const char *id;

	if (!ch->nbatch)
		return 0;
	if (strcmp(type, "synced") == 0) {
		char kind = ch->batch[0];

		id = json_get_string(o, "id");
		if (!id || id[0] != 'b' || id[1] != kind)
			return 0;
		memmove(ch->batch, ch->batch + 1, (size_t)--ch->nbatch);
		chat_batch_done(ch, kind);
		return 1;
	}
	if (!json_get_bool(o, "replay", 0))
		return 0;
	switch (ch->batch[0]) {
	case CHAT_BATCH_INPUT:
		chat_batch_input(ch, type, o);
		return 1;
	case CHAT_BATCH_SCROLL:
		chat_batch_scroll(ch, type, o);
		return 1;
	case CHAT_BATCH_SEARCH:
		chat_batch_search(ch, type, o);
		return 1;
	default:
		return 0;
	}
}

/* The screen model dropped lines since the last look: the older lines
 * loaded no longer join it, so they are forgotten (and a load on its way
 * with them), and the room may again have lines older than those held. */
static void
chat_scroll_gap(struct chat *ch)
{
	if (ch->draw.model.dropped == ch->scroll.dropped)
		return;
	ch->scroll.dropped = ch->draw.model.dropped;
	ch->scroll.exhausted = ch->scroll.capped = 0;
	ch->scroll.stale = ch->scroll.loading;
	ch->scroll.rows_cols = 0;	/* the model's rows are fewer */
	if (!ch->scroll.older.lines.len)
		return;
	tui_model_free(&ch->scroll.older);
	tui_model_init_max(&ch->scroll.older, CHAT_SCROLL_MAX);
}

/* Rows of all the lines held (loaded and the model's) at the width drawn:
 * counted whole when the width, the loaded lines or the model's oldest
 * lines changed, else by the lines added since (both may hold a MiB, and
 * this is asked on every event while scrolled back). */
static size_t
chat_scroll_rows(struct chat *ch)
{
	struct chat_scroll *s = &ch->scroll;
	const struct tui_model *m = &ch->draw.model;
	int cols = ch->draw.cols;

	chat_scroll_gap(ch);
	if (s->rows_cols != cols) {
		s->older_rows = tui_view_rows(&s->older, cols);
		s->model_rows = tui_view_rows(m, cols);
		s->model_added = m->added;
		s->rows_cols = cols;
	} else if (s->model_added != m->added) {
		s->model_rows += tui_view_newest_rows(m, cols,
		    m->added - s->model_added);
		s->model_added = m->added;
	}
	return s->older_rows + s->model_rows;
}

/* The highest offset: the view whose top row is the oldest line's first
 * (0 while all the lines held fit on the screen). */
static size_t
chat_scroll_max(struct chat *ch)
{
	size_t rows = chat_scroll_rows(ch);
	size_t height = (size_t)tui_draw_view_height(&ch->draw);

	return rows > height ? rows - height : 0;
}

/* Ask for the events before the oldest line held. */
static void
chat_scroll_load(struct chat *ch)
{
	long long before = tui_model_first_tag(&ch->scroll.older);
	json_object *req;

	if (ch->scroll.loading || ch->scroll.exhausted)
		return;
	if (!before)
		before = tui_model_first_tag(&ch->draw.model);
	if (!before) {
		ch->scroll.exhausted = 1;	/* nothing from the room */
		return;
	}
	req = chat_req("history");
	json_object_object_add(req, "before", json_object_new_int64(before));
	json_object_object_add(req, "limit",
	    json_object_new_int(CHAT_SCROLL_LOAD));
	ch->scroll.loading = chat_batch_ask(ch, CHAT_BATCH_SCROLL, req) == 0;
}

/* Rows one PgUp or PgDn moves: the view's height less two, so the rows
 * at its edge stay in sight. */
static size_t
chat_scroll_page_rows(const struct chat *ch)
{
	int height = tui_draw_view_height(&ch->draw);

	return height > 3 ? (size_t)height - 2 : 1;
}

/* See chat_int.h. */
void
chat_scroll_page(struct chat *ch, int dir)
{
	chat_scroll_lines(ch, dir, chat_scroll_page_rows(ch));
}

/* See chat_int.h.  Older lines are loaded while the view is within two
 * pages of the top, so that PgUp seldom waits for them. */
void
chat_scroll_lines(struct chat *ch, int dir, size_t rows)
{
	size_t max = chat_scroll_max(ch);

	if (dir < 0) {
		ch->scroll.offset += rows;
		if (ch->scroll.offset + 2 * chat_scroll_page_rows(ch) >= max)
			chat_scroll_load(ch);
	} else {
		ch->scroll.offset = ch->scroll.offset > rows ?
		    ch->scroll.offset - rows : 0;
	}
	chat_scroll_draw(ch);
}

/* See chat_int.h. */
void
chat_scroll_clamp(struct chat *ch)
{
	size_t max;

	if (ch->scroll.offset) {
		max = chat_scroll_max(ch);
		if (ch->scroll.offset > max)
			ch->scroll.offset = max;
	}
	if (!ch->scroll.offset)
		ch->scroll.fresh = 0;	/* they are all in sight */
}

/* See chat_int.h. */
void
chat_scroll_draw(struct chat *ch)
{
	chat_scroll_clamp(ch);
	chat_status_refresh(ch);	/* it says where the view is */
	if (ch->scroll.offset) {
		chat_frame(ch);
		chat_frame_done(ch);	/* draws the view */
	} else {
		chat_redraw(ch);
	}
}

/* See chat_int.h. */
void
chat_scroll_live(struct chat *ch)
{
	if (!ch->scroll.offset)
		return;
	ch->scroll.offset = 0;
	ch->scroll.fresh = 0;
	chat_scroll_draw(ch);
}

/* See chat_int.h. */
size_t
chat_scroll_mark(const struct chat *ch)
{
	return ch->draw.model.added;
}

/* See chat_int.h. */
void
chat_scroll_added(struct chat *ch, size_t mark)
{
	size_t added = chat_scroll_mark(ch) - mark;

	if (!ch->scroll.offset)
		return;
	ch->scroll.offset += tui_view_newest_rows(&ch->draw.model,
	    ch->draw.cols, added);
	ch->scroll.fresh += added;
	chat_scroll_draw(ch);
}

/* See chat_int.h.  Where the view is, then the new lines below it. */
void
chat_scroll_status(struct chat *ch, char *text, size_t len)
{
	const char *where = "scrolled back";
	char news[48] = "";
	size_t below;

	if (!ch->scroll.offset) {
		text[0] = '\0';
		return;
	}
	if (ch->scroll.loading)
		where = "loading older lines";
	else if (ch->scroll.exhausted &&
	    ch->scroll.offset >= chat_scroll_max(ch))
		where = ch->scroll.capped ? "the oldest line kept (1 MiB; "
		    "/history TEXT searches all)" : "the room's first line";
	below = tui_view_lines_below(&ch->draw.model, ch->draw.cols,
	    ch->scroll.offset, ch->scroll.fresh);
	if (below)
		snprintf(news, sizeof(news), ", %zu new line%s below", below,
		    below == 1 ? "" : "s");
	snprintf(text, len, "%s%s, End returns | ", where, news);
}

/* See chat_int.h. */
void
chat_print_paged(struct chat *ch, enum tui_style style, const char *text)
{
	size_t mark = chat_scroll_mark(ch), added, rows, height;

	chat_print(ch, style, NULL, text);
	if (!ch->ansi || ch->term || ch->scroll.offset)
		return;
	added = chat_scroll_mark(ch) - mark;
	rows = tui_view_newest_rows(&ch->draw.model, ch->draw.cols, added);
	height = (size_t)tui_draw_view_height(&ch->draw);
	if (rows <= height)
		return;
	/* Its first row at the top, the rest below as new lines. */
	ch->scroll.offset = rows - height;
	ch->scroll.fresh = added;
	chat_scroll_draw(ch);
}

/* See chat_int.h. */
void
chat_scroll_free(struct chat *ch)
{
	tui_model_free(&ch->scroll.older);
	tui_model_free(&ch->scroll.batch);
}

/* See chat_int.h. */
int
chat_search_start(struct chat *ch, json_object *req)
{
	const char *match = json_get_string(req, "match");

	snprintf(ch->scroll.match, sizeof(ch->scroll.match), "%s",
	    match ? match : "");
	ch->scroll.hits = 0;
	if (strlen(match ? match : "") >= sizeof(ch->scroll.match)) {
		json_object_put(req);
		chat_print(ch, TUI_STYLE_ERROR, NULL, "/history TEXT: at most "
		    "127 bytes of text");
		return 0;
	}
	return chat_batch_ask(ch, CHAT_BATCH_SEARCH, req);
}
