/*
 * chat_int.h: the chat's state, shared by the files that make up the chat
 * (chat.c: events and output; chat_commands.c: the table of commands and
 * the parsing of a line; chat_input.c: keys and the line editor's
 * commands; chat_scroll.c: what is loaded from the room's stored history:
 * scrollback, /history search, the input history; chat_attn.c: the bell,
 * mentions, /term's news and stopping !commands).  Not for other parts
 * of atriumd: they see chat.h.
 */
#ifndef ATRIUMD_CHAT_INT_H
#define ATRIUMD_CHAT_INT_H

#include "agentlink.h"
#include "buf.h"
#include "chat.h"
#include "tui_draw.h"
#include "tui_editor.h"
#include "tui_history.h"
#include "tui_keys.h"
#include "tui_model.h"
#include "tui_status.h"

struct term_mode;

#define CHAT_MAX_WAITING	16	/* approval requests remembered */
#define CHAT_MAX_EXEC_LIVE	8	/* !CMDs whose live output is
					 * remembered */
#define CHAT_MAX_BATCH		8	/* history requests on their way */
#define CHAT_SCROLL_LOAD	100	/* events loaded per PgUp past the top */
#define CHAT_SCROLL_MAX		(1024 * 1024)	/* bytes of scrollback kept */
#define CHAT_INPUT_HISTORY	200	/* own lines loaded for Up */
#define CHAT_SEARCH_MAX		30	/* events a /history search shows */
#define CHAT_WHEEL_LINES	3	/* rows one wheel step scrolls */
#define CHAT_TYPING_EVERY_MS	3000	/* `typing` sent at most this often */
#define CHAT_MAX_RUNS		16	/* running !commands remembered */

/* What a history request's answer is for; each is followed by a `sync`
 * (its id "b<kind><n>"), whose `synced` ends it. */
enum chat_batch {
	CHAT_BATCH_JOIN = 'j',		/* hello's replay: drawn as usual */
	CHAT_BATCH_INPUT = 'i',		/* own lines, for Up */
	CHAT_BATCH_SCROLL = 's',	/* older events, for PgUp */
	CHAT_BATCH_SEARCH = 'f',	/* /history TEXT */
};

/* The scrollback (PgUp/PgDn): lines of the screen model plus older ones
 * loaded from the room on demand. */
struct chat_scroll {
	size_t offset;			/* rows below the view (tui_view.h);
					 * 0: live */
	size_t fresh;			/* lines added at the bottom since the
					 * view left it: "N new lines below" */
	struct tui_model older;		/* loaded, oldest first */
	size_t older_rows;		/* its rows at rows_cols columns */
	size_t model_rows;		/* the screen model's rows then ... */
	unsigned long model_added;	/* ... once it had added these */
	int rows_cols;			/* 0: the rows must be counted */
	unsigned long dropped;		/* the model's dropped lines when last
					 * seen: more means a gap after older */
	struct tui_model batch;		/* a load being drawn */
	int loading;			/* a load is on its way */
	int stale;			/* ... asked before a gap: dropped */
	int exhausted;			/* nothing older to load: the room has
					 * none, or capped */
	int capped;			/* ... CHAT_SCROLL_MAX was reached */
	int batch_day;			/* the date line state of the load */
	long long batch_ms;		/* the time of its newest event (0:
					 * none) */
	int hits;			/* events a /history search found */
	char match[128];		/* what it looks for */
};

/* A !command running in the room (anyone's), from its exec_start. */
struct chat_run {
	char id[64];
	char user[TUI_STATUS_NAME];	/* who started it */
	char command[96];		/* its first line, cut */
	int sent;			/* signals this member sent it: 1 INT,
					 * 2 TERM, 3 KILL */
};

