/*
 * chat_attn.c: what calls for a member's attention, and stopping their
 * commands (chat_int.h).  Called by chat.c before and after each room
 * event is drawn, by chat_input.c for Ctrl-C, and for /kill and /set.
 *
 * The bell (BEL to this member's terminal alone; never for a replayed
 * event, never for the member's own lines) rings for
 *   - a line of someone else, a person's or the agent's, that names this
 *     member (tui_mention.h); the name is shown in reverse video, in
 *     replays too;
 *   - an approval request: any member may answer it, and it is refused
 *     when nobody does in time;
 *   - a request for consent (an /undo, /redo or /restore that would take
 *     back this member's work), which waits for their answer;
 *   - the end of the agent's turn while the member is scrolled back or
 *     in /term, where they would not see it.
 * `/set bell off` silences it for this person in this room: the room
 * keeps the setting (agent/prefs.h) and sends it in every welcome.
 *
 * In /term the status row carries the room's news (term_mode_news): an
 * approval waiting, first, since it times out, with the key that answers
 * it; else the last line someone said, that someone asks this member's
 * consent, or that the agent finished.
 *
 * Stopping: Ctrl-C on an empty input line, and /kill, send the next of
 * SIGINT, SIGTERM and SIGKILL to the member's newest running !command
 * (/kill USER: to USER's, which the room allows its owner).  The running
 * commands are known from exec_start and exec_result, everyone's; the room
 * says how each ended (chat_exec_end_text), to everyone and in history.
 */
#include "chat_int.h"

#include <stdio.h>
#include <string.h>

#include "jsonl.h"
#include "term_mode.h"
#include "tui_mention.h"
#include "utf8.h"

/* The signals Ctrl-C and /kill send, one more each time. */
static const char *const chat_stop_sigs[] = { "INT", "TERM", "KILL" };
#define CHAT_STOP_STEPS	((int)(sizeof(chat_stop_sigs) / sizeof(chat_stop_sigs[0])))

/* src's first line into dst (len bytes), cut at a whole character. */
static void
chat_attn_copy(char *dst, size_t len, const char *src)
{
	size_t n = strcspn(src ? src : "", "\r\n");

	if (n >= len)
		n = utf8_complete(src, len - 1);
	memcpy(dst, src ? src : "", n);
	dst[n] = '\0';
}

/* ------------------------------------------------------------ commands -- */

/* The newest running command of user, or NULL. */
static struct chat_run *
chat_run_find(struct chat *ch, const char *user)
{
	for (int i = ch->nruns - 1; i >= 0; i--)
		if (strcmp(ch->runs[i].user, user) == 0)
			return &ch->runs[i];
	return NULL;
}

/* exec_start: remember the command as running (the oldest is forgotten
 * when too many run). */
static void
chat_run_start(struct chat *ch, json_object *o)
{
	const char *id = json_get_string(o, "id");
	const char *user = json_get_string(o, "user");
	struct chat_run *r;

	if (!id || !user || strlen(id) >= sizeof(r->id) ||
	    strlen(user) >= sizeof(r->user))
		return;
	if (ch->nruns == CHAT_MAX_RUNS) {
		memmove(&ch->runs[0], &ch->runs[1],
		    (CHAT_MAX_RUNS - 1) * sizeof(ch->runs[0]));
		ch->nruns--;
	}
	r = &ch->runs[ch->nruns++];
	memset(r, 0, sizeof(*r));
	memcpy(r->id, id, strlen(id) + 1);
	memcpy(r->user, user, strlen(user) + 1);
	chat_attn_copy(r->command, sizeof(r->command),
	    json_get_string(o, "command"));
}

/* exec_result: the command id runs no more. */
static void
chat_run_end(struct chat *ch, const char *id)
{
	for (int i = 0; id && i < ch->nruns; i++) {
		if (strcmp(ch->runs[i].id, id) != 0)
			continue;
		memmove(&ch->runs[i], &ch->runs[i + 1],
		    (size_t)(ch->nruns - i - 1) * sizeof(ch->runs[0]));
		ch->nruns--;
		return;
	}
}

