/*
 * chat_prompt.c: an answered approval no longer reads as waiting
 * (chat_int.h).  Called by chat.c: for each line it draws that waits for
 * an approval's answer (the prompt "approval needed: bash ls -la (y/n,
 * 120 s)", and "the agent still waits for an answer (y/n, 95 s left)",
 * which a join shows), and for each approval_result.  The answer rewrites
 * those lines where they are, in the time they show, as a chat app
 * updates the message that asked: "bash ls -la: approved by bob", "the
 * agent waits no more: approved by bob" (tui_draw_replace: in the model,
 * and on the screen while their rows are there).
 *
 * A replay draws the same events in the same order, so it rewrites the
 * same lines: a reconnect reads as the live session did.  A line is found
 * by the seq of the event that drew it (its tag in tui_model.h) and the
 * words "(y/n, ", as the first line of that event holding them, so a
 * diff line quoting them is never the one rewritten.  An answer whose
 * prompt is not drawn (it was older than the replay) is kept, and
 * rewrites the prompt when PgUp loads it.  All text here was cleaned by
 * the agent and is cleaned again when drawn (tui_draw.c).
 */
#include "chat_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "tui_model.h"

#define CHAT_PROMPT_WAITS	"(y/n, "	/* in every line that waits */

/* How an approval ended, in a few words after what was asked ("approved
 * by bob"), into out (len). */
static void
chat_prompt_outcome(json_object *o, char *out, size_t len)
{
	const char *status = json_get_string(o, "status") ?: "";
	const char *who = json_get_string(o, "user") ?: "someone";
	const char *why = json_get_string(o, "reason");

	if (!strcmp(status, "approved"))
		snprintf(out, len, "approved by %s", who);
	else if (!strcmp(status, "denied"))
		snprintf(out, len, "denied by %s%s%.300s", who, why && *why ?
		    ": " : "", why && *why ? why : "");
	else if (!strcmp(status, "timed_out"))
		snprintf(out, len, "not answered in time, so denied");
	else if (!strcmp(status, "left"))
		snprintf(out, len, "denied: everyone who could answer left");
	else if (!strcmp(status, "nobody"))
		snprintf(out, len, "denied: no one was there to answer");
	else if (!strcmp(status, "stopped"))
		snprintf(out, len, "stopped by %s before an answer", who);
	else
		snprintf(out, len, "answered");
}

/* The last occurrence of needle in s[0..n), or NULL. */
static const char *
chat_prompt_last_of(const char *s, size_t n, const char *needle)
{
	const char *last = NULL, *p = s, *hit;
	size_t k = strlen(needle);

	while ((hit = memmem(p, n - (size_t)(p - s), needle, k))) {
		last = hit;
		p = hit + 1;
	}
	return last;
}

/* What line (len bytes, as drawn) says once answered with outcome, as a
 * new string, or NULL when it is not a line that waited. */
static char *
chat_prompt_answer_text(const char *line, size_t len, const char *outcome)
{
	static const char asked[] = "approval needed: ";
	static const char still[] = "the agent still waits for an answer";
	const char *what = memmem(line, len, asked, sizeof(asked) - 1), *hint;
	char *text;

	if (!what && memmem(line, len, still, sizeof(still) - 1)) {
		if ((text = malloc(strlen(outcome) + 32)))
			sprintf(text, "the agent waits no more: %s", outcome);
		return text;
	}
	if (!what)
		return NULL;
	what += sizeof(asked) - 1;
	hint = chat_prompt_last_of(what, (size_t)(line + len - what), " "
	    CHAT_PROMPT_WAITS);
	if (!hint || hint == what || !(text = malloc((size_t)(hint - what) +
	    strlen(outcome) + 3)))
		return NULL;
	sprintf(text, "%.*s: %s", (int)(hint - what), what, outcome);
	return text;
}

/* Rewrite the line p names with outcome, where it still is.  1 when it
 * was found. */
