/*
 * chat_undo.c: undo, redo, restore and snapshots in the chat
 * (chat_int.h).
 *
 * /undo, /redo and /restore NAME ask the room for a preview
 * (undo_preview, redo_preview, restore_preview: the files the step would
 * remove, bring back and change, whose own changes it would take back
 * too, and whom of them it must ask); the chat shows it and waits for
 * `y` (or `n`) before it sends the same request with "confirm": true.
 * The confirmation is remembered for one answer only, so a later `y`
 * never undoes anything by surprise.  With `!` after the command (the
 * owner's force) the preview says that it acts over the people named,
 * and the confirmation carries "force": true.
 *
 * When the room asks for consent (consent_request), the people it asks
 * see the preview and answer with `y` or `n` (a `consent` request); the
 * request waits for that answer until it ends (consent_end), whatever
 * else is typed meanwhile.  Everyone else sees who is asked, who agreed
 * and how it ended.  /snapshot NAME and /snapshots map to the room's
 * requests of the same names.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "chat_int.h"
#include "jsonl.h"
#include "server.h"

/* Most paths of one list a preview shows; the rest are counted. */
#define CHAT_UNDO_SHOWN 20

/* 1 when arg is absent or "!", with *force set for "!"; 0 else. */
static int
chat_undo_bang(const char *arg, int *force)
{
	*force = arg && strcmp(arg, "!") == 0;
	return !arg || *force;
}

/* See chat_int.h. */
int
chat_undo_command(const char *line, size_t wl, const char *arg,
    json_object **out, char *reply, size_t len)
{
	const char *sp;
	int force;

#define IS(word) (wl == strlen(word) && strncmp(line, word, wl) == 0)
	if (IS("/undo") || IS("/redo")) {
		if (!chat_undo_bang(arg, &force)) {
			snprintf(reply, len, "usage: %s [!]  (! forces it over "
			    "others' work: the owner's)", IS("/undo") ? "/undo" :
			    "/redo");
			return 0;
		}
		*out = chat_req(IS("/undo") ? "undo" : "redo");
		if (force)
			json_object_object_add(*out, "force",
			    json_object_new_boolean(1));
		return 1;
	}
	if (IS("/snapshots")) {
		*out = chat_req("snapshots");
		return 1;
	}
	if (IS("/snapshot") || IS("/restore")) {
		sp = arg ? strchr(arg, ' ') : NULL;
		force = IS("/restore") && sp && strcmp(sp, " !") == 0;
		if (!arg || (sp && !force)) {
			snprintf(reply, len, "usage: %s", IS("/snapshot") ?
			    "/snapshot NAME" : "/restore NAME [!]");
			return 0;
		}
		*out = chat_req(IS("/snapshot") ? "snapshot" : "restore");
		json_object_object_add(*out, "name", json_object_new_string_len(
		    arg, sp ? (int)(sp - arg) : (int)strlen(arg)));
		if (force)
			json_object_object_add(*out, "force",
			    json_object_new_boolean(1));
		return 1;
	}
#undef IS
	return -1;
}

/* The confirming request of the preview that waits. */
static json_object *
chat_undo_confirmation(struct chat *ch)
{
	json_object *req = chat_req(ch->confirm);

	json_object_object_add(req, "confirm", json_object_new_boolean(1));
	if (ch->confirm_name[0])
		json_object_object_add(req, "name",
		    json_object_new_string(ch->confirm_name));
	if (ch->confirm_force)
		json_object_object_add(req, "force", json_object_new_boolean(1));
	return req;
}

/* See chat_int.h. */
int
chat_undo_answer(struct chat *ch, const char *line, json_object **out)
{
	int yes;

	if ((!ch->confirm[0] && !ch->consent[0]) ||
	    (yes = chat_yes_no(line)) < 0)
		return -1;
	if (ch->confirm[0]) {           /* our own preview comes first */
		if (yes)
			*out = chat_undo_confirmation(ch);
		else
			chat_print(ch, TUI_STYLE_NOTICE, NULL,
			    "nothing was changed");
		ch->confirm[0] = '\0';
		return yes;
	}
	*out = chat_req("consent");
	json_object_object_add(*out, "id", json_object_new_string(ch->consent));
	json_object_object_add(*out, "approve", json_object_new_boolean(yes));
	ch->consent[0] = '\0';
	return 1;
}

