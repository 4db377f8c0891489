/*
 * import_transcript.c: an imported room.db's own record of the agent,
 * checked and rebuilt (import_transcript.h).  room_import.c calls it once,
 * in the transaction that makes the file the importer's room.
 *
 * The transcript is sent to the model again at the room's next turn, and
 * a turn that was running resumes from it and from the tool journal; so
 * each row must be one the live agent could have written, in the form it
 * writes them (turn.c, provider.c):
 *
 *   transcript.json  {"role": R, "content": [BLOCK...]}, R the row's role
 *     user       {"type":"text","text":S}
 *                {"type":"tool_result","tool_use_id":ID,"content":S,
 *                 "is_error":BOOL}
 *     assistant  {"type":"text","text":S}
 *                {"type":"tool_use","id":ID,"name":NAME,"input":{...}}
 *   tool_journal     call_id ID, name NAME, input a JSON object; state
 *                    started (no status, no output; only in a running
 *                    turn: a call a crash cut, reported as interrupted)
 *                    or ended with a status ok|error|denied|interrupted|
 *                    stopped and an output S
 *   turns            prompt S; stop_reason a word or none
 *   compactions      reason window|refused; summary S or none
 *
 * S is a string of at most IMPORT_TRANSCRIPT_TEXT_MAX bytes, stored again
 * cleaned as people's text is (utf8_clean: valid UTF-8, no NUL, no control
 * character but tab and newline): a tool's output live keeps its ESC
 * bytes, but an archive's is no command's output, and what is shown of
 * it or sent to the model must not carry terminal sequences.  ID is
 * printable ASCII, NAME letters, digits, '_', '-' and '.'.  Fields a live
 * row does not have are dropped; a row that breaks any rule above refuses
 * the whole import, with the table and row named: a transcript with a
 * hole in it would be another conversation than the archive's.
 *
 * Rows are read one at a time by id and rewritten in place (a row
 * rewritten under an open scan could be met again), their text copied out
 * of SQLite before the rewrite.
 */
#include "import_transcript.h"

#include <ctype.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"
#include "stored_event.h"
#include "utf8.h"

#define IT_COLS	8	/* columns a table's check reads, id aside */

/* One row, copied out of SQLite. */
struct it_row {
	long long id;
	char *col[IT_COLS];		/* NULL: SQL NULL */
	size_t len[IT_COLS];		/* bytes of col[i] */
};

/* What a check is working on, for its messages. */
struct it_ctx {
	const char *path;		/* the file, as the importer named it */
	sqlite3 *h;
	const char *table;
	long long id;			/* the row */
	char why[200];			/* what is wrong with it */
};

/* Say on stderr that the row is refused; -1. */
static int
it_refuse(const struct it_ctx *c)
{
	fprintf(stderr, "atrium-agent: import-db: %s: %s row %lld is not one "
	    "this server's agent could have written (%s); nothing was "
	    "imported\n", c->path, c->table, c->id, c->why);
	return -1;
}

/* Set the reason and return NULL (for the builders below). */
static json_object *
it_fail(struct it_ctx *c, const char *why)
{
	snprintf(c->why, sizeof(c->why), "%s", why);
	return NULL;
}

/* Say that field key is missing, of another JSON type or not valid;
 * NULL. */
static json_object *
it_fail_field(struct it_ctx *c, const char *key)
{
	snprintf(c->why, sizeof(c->why), "%s missing, of another JSON type "
	    "or not valid", key);
	return NULL;
}

/* The same for an int result: -1. */
static int
it_bad(struct it_ctx *c, const char *why)
{
	it_fail(c, why);
	return -1;
}

/* p[0..n) cleaned (utf8_clean) as a new JSON string; NULL when memory
 * ran out. */
static json_object *
it_clean(const char *p, size_t n)
{
	json_object *s = NULL;
	struct buf b;

	/* Each byte grows to at most 3 (one invalid byte, one U+FFFD). */
	buf_init(&b, n * 3 + 1);
	if (utf8_clean(&b, p, n) == 0 && b.len <= INT_MAX)
		s = json_object_new_string_len(b.data ? b.data : "",
		    (int)b.len);
	buf_free(&b);
	return s;
}

/* Field key of o as an S (the head), cleaned; NULL with c->why. */
static json_object *
it_text(struct it_ctx *c, json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return it_fail_field(c, key);
	if ((size_t)json_object_get_string_len(v) > IMPORT_TRANSCRIPT_TEXT_MAX)
		return it_fail(c, "a text larger than any live one");
	if (!(v = it_clean(json_object_get_string(v),
	    (size_t)json_object_get_string_len(v))))
		return it_fail(c, "memory");
	return v;
}

