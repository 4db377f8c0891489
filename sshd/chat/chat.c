/*
 * chat.c: the shell request, the room's chat (chat.h).  Called by
 * chan_requests.c (the shell request) through chan_ops.  Glue only:
 * tui_keys.c turns bytes into keys, tui_editor.c holds the input line,
 * tui_draw.c renders; this file decides what a key or a line means and
 * what each room event shows.
 *
 * Two modes, fixed at open: a pty with TERM other than "dumb" gets the line
 * UI (ANSI); anything else gets plain lines in both directions.
 *
 * Room access: /invite, /kick, /remove, /private, /public, /access and
 * /limits (the room's limits: agent/room_limits.h) are room requests (the
 * agent checks that the user owns the room or is an admin); /rooms and
 * /delete are atriumd's own (room_access.h), answered here.
 * An access_denied event (kicked, removed, or the room went private) ends the
 * chat with its message on stderr and status 1; the chat does not
 * reconnect then.
 *
 * Output goes out in frames: each print, stream step or key's redraw is
 * rendered whole into `frame`, then queued (`q`); the queue moves to the
 * channel only whole, and only while the channel holds less than
 * CHAT_OUT_LOW, so the bytes on the wire never end inside an escape
 * sequence or a UTF-8 character.  A slow client does not hold the room
 * up.  While more than CHAT_PAUSE_AT waits, the room's events are not
 * taken (a burst of output waits, for this member alone, in the room
 * feed's ring, chat_feed.h, or in the link's socket when unfed);
 * when the client has not caught up after CHAT_STALL_MS, or a frame does
 * not fit in CHAT_MAX_QUEUED, every queued frame is dropped (whole ones,
 * none of which went out), reading goes on, and once the client has
 * caught up the screen is drawn again from the model (tui_draw_redraw)
 * with a note; in plain mode the note says lines were dropped.  Ctrl-L
 * and a new window size redraw the same way.
 *
 * Command output comes in chunks cut anywhere: its unfinished last line
 * is kept (`partial`) until the rest comes or something else is shown.
 *
 * The lines drawn are appended, with one exception: an approval's answer
 * rewrites the lines that asked it (`prompts`: the prompt, and the "still
 * waits" line a join showed) where they are, so that no answered prompt
 * reads as waiting; a replay does the same, so it shows what live did.
 * A !command's output shown live is not shown again by the replay of its
 * end after a reconnect (`exec_live`).
 *
 * The room's events come from the room's feed (chat_feed.h), shared by
 * the room's sessions here, once this session's join replay was drawn;
 * the link carries what is this session's own.  A session the feed could
 * not be made for gets them on its link, as every session once did.
 *
 * What rings the bell, mentions, /term's news and stopping a !command
 * (Ctrl-C on an empty line, /kill) are chat_attn.c's: chat_event hands it
 * each event before and after drawing it.
 *
 * Colour is off when the client sent NO_COLOR (non-empty) through an env
 * request (SetEnv or SendEnv); bold and reverse stay.
 */
#include "chat_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agentlink.h"
#include "chat_feed.h"
#include "event_time.h"
#include "log.h"
#include "monitor_ask.h"
#include "room_access.h"
#include "server.h"
#include "term_mode.h"
#include "tui_approval.h"
#include "tui_time.h"
#include "user_cap.h"
#include "utf8.h"
#include "util.h"

#define CHAT_MAX_QUEUED		(256 * 1024)	/* frames waiting for the client */
#define CHAT_OUT_LOW		(64 * 1024)	/* ... moved below this */
#define CHAT_PAUSE_AT		(CHAT_MAX_QUEUED / 2)	/* stop reading the room */
#define CHAT_STALL_MS		1000	/* paused this long: drop, redraw */
#define CHAT_MAX_PARTIAL	(2 * 1024 * 1024)	/* unfinished output kept
					 * (more than one event holds) */
#define CHAT_MAX_FRAME		(1024 * 1024)	/* one frame, at most */
#define CHAT_KEEP		4096	/* per buffer, kept once it is empty */
#define CHAT_DROPPED_NOTE	"(output dropped: your connection is slower " \
				"than the room; the screen was drawn again)"
#define CHAT_MADE_MS		30000	/* a room this new was made by this
					 * session (chat_made_hint) */
#define CHAT_SUMMARY		300	/* bytes of a tool input shown */
#define CHAT_RESULT_SHOWN	2000	/* bytes of a failed tool's output */
#define CHAT_PASTE_ON		"\x1b[?2004h"	/* bracketed paste mode */
#define CHAT_PASTE_OFF		"\x1b[?2004l"
/* Mouse button reports (for the wheel), SGR encoded: no byte limits on
 * the position, and nothing a terminal sends can look like text. */
#define CHAT_MOUSE_ON		"\x1b[?1000h\x1b[?1006h"
#define CHAT_MOUSE_OFF		"\x1b[?1006l\x1b[?1000l"
/* What leaves the client's terminal as the chat found it. */
#define CHAT_MODES_OFF		CHAT_PASTE_OFF CHAT_MOUSE_OFF

/* ------------------------------------------------------------ commands -- */

/* A new request object of type. */
json_object *
chat_req(const char *type)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string(type));
	return o;
}

/* See chat_int.h. */
int
chat_yes_no(const char *line)
{
	if (!strcasecmp(line, "y") || !strcasecmp(line, "yes"))
		return 1;
	if (!strcasecmp(line, "n") || !strcasecmp(line, "no"))
		return 0;
	return -1;
}

/* ------------------------------------------------------------- output -- */

/* The terminal modes the line UI asks for, into out: bracketed paste, and
 * the mouse unless /mouse off.  Part of every full redraw, so they are
 * back after /term and after dropped frames. */
static void
chat_modes_on(const struct chat *ch, struct buf *out)
{
	buf_append(out, CHAT_PASTE_ON, strlen(CHAT_PASTE_ON));
	if (ch->mouse_off)
		buf_append(out, CHAT_MOUSE_OFF, strlen(CHAT_MOUSE_OFF));
	else
		buf_append(out, CHAT_MOUSE_ON, strlen(CHAT_MOUSE_ON));
}

/* Move queued frames to the channel while it is nearly empty; once a
 * drop left the client behind, draw the screen again (or, plain, say
 * so) first. */
static void
chat_flush(struct chat *ch)
{
	struct chan *c = ch->c;

	if (c->out.len >= CHAT_OUT_LOW)
		return;
	if (ch->redraw_owed) {
		ch->redraw_owed = 0;
		buf_reset(&ch->frame);
		if (ch->term) {
			term_mode_redraw(ch->term);
		} else if (ch->ansi) {
			tui_model_add(&ch->draw.model, "\x1b[2m* " CHAT_DROPPED_NOTE
			    "\x1b[0m", strlen(CHAT_DROPPED_NOTE) + 10);
			chat_modes_on(ch, &ch->frame);
			tui_draw_redraw(&ch->draw, &ch->frame, c->s->room,
			    &ch->ed, c->cols, c->rows);
		} else {
			tui_draw_line(&ch->draw, &ch->frame, TUI_STYLE_NOTICE,
			    NULL, CHAT_DROPPED_NOTE);
		}
		chan_write(c, ch->frame.data, ch->frame.len);
		buf_reset(&ch->frame);
	}
	if (ch->q.len && chan_write(c, ch->q.data, ch->q.len) == 0)
		buf_reset(&ch->q);
}

/* Start rendering a frame; returns the buffer to render into. */
struct buf *
chat_frame(struct chat *ch)
{
	buf_reset(&ch->frame);
	return &ch->frame;
}

/* Drop every queued frame; the client is owed a redraw (or a note). */
static void
chat_drop(struct chat *ch)
{
	if (!ch->redraw_owed)
		log_info("session %lu: %s: chat output dropped: the client "
		    "reads slower than the room talks", ch->c->s->num,
		    ch->c->s->user);
	buf_reset(&ch->q);
	ch->redraw_owed = 1;
}

/* Queue the frame whole.  When it does not fit (or was cut short: it
 * would pass CHAT_MAX_FRAME), every queued frame is dropped; with ansi,
 * while a redraw is owed frames are not queued (the redraw shows where
 * they left the screen), plain lines go on after the note.  Reading the
 * room pauses while the queue is long (chat_tick resumes it). */