static int
chat_prompt_rewrite(struct chat *ch, const struct chat_prompt *p,
    const char *outcome)
{
	const char *line;
	size_t at, len, after = 0;
	long long ms = ch->draw.time_ms;
	char *text;

	if (!tui_model_find(&ch->draw.model, p->seq, CHAT_PROMPT_WAITS, &at,
	    &line, &len, &after))
		return 0;
	if (!(text = chat_prompt_answer_text(line, len, outcome)))
		return 1;
	chat_output_flush(ch);
	tui_draw_set_time(&ch->draw, p->ms);
	tui_draw_replace(&ch->draw, chat_frame(ch), at, after,
	    TUI_STYLE_NOTICE, text);
	tui_draw_set_time(&ch->draw, ms);
	tui_draw_bottom(&ch->draw, &ch->frame, ch->c->s->room, &ch->ed);
	chat_frame_done(ch);
	free(text);
	return 1;
}

/* Rewrite every line waiting for request id with outcome, and forget
 * them.  1 when there was one. */
static int
chat_prompt_answer(struct chat *ch, const char *id, const char *outcome)
{
	int i = 0, any = 0;

	while (i < ch->nprompts) {
		if (strcmp(ch->prompts[i].id, id)) {
			i++;
			continue;
		}
		any |= chat_prompt_rewrite(ch, &ch->prompts[i], outcome);
		memmove(&ch->prompts[i], &ch->prompts[i + 1],
		    (size_t)(ch->nprompts - i - 1) * sizeof(ch->prompts[0]));
		ch->nprompts--;
	}
	return any;
}

/* See chat_int.h.  Kept: the seq its line is tagged with and the time it
 * shows; the oldest is forgotten when too many wait. */
void
chat_prompt_drawn(struct chat *ch, const char *id)
{
	struct chat_prompt *p;

	if (!id || strlen(id) >= sizeof(ch->prompts[0].id) ||
	    ch->draw.model.tag <= 0)
		return;
	if (ch->nprompts == CHAT_MAX_WAITING) {
		memmove(&ch->prompts[0], &ch->prompts[1],
		    (size_t)(CHAT_MAX_WAITING - 1) * sizeof(ch->prompts[0]));
		ch->nprompts--;
	}
	p = &ch->prompts[ch->nprompts++];
	memcpy(p->id, id, strlen(id) + 1);
	p->seq = ch->draw.model.tag;
	p->ms = ch->draw.time_ms;
	/* Its answer came first: PgUp loads older events after newer. */
	for (int i = 0; i < ch->nanswers; i++) {
		if (strcmp(ch->answers[i].id, id))
			continue;
		chat_prompt_answer(ch, id, ch->answers[i].outcome);
		memmove(&ch->answers[i], &ch->answers[i + 1],
		    (size_t)(ch->nanswers - i - 1) * sizeof(ch->answers[0]));
		ch->nanswers--;
		return;
	}
}

/* See chat_int.h.  An answer with no line drawn to rewrite is kept for
 * the prompt that may come (the oldest forgotten first). */
void
chat_prompt_answered(struct chat *ch, json_object *o)
{
	const char *id = json_get_string(o, "id");
	char outcome[sizeof(ch->answers[0].outcome)];
	struct chat_answer *a;

	if (!id || strlen(id) >= sizeof(ch->answers[0].id))
		return;
	chat_prompt_outcome(o, outcome, sizeof(outcome));
	if (chat_prompt_answer(ch, id, outcome))
		return;
	if (ch->nanswers == CHAT_MAX_WAITING) {
		memmove(&ch->answers[0], &ch->answers[1],
		    (size_t)(CHAT_MAX_WAITING - 1) * sizeof(ch->answers[0]));
		ch->nanswers--;
	}
	a = &ch->answers[ch->nanswers++];
	memcpy(a->id, id, strlen(id) + 1);
	memcpy(a->outcome, outcome, strlen(outcome) + 1);
}