/* 1 when s[0..n) is an ID (name == 0) or a NAME (name == 1). */
static int
it_word_valid(const char *s, size_t n, int name)
{
	if (n == 0 || n > (name ? IMPORT_TRANSCRIPT_NAME_MAX :
	    IMPORT_TRANSCRIPT_ID_MAX))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (name ? !(isalnum(ch) || ch == '_' || ch == '-' ||
		    ch == '.') : (ch < 0x21 || ch > 0x7e))
			return 0;
	}
	return 1;
}

/* Field key of o as an ID or NAME, a new string; NULL with c->why. */
static json_object *
it_word(struct it_ctx *c, json_object *o, const char *key, int name)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    !it_word_valid(json_object_get_string(v),
	    (size_t)json_object_get_string_len(v), name))
		return it_fail_field(c, key);
	return json_object_new_string(json_object_get_string(v));
}

/* A new block of type with the fields k[0..n) = v[0..n) (each a new
 * reference, taken), or NULL (freeing them) when one is NULL. */
static json_object *
it_block(const char *type, const char *const *k, json_object **v, int n)
{
	json_object *b = NULL;
	int ok = 1;

	for (int i = 0; i < n; i++)
		ok = ok && v[i];
	if (ok && (b = json_object_new_object()))
		json_object_object_add(b, "type", json_object_new_string(type));
	for (int i = 0; i < n; i++) {
		if (b)
			json_object_object_add(b, k[i], v[i]);
		else
			json_object_put(v[i]);
	}
	return b;
}

/* One block of a message of role (assistant: 1), rebuilt; NULL with
 * c->why. */
static json_object *
it_content_block(struct it_ctx *c, json_object *in, int assistant)
{
	static const char *const text_k[] = { "text" };
	static const char *const use_k[] = { "id", "name", "input" };
	static const char *const res_k[] = { "tool_use_id", "content",
	    "is_error" };
	const char *type = json_get_string(in, "type");
	json_object *v[3] = { NULL, NULL, NULL }, *x;

	if (!json_object_is_type(in, json_type_object) || !type)
		return it_fail(c, "a block that is not one");
	if (strcmp(type, "text") == 0) {
		v[0] = it_text(c, in, "text");
		return it_block(type, text_k, v, 1);
	}
	if (assistant && strcmp(type, "tool_use") == 0) {
		v[0] = it_word(c, in, "id", 0);
		v[1] = it_word(c, in, "name", 1);
		if (json_object_object_get_ex(in, "input", &x) &&
		    json_object_is_type(x, json_type_object))
			v[2] = stored_event_copy_value(x, IMPORT_TRANSCRIPT_DEPTH);
		if (!v[2])
			it_fail(c, "a tool call's input that is not an object");
		return it_block(type, use_k, v, 3);
	}
	if (!assistant && strcmp(type, "tool_result") == 0) {
		v[0] = it_word(c, in, "tool_use_id", 0);
		v[1] = it_text(c, in, "content");
		if (json_object_object_get_ex(in, "is_error", &x) &&
		    json_object_is_type(x, json_type_boolean))
			v[2] = json_object_new_boolean(json_object_get_boolean(x));
		else
			it_fail_field(c, "is_error");
		return it_block(type, res_k, v, 3);
	}
	return it_fail(c, "a block of a type this role never holds");
}

/* A transcript row's message (text, n bytes) of role, rebuilt; NULL with
 * c->why. */
static json_object *
it_message(struct it_ctx *c, const char *role, const char *text, size_t n)
{
	const char *err = NULL;
	json_object *in, *content, *out, *blocks;
	int assistant = role && strcmp(role, "assistant") == 0;
	size_t k;

	if (!role || (!assistant && strcmp(role, "user") != 0))
		return it_fail(c, "a role that is neither user nor assistant");
	if (!text || !(in = jsonl_parse_object(text, n, &err)))
		return it_fail(c, err ? err : "no message");
	if (!json_get_string(in, "role") ||
	    strcmp(json_get_string(in, "role"), role) != 0 ||
	    !json_object_object_get_ex(in, "content", &content) ||
	    !json_object_is_type(content, json_type_array) ||
	    (k = json_object_array_length(content)) == 0 ||
	    k > IMPORT_TRANSCRIPT_BLOCKS_MAX) {
		json_object_put(in);
		return it_fail(c, "not a message of its role with content");
	}
	out = json_object_new_object();
	blocks = json_object_new_array();
	for (size_t i = 0; out && blocks && i < k; i++) {
		json_object *b = it_content_block(c,
		    json_object_array_get_idx(content, i), assistant);

		if (!b || json_object_array_add(blocks, b) < 0) {
			json_object_put(b);
			json_object_put(blocks);
			blocks = NULL;
		}
	}
	json_object_put(in);
	if (!out || !blocks) {
		json_object_put(out);
		json_object_put(blocks);
		return c->why[0] ? NULL : it_fail(c, "memory");
	}
	json_object_object_add(out, "role", json_object_new_string(role));
	json_object_object_add(out, "content", blocks);
	return out;
}