static void
chat_queue_frame(struct chat *ch)
{
	const char *f = ch->frame.data ? ch->frame.data : "";

	if (ch->redraw_owed && ch->ansi) {
		buf_reset(&ch->frame);
	} else if (ch->frame.len >= CHAT_MAX_FRAME ||
	    buf_append(&ch->q, f, ch->frame.len) < 0) {
		chat_drop(ch);
		if (!ch->ansi && ch->frame.len < CHAT_MAX_FRAME)
			buf_append(&ch->q, f, ch->frame.len);
	}
	buf_reset(&ch->frame);
	chat_flush(ch);
	if (ch->q.len > CHAT_PAUSE_AT && !ch->paused_ms) {
		ch->paused_ms = time_mono_ms();
		agentlink_pause(&ch->link, 1);
	}
}

/* A chat frame is done: queued, unless it was drawn into a model or the
 * member is in /term (then the chat's model has what it showed, and the
 * return draws it). */
void
chat_frame_done(struct chat *ch)
{
	ch->frame_count++;
	if (ch->render_only || ch->term) {
		buf_reset(&ch->frame);
		return;
	}
	if (ch->scroll.offset && ch->ansi) {
		/* Scrolled back: the view, drawn again, is the frame. */
		buf_reset(&ch->frame);
		tui_draw_view(&ch->draw, &ch->frame, ch->c->s->room, &ch->ed,
		    &ch->scroll.older, ch->scroll.offset);
	}
	chat_queue_frame(ch);
}

/* Every loop turn (never inside the link's callbacks): resume reading
 * the room once the client took the queue, or after CHAT_STALL_MS drop
 * what it did not take and resume anyway. */
static void
chat_resume(struct chat *ch)
{
	if (!ch->paused_ms)
		return;
	if (ch->q.len > CHAT_PAUSE_AT &&
	    time_mono_ms() - ch->paused_ms < CHAT_STALL_MS)
		return;
	if (ch->q.len > CHAT_PAUSE_AT)
		chat_drop(ch);
	ch->paused_ms = 0;
	agentlink_pause(&ch->link, 0);
	chat_feed_catch_up(ch);		/* what the feed brought meanwhile */
}

/* See chat_int.h. */
void
chat_queue_bytes(struct chat *ch, const char *p, size_t n)
{
	if (ch->render_only)
		return;
	buf_reset(&ch->frame);
	buf_append(&ch->frame, p, n);
	chat_queue_frame(ch);
}

/* Raw bytes as a frame of their own (plain echo, the goodbye). */
static void
chat_raw(struct chat *ch, const char *p, size_t n)
{
	buf_append(chat_frame(ch), p, n);
	chat_frame_done(ch);
}

/* Show one line above the input line, as it is. */
static void
chat_show(struct chat *ch, enum tui_style style, const char *name,
    const char *text)
{
	struct buf *f = chat_frame(ch);

	tui_draw_clear_bottom(&ch->draw, f);
	tui_draw_line(&ch->draw, f, style, name, text);
	tui_draw_bottom(&ch->draw, f, ch->c->s->room, &ch->ed);
	chat_frame_done(ch);
}

/* See chat_int.h. */
void
chat_output_flush(struct chat *ch)
{
	if (!ch->partial.len || ch->render_only)
		return;
	chat_show(ch, TUI_STYLE_OUTPUT, NULL, ch->partial.data);
	buf_reset(&ch->partial);
}

/* Print one line above the input line (after the output kept). */
void
chat_print(struct chat *ch, enum tui_style style, const char *name,
    const char *text)
{
	/* A line of the chat's own (an answer to a command) is stamped
	 * with the time it was shown. */
	int own = ch->ansi && !ch->draw.time_ms;
	/* Scrolled back outside an event (which counts its own lines): the
	 * view stays, the line counts as new. */
	int scrolled = ch->scroll.offset && !ch->render_only;
	size_t mark = scrolled ? chat_scroll_mark(ch) : 0;
	struct timespec now;

	if (own && clock_gettime(CLOCK_REALTIME, &now) == 0)
		tui_draw_set_time(&ch->draw, (long long)now.tv_sec * 1000 +
		    now.tv_nsec / 1000000);
	chat_output_flush(ch);
	chat_show(ch, style, name, text);
	if (own)
		tui_draw_set_time(&ch->draw, 0);
	if (scrolled)
		chat_scroll_added(ch, mark);
}

/* A chunk of command output: its whole lines now, the rest kept. */
static void
chat_output(struct chat *ch, const char *text)
{
	const char *nl;
	size_t n = strlen(text), keep;

	if (buf_append(&ch->partial, text, n) < 0) {
		chat_output_flush(ch);
		if (buf_append(&ch->partial, text, n) < 0) {
			chat_show(ch, TUI_STYLE_OUTPUT, NULL, text);
			return;
		}
	}
	nl = memrchr(ch->partial.data, '\n', ch->partial.len);
	if (!nl)
		return;
	keep = ch->partial.len - (size_t)(nl + 1 - ch->partial.data);
	ch->partial.data[nl - ch->partial.data] = '\0';
	chat_show(ch, TUI_STYLE_OUTPUT, NULL, ch->partial.data);
	buf_consume(&ch->partial, ch->partial.len - keep);
}

/* Queue the modes as a frame of their own (a scrolled-back frame is the
 * view alone). */
static void
chat_queue_modes(struct chat *ch)
{
	if (!ch->ansi || ch->term || ch->render_only)
		return;
	chat_modes_on(ch, chat_frame(ch));
	chat_queue_frame(ch);
}

/* Draw the whole screen again from the model (Ctrl-L, a new size). */
void
chat_redraw(struct chat *ch)
{
	chat_queue_modes(ch);
	if (ch->scroll.offset) {
		ch->draw.cols = ch->c->cols > 0 ? ch->c->cols : ch->draw.cols;
		ch->draw.rows = ch->c->rows > 0 ? ch->c->rows : ch->draw.rows;
		chat_scroll_clamp(ch);
	}
	if (ch->scroll.offset) {
		chat_status_refresh(ch);
		chat_frame(ch);
		chat_frame_done(ch);	/* draws the view */
		return;
	}
	tui_draw_redraw(&ch->draw, chat_frame(ch), ch->c->s->room, &ch->ed,
	    ch->c->cols, ch->c->rows);
	chat_frame_done(ch);
}

/* Short text for a tool input: its command, else its JSON. */
static void
chat_summary(json_object *input, char *out, size_t len)
{
	const char *cmd = input ? json_get_string(input, "command") : NULL;
	const char *s = cmd ? cmd : input ? json_object_to_json_string_ext(input,
	    JSON_C_TO_STRING_PLAIN) : "";

	snprintf(out, len, "%.*s%s", CHAT_SUMMARY, s,
	    strlen(s) > CHAT_SUMMARY ? "..." : "");
}

/* Add " after 1.2 s" to the first line of text when the start of the
 * command id was seen (the end's time is the event's: draw.time_ms). */
static void
chat_took(struct chat *ch, const char *id, char *text, size_t len)
{
	long long ms = tui_status_took(&ch->status, id, ch->draw.time_ms);
	size_t first = strcspn(text, "\n"), tail = strlen(text) - first;
	char took[48];
	int n;

	if (ms < 0)
		return;
	memcpy(took, " after ", 7);
	tui_time_duration(ms, took + 7, sizeof(took) - 7);
	n = (int)strlen(took);
	if (strlen(text) + (size_t)n + 1 > len)
		return;
	memmove(text + first + n, text + first, tail + 1);
	memcpy(text + first, took, (size_t)n);
}

/* A replayed result of bash, whose output streamed live before its end
 * line: that output now, as it showed then (without the failure's last
 * line, which the end line shows). */
static void
chat_tool_replay_output(struct chat *ch, const char *out, size_t n, int ok)
{
	char *text;

	if (!ok)
		while (n > 0 && out[n - 1] != '\n')
			n--;
	while (n > 0 && out[n - 1] == '\n')
		n--;
	if (!n || !(text = strndup(out, n)))
		return;
	chat_print(ch, TUI_STYLE_OUTPUT, NULL, text);
	free(text);
}