/* "label: a, b, c (and N more)" for list into text at used; the new
 * length. */
static size_t
chat_undo_list(json_object *o, const char *key, const char *label,
    char *text, size_t len, size_t used)
{
	json_object *list = NULL;
	size_t n, i;

	if (!json_object_object_get_ex(o, key, &list) ||
	    !json_object_is_type(list, json_type_array) ||
	    !(n = json_object_array_length(list)) || used >= len)
		return used;
	used += (size_t)snprintf(text + used, len - used, "\n  %s: ", label);
	for (i = 0; i < n && i < CHAT_UNDO_SHOWN && used < len; i++) {
		const char *p = json_object_get_string(
		    json_object_array_get_idx(list, i));

		used += (size_t)snprintf(text + used, len - used, "%s%s",
		    i ? ", " : "", p ? p : "?");
	}
	if (n > i && used < len)
		used += (size_t)snprintf(text + used, len - used,
		    " (and %zu more)", n - i);
	return used < len ? used : len - 1;
}


/* 1 when list (an array of strings, or NULL) holds name. */
static int
chat_undo_has(json_object *list, const char *name)
{
	size_t n = list && json_object_is_type(list, json_type_array) ?
	    json_object_array_length(list) : 0;

	for (size_t i = 0; i < n; i++) {
		const char *s = json_object_get_string(
		    json_object_array_get_idx(list, i));

		if (s && strcmp(s, name) == 0)
			return 1;
	}
	return 0;
}

/* Append fmt to text (len bytes) at used; the new length, at most
 * len - 1. */
static size_t __attribute__((format(printf, 4, 5)))
chat_undo_add(char *text, size_t len, size_t used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (used >= len - 1)
		return len - 1;
	va_start(ap, fmt);
	n = vsnprintf(text + used, len - used, fmt, ap);
	va_end(ap);
	used += n > 0 ? (size_t)n : 0;
	return used < len ? used : len - 1;
}

/* The names of list o[key] as "a, b and c" into out (size bytes). */
static void
chat_undo_names(json_object *o, const char *key, char *out, size_t size)
{
	json_object *list = NULL;
	size_t n, used = 0;

	out[0] = '\0';
	if (!json_object_object_get_ex(o, key, &list) ||
	    !json_object_is_type(list, json_type_array))
		return;
	n = json_object_array_length(list);
	for (size_t i = 0; i < n; i++)
		used = chat_undo_add(out, size, used, "%s%s", i == 0 ? "" :
		    i + 1 == n ? " and " : ", ", json_object_get_string(
		    json_object_array_get_idx(list, i)) ?: "?");
}

/* What an event's action acts on: "the agent's turn 4" or "snapshot
 * NAME" (restore). */
static void
chat_undo_object(json_object *o, char *out, size_t size)
{
	const char *name = json_get_string(o, "name");

	if (name)
		snprintf(out, size, "snapshot %s", name);
	else
		snprintf(out, size, "the agent's turn %lld",
		    json_get_int(o, "turn", 0));
}

/* The files an event's lists name, each list on a line of its own
 * (redo: added and removed swap their words). */
static size_t
chat_undo_files(json_object *o, int redo, char *text, size_t len,
    size_t used)
{
	used = chat_undo_list(o, "added", redo ? "brings back" : "removes",
	    text, len, used);
	used = chat_undo_list(o, "removed", redo ? "removes" : "brings back",
	    text, len, used);
	used = chat_undo_list(o, "modified", "changes back", text, len, used);
	if (json_get_bool(o, "truncated", 0))
		used = chat_undo_add(text, len, used,
		    "\n  (more files than listed)");
	return used;
}

/* The question a preview ends with: what y does. */
static void
chat_undo_question(json_object *o, const char *what, char *text,
    size_t len, size_t used)
{
	char ask[512];

	chat_undo_names(o, "ask", ask, sizeof(ask));
	if (!ask[0])
		chat_undo_add(text, len, used, "\n  y to %s, n to leave the "
		    "workspace as it is", what);
	else if (json_get_bool(o, "force", 0))
		chat_undo_add(text, len, used, "\n  y to %s it anyway, over the "
		    "work of %s (the history records it)\n  n to leave the "
		    "workspace as it is", what, ask);
	else
		chat_undo_add(text, len, used, "\n  it takes back work of %s: "
		    "y asks them to agree (y/n, %lld s)\n  /%s ! forces it; n "
		    "to leave the workspace as it is", ask,
		    json_get_int(o, "seconds", 120), what);
}

