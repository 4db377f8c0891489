/*
 * stored_event.c: the constructors of stored events (stored_event.h), one
 * table row per type (stored_ctors), each a list of the fields the live
 * code of that type makes and what each must be:
 *
 *   message      user, text [, turn]             requests.c, turn.c
 *   prompt       user, text                      requests.c
 *   turn_start   turn, user                      turn.c
 *   tool_call    turn, id, name, input           turn.c
 *   tool_result  turn, id [, name], status, output  turn_tools.c
 *   turn_end     turn, stop_reason, usage        turn.c
 *   approval_request  turn, id, tool, input, modifies, seconds
 *                                                turn_approval.c
 *   approval_result   turn, id, tool, status [, user, reason], waited_ms,
 *                text                            turn_approval.c (approval.h)
 *   compaction   turn, reason, summarized, kept, tokens_before,
 *                context_window, summary, usage  turn_summary.c
 *   exec_start   id, user, command               exec.c (shared commands)
 *   exec_result  id, user, exitCode [, signal, timedOut, stop_signal,
 *                stopped_by], stdout, stderr [, truncated]
 *                                                exec.c (shared commands)
 *                or id [, user], exitCode [, stdout, stderr, truncated],
 *                interrupted, text: a command a restart cut, with the
 *                output it had shown (exec.c: exec_recover)
 *   config       changed, provider, model, approval, allow_list, skills,
 *                mcp, user                       settings.c
 *   access       owner, visibility, members [, change, user, by, text,
 *                seconds, reason]                room_access_list.c
 *   limits       memory, pids, cpus, max [, by], text   room_limits.c
 *   caps         max_steps, max_tokens_per_day, max [, by], text   caps.c
 *   undo_done, redo_done   turn, added, removed, modified, users
 *                [, truncated], user [, forced, over, agreed, text]
 *                                                undo.c
 *   restore_done name, added, removed, modified, users [, truncated],
 *                user [, forced, over, agreed, text]   undo.c
 *   consent_request  id, action [, turn, name], user, users, added,
 *                removed, modified [, truncated], seconds [, text]
 *                                                consent.c
 *   consent_answer   id, user, approve [, text]  consent.c
 *   consent_end  id, action, result [, user, users, text]   consent.c
 *   snapshot     action (take), name, user, text  snapshots.c
 *   imported     user [, origin, exported], events, dropped
 *                [, input_tokens, output_tokens, requests]
 *                                                room_import.c
 *
 * and on every one type, seq and time.  A change to what one of those
 * files puts in a stored event is a change to its row here: journal_record
 * builds every live event through this table too, and logs what it left
 * out, so a field missing here shows at once rather than vanishing from
 * history only.
 *
 * What a kind of field allows, and why:
 *   TEXT    a string, cleaned as people's lines are (utf8_clean): what
 *           the room shows as words reaches terminals;
 *   OUTPUT  a string, repaired as a command's output is (utf8_repair):
 *           output keeps its controls live (the chat drops them when it
 *           draws), so history does no more and no less;
 *   NAME    a user name (names.h), which "agent" is;  ROOM  a room name;
 *   TIME    a time as the room stamps it;
 *   INT, NUMBER (integer or not), BOOL;
 *   TEXTS, NAMES  arrays of those;
 *   OBJECT  an object with fields of its own (usage, max);
 *   JSON    any JSON (a tool's input, the MCP servers), its strings
 *           repaired and its depth capped.
 * null is allowed only where the live code writes one (NULLABLE).
 */
#include "stored_event.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event_types.h"
#include "jsonl.h"
#include "names.h"
#include "utf8.h"

/* Deepest nesting a JSON field may have (json-c's own parse limit). */
#define STORED_JSON_DEPTH	32

enum stored_kind {
	K_TEXT, K_OUTPUT, K_NAME, K_ROOM, K_TIME, K_INT, K_NUMBER, K_BOOL,
	K_TEXTS, K_NAMES, K_OBJECT, K_JSON,
};

#define REQUIRED	1u	/* the event is not one without it */
#define NULLABLE	2u	/* live code may write null */

struct stored_field {
	const char *name;
	enum stored_kind kind;
	unsigned flags;
	const struct stored_field *sub;	/* K_OBJECT's fields */
};

#define END { NULL, 0, 0, NULL }