/* A tool's result.  Output already shown live is not shown again: only
 * its last line when the tool failed ("exit status 2"); a replay of a
 * streamed tool shows its output first, so it reads as it did live. */
static void
chat_tool_result(struct chat *ch, json_object *o)
{
	const char *status = json_get_string(o, "status") ?: "?";
	const char *out = json_get_string(o, "output") ?: "";
	const char *id = json_get_string(o, "id") ?: "";
	const char *name = json_get_string(o, "name") ?: "";
	int ok = strcmp(status, "ok") == 0, replay = json_get_bool(o,
	    "replay", 0), live = ch->streamed[0] && strcmp(ch->streamed,
	    id) == 0 && !replay, streams = replay && strcmp(name, "bash") == 0 &&
	    (ok || strcmp(status, "error") == 0);
	char text[CHAT_RESULT_SHOWN + 64];
	size_t n = strlen(out);
	const char *last;

	while (n > 0 && out[n - 1] == '\n')
		n--;
	if (streams)
		chat_tool_replay_output(ch, out, n, ok);
	if (live || (streams && n)) {
		last = out + n;
		while (last > out && last[-1] != '\n')
			last--;
		snprintf(text, sizeof(text), "tool %s%s%.*s", status,
		    ok ? "" : ": ", ok ? 0 : (int)(out + n - last), last);
	} else {
		snprintf(text, sizeof(text), "tool %s%s%.*s", status,
		    n ? ":\n" : "", (int)(n > CHAT_RESULT_SHOWN ?
		    CHAT_RESULT_SHOWN : n), out);
	}
	ch->streamed[0] = '\0';
	chat_took(ch, id, text, sizeof(text));
	chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
}

/* Remember an approval request as waiting (the oldest is forgotten when
 * too many wait), or strike one that was answered or ran. */
static void
chat_track_waiting(struct chat *ch, const char *id, int add)
{
	int i;

	if (!id || strlen(id) >= sizeof(ch->waiting[0]))
		return;
	for (i = 0; i < ch->nwaiting && strcmp(ch->waiting[i], id); i++)
		;
	if (i < ch->nwaiting) {
		memmove(ch->waiting[i], ch->waiting[i + 1],
		    (size_t)(ch->nwaiting - i - 1) * sizeof(ch->waiting[0]));
		ch->nwaiting--;
	}
	if (!add)
		return;
	if (ch->nwaiting == CHAT_MAX_WAITING) {
		memmove(ch->waiting[0], ch->waiting[1],
		    (size_t)(CHAT_MAX_WAITING - 1) * sizeof(ch->waiting[0]));
		ch->nwaiting--;
	}
	memcpy(ch->waiting[ch->nwaiting++], id, strlen(id) + 1);
}

/* An approval request, saying exactly what will run (tui_approval.h);
 * several: others wait too, so it names its id. */
static void
chat_approval(struct chat *ch, json_object *o, int several)
{
	char *text = malloc(TUI_APPROVAL_MAX * 2 + 1024);

	if (!text) {
		chat_print(ch, TUI_STYLE_ERROR, NULL, "approval needed (out of "
		    "memory to show it): y to run it, n to refuse");
		return;
	}
	tui_approval_text(o, several, text, TUI_APPROVAL_MAX * 2 + 1024);
	chat_print(ch, TUI_STYLE_ERROR, NULL, text);
	free(text);
	chat_prompt_drawn(ch, json_get_string(o, "id"));
}

/* An approval request from the room.  Replayed, it shows as it did live
 * and waits for nothing (its approval_result follows it in the record);
 * live, it waits for an answer.  The live one a join sends after the
 * replay that just showed it only says how long is left. */
static void
chat_approval_request(struct chat *ch, json_object *o)
{
	const char *id = json_get_string(o, "id") ?: "";
	char text[128];

	if (json_get_bool(o, "replay", 0)) {
		snprintf(ch->asked, sizeof(ch->asked), "%s", id);
		chat_approval(ch, o, 0);
		return;
	}
	chat_track_waiting(ch, id, 1);
	if (ch->asked[0] && strcmp(ch->asked, id) == 0) {
		snprintf(text, sizeof(text), "the agent still waits for an "
		    "answer (y/n, %lld s left)", json_get_int(o, "seconds", 0));
		chat_print(ch, TUI_STYLE_ERROR, NULL, text);
		chat_prompt_drawn(ch, id);
	} else {
		chat_approval(ch, o, ch->nwaiting > 1);
	}
	snprintf(ch->asked, sizeof(ch->asked), "%s", id);
}

static int chat_exec_live(struct chat *ch, const char *id, int add);

/* Events about tools and approvals. */
static int
chat_event_tool(struct chat *ch, const char *type, json_object *o)
{
	char text[CHAT_RESULT_SHOWN + 512], sum[CHAT_SUMMARY + 8];
	json_object *input = NULL;

	json_object_object_get_ex(o, "input", &input);
	if (strcmp(type, "tool_call") == 0) {
		chat_summary(input, sum, sizeof(sum));
		snprintf(text, sizeof(text), "agent runs %s: %s",
		    json_get_string(o, "name") ?: "?", sum);
		chat_print(ch, TUI_STYLE_TOOL, NULL, text);
	} else if (strcmp(type, "approval_request") == 0) {
		chat_approval_request(ch, o);
	} else if (strcmp(type, "approval_result") == 0) {
		/* Answered (by whom, how) or not: the room's own words. */
		chat_track_waiting(ch, json_get_string(o, "id"), 0);
		/* A call that will not run has no duration to show. */
		if (strcmp(json_get_string(o, "status") ?: "", "approved"))
			tui_status_took(&ch->status, json_get_string(o, "id"),
			    0);
		chat_prompt_answered(ch, o);
		ch->asked[0] = '\0';
		chat_print(ch, TUI_STYLE_NOTICE, NULL,
		    json_get_string(o, "text") ?: "approval answered");
	} else if (strcmp(type, "tool_output") == 0 ||
	    strcmp(type, "exec_output") == 0) {
		if (type[0] == 't')
			chat_track_waiting(ch, json_get_string(o, "id"), 0);
		if (type[0] == 't')
			snprintf(ch->streamed, sizeof(ch->streamed), "%s",
			    json_get_string(o, "id") ?: "");
		else
			chat_exec_live(ch, json_get_string(o, "id"), 1);
		chat_output(ch, json_get_string(o, "text") ?: "");
	} else if (strcmp(type, "tool_result") == 0) {
		chat_track_waiting(ch, json_get_string(o, "id"), 0);
		chat_tool_result(ch, o);
	} else {
		return 0;
	}
	return 1;
}

/* The slot of id among the commands whose output showed live, or -1;
 * add: remember it there (the oldest is forgotten when too many are). */
static int
chat_exec_live(struct chat *ch, const char *id, int add)
{
	int i;

	if (!id || strlen(id) >= sizeof(ch->exec_live[0]))
		return -1;
	for (i = ch->nexec_live - 1; i >= 0; i--)
		if (strcmp(ch->exec_live[i], id) == 0)
			return i;
	if (!add)
		return -1;
	if (ch->nexec_live == CHAT_MAX_EXEC_LIVE) {
		memmove(ch->exec_live[0], ch->exec_live[1],
		    (size_t)(CHAT_MAX_EXEC_LIVE - 1) * sizeof(ch->exec_live[0]));
		ch->nexec_live--;
	}
	memcpy(ch->exec_live[ch->nexec_live], id, strlen(id) + 1);
	return ch->nexec_live++;
}

/* A command's end: a replay shows the output it stored first (live, it
 * came as exec_output), unless it is the replay of a reconnect and this
 * session showed that output live already, missing only the end (a
 * restart cut the command).  PgUp and /history draw it whole. */