/* See chat_int.h. */
void
chat_stop(struct chat *ch, const char *user, int quiet)
{
	const char *self = ch->c->s->user, *who = user ? user : self;
	struct chat_run *r = chat_run_find(ch, who);
	char text[400], whose[80];
	json_object *req;

	if (strcmp(who, self) == 0)
		snprintf(whose, sizeof(whose), "your command");
	else
		snprintf(whose, sizeof(whose), "%s's command", who);
	if (!r) {
		if (!quiet) {
			snprintf(text, sizeof(text), "no command of %s is "
			    "running", strcmp(who, self) ? who : "yours");
			chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
		}
		return;
	}
	if (r->sent == CHAT_STOP_STEPS) {
		snprintf(text, sizeof(text), "SIGKILL was sent to %s `%s`: "
		    "it ends as soon as the room has taken it down", whose,
		    r->command);
		chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
		return;
	}
	req = chat_req("signal");
	json_object_object_add(req, "id", json_object_new_string(r->id));
	json_object_object_add(req, "signal",
	    json_object_new_string(chat_stop_sigs[r->sent]));
	if (agentlink_send(&ch->link, req) < 0) {
		chat_print(ch, TUI_STYLE_ERROR, NULL, "the room is not taking "
		    "lines now; wait a moment and stop it again");
	} else if (++r->sent < CHAT_STOP_STEPS) {
		snprintf(text, sizeof(text), "sent SIG%s to %s `%s`; Ctrl-C "
		    "on an empty line (or /kill%s%s) again sends SIG%s",
		    chat_stop_sigs[r->sent - 1], whose, r->command,
		    user ? " " : "", user ? user : "", chat_stop_sigs[r->sent]);
		chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	} else {
		snprintf(text, sizeof(text), "sent SIGKILL to %s `%s`", whose,
		    r->command);
		chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	}
	json_object_put(req);
}

/* See chat_int.h. */
void
chat_exec_end_text(json_object *o, char *text, size_t len)
{
	const char *sig = json_get_string(o, "signal");
	const char *user = json_get_string(o, "user");
	const char *stop = json_get_string(o, "stop_signal");
	const char *by = json_get_string(o, "stopped_by");
	size_t n;

	if (sig)
		n = (size_t)snprintf(text, len, "%s%s ended by SIG%s",
		    user ? user : "the command", user ? "'s command" : "",
		    sig);
	else
		n = (size_t)snprintf(text, len, "exit %lld",
		    json_get_int(o, "exitCode", -1));
	if (n < len && json_get_bool(o, "timedOut", 0))
		n += (size_t)snprintf(text + n, len - n, " at its time limit");
	if (n >= len)
		return;
	/* Who stopped it, when that was not its own person (or it did not
	 * end by the signal sent). */
	if (stop && by && (!sig || !user || strcmp(by, user) != 0 ||
	    strcmp(stop, sig) != 0))
		snprintf(text + n, len - n, sig && strcmp(stop, sig) == 0 ?
		    " from %s" : " (%s sent SIG%s)", by, stop);
}

/* /kill [USER] (a `signal` request without id: chat_stop picks the
 * command) and /set [bell on|off] (a `pref` request), as chat_command
 * answers them; -1 when line is neither. */
int
chat_attn_command(const char *line, size_t wl, const char *arg,
    json_object **out, char *reply, size_t len)
{
#define IS(word) (wl == strlen(word) && strncmp(line, word, wl) == 0)
	if (IS("/kill")) {
		*out = chat_req("signal");
		if (arg)
			json_object_object_add(*out, "user",
			    json_object_new_string(arg));
		return 1;
	}
	if (!IS("/set"))
		return -1;
#undef IS
	if (arg && strcmp(arg, "bell") != 0 && strcmp(arg, "bell on") != 0 &&
	    strcmp(arg, "bell off") != 0) {
		snprintf(reply, len, "usage: /set bell on|off (the bell on "
		    "mentions, approvals and the agent's end); /set shows it");
		return 0;
	}
	*out = chat_req("pref");
	json_object_object_add(*out, "key", json_object_new_string("bell"));
	if (arg && strlen(arg) > 5)
		json_object_object_add(*out, "value",
		    json_object_new_string(arg + 5));
	return 1;
}

/* ---------------------------------------------------------- attention -- */

/* The bell setting in a welcome's prefs or a pref event. */
static void
chat_attn_pref(struct chat *ch, json_object *o)
{
	json_object *prefs = NULL;
	const char *bell;

	if (json_object_object_get_ex(o, "prefs", &prefs))
		bell = json_get_string(prefs, "bell");
	else if (strcmp(json_get_string(o, "key") ?: "", "bell") == 0)
		bell = json_get_string(o, "value");
	else
		return;
	if (bell)
		ch->bell_off = strcmp(bell, "off") == 0;
}

/* See chat_int.h. */
int
chat_attn_show(struct chat *ch, const char *type, json_object *o)
{
	if (strcmp(type, "pref") != 0)
		return 0;
	if (!json_get_bool(o, "changed", 0))
		chat_print(ch, TUI_STYLE_NOTICE, NULL, ch->bell_off ?
		    "bell off (/set bell on rings it again)" :
		    "bell on (/set bell off silences it)");
	else
		chat_print(ch, TUI_STYLE_NOTICE, NULL, ch->bell_off ?
		    "bell off: mentions, approval requests and the agent's end "
		    "no longer ring here, in any session of yours in this room" :
		    "bell on: mentions of you, approval requests and the "
		    "agent's end while you look away ring your terminal");
	return 1;
}