struct chat {
	struct chan *c;			/* owner */
	struct agentlink link;		/* to the room's agent */
	struct chat_feed *feed;		/* the room's events come on it
					 * (chat_feed.h), NULL: on link */
	struct chat *feed_prev, *feed_next;	/* its sessions */
	unsigned long long feed_pos;	/* the next of its events to take */
	int feed_live;			/* the join replay was drawn: takes
					 * the feed's events */
	long long feed_welcome;		/* the welcome's seq, -1 before */
	int ansi;			/* line UI, else plain lines */
	struct tui_keys keys;		/* ansi: key decoder */
	struct tui_editor ed;		/* ansi: the input line */
	struct tui_draw draw;		/* rendering state */
	struct tui_status status;	/* ansi: the status line's state */
	struct tui_history hist;	/* ansi: the input line's history */
	struct chat_scroll scroll;	/* ansi: PgUp/PgDn */
	struct term_mode *term;		/* in /term (chat frames are then
					 * only kept in the model), else NULL */
	struct buf frame;		/* the frame being rendered */
	struct buf q;			/* whole frames for the client */
	int redraw_owed;		/* frames were dropped: redraw (ansi) or
					 * say so (plain) once caught up */
	unsigned frame_count;		/* frames made since chat_event began */
	int render_only;		/* drawing a loaded batch into a model:
					 * frames are not sent */
	long long paused_ms;		/* when reading the room was paused
					 * for the client (0: not paused) */
	struct buf partial;		/* command output's unfinished line */
	struct buf line;		/* plain: the line being read */
	int discarding;			/* plain: inside an over-long line */
	int pasting;			/* ansi: inside a bracketed paste */
	int mouse_off;			/* /mouse off: no wheel reports */
	long long typing_ms;		/* when `typing` was last sent */
	int started;			/* hello sent */
	int history_loaded;		/* the input history was asked for */
	int reconnect;			/* the agent went away: connect again */
	int leaving;			/* exit once our lines are sent */
	int denied;			/* access_denied came: the end */
	long long last_seq;		/* newest event seen, for reconnects */
	unsigned long nexec;		/* !CMD counter */
	unsigned long nsync;		/* batches asked for */
	char batch[CHAT_MAX_BATCH];	/* batches on their way, oldest first */
	int nbatch;
	char complete_id[16];		/* the path completion asked for */
	char *complete_before;		/* the line before the cursor then
					 * (malloc'd): an answer to a line
					 * since changed is dropped */
	unsigned long ncomplete;	/* completions asked for */
	char streamed[64];		/* tool call whose output was shown live */
	char asked[64];			/* approval request last shown, until
					 * its result ("": none) */
	char waiting[CHAT_MAX_WAITING][64];	/* approval requests unanswered,
						 * oldest first */
	int nwaiting;
	struct chat_prompt {
		char id[64];		/* the approval request's */
		long long seq;		/* the tag of its line (tui_model.h) */
		long long ms;		/* the time it shows */
	} prompts[CHAT_MAX_WAITING];	/* lines that asked for approval, not
					 * yet answered, oldest first
					 * (chat_prompt.c) */
	int nprompts;
	struct chat_answer {
		char id[64];		/* the approval request's */
		char outcome[384];	/* "approved by bob" */
	} answers[CHAT_MAX_WAITING];	/* answers whose prompt was not drawn
					 * (yet: PgUp may load it), oldest
					 * first */
	int nanswers;
	char exec_live[CHAT_MAX_EXEC_LIVE][64];	/* !CMDs whose output this
						 * session showed live, newest
						 * last: the replay of their
						 * end after a reconnect does
						 * not show it again */
	int nexec_live;
	char confirm[8];		/* "undo", "redo" or "restore" after
					 * its preview, until the next line
					 * answers it */
	char confirm_name[132];		/* restore's snapshot */
	int confirm_force;		/* the preview was of a forced one */
	char consent[32];		/* a request for consent that asks
					 * us, until answered or ended */
	struct chat_run runs[CHAT_MAX_RUNS];	/* oldest first */
	int nruns;
	int bell_off;			/* /set bell off (the room keeps it) */
	int bell_owed;			/* ring once the event is drawn */
	int highlighting;		/* draw.highlight is this member's name */
	char news[160];			/* in /term: the last line said */
	char term_news[160];		/* what /term's status row shows */
};

/* chat_cost.c: a `usage` event as the lines /cost shows (plain integers),
 * and /caps [steps N] [tokens N] as a caps request into out (1, or 0 with
 * the usage in reply).  chat_pairs_command is chat_commands.c's. */
void chat_cost_text(json_object *o, char *text, size_t len);
/* A chat word and the request field it sets. */
struct chat_pair {
	const char *word;
	const char *field;
};
/* "/CMD WORD VALUE ..." as a request of type with each word's field set
 * to its value (pairs ends with a NULL word; no arg: the bare request, a
 * query).  1 with *out, or 0 with usage in reply. */
int chat_pairs_command(const char *type, const struct chat_pair *pairs,
    const char *arg, const char *usage, json_object **out, char *reply,
    size_t len);
int chat_caps_command(const char *arg, json_object **out, char *reply,
    size_t len);

/* chat_undo.c: /undo [!], /redo [!], /snapshot NAME, /restore NAME [!],
 * /snapshots as requests (1 with *out, 0 with the usage in reply, -1:
 * none of them); the answer y or n to a preview or to a request for our
 * consent (1 with the request in *out, 0 declined, -1 nothing waits or
 * line is not y or n); the room's undo, redo, restore, consent and
 * snapshots events (1 when type was one). */
int chat_undo_command(const char *line, size_t wl, const char *arg,
    json_object **out, char *reply, size_t len);
int chat_undo_answer(struct chat *ch, const char *line, json_object **out);
int chat_undo_event(struct chat *ch, const char *type, json_object *o);

/* chat_attn.c (its head says what rings and when) */
/* Before an event is drawn: track running commands and the bell setting,
 * decide whether it rings, highlight a mention. */
void chat_attn_event(struct chat *ch, const char *type, json_object *o);
/* After it was drawn: ring (unless /set bell off), end the highlight,
 * update /term's news. */
