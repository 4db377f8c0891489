/*
 * tui_status.c: the status line's state (tui_status.h).  Called by chat.c
 * with every event from the room, before the event is drawn.
 *
 * The agent's state follows the turn's events: turn_start and every
 * agent_delta or tool_result mean thinking; tool_call means running that
 * tool (its command for bash); approval_request means waiting, and its
 * approval_result running again (approved: the call's duration starts
 * then) or thinking; turn_end means idle.  A room that restarts mid-turn
 * replays turn_start without its end: the line says thinking until the resumed turn ends, which is
 * what the agent is then doing.
 *
 * Invariants: every name and detail is NUL-terminated and cut to its
 * field; typing entries with until_ms in the past are not shown.
 */
#include "tui_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsonl.h"

/* See tui_status.h. */
void
tui_status_init(struct tui_status *st, const char *self)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->self, sizeof(st->self), "%s", self ? self : "");
}

/* presence: the people here now. */
static void
tui_status_presence(struct tui_status *st, json_object *o)
{
	json_object *users = NULL;
	size_t n;

	if (!json_object_object_get_ex(o, "users", &users) ||
	    !json_object_is_type(users, json_type_array))
		return;
	n = json_object_array_length(users);
	st->nhere = (int)n;
	st->nusers = 0;
	for (size_t i = 0; i < n && st->nusers < TUI_STATUS_MAX_USERS; i++) {
		const char *u = json_object_get_string(
		    json_object_array_get_idx(users, i));

		if (u)
			snprintf(st->users[st->nusers++], TUI_STATUS_NAME,
			    "%s", u);
	}
}

/* The earliest typing entry's end, kept for tui_status_expire. */
static void
tui_status_typing_next(struct tui_status *st)
{
	st->typing_next_ms = 0;
	for (int i = 0; i < TUI_STATUS_MAX_TYPING; i++) {
		long long t = st->typing[i].until_ms;

		if (t && (!st->typing_next_ms || t < st->typing_next_ms))
			st->typing_next_ms = t;
	}
}

/* typing (shown for a while, until > 0) or a line from user (no longer
 * typing, until 0): 1 when the line may read differently.  A line from
 * someone not shown as typing changes nothing (nor takes a typist's
 * place). */
static int
tui_status_typing(struct tui_status *st, const char *user, long long until)
{
	int slot = 0, found = 0;

	if (!user || strcmp(user, st->self) == 0)
		return 0;
	for (int i = 0; i < TUI_STATUS_MAX_TYPING; i++) {
		if (strcmp(st->typing[i].name, user) == 0) {
			slot = i;
			found = 1;
			break;
		}
		if (st->typing[i].until_ms < st->typing[slot].until_ms)
			slot = i;	/* else the one that ends first */
	}
	if (!until && (!found || !st->typing[slot].until_ms))
		return 0;
	snprintf(st->typing[slot].name, TUI_STATUS_NAME, "%s", user);
	st->typing[slot].until_ms = until;
	tui_status_typing_next(st);
	return 1;
}

/* Remember when the command id started (again, when it was approved:
 * its duration is its run, not the wait for an answer). */
static void
tui_status_started(struct tui_status *st, const char *id, long long ms)
{
	unsigned i;

	if (!id || !ms)
		return;
	for (i = 0; i < TUI_STATUS_MAX_RUNS; i++) {
		if (st->runs[i].start_ms && strcmp(st->runs[i].id, id) == 0) {
			st->runs[i].start_ms = ms;
			return;
		}
	}
	i = st->nruns++ % TUI_STATUS_MAX_RUNS;
	snprintf(st->runs[i].id, sizeof(st->runs[i].id), "%s", id);
	st->runs[i].start_ms = ms;
}

/* The agent's state, and what it runs or waits on. */
static void
tui_status_agent(struct tui_status *st, enum tui_agent_state s,
    json_object *o)
{
	json_object *input = NULL;
	const char *what = NULL;

	st->agent = s;
	st->detail[0] = '\0';
	if (s != TUI_AGENT_RUNNING && s != TUI_AGENT_WAITING)
		return;
	if (json_object_object_get_ex(o, "input", &input))
		what = json_get_string(input, "command");
	if (!what)
		what = json_get_string(o, s == TUI_AGENT_RUNNING ? "name" :
		    "tool");
	snprintf(st->detail, sizeof(st->detail), "%s", what ? what : "?");
	/* One row: a multi-line command shows its first line. */
	st->detail[strcspn(st->detail, "\n\t\r")] = '\0';
}

/* The tokens of a usage object ({input_tokens, output_tokens}). */
static long long
tui_status_usage(json_object *u)
{
	return u ? json_get_int(u, "input_tokens", 0) +
	    json_get_int(u, "output_tokens", 0) : 0;
}

/* Events about the agent's turn. */
static void
tui_status_turn(struct tui_status *st, const char *type, json_object *o,
    long long time_ms)
{
	json_object *u = NULL;

	if (!strcmp(type, "turn_start") || !strcmp(type, "agent_delta") ||
	    !strcmp(type, "tool_result")) {
		tui_status_agent(st, TUI_AGENT_THINKING, o);
	} else if (!strcmp(type, "tool_call")) {
		tui_status_agent(st, TUI_AGENT_RUNNING, o);
		tui_status_started(st, json_get_string(o, "id"), time_ms);
	} else if (!strcmp(type, "approval_request")) {
		tui_status_agent(st, TUI_AGENT_WAITING, o);
	} else if (!strcmp(type, "approval_result")) {
		const char *status = json_get_string(o, "status");

		if (status && !strcmp(status, "approved")) {
			st->agent = TUI_AGENT_RUNNING;	/* detail: the call */
			tui_status_started(st, json_get_string(o, "id"),
			    time_ms);
		} else {
			tui_status_agent(st, TUI_AGENT_THINKING, o);
		}
	} else if (!strcmp(type, "tool_output") &&
	    st->agent == TUI_AGENT_WAITING) {
		st->agent = TUI_AGENT_RUNNING;	/* approved: it runs */
	} else if (!strcmp(type, "turn_end")) {
		tui_status_agent(st, TUI_AGENT_IDLE, o);
		json_object_object_get_ex(o, "usage", &u);
		if (!json_get_bool(o, "replay", 0))
			st->tokens += tui_status_usage(u);
	}
}

