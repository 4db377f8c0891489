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
 * Scrolling back (offset > 0) shows the lines of the scrollback and of
 * the screen model (tui_draw_view) with the newest `offset` left out;
 * lines that arrive meanwhile go into the model and the offset grows by
 * as many, so the view stays where it is.  PgUp past the top asks for
 * CHAT_SCROLL_LOAD older events, up to CHAT_SCROLL_MAX bytes in all.
 */
#include "chat_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tui_time.h"

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
	tui_time_parse(json_get_string(o, "time"), &ms);
	tui_draw_set_time(&ch->draw, ms);
	ch->draw.model.tag = json_get_int(o, "seq", 0);
	tui_status_timing(&ch->status, type, o, ms);	/* blocks' durations */
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
	tui_time_parse(json_get_string(o, "time"), &ms);
	tui_draw_set_time(&ch->draw, ms);
	snprintf(ch->draw.highlight, sizeof(ch->draw.highlight), "%s",
	    ch->scroll.match);
	chat_dispatch(ch, type, o);
	ch->draw.highlight[0] = '\0';
	tui_draw_set_time(&ch->draw, 0);
}

/* The scroll batch is in: put it before the scrollback and draw. */
static void
chat_batch_scroll_done(struct chat *ch)
{
	ch->scroll.loading = 0;
	if (!ch->scroll.batch.lines.len)
		ch->scroll.exhausted = 1;
	else if (tui_model_prepend(&ch->scroll.older, &ch->scroll.batch) < 0)
		ch->scroll.exhausted = 1;	/* CHAT_SCROLL_MAX is reached */
	tui_model_free(&ch->scroll.batch);
	tui_model_init_max(&ch->scroll.batch, CHAT_SCROLL_MAX);
	ch->scroll.batch_day = 0;
	if (ch->scroll.offset)
		chat_scroll_follow(ch, 0);
}

/* A batch ended (its synced came). */
static void
chat_batch_done(struct chat *ch, char kind)
{
	char text[256];

	if (kind == CHAT_BATCH_SCROLL) {
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

/* See chat_int.h. */
void
chat_scroll_page(struct chat *ch, int dir)
{
	/* A screen less two lines: what was at the edge stays in view,
	 * also when a line above wraps over two rows. */
	chat_scroll_lines(ch, dir,
	    ch->draw.rows > 5 ? (size_t)ch->draw.rows - 4 : 1);
}

/* See chat_int.h.  Older lines are loaded a page ahead of the view. */
void
chat_scroll_lines(struct chat *ch, int dir, size_t lines)
{
	size_t page = ch->draw.rows > 5 ? (size_t)ch->draw.rows - 4 : 1;
	size_t total = tui_model_count(&ch->draw.model) +
	    tui_model_count(&ch->scroll.older);

	if (dir < 0) {
		ch->scroll.offset += lines;
		if (ch->scroll.offset + page >= total)
			chat_scroll_load(ch);
		if (ch->scroll.offset >= total)
			ch->scroll.offset = total ? total - 1 : 0;
	} else {
		ch->scroll.offset = ch->scroll.offset > lines ?
		    ch->scroll.offset - lines : 0;
	}
	chat_scroll_follow(ch, 0);
}

/* See chat_int.h. */
void
chat_scroll_follow(struct chat *ch, size_t added)
{
	if (ch->scroll.offset)
		ch->scroll.offset += added;
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