static void
chat_exec_result(struct chat *ch, json_object *o)
{
	const char *out = json_get_string(o, "stdout");
	const char *err = json_get_string(o, "stderr");
	const char *id = json_get_string(o, "id");
	int rejoin = ch->nbatch > 0 && ch->batch[0] == CHAT_BATCH_JOIN;
	int show = json_get_bool(o, "replay", 0) && !(rejoin &&
	    chat_exec_live(ch, id, 0) >= 0);
	char text[1024];

	if (show && out && *out)
		chat_print(ch, TUI_STYLE_OUTPUT, NULL, out);
	if (show && err && *err)
		chat_print(ch, TUI_STYLE_OUTPUT, NULL, err);
	if (json_get_bool(o, "interrupted", 0)) {
		/* A restart cut it: no status, no duration known. */
		snprintf(text, sizeof(text), "%s", json_get_string(o,
		    "text") ?: "interrupted");
		tui_status_took(&ch->status, id, 0);
	} else {
		chat_exec_end_text(o, text, sizeof(text));
	}
	chat_took(ch, id, text, sizeof(text));
	chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
}

/* Events about commands run with !CMD. */
static int
chat_event_exec(struct chat *ch, const char *type, json_object *o)
{
	char text[1024];

	if (strcmp(type, "exec_start") == 0) {
		snprintf(text, sizeof(text), "%s $ %s",
		    json_get_string(o, "user") ?: "?",
		    json_get_string(o, "command") ?: "");
		chat_print(ch, TUI_STYLE_TOOL, NULL, text);
	} else if (strcmp(type, "exec_result") == 0) {
		chat_exec_result(ch, o);
	} else {
		return 0;
	}
	return 1;
}

/* The members of an access event or a listed room, "a, b" ("none"). */
static void
chat_members_text(json_object *o, char *out, size_t len)
{
	json_object *m = NULL;
	size_t n, used = 0;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, "members", &m) ||
	    !json_object_is_type(m, json_type_array) ||
	    !(n = json_object_array_length(m))) {
		snprintf(out, len, "none");
		return;
	}
	for (size_t i = 0; i < n && used + 1 < len; i++) {
		int w = snprintf(out + used, len - used, "%s%s", i ? ", " : "",
		    json_object_get_string(json_object_array_get_idx(m, i)));

		if (w < 0)
			break;
		used += (size_t)w;
	}
}

/* An access event: what changed, then the list. */
static void
chat_access_text(json_object *o, char *out, size_t len)
{
	const char *change = json_get_string(o, "change") ?: "";
	const char *by = json_get_string(o, "by") ?: "someone";
	const char *user = json_get_string(o, "user") ?: "?";
	char members[1024], what[400];

	chat_members_text(o, members, sizeof(members));
	if (strcmp(change, "invite") == 0)
		snprintf(what, sizeof(what), "%s invited %s; ", by, user);
	else if (strcmp(change, "kick") == 0 && json_get_int(o, "seconds", 0))
		snprintf(what, sizeof(what), "%s kicked %s (out for %lld "
		    "minutes%s%.200s); ", by, user,
		    (json_get_int(o, "seconds", 0) + 59) / 60,
		    json_get_string(o, "reason") ? ": " : "",
		    json_get_string(o, "reason") ?: "");
	else if (strcmp(change, "kick") == 0 || strcmp(change, "remove") == 0)
		/* A kick stored before kicks were apart was a removal. */
		snprintf(what, sizeof(what), "%s removed %s; ", by, user);
	else if (strcmp(change, "visibility") == 0)
		snprintf(what, sizeof(what), "%s made the room %s; ", by,
		    json_get_string(o, "visibility") ?: "?");
	else if (strcmp(change, "owner") == 0)
		snprintf(what, sizeof(what), "%s owns the room; ", user);
	else
		what[0] = '\0';
	snprintf(out, len, "%sroom: %s, owner %s, members %s", what,
	    json_get_string(o, "visibility") ?: "?",
	    json_get_string(o, "owner") ?: "none", members);
}

/* An event's UTC time as the chat shows dates: "Tuesday 1 December
 * 2026, 14:05" in the server's zone; "an unknown time" when iso is not
 * one. */
static void
chat_when_text(const char *iso, char *out, size_t len)
{
	char day[64], hhmm[8];
	long long ms;

	if (event_time_ms(iso, &ms) < 0) {
		snprintf(out, len, "an unknown time");
		return;
	}
	tui_time_date(ms, day, sizeof(day));
	tui_time_hhmm(ms, hhmm, sizeof(hhmm));
	snprintf(out, len, "%s, %s", day, hhmm);
}

/* The mark an import leaves after the archive's history: it says where
 * the lines above came from, and that their names are the archive's
 * word, not people this server knows said them. */
static void
chat_imported_text(json_object *o, char *out, size_t len)
{
	const char *origin = json_get_string(o, "origin");
	const char *exported = json_get_string(o, "exported");
	char at[96], from[200], made[128];

	chat_when_text(json_get_string(o, "time"), at, sizeof(at));
	if (origin)
		snprintf(from, sizeof(from), "an archive of room %s", origin);
	else
		snprintf(from, sizeof(from), "an archive");
	made[0] = '\0';
	if (exported) {
		char when[96];

		chat_when_text(exported, when, sizeof(when));
		snprintf(made, sizeof(made), " (made %s, as it says)", when);
	}
	snprintf(out, len, "\xe2\x80\x94 history above was imported from %s%s "
	    "by %s at %s; who said what in it is as the archive says, not "
	    "checked%s \xe2\x80\x94", from, made, json_get_string(o, "user") ?:
	    "?", at, json_get_int(o, "requests", 0) ? "; its model usage "
	    "there is kept apart from this room's (/cost)" : "");
}

/* Idle seconds as "active", "idle 5s", "idle 3m", "idle 2h". */
static void
chat_idle_text(long long secs, char *out, size_t len)
{
	if (secs < 60)
		snprintf(out, len, secs < 10 ? "active" : "idle %llds", secs);
	else if (secs < 3600)
		snprintf(out, len, "idle %lldm", secs / 60);
	else
		snprintf(out, len, "idle %lldh", secs / 3600);
}

/* 1 when name is in the presence event's "term" list (the members in
 * the room's shared terminal, when the room says). */
static int
chat_in_term(json_object *o, const char *name)
{
	json_object *term = NULL;

	if (!name || !json_object_object_get_ex(o, "term", &term) ||
	    !json_object_is_type(term, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(term); i++)
		if (strcmp(json_object_get_string(json_object_array_get_idx(
		    term, i)) ?: "", name) == 0)
			return 1;
	return 0;
}

/* The answer to /who: a line per person, with idle time when known. */
static void
chat_who_text(json_object *o, json_object *users, char *out, size_t len)
{
	json_object *idle = NULL, *secs;
	size_t n = json_object_is_type(users, json_type_array) ?
	    json_object_array_length(users) : 0, used;
	char how[32];

	json_object_object_get_ex(o, "idle", &idle);
	used = (size_t)snprintf(out, len, n ? "here (%zu):" : "nobody is "
	    "here in a chat", n);
	for (size_t i = 0; i < n && used < len; i++) {
		const char *name = json_object_get_string(
		    json_object_array_get_idx(users, i));

		how[0] = '\0';
		if (idle && json_object_object_get_ex(idle, name, &secs))
			chat_idle_text(json_object_get_int64(secs), how,
			    sizeof(how));
		used += (size_t)snprintf(out + used, len - used, "\n  %-20s %s%s",
		    name ? name : "?", how, chat_in_term(o, name) ?
		    ", in /term" : "");
	}
}

/* The names of the MCP servers in list (a config event's "mcp"), or
 * "none", into out. */
static void
chat_mcp_names(json_object *list, char *out, size_t len)
{
	size_t used = 0, n = json_object_is_type(list, json_type_array) ?
	    json_object_array_length(list) : 0;

	snprintf(out, len, "none");
	for (size_t i = 0; i < n && used < len; i++)
		used += (size_t)snprintf(out + used, len - used, "%s%s",
		    i ? ", " : "", json_get_string(json_object_array_get_idx(
		    list, i), "name") ?: "?");
}

/* A settings change, as exactly what the request set ("changed"); older
 * events without it show the settings after the change. */
static void
chat_config_text(json_object *o, char *out, size_t len)
{
	static const struct { const char *key, *what; } names[] = {
		{ "provider", "the provider" }, { "model", "the model" },
		{ "approval", "the approval policy" },
		{ "allow_list", "the allow list" },
		{ "mcp", "the MCP servers" },
	};
	json_object *changed = NULL, *v;
	char names_text[512];
	size_t used = (size_t)snprintf(out, len, "%s set ",
	    json_get_string(o, "user") ?: "someone");
	int any = 0;

	json_object_object_get_ex(o, "changed", &changed);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) &&
	    used < len; i++) {
		int set = 0;

		for (size_t j = 0; changed && j < json_object_array_length(
		    changed); j++)
			set |= strcmp(json_object_get_string(
			    json_object_array_get_idx(changed, j)),
			    names[i].key) == 0;
		if ((changed && !set) || (!changed && i != 1 && i != 2) ||
		    !json_object_object_get_ex(o, names[i].key, &v))
			continue;
		if (strcmp(names[i].key, "mcp") == 0)
			chat_mcp_names(v, names_text, sizeof(names_text));
		used += (size_t)snprintf(out + used, len - used, "%s%s to %s",
		    any++ ? ", " : "", names[i].what,
		    strcmp(names[i].key, "mcp") == 0 ? names_text :
		    json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : json_object_to_json_string_ext(
		    v, JSON_C_TO_STRING_PLAIN));
	}
	if (!any && used < len)
		snprintf(out + used, len - used, "nothing new");
}