static const struct stored_field f_usage[] = {
	{ "input_tokens", K_INT, 0, NULL },
	{ "output_tokens", K_INT, 0, NULL },
	END,
};
static const struct stored_field f_limits_max[] = {
	{ "memory", K_INT, NULLABLE, NULL },
	{ "pids", K_INT, NULLABLE, NULL },
	{ "cpus", K_NUMBER, NULLABLE, NULL },
	END,
};
static const struct stored_field f_caps_max[] = {
	{ "max_steps", K_INT, 0, NULL },
	{ "max_tokens_per_day", K_INT, NULLABLE, NULL },
	END,
};

static const struct stored_field f_message[] = {
	{ "user", K_NAME, REQUIRED, NULL },
	{ "text", K_TEXT, REQUIRED, NULL },
	{ "turn", K_INT, 0, NULL },
	END,
};
static const struct stored_field f_prompt[] = {
	{ "user", K_NAME, REQUIRED, NULL },
	{ "text", K_TEXT, REQUIRED, NULL },
	END,
};
static const struct stored_field f_turn_start[] = {
	{ "turn", K_INT, REQUIRED, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	END,
};
static const struct stored_field f_tool_call[] = {
	{ "turn", K_INT, 0, NULL },
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "name", K_TEXT, REQUIRED, NULL },
	{ "input", K_JSON, NULLABLE, NULL },
	END,
};
static const struct stored_field f_tool_result[] = {
	{ "turn", K_INT, 0, NULL },
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "name", K_TEXT, 0, NULL },
	{ "status", K_TEXT, REQUIRED, NULL },
	{ "output", K_OUTPUT, 0, NULL },
	END,
};
static const struct stored_field f_turn_end[] = {
	{ "turn", K_INT, REQUIRED, NULL },
	{ "stop_reason", K_TEXT, REQUIRED, NULL },
	{ "usage", K_OBJECT, 0, f_usage },
	END,
};
static const struct stored_field f_compaction[] = {
	{ "turn", K_INT, REQUIRED, NULL },
	{ "reason", K_TEXT, 0, NULL },
	{ "summarized", K_INT, 0, NULL },
	{ "kept", K_INT, 0, NULL },
	{ "tokens_before", K_INT, 0, NULL },
	{ "context_window", K_INT, 0, NULL },
	{ "summary", K_TEXT, 0, NULL },
	{ "usage", K_OBJECT, 0, f_usage },
	END,
};
static const struct stored_field f_approval_request[] = {
	{ "turn", K_INT, 0, NULL },
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "tool", K_TEXT, REQUIRED, NULL },
	{ "input", K_JSON, NULLABLE, NULL },
	{ "modifies", K_BOOL, 0, NULL },
	{ "seconds", K_INT, 0, NULL },
	END,
};
static const struct stored_field f_approval_result[] = {
	{ "turn", K_INT, 0, NULL },
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "tool", K_TEXT, 0, NULL },
	{ "status", K_TEXT, REQUIRED, NULL },
	{ "user", K_NAME, 0, NULL },
	{ "reason", K_TEXT, 0, NULL },
	{ "waited_ms", K_INT, 0, NULL },
	{ "text", K_TEXT, REQUIRED, NULL },
	END,
};
static const struct stored_field f_exec_start[] = {
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	{ "command", K_TEXT, REQUIRED, NULL },
	END,
};
static const struct stored_field f_exec_result[] = {
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "user", K_NAME, 0, NULL },	/* absent in rooms of before it */
	{ "exitCode", K_INT, REQUIRED, NULL },
	{ "signal", K_TEXT, 0, NULL },
	{ "timedOut", K_BOOL, 0, NULL },
	{ "stop_signal", K_TEXT, 0, NULL },
	{ "stopped_by", K_NAME, 0, NULL },
	{ "stdout", K_OUTPUT, 0, NULL },
	{ "stderr", K_OUTPUT, 0, NULL },
	{ "truncated", K_BOOL, 0, NULL },
	{ "interrupted", K_BOOL, 0, NULL },
	{ "text", K_TEXT, 0, NULL },
	END,
};
static const struct stored_field f_config[] = {
	{ "changed", K_TEXTS, 0, NULL },
	{ "provider", K_TEXT, NULLABLE, NULL },
	{ "model", K_TEXT, NULLABLE, NULL },
	{ "approval", K_TEXT, NULLABLE, NULL },
	{ "allow_list", K_TEXTS, NULLABLE, NULL },
	{ "skills", K_TEXTS, NULLABLE, NULL },
	{ "mcp", K_JSON, NULLABLE, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	END,
};
static const struct stored_field f_access[] = {
	{ "owner", K_NAME, NULLABLE, NULL },
	{ "visibility", K_TEXT, REQUIRED, NULL },
	{ "members", K_NAMES, 0, NULL },
	{ "change", K_TEXT, 0, NULL },
	{ "user", K_NAME, 0, NULL },
	{ "by", K_NAME, 0, NULL },
	{ "text", K_TEXT, 0, NULL },
	{ "seconds", K_INT, 0, NULL },		/* a kick's length */
	{ "reason", K_TEXT, 0, NULL },		/* and why, when said */
	END,
};
static const struct stored_field f_limits[] = {
	{ "memory", K_INT, NULLABLE, NULL },
	{ "pids", K_INT, NULLABLE, NULL },
	{ "cpus", K_NUMBER, NULLABLE, NULL },
	{ "max", K_OBJECT, 0, f_limits_max },
	{ "by", K_NAME, 0, NULL },
	{ "text", K_TEXT, REQUIRED, NULL },
	END,
};
static const struct stored_field f_caps[] = {
	{ "max_steps", K_INT, 0, NULL },
	{ "max_tokens_per_day", K_INT, NULLABLE, NULL },
	{ "max", K_OBJECT, 0, f_caps_max },
	{ "by", K_NAME, 0, NULL },
	{ "text", K_TEXT, REQUIRED, NULL },
	END,
};
static const struct stored_field f_undo_done[] = {
	{ "turn", K_INT, REQUIRED, NULL },
	{ "added", K_TEXTS, 0, NULL },
	{ "removed", K_TEXTS, 0, NULL },
	{ "modified", K_TEXTS, 0, NULL },
	{ "users", K_NAMES, 0, NULL },
	{ "truncated", K_BOOL, 0, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	{ "forced", K_BOOL, 0, NULL },
	{ "over", K_NAMES, 0, NULL },
	{ "agreed", K_NAMES, 0, NULL },
	{ "text", K_TEXT, 0, NULL },	/* what /history searches */
	END,
};
static const struct stored_field f_restore_done[] = {
	{ "name", K_TEXT, REQUIRED, NULL },
	{ "added", K_TEXTS, 0, NULL },
	{ "removed", K_TEXTS, 0, NULL },
	{ "modified", K_TEXTS, 0, NULL },
	{ "users", K_NAMES, 0, NULL },
	{ "truncated", K_BOOL, 0, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	{ "forced", K_BOOL, 0, NULL },
	{ "over", K_NAMES, 0, NULL },
	{ "agreed", K_NAMES, 0, NULL },
	{ "text", K_TEXT, 0, NULL },	/* what /history searches */
	END,
};
static const struct stored_field f_consent_request[] = {
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "action", K_TEXT, REQUIRED, NULL },
	{ "turn", K_INT, 0, NULL },
	{ "name", K_TEXT, 0, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	{ "users", K_NAMES, REQUIRED, NULL },
	{ "added", K_TEXTS, 0, NULL },
	{ "removed", K_TEXTS, 0, NULL },
	{ "modified", K_TEXTS, 0, NULL },
	{ "truncated", K_BOOL, 0, NULL },
	{ "seconds", K_INT, 0, NULL },
	{ "text", K_TEXT, 0, NULL },	/* what /history searches */
	END,
};
static const struct stored_field f_consent_answer[] = {
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	{ "approve", K_BOOL, REQUIRED, NULL },
	{ "text", K_TEXT, 0, NULL },
	END,
};
static const struct stored_field f_consent_end[] = {
	{ "id", K_TEXT, REQUIRED, NULL },
	{ "action", K_TEXT, REQUIRED, NULL },
	{ "result", K_TEXT, REQUIRED, NULL },
	{ "user", K_NAME, 0, NULL },
	{ "users", K_NAMES, 0, NULL },
	{ "text", K_TEXT, 0, NULL },
	END,
};
static const struct stored_field f_snapshot[] = {
	{ "action", K_TEXT, REQUIRED, NULL },
	{ "name", K_TEXT, REQUIRED, NULL },
	{ "user", K_NAME, REQUIRED, NULL },
	{ "text", K_TEXT, REQUIRED, NULL },
	END,
};
static const struct stored_field f_imported[] = {
	{ "user", K_NAME, REQUIRED, NULL },
	{ "origin", K_ROOM, 0, NULL },
	{ "exported", K_TIME, 0, NULL },
	{ "events", K_INT, 0, NULL },
	{ "dropped", K_INT, 0, NULL },
	{ "input_tokens", K_INT, 0, NULL },	/* the usage kept apart */
	{ "output_tokens", K_INT, 0, NULL },
	{ "requests", K_INT, 0, NULL },
	END,
};

static const struct stored_ctor {
	const char *type;
	const struct stored_field *fields;
} stored_ctors[] = {
	{ "message", f_message },
	{ "prompt", f_prompt },
	{ "turn_start", f_turn_start },
	{ "tool_call", f_tool_call },
	{ "tool_result", f_tool_result },
	{ "turn_end", f_turn_end },
	{ "compaction", f_compaction },
	{ "approval_request", f_approval_request },
	{ "approval_result", f_approval_result },
	{ "exec_start", f_exec_start },
	{ "exec_result", f_exec_result },
	{ "config", f_config },
	{ "access", f_access },
	{ "limits", f_limits },
	{ "caps", f_caps },
	{ "undo_done", f_undo_done },
	{ "redo_done", f_undo_done },
	{ "restore_done", f_restore_done },
	{ "consent_request", f_consent_request },
	{ "consent_answer", f_consent_answer },
	{ "consent_end", f_consent_end },
	{ "snapshot", f_snapshot },
	{ "imported", f_imported },
};

/* What every stored event has besides its type's fields. */
static const struct stored_field f_stamp[] = {
	{ "seq", K_INT, REQUIRED, NULL },
	{ "time", K_TIME, REQUIRED, NULL },
	END,
};

/* Say in note (len) why; -EINVAL. */
static int __attribute__((format(printf, 3, 4)))
stored_refuse(char *note, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Add ", name" (or "left out: name") to note, as far as it fits. */
static void
stored_note_left_out(char *note, size_t len, const char *name)
{
	size_t n = strlen(note);

	if (n + 1 < len)
		snprintf(note + n, len - n, "%s%s", n ? ", " : "left out: ",
		    name);
}

int
stored_event_time_valid(const char *s)
{
	static const char form[] = "dddd-dd-ddTdd:dd:dd";
	size_t i;

	for (i = 0; form[i]; i++)
		if (form[i] == 'd' ? s[i] < '0' || s[i] > '9' : s[i] != form[i])
			return 0;
	if (s[i] == '.') {
		size_t start = ++i;

		while (s[i] >= '0' && s[i] <= '9' && i - start < 9)
			i++;
		if (i == start)
			return 0;
	}
	return s[i] == 'Z' && s[i + 1] == '\0';
}

/* A new string of v's bytes, cleaned (utf8_clean) or repaired
 * (utf8_repair), or NULL when memory ran out. */
static json_object *
stored_string(json_object *v, int clean)
{
	const char *p = json_object_get_string(v);
	size_t n = (size_t)json_object_get_string_len(v);
	json_object *s = NULL;
	struct buf b;
	int r;

	/* Each byte grows to at most 3 (one invalid byte, one U+FFFD). */
	buf_init(&b, n * 3 + 1);
	r = clean ? utf8_clean(&b, p, n) : utf8_repair(&b, p, n);
	if (r == 0 && b.len <= INT32_MAX)
		s = json_object_new_string_len(b.data ? b.data : "",
		    (int)b.len);
	buf_free(&b);
	return s;
}

/* A copy of any JSON value v, its strings repaired and its keys cleaned,
 * at most depth levels deep.  NULL for null; else NULL with errno set:
 * EINVAL (too deep), ENOMEM. */
static json_object *
stored_json(json_object *v, int depth)
{
	json_object *out = NULL, *c;

	if (depth <= 0) {
		errno = EINVAL;
		return NULL;
	}
	switch (json_object_get_type(v)) {
	case json_type_null:
		return NULL;
	case json_type_string:
		out = stored_string(v, 0);
		break;
	case json_type_array:
		out = json_object_new_array();
		for (size_t i = 0; out && i < json_object_array_length(v); i++) {
			json_object *e = json_object_array_get_idx(v, i);

			c = stored_json(e, depth - 1);
			if ((!c && e) || json_object_array_add(out, c) < 0) {
				json_object_put(c);
				json_object_put(out);
				return NULL;
			}
		}
		break;
	case json_type_object:
		out = json_object_new_object();
		json_object_object_foreach(v, k, e) {
			char *key;

			if (!out)
				break;
			c = stored_json(e, depth - 1);
			key = utf8_clean_str(k);
			if ((!c && e) || !key ||
			    json_object_object_add(out, key, c) < 0) {
				json_object_put(c);
				json_object_put(out);
				free(key);
				return NULL;
			}
			free(key);
		}
		break;
	default:	/* numbers and booleans are what they are */
		out = json_object_get(v);
		break;
	}
	if (!out)
		errno = ENOMEM;
	return out;
}

/* See stored_event.h. */
json_object *
stored_event_copy_value(json_object *v, int depth)
{
	return v ? stored_json(v, depth) : NULL;
}

/* 1 when v is a string that kind allows (a name, a room, a time). */
static int
stored_word_valid(enum stored_kind kind, json_object *v)
{
	const char *s = json_object_get_string(v);

	if (!json_object_is_type(v, json_type_string) ||
	    strlen(s) != (size_t)json_object_get_string_len(v))
		return 0;
	switch (kind) {
	case K_NAME:
		return user_name_valid(s);
	case K_ROOM:
		return room_name_valid(s);
	case K_TIME:
		return stored_event_time_valid(s);
	default:
		return 0;
	}
}

/* v, an array of strings each cleaned (K_TEXTS) or a user name (K_NAMES),
 * into *out.  0, -EINVAL (note says why) or -ENOMEM. */
static int
stored_list(json_object *v, enum stored_kind kind, const char *name,
    json_object **out, char *note, size_t len)
{
	if (!json_object_is_type(v, json_type_array))
		return stored_refuse(note, len, "%s is not a list", name);
	if (!(*out = json_object_new_array()))
		return -ENOMEM;
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *e = json_object_array_get_idx(v, i), *c;

		if (kind == K_NAMES && !stored_word_valid(K_NAME, e))
			return stored_refuse(note, len, "%s holds an invalid "
			    "user name", name);
		if (kind == K_TEXTS && !json_object_is_type(e,
		    json_type_string))
			return stored_refuse(note, len, "%s holds a %s, not a "
			    "string", name, json_type_to_name(
			    json_object_get_type(e)));
		c = kind == K_NAMES ? json_object_get(e) : stored_string(e, 1);
		if (!c || json_object_array_add(*out, c) < 0) {
			json_object_put(c);
			return -ENOMEM;
		}
	}
	return 0;
}

static int stored_fields(json_object *in, const struct stored_field *fields,
    const struct stored_field *also, json_object *out, char *note,
    size_t len);

/* v, the value of field f, as f's kind makes it, into *val (NULL for a
 * null that f allows).  0, -EINVAL (note says why) or -ENOMEM. */
static int
stored_value(const struct stored_field *f, json_object *v, json_object **val,
    char *note, size_t len)
{
	enum json_type t = json_object_get_type(v);

	*val = NULL;
	if (t == json_type_null)
		return f->flags & NULLABLE ? 0 : stored_refuse(note, len,
		    "%s is null", f->name);
	switch (f->kind) {
	case K_TEXT:
	case K_OUTPUT:
		if (t != json_type_string)
			break;
		*val = stored_string(v, f->kind == K_TEXT);
		return *val ? 0 : -ENOMEM;
	case K_NAME:
	case K_ROOM:
	case K_TIME:
		if (!stored_word_valid(f->kind, v))
			return stored_refuse(note, len, "%s is not a valid %s",
			    f->name, f->kind == K_NAME ? "user name" :
			    f->kind == K_ROOM ? "room name" : "time");
		*val = json_object_get(v);
		return 0;
	case K_INT:
	case K_NUMBER:
		if (t != json_type_int && (f->kind == K_INT ||
		    t != json_type_double))
			break;
		*val = json_object_get(v);
		return 0;
	case K_BOOL:
		if (t != json_type_boolean)
			break;
		*val = json_object_get(v);
		return 0;
	case K_TEXTS:
	case K_NAMES:
		return stored_list(v, f->kind, f->name, val, note, len);
	case K_OBJECT:
		if (t != json_type_object)
			break;
		if (!(*val = json_object_new_object()))
			return -ENOMEM;
		return stored_fields(v, f->sub, NULL, *val, note, len);
	case K_JSON:
		errno = 0;
		*val = stored_json(v, STORED_JSON_DEPTH);
		return *val ? 0 : errno == EINVAL ? stored_refuse(note, len,
		    "%s is nested too deep", f->name) : -ENOMEM;
	}
	return stored_refuse(note, len, "%s is a JSON %s, not what a stored "
	    "event has there", f->name, json_type_to_name(t));
}

/* The field of fields called name, or NULL. */
static const struct stored_field *
stored_field_find(const struct stored_field *fields, const char *name)
{
	for (const struct stored_field *f = fields; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

/* 1 when every REQUIRED field of fields is in out and not null; else 0
 * with the reason in note. */
static int
stored_required(const struct stored_field *fields, json_object *out,
    char *note, size_t len)
{
	json_object *val;

	for (const struct stored_field *f = fields; f && f->name; f++) {
		if (!(f->flags & REQUIRED))
			continue;
		if (!json_object_object_get_ex(out, f->name, &val) || !val) {
			stored_refuse(note, len, "it has no %s", f->name);
			return 0;
		}
	}
	return 1;
}

/* Each member of in that fields or also (NULL: none) name, made as its
 * kind says, into out, in in's order (so that a live event goes out as it
 * was made); "type" is the caller's; the others are left out and noted.
 * Then every REQUIRED field must be there.  0, -EINVAL (note says why) or
 * -ENOMEM. */
static int
stored_fields(json_object *in, const struct stored_field *fields,
    const struct stored_field *also, json_object *out, char *note,
    size_t len)
{
	json_object *val;
	int r;

	json_object_object_foreach(in, k, v) {
		const struct stored_field *f = stored_field_find(fields, k);

		if (!f && also)
			f = stored_field_find(also, k);
		if (!f && also && strcmp(k, "type") == 0)
			continue;
		if (!f) {
			stored_note_left_out(note, len, k);
			continue;
		}
		if ((r = stored_value(f, v, &val, note, len)) < 0) {
			json_object_put(val);
			return r;
		}
		if (json_object_object_add(out, k, val) < 0) {
			json_object_put(val);
			return -ENOMEM;
		}
	}
	if (!stored_required(fields, out, note, len) ||
	    !stored_required(also, out, note, len))
		return -EINVAL;
	return 0;
}

/* The constructor of type, or NULL. */
static const struct stored_ctor *
stored_ctor_find(const char *type)
{
	for (size_t i = 0; i < sizeof(stored_ctors) / sizeof(*stored_ctors);
	    i++)
		if (strcmp(stored_ctors[i].type, type) == 0)
			return &stored_ctors[i];
	return NULL;
}

int
stored_event_build(json_object *in, json_object **out, char *note,
    size_t len)
{
	const struct stored_ctor *ctor;
	const char *type = json_get_string(in, "type");
	json_object *ev;
	int r;

	*out = NULL;
	note[0] = '\0';
	if (!json_object_is_type(in, json_type_object))
		return stored_refuse(note, len, "not a JSON object");
	/* Internal events (exec_done, access_denied...) are never history. */
	if (!event_type_stored(type) || !(ctor = stored_ctor_find(type)))
		return stored_refuse(note, len, "type %s is not one a room "
		    "stores", type ? type : "(none)");
	if (!(ev = json_object_new_object()))
		return -ENOMEM;
	json_object_object_add(ev, "type", json_object_new_string(type));
	if ((r = stored_fields(in, ctor->fields, f_stamp, ev, note,
	    len)) < 0) {
		json_object_put(ev);
		return r;
	}
	*out = ev;
	return 0;
}

int
stored_event_from_row(long long seq, const char *time, const char *json,
    json_object **out, char *note, size_t len)
{
	const char *err;
	json_object *in;
	int r;

	*out = NULL;
	if (!json || !time)
		return stored_refuse(note, len, "its row is incomplete");
	/* One object and nothing after it: a stored text that holds two
	 * lines must not become two events. */
	if (!(in = jsonl_parse_object(json, strlen(json), &err)))
		return stored_refuse(note, len, "not one JSON object (%s)",
		    err ? err : "parse error");
	json_object_object_add(in, "seq", json_object_new_int64(seq));
	json_object_object_add(in, "time", json_object_new_string(time));
	r = stored_event_build(in, out, note, len);
	json_object_put(in);
	return r;
}
