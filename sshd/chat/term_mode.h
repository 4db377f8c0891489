/*
 * term_mode.h: a chat session inside `/term`, the room's shared terminal
 * (term_mode.c).  The chat (chat.c) hands over its screen and its keys
 * while the member is in it: this sends term_open, term_input (bounded
 * chunks, only while the link to the agent has room), term_resize and
 * term_close on the chat's agent link, and draws the term_screen events
 * with term_view.h into the chat's frames, with the chat's news (what
 * happened in the room meanwhile) on the status line.  Ctrl-] and
 * term_end hand the screen back: the chat draws itself again.
 */
#ifndef ATRIUMD_TERM_MODE_H
#define ATRIUMD_TERM_MODE_H

#include <json-c/json.h>

#include "agentlink.h"
#include "buf.h"
#include "session.h"

struct term_mode;

/* What the chat lends: its channel (window size, room), its link, and its
 * frame buffer with the function that queues a frame whole. */
struct term_mode_host {
	struct chan *c;
	struct agentlink *link;
	struct buf *frame;		/* empty between frames */
	void (*queue)(void *arg);	/* queue *frame whole, then empty it */
	void *arg;
};

/* Attach to the room's terminal and draw it.  The mode, or NULL with the
 * reason in err. */
struct term_mode *term_mode_enter(const struct term_mode_host *h, int color,
    char *err, size_t errlen);

/* A line from the room: 1 when it was the terminal's (term_screen drawn;
 * term_end: *ended set and its notice in notice), 0 when not. */
int term_mode_event(struct term_mode *m, const char *type, json_object *o,
    int *ended, char *notice, size_t len);

/* Client bytes: for the shell up to Ctrl-] (*leave set when it came).
 * Bytes taken (fewer while the agent link is full). */
size_t term_mode_input(struct term_mode *m, const char *p, size_t n,
    int *leave);

/* The chat's news for the status line (who spoke, an approval waiting):
 * drawn and queued at once. */
void term_mode_news(struct term_mode *m, const char *news);

/* The window changed size: tell the room, draw again. */
void term_mode_resize(struct term_mode *m);

/* Draw the whole screen again into the host's frame (not queued: the
 * caller writes it, as after dropped output). */
void term_mode_redraw(struct term_mode *m);

/* Leave: term_close is sent when detach is set (the member left; not
 * when the terminal ended), the client's screen is reset, m freed. */
void term_mode_leave(struct term_mode *m, int detach);

/* Free m without a word to anyone (the channel is going). */
void term_mode_free(struct term_mode *m);

#endif