/* The room was made just now by this user (its first chat): say that
 * the SSH user named it, since `ssh HOST` without ROOM@ makes a room
 * named after the local login.  The owner's event is in the join's
 * replay, so "just now" is its time: within CHAT_MADE_MS. */
static void
chat_made_hint(struct chat *ch, json_object *o)
{
	char text[512];
	long long ms;

	if (strcmp(json_get_string(o, "change") ?: "", "owner") != 0 ||
	    strcmp(json_get_string(o, "user") ?: "", ch->c->s->user) != 0 ||
	    event_time_ms(json_get_string(o, "time"), &ms) < 0 ||
	    llabs((long long)time(NULL) * 1000 - ms) > CHAT_MADE_MS)
		return;
	snprintf(text, sizeof(text), "you own room %s now: the SSH user names "
	    "the room (ssh -t ROOM@HOST; without ROOM@, ssh sends your local "
	    "login name); /rooms lists the rooms you may enter, /delete %s "
	    "deletes this one", ch->c->s->room, ch->c->s->room);
	chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
}

/* Events about people and settings. */
static int
chat_event_room(struct chat *ch, const char *type, json_object *o)
{
	char text[2048];

	if (strcmp(type, "welcome") == 0) {
		snprintf(text, sizeof(text), "you are %s in room %s (owner %s, "
		    "%s; model %s, approval %s); /help lists the commands",
		    json_get_string(o, "user") ?: "?",
		    json_get_string(o, "room") ?: ch->c->s->room,
		    json_get_string(o, "owner") ?: "none",
		    json_get_string(o, "visibility") ?: "open",
		    json_get_string(o, "model") ?: "?",
		    json_get_string(o, "approval") ?: "?");
	} else if (strcmp(type, "presence") == 0) {
		json_object *users = NULL;
		const char *who;

		if ((who = json_get_string(o, "joined")))
			snprintf(text, sizeof(text), "%s joined", who);
		else if ((who = json_get_string(o, "left")))
			snprintf(text, sizeof(text), "%s left", who);
		else if (json_object_object_get_ex(o, "users", &users))
			chat_who_text(o, users, text, sizeof(text));
		else
			return 1;
	} else if (strcmp(type, "config") == 0) {
		chat_config_text(o, text, sizeof(text));
	} else if (strcmp(type, "turn_end") == 0) {
		json_object *u = NULL;

		json_object_object_get_ex(o, "usage", &u);
		snprintf(text, sizeof(text), "agent done (%s; %lld tokens in, "
		    "%lld out)", json_get_string(o, "stop_reason") ?: "?",
		    u ? json_get_int(u, "input_tokens", 0) : 0,
		    u ? json_get_int(u, "output_tokens", 0) : 0);
	} else if (strcmp(type, "access") == 0) {
		chat_access_text(o, text, sizeof(text));
		chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
		chat_made_hint(ch, o);
		return 1;
	} else if (strcmp(type, "imported") == 0) {
		chat_imported_text(o, text, sizeof(text));
	} else if (strcmp(type, "usage") == 0) {
		chat_cost_text(o, text, sizeof(text));
	} else if (strcmp(type, "notice") == 0 || strcmp(type, "limits") == 0 ||
	    strcmp(type, "caps") == 0 || strcmp(type, "snapshot") == 0) {
		snprintf(text, sizeof(text), "%s", json_get_string(o, "text") ?: "");
	} else if (strcmp(type, "compaction") == 0) {
		/* Live, a notice already said so; history has only this. */
		if (!json_get_bool(o, "replay", 0))
			return 1;
		snprintf(text, sizeof(text), "the agent summarised %lld earlier "
		    "messages for the model (the history stays whole)",
		    json_get_int(o, "summarized", 0));
	} else if (strcmp(type, "error") == 0) {
		chat_print(ch, TUI_STYLE_ERROR, NULL,
		    json_get_string(o, "message") ?: "error");
		return 1;
	} else {
		return 0;
	}
	chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	return 1;
}

/* A message, or the agent's streamed text. */
static int
chat_event_message(struct chat *ch, const char *type, json_object *o)
{
	const char *user = json_get_string(o, "user") ?: "?";
	const char *text = json_get_string(o, "text") ?: "";

	struct buf *f;

	if (strcmp(type, "agent_delta") == 0) {
		chat_output_flush(ch);
		f = chat_frame(ch);
		tui_draw_clear_bottom(&ch->draw, f);
		tui_draw_stream(&ch->draw, f, text);
		tui_draw_bottom(&ch->draw, f, ch->c->s->room, &ch->ed);
		chat_frame_done(ch);
		return 1;
	}
	if (strcmp(type, "agent_discard") == 0) {
		/* An attempt failed mid-answer: its text is not the answer. */
		f = chat_frame(ch);
		tui_draw_clear_bottom(&ch->draw, f);
		tui_draw_stream_drop(&ch->draw, f);
		tui_draw_bottom(&ch->draw, f, ch->c->s->room, &ch->ed);
		chat_frame_done(ch);
		chat_print(ch, TUI_STYLE_NOTICE, NULL, json_get_bool(o, "retry",
		    0) ? "the agent's answer was cut short; it is being "
		    "retried" : "the agent's answer was cut short");
		return 1;
	}
	/* A prompt: the question, as its asker's message. */
	if (strcmp(type, "message") != 0 && strcmp(type, "prompt") != 0)
		return 0;
	if (strcmp(user, "agent") == 0 && ch->draw.streaming &&
	    !json_get_bool(o, "replay", 0)) {
		/* The deltas already showed it. */
		f = chat_frame(ch);
		tui_draw_clear_bottom(&ch->draw, f);
		tui_draw_stream_end(&ch->draw, f);
		tui_draw_bottom(&ch->draw, f, ch->c->s->room, &ch->ed);
		chat_frame_done(ch);
		return 1;
	}
	if (strncmp(text, "/me ", 4) == 0 && text[4]) {
		/* An action: "* alice waves". */
		char *act = malloc(strlen(user) + strlen(text) + 2);

		if (act) {
			sprintf(act, "%s %s", user, text + 4);
			chat_print(ch, TUI_STYLE_NOTICE, NULL, act);
			free(act);
			return 1;
		}
	}
	chat_print(ch, TUI_STYLE_MESSAGE, user, text);
	return 1;
}

/* ---------------------------------------------------------- /term mode -- */
/* In /term the screen and the keys are term_mode's (term_mode.h); chat
 * frames are only kept in the model until the member comes back. */

/* Back to the chat, drawn again, with notice (the terminal ended), or,
 * when the member left (NULL), after telling the room. */
static void
chat_term_leave(struct chat *ch, const char *notice)
{
	if (!ch->term)
		return;
	term_mode_leave(ch->term, notice == NULL);
	ch->term = NULL;
	chat_redraw(ch);
	if (notice)
		chat_print(ch, TUI_STYLE_NOTICE, NULL, notice);
}

static void
chat_term_queue(void *arg)
{
	chat_queue_frame(arg);
}