/* Run sql (?1.. bound to the texts of v, NULL as SQL NULL, then the row's
 * id) on c->h.  0 or -1 (with c->why). */
static int
it_update(struct it_ctx *c, const char *sql, json_object **v, int n)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(c->h, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(c->why, sizeof(c->why), "%s", sqlite3_errmsg(c->h));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const char *t = !v[i] ? NULL :
		    json_object_is_type(v[i], json_type_string) ?
		    json_object_get_string(v[i]) :
		    json_object_to_json_string_ext(v[i],
		    JSON_C_TO_STRING_PLAIN);

		if (t)
			sqlite3_bind_text(st, i + 1, t, -1, SQLITE_TRANSIENT);
	}
	sqlite3_bind_int64(st, n + 1, c->id);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		snprintf(c->why, sizeof(c->why), "%s", sqlite3_errmsg(c->h));
		return -1;
	}
	return 0;
}

/* transcript (id, role, json). */
static int
it_transcript_row(struct it_ctx *c, struct it_row *r)
{
	json_object *m = it_message(c, r->col[0], r->col[1], r->len[1]);
	int ok;

	if (!m)
		return -1;
	ok = it_update(c, "UPDATE transcript SET json = ?1 WHERE id = ?2",
	    &m, 1);
	json_object_put(m);
	return ok;
}

/* 1 when s is a word of lower-case letters and '_' (a stop reason). */
static int
it_reason_valid(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 32)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* A column's text as an S (NULL allowed when may_be_null) into *out; 0
 * or -1 with c->why. */
static int
it_column_text(struct it_ctx *c, const struct it_row *r, int i,
    int may_be_null, const char *what, json_object **out)
{
	*out = NULL;
	if (!r->col[i])
		return may_be_null ? 0 : it_bad(c, what);
	if (r->len[i] > IMPORT_TRANSCRIPT_TEXT_MAX ||
	    strlen(r->col[i]) != r->len[i])
		return it_bad(c, what);
	if (!(*out = it_clean(r->col[i], r->len[i])))
		return it_bad(c, "memory");
	return 0;
}

/* 1 when status is one a tool call ends with (turn_tools.c). */
static int
it_status_valid(const char *status)
{
	static const char *const known[] = { "ok", "error", "denied",
	    "interrupted", "stopped" };

	for (size_t i = 0; status && i < sizeof(known) / sizeof(*known); i++)
		if (strcmp(status, known[i]) == 0)
			return 1;
	return 0;
}

/* tool_journal (id, call_id, name, input, state, status, output, the
 * state of its turn). */
static int
it_journal_row(struct it_ctx *c, struct it_row *r)
{
	const char *err = NULL, *state = r->col[3];
	json_object *v[3] = { NULL, NULL, NULL }, *in = NULL;
	int ok = -1;

	if (!r->col[0] || !it_word_valid(r->col[0], r->len[0], 0) ||
	    !r->col[1] || !it_word_valid(r->col[1], r->len[1], 1))
		return it_bad(c, "a call's id or tool name");
	if (!state || (strcmp(state, "started") && strcmp(state, "ended")))
		return it_bad(c, "a state no call has");
	if (strcmp(state, "started") == 0 && (r->col[4] || r->col[5] ||
	    !r->col[6] || strcmp(r->col[6], "running") != 0))
		return it_bad(c, "a call left started outside a running turn");
	if (strcmp(state, "ended") == 0 && !it_status_valid(r->col[4]))
		return it_bad(c, "a status no call ends with");
	if (!r->col[2] || r->len[2] > IMPORT_TRANSCRIPT_TEXT_MAX ||
	    !(in = jsonl_parse_object(r->col[2], r->len[2], &err)))
		return it_bad(c, err ? err : "input");
	v[0] = stored_event_copy_value(in, IMPORT_TRANSCRIPT_DEPTH);
	json_object_put(in);
	if (!v[0])
		return it_bad(c, "input");
	if (it_column_text(c, r, 5, 1, "output", &v[1]) == 0)
		ok = it_update(c, "UPDATE tool_journal SET input = ?1,"
		    " output = ?2 WHERE id = ?3", v, 2);
	json_object_put(v[0]);
	json_object_put(v[1]);
	return ok;
}