/* The text of an undo, redo or restore event (what: "undo", "redo",
 * "restore"): what it does (did) to the files, and for whom. */
static void
chat_undo_text(json_object *o, const char *what, int done, char *text,
    size_t len)
{
	static const char *const past[][2] = {
		{ "undo", "undid" }, { "redo", "redid" },
		{ "restore", "restored the workspace to" },
	};
	const char *did = past[0][1];
	char obj[200], names[512];
	size_t used;

	for (size_t i = 0; i < 3; i++)
		if (strcmp(what, past[i][0]) == 0)
			did = past[i][1];
	chat_undo_object(o, obj, sizeof(obj));
	if (done)
		used = chat_undo_add(text, len, 0, "%s %s %s",
		    json_get_string(o, "user") ?: "someone", did, obj);
	else
		used = chat_undo_add(text, len, 0, "/%s would %s %s", what,
		    strcmp(what, "restore") == 0 ? "restore the workspace to" :
		    what, obj);
	chat_undo_names(o, json_get_bool(o, "forced", 0) ? "over" : "agreed",
	    names, sizeof(names));
	if (done && names[0])
		used = chat_undo_add(text, len, used, json_get_bool(o, "forced",
		    0) ? ", forced over the work of %s" : ", as %s agreed",
		    names);
	used = chat_undo_add(text, len, used, ":");
	used = chat_undo_files(o, strcmp(what, "redo") == 0, text, len, used);
	used = chat_undo_list(o, "users", "also takes back the changes of",
	    text, len, used);
	if (!done)
		chat_undo_question(o, what, text, len, used);
}

/* A request for consent: to the people it asks, the preview and the
 * question (and it waits for their answer); to the one who asked and to
 * everyone else, who is asked. */
static void
chat_consent_request(struct chat *ch, json_object *o, char *text,
    size_t len)
{
	const char *what = json_get_string(o, "action") ?: "undo";
	const char *asker = json_get_string(o, "user") ?: "someone";
	const char *me = ch->c->s->user, *id = json_get_string(o, "id");
	char obj[200], ask[512];
	json_object *users = NULL;
	size_t used;

	chat_undo_object(o, obj, sizeof(obj));
	chat_undo_names(o, "users", ask, sizeof(ask));
	json_object_object_get_ex(o, "users", &users);
	if (strcmp(asker, me) == 0) {
		snprintf(text, len, "waiting for %s to agree to your /%s "
		    "(%lld s); /%s ! forces it", ask, what,
		    json_get_int(o, "seconds", 120), what);
		return;
	}
	if (!chat_undo_has(users, me) || !id) {
		snprintf(text, len, "%s asks %s to agree to /%s %s", asker, ask,
		    what, obj);
		return;
	}
	used = chat_undo_add(text, len, 0, "%s asks you to agree to /%s %s:",
	    asker, what, obj);
	used = chat_undo_files(o, strcmp(what, "redo") == 0, text, len, used);
	chat_undo_add(text, len, used, "\n  it takes back your changes: y to "
	    "agree, n to refuse (%lld s)", json_get_int(o, "seconds", 120));
	/* Only the room's newest event may wait for our answer: one drawn
	 * again from history (PgUp, /history) has ended, or may have. */
	if (json_get_int(o, "seq", 0) >= ch->last_seq)
		snprintf(ch->consent, sizeof(ch->consent), "%s", id);
}