/* /term: hand the screen and the keys to the room's terminal. */
static void
chat_term_enter(struct chat *ch)
{
	struct term_mode_host h = { .c = ch->c, .link = &ch->link,
	    .frame = chat_frame(ch), .queue = chat_term_queue, .arg = ch };
	char err[256];

	if (!ch->ansi)
		chat_print(ch, TUI_STYLE_ERROR, NULL, "/term needs a terminal: "
		    "connect with ssh -t and a TERM other than dumb");
	else if (!ch->term &&
	    !(ch->term = term_mode_enter(&h, ch->draw.color, err, sizeof(err))))
		chat_print(ch, TUI_STYLE_ERROR, NULL, err);
	else
		chat_attn_term_enter(ch);
}

/* /mouse on|off: the wheel scrolls the chat, or the terminal keeps the
 * mouse (for selecting text without Shift).  Kept for this session. */
static void
chat_mouse(struct chat *ch, int on)
{
	ch->mouse_off = !on;
	chat_queue_modes(ch);
	chat_print(ch, TUI_STYLE_NOTICE, NULL, on ? "mouse on: the wheel "
	    "scrolls the chat (Shift+drag selects text in most terminals)" :
	    "mouse off: the terminal keeps the mouse; PgUp/PgDn scroll");
}

/* A term_screen or term_end event: 1 when it was one. */
static int
chat_term_event(struct chat *ch, const char *type, json_object *o)
{
	char notice[256];
	int ended;

	if (!ch->term || !term_mode_event(ch->term, type, o, &ended, notice,
	    sizeof(notice)))
		return strncmp(type, "term_", 5) == 0;
	if (ended)
		chat_term_leave(ch, notice);
	return 1;
}

/* Removed from the room, or refused at hello: say why on stderr and
 * end with status 1; no reconnect. */
static void
chat_denied(struct chat *ch, const char *msg)
{
	if (ch->denied)
		return;
	chat_term_leave(ch, NULL);
	ch->denied = ch->leaving = 1;
	log_info("session %lu: %s: %s", ch->c->s->num, ch->c->s->user,
	    msg ? msg : "access denied");
	tui_draw_clear_bottom(&ch->draw, chat_frame(ch));
	if (ch->ansi)
		buf_append(&ch->frame, CHAT_MODES_OFF, strlen(CHAT_MODES_OFF));
	chat_frame_done(ch);
	chan_refuse(ch->c, "%s", msg ? msg : "atrium: access denied");
}

/* See chat_int.h. */
void
chat_dispatch(struct chat *ch, const char *type, json_object *o)
{
	if (chat_event_message(ch, type, o) || chat_event_tool(ch, type, o) ||
	    chat_event_exec(ch, type, o) || chat_undo_event(ch, type, o) ||
	    chat_attn_show(ch, type, o))
		return;
	chat_event_room(ch, type, o);
}

/* See chat_int.h. */
int
chat_status_refresh(struct chat *ch)
{
	char text[sizeof(ch->draw.status)];
	size_t n;

	if (!ch->ansi)
		return 0;
	n = 0;
	text[0] = '\0';
	/* First: the line is cut to the width. */
	chat_scroll_status(ch, text, sizeof(text));
	n = strlen(text);
	tui_status_text(&ch->status, ch->c->s->room, time_mono_ms(), text + n,
	    sizeof(text) - n);
	if (strcmp(text, ch->draw.status) == 0)
		return 0;
	tui_draw_set_status(&ch->draw, text);
	return 1;
}

/* See chat_int.h. */
void
chat_bottom(struct chat *ch)
{
	struct buf *f = chat_frame(ch);

	if (!ch->ansi)
		return;
	tui_draw_clear_bottom(&ch->draw, f);
	tui_draw_bottom(&ch->draw, f, ch->c->s->room, &ch->ed);
	chat_frame_done(ch);
}

/* An event drawn at the bottom, as it comes: with its time, after the
 * status line took it; while scrolled back, into the model only, and
 * the view is drawn once after. */
static void
chat_event(struct chat *ch, const char *type, json_object *o, long long seq)
{
	long long ms = 0;
	size_t mark = ch->scroll.offset ? chat_scroll_mark(ch) : 0;
	int scrolled = ch->scroll.offset > 0, changed;

	event_time_ms(json_get_string(o, "time"), &ms);
	tui_draw_set_time(&ch->draw, ms);
	/* The welcome carries the latest seq: no line of it marks where the
	 * scrollback's older events begin. */
	ch->draw.model.tag = strcmp(type, "welcome") ? seq : 0;
	changed = tui_status_event(&ch->status, type, o, ms, time_mono_ms());
	/* Scrolled back, the line also counts the new lines below. */
	changed = (changed || scrolled) && chat_status_refresh(ch);
	chat_attn_event(ch, type, o);
	ch->render_only = scrolled;
	buf_reset(&ch->frame);
	ch->frame_count = 0;
	chat_dispatch(ch, type, o);
	ch->render_only = 0;
	chat_attn_done(ch);
	tui_draw_set_time(&ch->draw, 0);
	ch->draw.model.tag = 0;
	if (scrolled)
		chat_scroll_added(ch, mark);
	else if (changed && !ch->frame_count)
		chat_bottom(ch);
}

/* A line from the room, on the link (own) or the feed. */
static void
chat_room_line(struct chat *ch, json_object *o, int own)
{
	const char *type = json_get_string(o, "type");
	long long seq = json_get_int(o, "seq", 0);

	/* Sent away: the goodbye line is the last thing shown, below the
	 * cleared bottom, never under the prompt drawn again by an event
	 * the room sent after it (the announcement of the kick). */
	if (!type || ch->denied)
		return;

	/* Fed (chat_feed.h), last_seq is where the room's events reached
	 * this member: a reply on the link carries the room's latest seq,
	 * which the feed may not have brought yet, and only the join's
	 * replay (hello's, or a rejoin) is in line with the feed. */
	if (own && ch->feed && strcmp(type, "welcome") == 0)
		chat_feed_welcome(ch, seq);
	if (seq > ch->last_seq && (!own || !ch->feed ||
	    strcmp(type, "welcome") == 0 || (ch->nbatch &&
	    ch->batch[0] == CHAT_BATCH_JOIN && json_get_bool(o, "replay", 0))))
		ch->last_seq = seq;
	if (strcmp(type, "access_denied") == 0) {
		chat_denied(ch, json_get_string(o, "message"));
		return;
	}
	if (chat_term_event(ch, type, o))
		return;
	if (strcmp(type, "completions") == 0) {
		chat_complete_answer(ch, o);
		return;
	}
	if (chat_batch_line(ch, type, o))
		return;
	chat_event(ch, type, o, seq);
}

/* A line on the link. */
static void
chat_line(void *arg, json_object *o, const char *line, size_t len)
{
	(void)line; (void)len;
	chat_room_line(arg, o, 1);
}

/* See chat_int.h. */
void
chat_room_event(struct chat *ch, json_object *o)
{
	chat_room_line(ch, o, 0);
}

/* See chat_int.h. */
void
chat_link_lost(struct chat *ch)
{
	char why[160], text[256];

	if (ch->leaving || ch->denied || ch->reconnect)
		return;
	chat_attn_reset(ch);
	chat_term_leave(ch, "the room's terminal ended: the room's agent "
	    "went away");
	monitor_ask_why(ch->c->s, why, sizeof(why));
	snprintf(text, sizeof(text), "the room's agent %s; reconnecting",
	    why[0] ? why : "restarted");
	chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	ch->reconnect = 1;
}

/* The link ended. */
static void
chat_end(void *arg)
{
	chat_link_lost(arg);
}

/* -------------------------------------------------------------- input -- */

/* Print a `rooms` listing, a line per room. */
static void
chat_rooms(struct chat *ch, json_object *ev)
{
	json_object *arr = NULL;
	char text[1400], members[1024];
	size_t n;

	if (!ev || !json_object_object_get_ex(ev, "rooms", &arr) ||
	    !(n = json_object_array_length(arr))) {
		chat_print(ch, TUI_STYLE_NOTICE, NULL, "no room you may enter");
		json_object_put(ev);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *r = json_object_array_get_idx(arr, i);

		chat_members_text(r, members, sizeof(members));
		snprintf(text, sizeof(text), "room %s: %s, %s, owner %s, "
		    "members %s", json_get_string(r, "room") ?: "?",
		    json_get_string(r, "visibility") ?: "?",
		    json_get_string(r, "state") ?: "?",
		    json_get_string(r, "owner") ?: "none", members);
		chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	}
	json_object_put(ev);
}