/* turns (id, prompt, stop_reason). */
static int
it_turn_row(struct it_ctx *c, struct it_row *r)
{
	json_object *prompt;
	int ok;

	if (r->col[1] && !it_reason_valid(r->col[1]))
		return it_bad(c, "a stop reason that is not a word");
	if (it_column_text(c, r, 0, 0, "prompt", &prompt) < 0)
		return -1;
	ok = it_update(c, "UPDATE turns SET prompt = ?1 WHERE id = ?2",
	    &prompt, 1);
	json_object_put(prompt);
	return ok;
}

/* compactions (id, reason, summary). */
static int
it_compaction_row(struct it_ctx *c, struct it_row *r)
{
	json_object *summary;
	int ok;

	if (!r->col[0] || (strcmp(r->col[0], "window") &&
	    strcmp(r->col[0], "refused")))
		return it_bad(c, "a reason no summary has");
	if (it_column_text(c, r, 1, 1, "summary", &summary) < 0)
		return -1;
	ok = it_update(c, "UPDATE compactions SET summary = ?1 WHERE id = ?2",
	    &summary, 1);
	json_object_put(summary);
	return ok;
}

/* Free what r holds. */
static void
it_row_clear(struct it_row *r)
{
	for (int i = 0; i < IT_COLS; i++) {
		free(r->col[i]);
		r->col[i] = NULL;
	}
}

/* The current row of st (id, then n columns) copied into r.  0, or -1
 * with c->why (too large, memory). */
static int
it_row_copy(struct it_ctx *c, sqlite3_stmt *st, int n, struct it_row *r)
{
	r->id = c->id = sqlite3_column_int64(st, 0);
	for (int i = 0; i < n; i++) {
		const unsigned char *t = sqlite3_column_text(st, i + 1);
		size_t len = (size_t)sqlite3_column_bytes(st, i + 1);

		if (!t)
			continue;
		if (len > IMPORT_TRANSCRIPT_ROW_MAX)
			return it_bad(c, "a row larger than any live one");
		if (!(r->col[i] = malloc(len + 1)))
			return it_bad(c, "memory");
		memcpy(r->col[i], t, len + 1);
		r->len[i] = len;
	}
	return 0;
}

/* One table's check: each row of sql (id, then n columns, "WHERE id > ?1
 * ORDER BY id LIMIT 1") through fn.  0 or -1 (said). */
static int
it_each(struct it_ctx *c, const char *table, const char *sql, int n,
    int (*fn)(struct it_ctx *, struct it_row *))
{
	struct it_row r = { .id = LLONG_MIN };
	sqlite3_stmt *st;
	int rc, ok = 0;

	c->table = table;
	c->id = 0;
	c->why[0] = '\0';
	if (sqlite3_prepare_v2(c->h, sql, -1, &st, NULL) != SQLITE_OK) {
		snprintf(c->why, sizeof(c->why), "%s", sqlite3_errmsg(c->h));
		return it_refuse(c);
	}
	for (;;) {
		sqlite3_bind_int64(st, 1, r.id);
		if ((rc = sqlite3_step(st)) != SQLITE_ROW)
			break;
		ok = it_row_copy(c, st, n, &r);
		sqlite3_reset(st);
		if (ok == 0)
			ok = fn(c, &r);
		it_row_clear(&r);
		if (ok < 0)
			break;
	}
	if (ok == 0 && rc != SQLITE_DONE)
		snprintf(c->why, sizeof(c->why), "%s", sqlite3_errmsg(c->h));
	sqlite3_finalize(st);
	return ok < 0 || rc != SQLITE_DONE ? it_refuse(c) : 0;
}

int
import_transcript_check(const char *path, sqlite3 *h)
{
	struct it_ctx c = { .path = path, .h = h };

	if (it_each(&c, "transcript", "SELECT id, role, json FROM transcript"
	    " WHERE id > ?1 ORDER BY id LIMIT 1", 2, it_transcript_row) < 0 ||
	    it_each(&c, "tool_journal", "SELECT id, call_id, name, input,"
	    " state, status, output, (SELECT state FROM turns WHERE turns.id ="
	    " tool_journal.turn) FROM tool_journal WHERE id > ?1 ORDER BY id"
	    " LIMIT 1", 7, it_journal_row) < 0 ||
	    it_each(&c, "turns", "SELECT id, prompt, stop_reason FROM turns"
	    " WHERE id > ?1 ORDER BY id LIMIT 1", 2, it_turn_row) < 0 ||
	    it_each(&c, "compactions", "SELECT id, reason, summary FROM"
	    " compactions WHERE id > ?1 ORDER BY id LIMIT 1", 2,
	    it_compaction_row) < 0)
		return -1;
	return 0;
}
