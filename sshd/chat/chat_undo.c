/*
 * chat_undo.c: undo, redo and snapshots in the chat (chat_int.h).
 *
 * /undo and /redo ask the room for a preview (undo_preview, redo_preview:
 * the files the step would remove, bring back and change, and whose own
 * commands it would take back too); the chat shows it and waits for `y`
 * (or `n`) before it sends the same request with "confirm": true.  The
 * confirmation is remembered for one answer only, so a later `y` never
 * undoes anything by surprise.  /snapshot NAME, /restore NAME and
 * /snapshots map to the room's requests of the same names.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "chat_int.h"
#include "jsonl.h"

/* Most paths of one list a preview shows; the rest are counted. */
#define CHAT_UNDO_SHOWN 20

/* See chat_int.h. */
int
chat_undo_command(const char *line, size_t wl, const char *arg,
    json_object **out, char *reply, size_t len)
{
#define IS(word) (wl == strlen(word) && strncmp(line, word, wl) == 0)
	if (IS("/undo") || IS("/redo") || IS("/snapshots")) {
		*out = chat_req(IS("/undo") ? "undo" : IS("/redo") ? "redo" :
		    "snapshots");
		return 1;
	}
	if (IS("/snapshot") || IS("/restore")) {
		if (!arg || strchr(arg, ' ')) {
			snprintf(reply, len, "usage: %s NAME", IS("/snapshot") ?
			    "/snapshot" : "/restore");
			return 0;
		}
		*out = chat_req(IS("/snapshot") ? "snapshot" : "restore");
		json_object_object_add(*out, "name", json_object_new_string(arg));
		return 1;
	}
#undef IS
	return -1;
}

/* See chat_int.h. */
int
chat_undo_answer(struct chat *ch, const char *line, json_object **out)
{
	int yes;

	if (!ch->confirm[0] || (yes = chat_yes_no(line)) < 0)
		return -1;
	if (yes) {
		*out = chat_req(ch->confirm);
		json_object_object_add(*out, "confirm",
		    json_object_new_boolean(1));
	} else {
		chat_print(ch, TUI_STYLE_NOTICE, NULL, "nothing was changed");
	}
	ch->confirm[0] = '\0';
	return yes;
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

/* The text of an undo or redo event: what it does (did) to the files. */
static void
chat_undo_text(json_object *o, int redo, int done, char *text, size_t len)
{
	const char *who = json_get_string(o, "user") ?: "someone";
	size_t used = done ?
	    (size_t)snprintf(text, len, "%s %s the agent's turn %lld:", who,
	    redo ? "redid" : "undid", json_get_int(o, "turn", 0)) :
	    (size_t)snprintf(text, len, "%s the agent's turn %lld:",
	    redo ? "/redo would redo" : "/undo would undo",
	    json_get_int(o, "turn", 0));

	used = chat_undo_list(o, "added", redo ? "brings back" : "removes",
	    text, len, used);
	used = chat_undo_list(o, "removed", redo ? "removes" : "brings back",
	    text, len, used);
	used = chat_undo_list(o, "modified", "changes back", text, len, used);
	used = chat_undo_list(o, "users", "also takes back the changes of",
	    text, len, used);
	if (json_get_bool(o, "truncated", 0) && used < len)
		used += (size_t)snprintf(text + used, len - used,
		    "\n  (more files than listed)");
	if (!done && used < len)
		snprintf(text + used, len - used, "\n  y to %s, n to leave the "
		    "workspace as it is", redo ? "redo" : "undo");
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

/* See chat_int.h. */
int
chat_undo_event(struct chat *ch, const char *type, json_object *o)
{
	char text[4096];
	int redo = strncmp(type, "redo_", 5) == 0;

	if (strcmp(type, "snapshots") == 0) {
		chat_snapshots_text(o, text, sizeof(text));
	} else if (strcmp(type, "undo_preview") == 0 ||
	    strcmp(type, "redo_preview") == 0) {
		chat_undo_text(o, redo, 0, text, sizeof(text));
		snprintf(ch->confirm, sizeof(ch->confirm), "%s",
		    redo ? "redo" : "undo");
	} else if (strcmp(type, "undo_done") == 0 ||
	    strcmp(type, "redo_done") == 0) {
		chat_undo_text(o, redo, 1, text, sizeof(text));
	} else {
		return 0;
	}
	chat_print(ch, TUI_STYLE_NOTICE, NULL, text);
	return 1;
}