/* The rooms listing came (monitor_ask_rooms; ev NULL: refused). */
static void
chat_rooms_done(void *arg, json_object *ev)
{
	struct chat *ch = arg;

	ch->c->rooms_ask = NULL;
	if (!ev) {
		chat_print(ch, TUI_STYLE_ERROR, NULL, "cannot list the rooms "
		    "now; try again");
		return;
	}
	chat_rooms(ch, json_object_get(ev));
}

/* /rooms: asked of the monitor, shown when it answers (the loop that
 * serves every session does not wait for it); one at a time. */
static void
chat_ask_rooms(struct chat *ch)
{
	if (ch->c->rooms_ask)
		chat_print(ch, TUI_STYLE_NOTICE, NULL, "the rooms are being "
		    "listed; a moment");
	else if (!(ch->c->rooms_ask = monitor_ask_rooms(ch->c->s,
	    chat_rooms_done, ch)))
		chat_print(ch, TUI_STYLE_ERROR, NULL, "cannot list the rooms "
		    "now; try again");
}

/* atriumd's own requests (rooms, delete): 1 when req was one. */
static int
chat_own(struct chat *ch, json_object *req)
{
	const char *type = json_get_string(req, "type");
	json_object *ev;
	char msg[512];
	int r;

	if (type && strcmp(type, "rooms") == 0) {
		chat_ask_rooms(ch);
		return 1;
	}
	r = room_access_request(ch->c->s, req, &ev, msg, sizeof(msg));

	if (r < 0)
		chat_print(ch, TUI_STYLE_ERROR, NULL, msg);
	else if (ev)
		chat_rooms(ch, ev);
	return r != 0;
}

/* Send a !CMD exec, counted against the user's cap (user_cap.h). */
static void
chat_exec(struct chat *ch, json_object *req)
{
	char id[32], msg[512];

	if (user_cap_full(ch->c, msg, sizeof(msg))) {
		chat_print(ch, TUI_STYLE_ERROR, NULL, msg);
		return;
	}
	snprintf(id, sizeof(id), "chat-%lu-%lu", ch->c->s->num, ++ch->nexec);
	json_object_object_add(req, "id", json_object_new_string(id));
	if (agentlink_send_exec(&ch->link, req, NULL, 0) < 0)
		chat_print(ch, TUI_STYLE_ERROR, NULL, "the room is not taking "
		    "lines now; wait a moment and send again");
}

/* Act on one finished input line.  The line is cleaned first (utf8.h):
 * a plain client may send any bytes, and what it says reaches every
 * member's terminal and the room's history. */
void
chat_submit(struct chat *ch, const char *raw)
{
	char reply[4096], *line = utf8_clean_str(raw);
	json_object *req = NULL;
	int r;

	if (!line) {
		chat_print(ch, TUI_STYLE_ERROR, NULL, "out of memory: the "
		    "line was not sent");
		return;
	}
	if (ch->ansi) {
		tui_history_add(&ch->hist, line, 0);
		chat_scroll_live(ch);	/* to see what the line does */
	}
	/* A y or n right after an undo or redo preview answers it. */
	reply[0] = '\0';
	if ((r = chat_undo_answer(ch, line, &req)) < 0)
		r = chat_command(line, ch->nwaiting ?
		    ch->waiting[ch->nwaiting - 1] : NULL, &req, reply,
		    sizeof(reply));
	ch->confirm[0] = '\0';         /* a preview is answered once only */
	free(line);
	switch (r) {
	case CHAT_ACT_REPLY:		/* /help pages when it does not fit */
		if (reply[0])
			chat_print_paged(ch, TUI_STYLE_NOTICE, reply);
		return;
	case CHAT_ACT_QUIT: ch->leaving = 1; return;
	case CHAT_ACT_TERM: chat_term_enter(ch); return;
	case CHAT_ACT_MOUSE_ON: chat_mouse(ch, 1); return;
	case CHAT_ACT_MOUSE_OFF: chat_mouse(ch, 0); return;
	case CHAT_ACT_SEND: break;
	default: return;
	}
	if (strcmp(json_get_string(req, "type"), "history") == 0) {
		if (chat_search_start(ch, req) < 0)
			chat_print(ch, TUI_STYLE_ERROR, NULL, "the room is not "
			    "taking lines now; wait a moment and search again");
		return;
	}
	if (chat_own(ch, req)) {
		json_object_put(req);
		return;
	}
	if (strcmp(json_get_string(req, "type"), "signal") == 0) {
		chat_stop(ch, json_get_string(req, "user"), 0);
		json_object_put(req);
		return;
	}
	if (strcmp(json_get_string(req, "type"), "exec") == 0) {
		chat_exec(ch, req);
		json_object_put(req);
		return;
	}
	if (agentlink_send(&ch->link, req) < 0)
		chat_print(ch, TUI_STYLE_ERROR, NULL, "the room is not taking "
		    "lines now; wait a moment and send again");
	json_object_put(req);
}

/* Plain mode on a pty (TERM=dumb): the terminal is raw, so echo what is
 * typed, erase on Backspace and take CR as the end of the line.  Returns 1
 * when the byte was handled here. */
static int
chat_plain_echo(struct chat *ch, char b)
{
	struct buf *l = &ch->line;

	if (!ch->c->pty)
		return 0;
	if (b == 0x7f || b == 0x08) {
		/* Drop one UTF-8 character. */
		while (l->len && ((unsigned char)l->data[l->len - 1] & 0xc0) == 0x80)
			l->len--;
		if (l->len) {
			l->data[--l->len] = '\0';
			chat_raw(ch, "\b \b", 3);
		}
		return 1;
	}
	if (b == 0x03) {
		buf_reset(l);
		chat_raw(ch, "^C\r\n", 4);
		return 1;
	}
	if (b == 0x04 && l->len == 0) {
		ch->leaving = 1;
		return 1;
	}
	if (b == '\r')
		chat_raw(ch, "\r\n", 2);
	else if ((unsigned char)b >= 0x20 && b != 0x7f && !ch->discarding)
		chat_raw(ch, &b, 1);
	else if (b != '\n')
		return 1;	/* other controls are dropped */
	return 0;
}

/* Plain mode: collect lines, capped. */
static void
chat_plain_input(struct chat *ch, const char *p, size_t n)
{
	for (size_t i = 0; i < n && !ch->leaving; i++) {
		char b = p[i];

		if (chat_plain_echo(ch, b))
			continue;
		if (b == '\r' && ch->c->pty)
			b = '\n';
		if (b != '\n') {
			if (ch->discarding)
				continue;
			if (buf_append(&ch->line, &b, 1) < 0) {
				ch->discarding = 1;
				buf_reset(&ch->line);
				chat_print(ch, TUI_STYLE_ERROR, NULL, "line too "
				    "long: at most 16 KiB; it was not sent");
			}
			continue;
		}
		if (!ch->discarding) {
			if (ch->line.len && ch->line.data[ch->line.len - 1] == '\r')
				ch->line.data[--ch->line.len] = '\0';
			chat_submit(ch, ch->line.data ? ch->line.data : "");
		}
		ch->discarding = 0;
		buf_reset(&ch->line);
	}
}

/* Client bytes: keys (line UI) or lines (plain).  Taken only once the
 * room is connected and while the link has room. */
static size_t
chat_input(struct chan *c, const char *p, size_t n)
{
	struct chat *ch = c->kind;
	struct tui_key keys[2];
	int leave;

	if (!ch->started || ch->reconnect)
		return 0;
	if (ch->leaving)
		return n;
	if (agentlink_pending(&ch->link) > AGENTLINK_MAX_OUT / 2)
		return 0;
	if (ch->term) {
		size_t used = term_mode_input(ch->term, p, n, &leave);

		if (leave)
			chat_term_leave(ch, NULL);
		return used;
	}
	if (!ch->ansi) {
		chat_plain_input(ch, p, n);
		return n;
	}
	for (size_t i = 0; i < n && !ch->leaving; i++) {
		int nk = tui_keys_feed(&ch->keys, (unsigned char)p[i], keys);

		for (int j = 0; j < nk; j++)
			chat_key(ch, &keys[j]);
	}
	if (!ch->leaving && !ch->term) {
		chat_typing(ch);
		chat_bottom(ch);
	}
	return n;
}