/* How a round of consent ended ("" when the done event says it). */
static void
chat_consent_end(struct chat *ch, json_object *o, char *text, size_t len)
{
	const char *what = json_get_string(o, "action") ?: "undo";
	const char *result = json_get_string(o, "result") ?: "";
	const char *id = json_get_string(o, "id");
	char names[512];

	if (id && strcmp(id, ch->consent) == 0)
		ch->consent[0] = '\0';
	text[0] = '\0';
	chat_undo_names(o, "users", names, sizeof(names));
	if (strcmp(result, "refused") == 0)
		snprintf(text, len, "the /%s was cancelled: %s refused; nothing "
		    "was changed", what, json_get_string(o, "user") ?: "someone");
	else if (strcmp(result, "timeout") == 0)
		snprintf(text, len, "the /%s was cancelled: %s did not answer "
		    "in time; nothing was changed", what,
		    names[0] ? names : "someone");
	else if (strcmp(result, "cancelled") == 0)
		snprintf(text, len, "the /%s was cancelled: %s", what,
		    json_get_string(o, "text") ?: "the room changed");
}

/* An answer to a request for consent ("" for a refusal: its end says
 * it).  Ours, from any of our sessions, is no longer awaited here. */
static void
chat_consent_answer(struct chat *ch, json_object *o, char *text,
    size_t len)
{
	const char *id = json_get_string(o, "id");
	const char *who = json_get_string(o, "user");

	if (id && who && strcmp(id, ch->consent) == 0 &&
	    strcmp(who, ch->c->s->user) == 0)
		ch->consent[0] = '\0';
	text[0] = '\0';
	if (json_get_bool(o, "approve", 0))
		snprintf(text, len, "%s agreed",
		    json_get_string(o, "user") ?: "someone");
}

/* The snapshots event as lines. */
static void
chat_snapshots_text(json_object *o, char *text, size_t len)
{
	json_object *list = NULL;
	size_t used, n, i;

	used = (size_t)snprintf(text, len, "snapshots of the workspace:");
	if (!json_object_object_get_ex(o, "snapshots", &list) ||
	    !(n = json_object_array_length(list))) {
		snprintf(text, len, "the workspace has no snapshots");
		return;
	}
	for (i = 0; i < n && used < len; i++) {
		json_object *s = json_object_array_get_idx(list, i);

		used += (size_t)snprintf(text + used, len - used,
		    "\n  %-24s %s %lld bytes%s", json_get_string(s, "name") ?: "?",
		    json_get_string(s, "time") ?: "?",
		    json_get_int(s, "bytes", 0),
		    json_get_bool(s, "automatic", 0) ? " (undo)" : "");
	}
}


/* The action of an undo_, redo_ or restore_ event type into what (8
 * bytes), and whether it is a preview (0), a done event (1) or neither
 * (-1). */
static int
chat_undo_kind(const char *type, char *what)
{
	static const char *const acts[] = { "undo", "redo", "restore" };

	for (size_t i = 0; i < 3; i++) {
		size_t n = strlen(acts[i]);

		if (strncmp(type, acts[i], n) != 0 || type[n] != '_')
			continue;
		snprintf(what, 8, "%s", acts[i]);
		return strcmp(type + n, "_done") == 0 ? 1 :
		    strcmp(type + n, "_preview") == 0 ? 0 : -1;
	}
	return -1;
}

/* A preview: the confirmation it waits for. */
static void
chat_undo_preview(struct chat *ch, const char *what, json_object *o)
{
	snprintf(ch->confirm, sizeof(ch->confirm), "%s", what);
	snprintf(ch->confirm_name, sizeof(ch->confirm_name), "%s",
	    json_get_string(o, "name") ?: "");
	ch->confirm_force = json_get_bool(o, "force", 0);
}

/* See chat_int.h. */
int
chat_undo_event(struct chat *ch, const char *type, json_object *o)
{
	char text[4096], what[8];
	int kind = chat_undo_kind(type, what);

	if (strcmp(type, "snapshots") == 0) {
		chat_snapshots_text(o, text, sizeof(text));
	} else if (kind >= 0) {
		chat_undo_text(o, what, kind, text, sizeof(text));
		if (kind == 0)
			chat_undo_preview(ch, what, o);
	} else if (strcmp(type, "consent_request") == 0) {
		chat_consent_request(ch, o, text, sizeof(text));
	} else if (strcmp(type, "consent_answer") == 0) {
		chat_consent_answer(ch, o, text, sizeof(text));
	} else if (strcmp(type, "consent_end") == 0) {
		chat_consent_end(ch, o, text, sizeof(text));
	} else {
		return 0;
	}
	if (text[0])
		chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	return 1;
}