void chat_attn_done(struct chat *ch);
/* Show a `pref` answer: 1 when type was one. */
int chat_attn_show(struct chat *ch, const char *type, json_object *o);
/* /term's status row: the room's news now (after entering: from now). */
void chat_attn_news(struct chat *ch);
void chat_attn_term_enter(struct chat *ch);
/* The link to the room was lost: its commands were ended with it. */
void chat_attn_reset(struct chat *ch);
/* /kill [USER] and /set [bell on|off], as chat_command answers them; -1
 * when line is neither. */
int chat_attn_command(const char *line, size_t wl, const char *arg,
    json_object **out, char *reply, size_t len);
/* Ctrl-C on an empty line (quiet: nothing said when nothing runs) and
 * /kill [USER]: the next of SIGINT, SIGTERM, SIGKILL to the newest
 * running command of user (NULL: this member's). */
void chat_stop(struct chat *ch, const char *user, int quiet);
/* How a shared command ended, for everyone: "alice's command ended by
 * SIGINT", "exit 3", and who stopped it when another did. */
void chat_exec_end_text(json_object *o, char *text, size_t len);

/* chat.c */
json_object *chat_req(const char *type);
/* A room event from the feed (chat_feed.h), handled as one on the link. */
void chat_room_event(struct chat *ch, json_object *o);
/* The link to the room's agent (or the feed) went away: say so, and
 * connect again from the tick (once, however many say it). */
void chat_link_lost(struct chat *ch);
/* Queue bytes as a frame of their own, also in /term and while scrolled
 * back (the bell). */
void chat_queue_bytes(struct chat *ch, const char *p, size_t n);
/* y, yes, n or no alone: 1 for yes, 0 for no, -1 for anything else. */
int chat_yes_no(const char *line);
struct buf *chat_frame(struct chat *ch);
void chat_frame_done(struct chat *ch);
void chat_print(struct chat *ch, enum tui_style style, const char *name,
    const char *text);
/* Show the unfinished output line kept, if any. */
void chat_output_flush(struct chat *ch);
void chat_redraw(struct chat *ch);
/* Draw the bottom region again (the status or the input line changed). */
void chat_bottom(struct chat *ch);
void chat_submit(struct chat *ch, const char *raw);
void chat_dispatch(struct chat *ch, const char *type, json_object *o);
/* Make the status line's text again from its state; 1 when it changed
 * (the caller draws it). */
int chat_status_refresh(struct chat *ch);

/* chat_input.c: one key of the line UI. */
void chat_key(struct chat *ch, const struct tui_key *k);
/* The room's answer to a path completion (`completions`). */
void chat_complete_answer(struct chat *ch, json_object *o);
/* After the keys of one read: tell the room this user is typing (at most
 * every CHAT_TYPING_EVERY_MS, only for lines that are not commands). */
void chat_typing(struct chat *ch);

/* chat_scroll.c */
/* Ask the room for a batch: req (a history request, put here) then a
 * sync that ends it.  0, or -1 when the room is not taking lines or too
 * many batches wait. */
int chat_batch_ask(struct chat *ch, enum chat_batch kind, json_object *req);
/* A line from the room that belongs to the batch at the head (a replayed
 * event, or the synced that ends it): 1 when taken here. */
int chat_batch_line(struct chat *ch, const char *type, json_object *o);
/* Forget the batches (the link to the room was lost). */
void chat_batch_reset(struct chat *ch);
/* PgUp (dir -1) and PgDn (dir 1). */
void chat_scroll_page(struct chat *ch, int dir);
/* The wheel: rows back (dir -1) or forward (dir 1). */
void chat_scroll_lines(struct chat *ch, int dir, size_t rows);
/* Keep the offset within the lines held (after a change of size). */
void chat_scroll_clamp(struct chat *ch);
/* Draw the view where it is (the live screen at offset 0), with the
 * status line saying where that is. */
void chat_scroll_draw(struct chat *ch);
/* End, or a line sent: back to the live view (nothing when there). */
void chat_scroll_live(struct chat *ch);
/* Lines the screen model took, ever: a mark for chat_scroll_added. */
size_t chat_scroll_mark(const struct chat *ch);
/* After lines were added at the bottom since mark: when scrolled back,
 * keep the view where it was, count them as new, and draw it. */
void chat_scroll_added(struct chat *ch, size_t mark);
/* The status line's start while scrolled back ("" when live): where the
 * view is and how to return. */
void chat_scroll_status(struct chat *ch, char *text, size_t len);
/* Print a reply of the chat's own; when it does not fit on the screen,
 * show it from its first line, the rest below (/help). */
void chat_print_paged(struct chat *ch, enum tui_style style,
    const char *text);
void chat_scroll_free(struct chat *ch);

/* chat_prompt.c: an approval's answer rewrites the lines that asked it.
 * _drawn: a line that waits for the answer to request id was just drawn
 * (the prompt, or "the agent still waits"); _answered: o, an
 * approval_result, came. */
void chat_prompt_drawn(struct chat *ch, const char *id);
void chat_prompt_answered(struct chat *ch, json_object *o);
/* /history TEXT: req is the history request (put here).  0, or -1 when
 * the room is not taking lines. */
int chat_search_start(struct chat *ch, json_object *req);

#endif