/* Client EOF: send a last unterminated line, then leave. */
static void
chat_eof(struct chan *c)
{
	struct chat *ch = c->kind;

	if (!ch->ansi && ch->line.len && !ch->discarding)
		chat_submit(ch, ch->line.data);
	ch->leaving = 1;
}

/* ------------------------------------------------------------ lifecycle -- */

/* Room ready: connect and join with recent history. */
static void
chat_start(struct chan *c)
{
	struct chat *ch = c->kind;
	/* The monitor writes the hello (monitor_ask.h): a reconnect asks
	 * for what it missed, a join for recent history. */
	struct monitor_hello h = {
		.kind = "chat",
		.history = CHAT_HISTORY,
		.since = ch->last_seq > 0 ? ch->last_seq : -1,
	};
	int rc;

	/* The room's events come on the room's feed, read once for all
	 * its sessions here (chat_feed.h); without one, on the link. */
	h.feed = chat_feed_join(ch) == 0;
	ch->link.cache = h.feed ? NULL : &c->s->srv->link_cache;
	rc = chan_start_agent(c, &ch->link, &h, chat_line, chat_end, ch);
	if (rc != 0)
		chat_feed_leave(ch);
	if (rc > 0)
		return;
	if (rc < 0) {
		chan_refuse(c, "atrium: cannot reach room '%s' (%s); try again",
		    c->s->room, strerror(-rc));
		return;
	}
	ch->started = 1;
	ch->reconnect = 0;
	chat_batch_reset(ch);
	/* hello's replay is drawn as it comes; a search typed at once
	 * must not take it for its own answer.  Its end is where the
	 * feed's events begin for this member (chat_feed_live). */
	if (chat_batch_ask(ch, CHAT_BATCH_JOIN, NULL) < 0)
		chat_feed_live(ch);
	if (ch->ansi && !ch->history_loaded) {
		json_object *req = chat_req("history");

		/* Up recalls this user's lines of earlier sessions: the
		 * room keeps them (its messages, prompts and commands). */
		json_object_object_add(req, "user",
		    json_object_new_string(c->s->user));
		json_object_object_add(req, "limit",
		    json_object_new_int(CHAT_INPUT_HISTORY));
		ch->history_loaded = chat_batch_ask(ch, CHAT_BATCH_INPUT,
		    req) == 0;
	}
}

/* Give back what a burst grew (a history replay, a command's output, an
 * agent's long answer): an idle member keeps only small buffers (the
 * model's lines, which redraws need, stay). */
static void
chat_shrink(struct chat *ch)
{
	buf_shrink(&ch->draw.stream, CHAT_KEEP);
	buf_shrink(&ch->draw.raw, CHAT_KEEP);
	buf_shrink(&ch->frame, CHAT_KEEP);
	buf_shrink(&ch->q, CHAT_KEEP);
	buf_shrink(&ch->partial, CHAT_KEEP);
	buf_shrink(&ch->line, CHAT_KEEP);
}

/* Reconnect after an agent restart; leave once our lines are out. */
static void
chat_tick(struct chan *c)
{
	struct chat *ch = c->kind;

	if (ch->reconnect && !c->waiting_room && !ch->denied) {
		agentlink_close(&ch->link);
		chat_feed_leave(ch);
		ch->started = 0;
		chan_wait_room(c);
		return;
	}
	chat_flush(ch);
	chat_resume(ch);
	chat_shrink(ch);
	if (ch->ansi && !ch->leaving && tui_status_expire(&ch->status,
	    time_mono_ms()) && chat_status_refresh(ch))
		chat_bottom(ch);	/* someone stopped typing */
	if (ch->ansi && !ch->leaving)
		chan_wake_at(c, tui_status_next_expiry(&ch->status));
	if (ch->paused_ms || ch->leaving)
		chan_wake_soon(c);	/* a stall and a goodbye are polled */
	if (ch->leaving && agentlink_pending(&ch->link) == 0 && !c->finish) {
		if (ch->ansi) {
			ch->scroll.offset = 0;
			term_mode_leave(ch->term, 0);	/* the link's end
							 * detaches it */
			ch->term = NULL;
			tui_draw_clear_bottom(&ch->draw, chat_frame(ch));
			buf_append(&ch->frame, CHAT_MODES_OFF "bye\r\n",
			    strlen(CHAT_MODES_OFF) + 5);
			chat_frame_done(ch);
		}
		if (ch->q.len == 0)
			chan_exit(c, 0, NULL);
	}
}

/* New window size: the screen is drawn again for it.  What was on the
 * screen may have been rewrapped by the terminal in any way, so the
 * bottom region cannot be found again: the whole screen is redrawn. */
static void
chat_resize(struct chan *c)
{
	struct chat *ch = c->kind;

	if (!ch->ansi)
		return;
	if (ch->term) {
		term_mode_resize(ch->term);
		return;
	}
	chat_redraw(ch);
}

/* Release the chat (outside callbacks). */
static void
chat_free(struct chan *c)
{
	struct chat *ch = c->kind;

	agentlink_close(&ch->link);
	chat_feed_leave(ch);
	term_mode_free(ch->term);
	tui_editor_free(&ch->ed);
	tui_draw_free(&ch->draw);
	tui_history_free(&ch->hist);
	chat_scroll_free(ch);
	free(ch->complete_before);
	buf_free(&ch->line);
	buf_free(&ch->frame);
	buf_free(&ch->q);
	buf_free(&ch->partial);
	free(ch);
}

/* Ended by the server (room deleted, atriumd stopping): as a denial, so
 * the message shows below the cleared bottom and no reconnect follows. */
static void
chat_ended(struct chan *c, const char *msg)
{
	chat_denied(c->kind, msg);
}

static const struct chan_ops chat_ops = {
	.name = "chat",
	.input = chat_input,
	.eof = chat_eof,
	.start = chat_start,
	.tick = chat_tick,
	.resize = chat_resize,
	.free = chat_free,
	.end = chat_ended,
};

/* 1 when the client sent NO_COLOR with a value (no-color.org). */
static int
chat_no_color(const struct chan *c)
{
	for (int i = 0; i < c->nenv; i++)
		if (strncmp(c->env[i], "NO_COLOR=", 9) == 0 && c->env[i][9])
			return 1;
	return 0;
}

/* See chat.h. */
int
chat_open(struct chan *c)
{
	struct chat *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	ch->c = c;
	ch->ansi = c->pty && strcmp(c->term, "dumb") != 0 && c->term[0];
	agentlink_init(&ch->link);
	tui_keys_init(&ch->keys);
	tui_editor_init(&ch->ed, CHAT_MAX_LINE);
	tui_draw_init(&ch->draw, ch->ansi, !chat_no_color(c), c->pty, c->cols,
	    c->rows);
	/* ... and the agent's answer is drawn once per width for all. */
	ch->draw.cache = &c->s->srv->draw_cache;
	tui_status_init(&ch->status, c->s->user);
	tui_history_init(&ch->hist);
	tui_model_init_max(&ch->scroll.older, CHAT_SCROLL_MAX);
	tui_model_init_max(&ch->scroll.batch, CHAT_SCROLL_MAX);
	buf_init(&ch->line, CHAT_MAX_LINE);
	buf_init(&ch->frame, CHAT_MAX_FRAME);
	buf_init(&ch->q, CHAT_MAX_QUEUED);
	buf_init(&ch->partial, CHAT_MAX_PARTIAL);
	c->kind = ch;
	c->ops = &chat_ops;
	chan_wait_room(c);
	if (ch->ansi) {
		chat_status_refresh(ch);
		/* Pasted text comes bracketed: its lines are one message;
		 * the wheel scrolls back. */
		chat_modes_on(ch, chat_frame(ch));
		tui_draw_bottom(&ch->draw, &ch->frame, c->s->room, &ch->ed);
		chat_frame_done(ch);
	}
	return 0;
}