/* A line someone else said (message or prompt): 1 when it names this
 * member; the news for /term either way. */
static int
chat_attn_line(struct chat *ch, const char *type, json_object *o)
{
	const char *user = json_get_string(o, "user");
	const char *text = json_get_string(o, "text") ?: "";
	const char *self = ch->c->s->user;

	if ((strcmp(type, "message") && strcmp(type, "prompt")) || !user ||
	    strcmp(user, self) == 0)
		return 0;
	if (!json_get_bool(o, "replay", 0) && ch->term)
		snprintf(ch->news, sizeof(ch->news), "%s: %.*s", user,
		    (int)strcspn(text, "\n"), text);
	return tui_mention(text, self);
}

/* 1 when the request for consent o asks this member (not the one who
 * asked): its users name them. */
static int
chat_attn_asks_me(const struct chat *ch, json_object *o)
{
	const char *me = ch->c->s->user, *asker = json_get_string(o, "user");
	json_object *users = NULL, *u;

	if (!json_object_object_get_ex(o, "users", &users) ||
	    !json_object_is_type(users, json_type_array) ||
	    (asker && strcmp(asker, me) == 0))
		return 0;
	for (size_t i = 0; i < json_object_array_length(users); i++) {
		u = json_object_array_get_idx(users, i);
		if (json_object_is_type(u, json_type_string) &&
		    strcmp(json_object_get_string(u), me) == 0)
			return 1;
	}
	return 0;
}

/* A request for consent that asks this member rings, as an approval
 * does, and /term's news names it with the key that answers. */
static void
chat_attn_consent(struct chat *ch, json_object *o)
{
	if (!chat_attn_asks_me(ch, o))
		return;
	ch->bell_owed = 1;
	if (ch->term)
		snprintf(ch->news, sizeof(ch->news), "%.40s asks you to agree "
		    "to /%.10s, Ctrl-] to answer", json_get_string(o, "user") ?:
		    "someone", json_get_string(o, "action") ?: "undo");
}

/* See chat_int.h. */
void
chat_attn_event(struct chat *ch, const char *type, json_object *o)
{
	int live = !json_get_bool(o, "replay", 0);

	if (strcmp(type, "exec_start") == 0)
		chat_run_start(ch, o);
	else if (strcmp(type, "exec_result") == 0)
		chat_run_end(ch, json_get_string(o, "id"));
	else if (strcmp(type, "welcome") == 0 || strcmp(type, "pref") == 0)
		chat_attn_pref(ch, o);
	if (chat_attn_line(ch, type, o)) {
		/* The name in reverse video while the line is drawn. */
		snprintf(ch->draw.highlight, sizeof(ch->draw.highlight), "%s",
		    ch->c->s->user);
		ch->highlighting = 1;
		ch->bell_owed |= live;
	}
	if (!live)
		return;
	if (strcmp(type, "approval_request") == 0)
		ch->bell_owed = 1;
	if (strcmp(type, "consent_request") == 0)
		chat_attn_consent(ch, o);
	if (strcmp(type, "turn_end") == 0 && (ch->scroll.offset || ch->term)) {
		ch->bell_owed = 1;
		if (ch->term)
			snprintf(ch->news, sizeof(ch->news), "the agent is done");
	}
}

/* See chat_int.h. */
void
chat_attn_news(struct chat *ch)
{
	char news[sizeof(ch->news)];

	if (!ch->term)
		return;
	if (ch->nwaiting)
		/* The key first: the command may be cut at the edge. */
		snprintf(news, sizeof(news), "approval waiting, Ctrl-] to "
		    "answer: `%s`", ch->status.agent == TUI_AGENT_WAITING &&
		    ch->status.detail[0] ? ch->status.detail : "a tool");
	else
		memcpy(news, ch->news, sizeof(news));
	if (strcmp(news, ch->term_news) == 0)
		return;
	memcpy(ch->term_news, news, sizeof(news));
	term_mode_news(ch->term, news);
}

/* See chat_int.h. */
void
chat_attn_term_enter(struct chat *ch)
{
	ch->news[0] = ch->term_news[0] = '\0';
	chat_attn_news(ch);
}

/* See chat_int.h. */
void
chat_attn_done(struct chat *ch)
{
	if (ch->highlighting) {
		ch->draw.highlight[0] = '\0';
		ch->highlighting = 0;
	}
	if (ch->bell_owed && ch->ansi && !ch->bell_off)
		chat_queue_bytes(ch, "\a", 1);
	ch->bell_owed = 0;
	chat_attn_news(ch);
}

/* See chat_int.h. */
void
chat_attn_reset(struct chat *ch)
{
	ch->nruns = 0;
}