/* See tui_status.h. */
int
tui_status_event(struct tui_status *st, const char *type, json_object *o,
    long long time_ms, long long now_ms)
{
	json_object *u = NULL;

	if (!strcmp(type, "presence")) {
		tui_status_presence(st, o);
	} else if (!strcmp(type, "typing")) {
		tui_status_typing(st, json_get_string(o, "user"),
		    now_ms + TUI_STATUS_TYPING_MS);
	} else if (!strcmp(type, "message") || !strcmp(type, "prompt")) {
		return tui_status_typing(st, json_get_string(o, "user"), 0);
	} else if (!strcmp(type, "exec_start")) {
		tui_status_started(st, json_get_string(o, "id"), time_ms);
		return 0;	/* a start time is not on the line */
	} else if (!strcmp(type, "welcome")) {
		json_object_object_get_ex(o, "usage_today", &u);
		st->tokens = tui_status_usage(u);
	} else if (!strcmp(type, "usage")) {
		st->tokens = tui_status_usage(o);
	} else {
		tui_status_turn(st, type, o, time_ms);
	}
	return 1;
}

/* See tui_status.h. */
void
tui_status_timing(struct tui_status *st, const char *type, json_object *o,
    long long time_ms)
{
	const char *status = json_get_string(o, "status");

	if (!strcmp(type, "exec_start") || !strcmp(type, "tool_call") ||
	    (!strcmp(type, "approval_result") && status &&
	    !strcmp(status, "approved")))
		tui_status_started(st, json_get_string(o, "id"), time_ms);
}

/* See tui_status.h. */
int
tui_status_expire(struct tui_status *st, long long now_ms)
{
	int any = 0;

	if (!st->typing_next_ms || now_ms < st->typing_next_ms)
		return 0;
	for (int i = 0; i < TUI_STATUS_MAX_TYPING; i++) {
		if (st->typing[i].until_ms && st->typing[i].until_ms <= now_ms) {
			st->typing[i].until_ms = 0;
			st->typing[i].name[0] = '\0';
			any = 1;
		}
	}
	tui_status_typing_next(st);
	return any;
}

/* See tui_status.h. */
long long
tui_status_next_expiry(const struct tui_status *st)
{
	return st->typing_next_ms;
}

/* See tui_status.h. */
long long
tui_status_took(struct tui_status *st, const char *id, long long end_ms)
{
	for (int i = 0; id && i < TUI_STATUS_MAX_RUNS; i++) {
		if (st->runs[i].start_ms && strcmp(st->runs[i].id, id) == 0) {
			long long d = end_ms - st->runs[i].start_ms;

			st->runs[i].start_ms = 0;
			st->runs[i].id[0] = '\0';
			return end_ms && d >= 0 ? d : -1;
		}
	}
	return -1;
}

/* Append the strings (NULL ends them) to out at *used, cut at len. */
static void
tui_status_add(char *out, size_t len, size_t *used, ...)
{
	const char *p;
	va_list ap;

	va_start(ap, used);
	while ((p = va_arg(ap, const char *)))
		for (; *p && *used + 1 < len; p++)
			out[(*used)++] = *p;
	va_end(ap);
	out[*used] = '\0';
}

/* "here: a, b (+3)" and "b is typing". */
static void
tui_status_people(const struct tui_status *st, long long now_ms, char *out,
    size_t len, size_t *used)
{
	char more[32];
	int typing = 0;

	tui_status_add(out, len, used, " | here: ", st->nusers ?
	    st->users[0] : "nobody", NULL);
	for (int i = 1; i < st->nusers; i++)
		tui_status_add(out, len, used, ", ", st->users[i], NULL);
	if (st->nhere > st->nusers) {
		snprintf(more, sizeof(more), " (+%d)", st->nhere - st->nusers);
		tui_status_add(out, len, used, more, NULL);
	}
	for (int i = 0; i < TUI_STATUS_MAX_TYPING; i++) {
		if (st->typing[i].until_ms <= now_ms)
			continue;
		tui_status_add(out, len, used, typing++ ? ", " : " | ",
		    st->typing[i].name, NULL);
	}
	if (typing)
		tui_status_add(out, len, used, typing > 1 ? " are" : " is",
		    " typing", NULL);
}

/* See tui_status.h. */
void
tui_status_text(const struct tui_status *st, const char *room,
    long long now_ms, char *out, size_t len)
{
	static const char *const states[] = { "idle", "thinking", "running",
	    "waiting for approval of" };
	char tokens[48];
	size_t used = 0;

	if (len == 0)
		return;
	out[0] = '\0';
	tui_status_add(out, len, &used, room, NULL);
	tui_status_people(st, now_ms, out, len, &used);
	tui_status_add(out, len, &used, " | agent: ", states[st->agent], NULL);
	if (st->detail[0])
		tui_status_add(out, len, &used, " `", st->detail, "`", NULL);
	snprintf(tokens, sizeof(tokens), " | %lld tokens today", st->tokens);
	tui_status_add(out, len, &used, tokens, NULL);
}
