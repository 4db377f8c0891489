/*
 * test_agent_compact.c: context compaction's pure parts
 * (agent/compact_context.c): the window and threshold, the token estimate,
 * where the transcript is cut, the summary request, the messages sent after a
 * summary, the "prompt is too long" answers of both providers; and room.db's
 * summary rows and its migration from schema 1 to 2 (agent/room_db.c).
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/compact_context.h"
#include "../../agent/provider/model_window.h"
#include "../../agent/room_db.h"
#include "unit.h"

#define MAXROWS 64

/* A transcript under construction: rows with ids 1, 2, ... */
struct script {
	struct room_db_msg rows[MAXROWS];
	size_t n;
};

/* Append a row with one block of the given type (text, tool_use,
 * tool_result) to s. */
static void
add(struct script *s, long long turn, const char *role, const char *type,
    const char *text)
{
	struct room_db_msg *m = &s->rows[s->n < MAXROWS ? s->n : MAXROWS - 1];
	json_object *blk = json_object_new_object(), *content;

	memset(m, 0, sizeof(*m));
	m->rowid = (long long)s->n + 1;
	m->turn = turn;
	snprintf(m->role, sizeof(m->role), "%s", role);
	json_object_object_add(blk, "type", json_object_new_string(type));
	if (strcmp(type, "text") == 0) {
		json_object_object_add(blk, "text", json_object_new_string(text));
	} else if (strcmp(type, "tool_use") == 0) {
		json_object_object_add(blk, "id", json_object_new_string("t1"));
		json_object_object_add(blk, "name",
		    json_object_new_string("bash"));
		json_object_object_add(blk, "input", json_tokener_parse(text));
	} else {
		json_object_object_add(blk, "tool_use_id",
		    json_object_new_string("t1"));
		json_object_object_add(blk, "content",
		    json_object_new_string(text));
		json_object_object_add(blk, "is_error",
		    json_object_new_boolean(0));
	}
	content = json_object_new_array();
	json_object_array_add(content, blk);
	m->msg = json_object_new_object();
	json_object_object_add(m->msg, "role", json_object_new_string(role));
	json_object_object_add(m->msg, "content", content);
	m->bytes = strlen(json_object_to_json_string_ext(m->msg,
	    JSON_C_TO_STRING_PLAIN));
	s->n++;
}

static void
script_free(struct script *s)
{
	for (size_t i = 0; i < s->n; i++)
		json_object_put(s->rows[i].msg);
	s->n = 0;
}

/* Turns 1..3 with a tool call each: prompt, tool_use, tool_result,
 * answer. */
static void
three_turns(struct script *s)
{
	for (long long t = 1; t <= 3; t++) {
		add(s, t, "user", "text", "alice:\nlist the files");
		add(s, t, "assistant", "tool_use", "{\"command\":\"ls\"}");
		add(s, t, "user", "tool_result", "a.txt b.txt");
		add(s, t, "assistant", "text", "There are two files.");
	}
}

static void
test_window_and_threshold(void)
{
	CHECK_INT(compact_window(PROVIDER_ANTHROPIC, 0), 200000);
	CHECK_INT(compact_window(PROVIDER_OPENAI, 0), 128000);
	CHECK_INT(compact_window(PROVIDER_OPENAI, 3000), 3000);
	CHECK_INT(compact_threshold(200000, 4096), 150000 - 4096);
	CHECK_INT(compact_threshold(3000, 100), 2250 - 100);
	/* max_tokens near the window: a quarter of the window at least */
	CHECK_INT(compact_threshold(4000, 3900), 1000);
	CHECK_INT(compact_tokens_of_bytes(0), 0);
	CHECK_INT(compact_tokens_of_bytes(1), 1);
	CHECK_INT(compact_tokens_of_bytes(8), 2);
	CHECK_INT(compact_tokens_of_bytes(9), 3);
}

static void
test_estimate(void)
{
	struct script s = { 0 };
	size_t all = 0, tail;

	three_turns(&s);
	for (size_t i = 0; i < s.n; i++)
		all += s.rows[i].bytes;
	/* No count from the provider: every byte, fixed ones included. */
	CHECK_INT(compact_estimate(s.rows, s.n, 0, 400, 1000),
	    compact_tokens_of_bytes(all + 400));
	/* The last answer's count, plus what came since (that answer and the
	 * rows after it), and no fixed bytes: the count holds them. */
	s.rows[7].input_tokens = 1000;	/* turn 2's answer, rowid 8 */
	tail = 0;
	for (size_t i = 7; i < s.n; i++)
		tail += s.rows[i].bytes;
	CHECK_INT(compact_estimate(s.rows, s.n, 0, 400, 1000),
	    1000 + compact_tokens_of_bytes(tail));
	/* The latest count wins. */
	s.rows[11].input_tokens = 1500;
	CHECK_INT(compact_estimate(s.rows, s.n, 0, 400, 1000),
	    1500 + compact_tokens_of_bytes(s.rows[11].bytes));
	/* A count from before the latest summary (rowid <= upto) is not this
	 * request's: bytes again. */
	CHECK_INT(compact_estimate(s.rows, s.n, 12, 400, 1000),
	    compact_tokens_of_bytes(all + 400));
	CHECK_INT(compact_estimate(s.rows, s.n, 11, 400, 1000),
	    1500 + compact_tokens_of_bytes(s.rows[11].bytes));
	CHECK_INT(compact_estimate(NULL, 0, 0, 40, 1000), 10);
	script_free(&s);
}

static void
test_cut_keeps_two_turns(void)
{
	struct script s = { 0 };

	three_turns(&s);
	add(&s, 4, "user", "text", "bob:\nand now?");
	/* Turn 4 runs: turns 3 and 4 stay whole, 1 and 2 go. */
	CHECK_INT(compact_cut(s.rows, s.n, 4), 8);
	CHECK_INT(s.rows[8].turn, 3);
	CHECK(compact_is_prompt(&s.rows[8]));
	/* Turn 3 runs (resumed, say): only turn 1 goes. */
	CHECK_INT(compact_cut(s.rows, 12, 3), 4);
	/* Turn 2 runs: turn 1 is the one before it, nothing to summarise. */
	CHECK_INT(compact_cut(s.rows, 8, 2), 0);
	CHECK_INT(compact_cut(s.rows, 4, 1), 0);
	CHECK_INT(compact_cut(NULL, 0, 1), 0);
	script_free(&s);
}

static void
test_cut_never_parts_tool_use_and_result(void)
{
	struct script s = { 0 };
	size_t c;

	/* Turn 1 failed after its tool results: turn 2's prompt was merged
	 * into that row (turn 1's), so turn 2 starts with an answer. */
	add(&s, 1, "user", "text", "alice:\nfirst");
	add(&s, 1, "assistant", "tool_use", "{\"command\":\"ls\"}");
	add(&s, 1, "user", "tool_result", "out");	/* + turn 2's prompt */
	add(&s, 2, "assistant", "text", "answer 2");
	add(&s, 3, "user", "text", "alice:\nthird");
	c = compact_cut(s.rows, s.n, 3);
	/* Turn 2's start is an answer and the row before it holds tool
	 * results: no cut can keep turn 2 whole. */
	CHECK_INT(c, 0);
	for (size_t i = 0; i < s.n; i++)
		CHECK(compact_is_prompt(&s.rows[i]) ==
		    (i == 0 || i == 4));
	script_free(&s);
	/* The same with a prompt-only row before turn 2: the cut falls on
	 * it. */
	add(&s, 1, "user", "text", "alice:\nfirst");
	add(&s, 1, "assistant", "text", "one");
	add(&s, 1, "user", "text", "alice:\nsecond (merged)");
	add(&s, 2, "assistant", "tool_use", "{\"command\":\"ls\"}");
	add(&s, 2, "user", "tool_result", "out");
	add(&s, 2, "assistant", "text", "two");
	add(&s, 3, "user", "text", "alice:\nthird");
	CHECK_INT(compact_cut(s.rows, s.n, 3), 2);
	script_free(&s);
}

/* The text of the one message of a summary request. */
static const char *
request_text(json_object *msgs)
{
	json_object *m = json_object_array_get_idx(msgs, 0), *c, *b;

	if (!json_object_object_get_ex(m, "content", &c))
		return "";
	b = json_object_array_get_idx(c, 0);
	return json_object_get_string(json_object_object_get(b, "text"));
}

static void
test_summary_request(void)
{
	struct script s = { 0 };
	json_object *msgs;
	const char *text;
	char big[COMPACT_ITEM_MAX * 3];

	three_turns(&s);
	msgs = compact_summary_request(NULL, s.rows, 8, 100000);
	CHECK(msgs && json_object_array_length(msgs) == 1);
	CHECK_STR(json_object_get_string(json_object_object_get(
	    json_object_array_get_idx(msgs, 0), "role")), "user");
	text = request_text(msgs);
	CHECK(strstr(text, "[person] alice:\nlist the files") != NULL);
	CHECK(strstr(text, "[agent calls bash] {\"command\":\"ls\"}") != NULL);
	CHECK(strstr(text, "[result] a.txt b.txt") != NULL);
	CHECK(strstr(text, "[agent] There are two files.") != NULL);
	CHECK(strstr(text, "previous-summary") == NULL);
	CHECK(strstr(text, "Answer with the summary only") != NULL);
	/* no tool blocks: nothing for a provider to pair */
	CHECK(strstr(json_object_to_json_string(msgs), "tool_use\"") == NULL);
	json_object_put(msgs);

	/* A previous summary goes first. */
	msgs = compact_summary_request("EARLIER: alice set up the repo",
	    s.rows, 4, 100000);
	text = request_text(msgs);
	CHECK(strstr(text, "<previous-summary>\nEARLIER: alice set up the "
	    "repo\n</previous-summary>") != NULL);
	CHECK(strstr(text, "EARLIER") < strstr(text, "[person]"));
	json_object_put(msgs);
	script_free(&s);

	/* A long item keeps its head and tail, cut on a character. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big + COMPACT_ITEM_MAX / 4 * 3 - 1, "\xc3\xa9", 2);
	memcpy(big + sizeof(big) - 4, "END", 3);
	add(&s, 1, "user", "tool_result", big);
	msgs = compact_summary_request(NULL, s.rows, 1, 100000);
	text = request_text(msgs);
	CHECK(strstr(text, "bytes left out") != NULL);
	CHECK(strstr(text, "END") != NULL);
	CHECK(strlen(text) < COMPACT_ITEM_MAX + 2048);
	CHECK(strstr(text, "\xc3\xa9") == NULL);	/* not split: dropped */
	json_object_put(msgs);
	script_free(&s);

	/* Past the budget the oldest messages are left out, with a note. */
	for (int i = 0; i < 20; i++) {
		char line[64];

		snprintf(line, sizeof(line), "alice:\nmessage number %02d", i);
		memset(big, 'y', 2000);
		big[2000] = '\0';
		add(&s, i + 1, "user", "text", line);
		add(&s, i + 1, "assistant", "text", big);
	}
	msgs = compact_summary_request(NULL, s.rows, s.n, 10000);
	text = request_text(msgs);
	CHECK(strstr(text, "message number 19") != NULL);
	CHECK(strstr(text, "message number 00") == NULL);
	CHECK(strstr(text, "oldest messages are left out") != NULL);
	CHECK(strlen(text) < 12000);
	json_object_put(msgs);
	script_free(&s);
}

static void
test_messages_with_summary(void)
{
	struct script s = { 0 };
	json_object *msgs, *first;
	const char *text;

	three_turns(&s);
	msgs = compact_messages(NULL, s.rows, s.n);
	CHECK_INT(json_object_array_length(msgs), 12);
	CHECK(json_object_array_get_idx(msgs, 0) == s.rows[0].msg);
	json_object_put(msgs);

	first = compact_summary_message("Alice listed the files twice.");
	msgs = compact_messages(first, s.rows + 8, 4);
	CHECK(json_object_array_get_idx(msgs, 0) == first);
	json_object_put(first);
	CHECK_INT(json_object_array_length(msgs), 5);
	first = json_object_array_get_idx(msgs, 0);
	CHECK_STR(json_object_get_string(json_object_object_get(first,
	    "role")), "user");
	text = request_text(msgs);
	CHECK(strncmp(text, COMPACT_SUMMARY_HEAD,
	    strlen(COMPACT_SUMMARY_HEAD)) == 0);
	CHECK(strstr(text, "Summary of the earlier conversation") != NULL);
	CHECK(strstr(text, "Alice listed the files twice.") != NULL);
	CHECK(json_object_array_get_idx(msgs, 1) == s.rows[8].msg);
	CHECK(json_object_array_get_idx(msgs, 4) == s.rows[11].msg);
	json_object_put(msgs);
	script_free(&s);
}

static void
test_summary_text(void)
{
	json_object *a = json_tokener_parse("{\"role\":\"assistant\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"\\n  Part one. \"},"
	    "{\"type\":\"tool_use\",\"id\":\"x\",\"name\":\"bash\","
	    "\"input\":{}},{\"type\":\"text\",\"text\":\"Part two.\\n\"}]}");
	json_object *e = json_tokener_parse("{\"role\":\"assistant\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"  \\n\"}]}");
	char *s = compact_summary_text(a);

	CHECK_STR(s, "Part one. Part two.");
	free(s);
	CHECK(compact_summary_text(e) == NULL);
	json_object_put(a);
	json_object_put(e);
}

static void
test_too_long(void)
{
	const char *anth = "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"prompt is too long: "
	    "215000 tokens > 200000 maximum\"}}";
	const char *anth_other = "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"messages: text content "
	    "blocks must be non-empty\"}}";
	const char *oai = "{\"error\":{\"message\":\"This model's maximum "
	    "context length is 128000 tokens. However, your messages resulted "
	    "in 130000 tokens.\",\"type\":\"invalid_request_error\","
	    "\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}";
	const char *oai_code = "{\"error\":{\"message\":\"Too big.\",\"type\":"
	    "\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}";
	const char *llama = "{\"error\":{\"code\":400,\"message\":\"the "
	    "request exceeds the available context size, try increasing it\","
	    "\"type\":\"exceed_context_size_error\"}}";

	CHECK_INT(compact_too_long(400, anth, strlen(anth)), 1);
	CHECK_INT(compact_too_long(400, anth_other, strlen(anth_other)), 0);
	CHECK_INT(compact_too_long(400, oai, strlen(oai)), 1);
	CHECK_INT(compact_too_long(400, oai_code, strlen(oai_code)), 1);
	CHECK_INT(compact_too_long(400, llama, strlen(llama)), 1);
	CHECK_INT(compact_too_long(400, "prompt is too long", 18), 1);
	/* Not a refusal for length: other statuses, empty bodies. */
	CHECK_INT(compact_too_long(429, anth, strlen(anth)), 0);
	CHECK_INT(compact_too_long(500, oai, strlen(oai)), 0);
	CHECK_INT(compact_too_long(400, NULL, 0), 0);
	CHECK_INT(compact_too_long(400, "", 0), 0);
	CHECK_INT(compact_too_long_error("invalid_request_error",
	    "prompt is too long: 5 tokens > 4 maximum"), 1);
	CHECK_INT(compact_too_long_error("overloaded_error", "Overloaded"), 0);
	CHECK_INT(compact_too_long_error(NULL, NULL), 0);
}

/* The figure of each server's refusal: its window and the request's
 * input tokens, from its raw body. */
static void
check_figures(const char *body, long window, long prompt)
{
	struct compact_refusal r;

	compact_refusal_figures(body, strlen(body), &r);
	CHECK_INT(r.window, window);
	CHECK_INT(r.prompt, prompt);
}

static void
test_refusal_figures(void)
{
	const char *ollama = "{\"error\":\"{\\\"error\\\":{\\\"code\\\":400,"
	    "\\\"message\\\":\\\"request (8889 tokens) exceeds the available "
	    "context size (4096 tokens), try increasing it\\\"}}\"}";
	struct compact_refusal r;

	check_figures("{\"error\":{\"code\":400,\"message\":\"request (41705 "
	    "tokens) exceeds the available context size (32768 tokens), try "
	    "increasing it\",\"type\":\"exceed_context_size_error\","
	    "\"n_prompt_tokens\":41705,\"n_ctx\":32768}}", 32768, 41705);
	check_figures("{\"error\":{\"message\":\"This model's maximum context "
	    "length is 32768 tokens. However, your request has 40000 input "
	    "tokens. Please reduce the length of the input messages.\","
	    "\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}",
	    32768, 40000);
	check_figures("'max_tokens' or 'max_completion_tokens' is too large: "
	    "8000. This model's maximum context length is 4096 tokens and your "
	    "request has 2778 input tokens (8000 > 4096 - 2778). None", 4096,
	    2778);
	check_figures("This model's maximum context length is 128000 tokens. "
	    "However, your messages resulted in 130123 tokens. Please reduce "
	    "the length of the messages.", 128000, 130123);
	check_figures("This model's maximum context length is 8192 tokens. "
	    "However, you requested 9850 tokens (1658 in the messages, 8192 in "
	    "the completion).", 8192, 1658);
	check_figures("{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"prompt is too long: "
	    "210000 tokens > 200000 maximum\"}}", 200000, 210000);
	check_figures("input length and `max_tokens` exceed context limit: "
	    "190000 + 20000 > 200000, decrease input length or `max_tokens` "
	    "and try again", 200000, 190000);
	check_figures(ollama, 4096, 8889);
	check_figures("prompt is too long", 0, 0);
	check_figures("request (999999999999 tokens) exceeds the available "
	    "context size (-5 tokens)", 0, 0);
	compact_refusal_figures(NULL, 0, &r);
	CHECK_INT(r.window, 0);
	CHECK_INT(r.prompt, 0);
	CHECK_INT(compact_too_long_error(NULL, "input length and `max_tokens` "
	    "exceed context limit: 1 + 2 > 3"), 1);
}

/* What a server says of its window: vLLM's /v1/models, llama.cpp's
 * /props (its /v1/models names only the training window). */
static void
test_server_reported_window(void)
{
	json_object *vllm = json_tokener_parse("{\"object\":\"list\",\"data\":"
	    "[{\"id\":\"other\",\"max_model_len\":4096},{\"id\":\"qwen\","
	    "\"object\":\"model\",\"owned_by\":\"vllm\",\"max_model_len\":"
	    "32768}]}");
	json_object *one = json_tokener_parse("{\"data\":[{\"id\":\"x\","
	    "\"max_model_len\":8192}]}");
	json_object *llama = json_tokener_parse("{\"object\":\"list\",\"data\":"
	    "[{\"id\":\"qwen\",\"meta\":{\"n_ctx_train\":262144}}]}");
	json_object *props = json_tokener_parse("{\"default_generation_settings"
	    "\":{\"id\":0,\"n_ctx\":32768},\"total_slots\":1}");

	CHECK_INT(model_window_from_models(vllm, "qwen"), 32768);
	CHECK_INT(model_window_from_models(vllm, "absent"), 0);
	CHECK_INT(model_window_from_models(one, "qwen"), 8192);
	CHECK_INT(model_window_from_models(llama, "qwen"), 0);
	CHECK_INT(model_window_from_props(props), 32768);
	CHECK_INT(model_window_from_props(llama), 0);
	json_object_put(vllm);
	json_object_put(one);
	json_object_put(llama);
	json_object_put(props);
}

/* An answer asks for what the window leaves, less a fiftieth. */
static void
test_answer_tokens(void)
{
	CHECK_INT(compact_answer_tokens(200000, 1000, 8192), 8192);
	CHECK_INT(compact_answer_tokens(9000, 2000, 8192), 9000 - 180 - 2000);
	CHECK_INT(compact_answer_tokens(9000, 8900, 8192), COMPACT_MIN_ANSWER);
	CHECK_INT(compact_answer_tokens(9000, 8900, 100), 100);
	CHECK_INT(compact_answer_tokens(9000, 20000, 8192), COMPACT_MIN_ANSWER);
}

/* ---- room.db ------------------------------------------------------------ */

static char path[64];

static void
test_db_summary_rows(void)
{
	struct room_db *db;
	struct room_db_compaction c;
	struct room_db_msg *rows;
	json_object *m = json_tokener_parse("{\"role\":\"assistant\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}");
	size_t n;

	unlink(path);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_transcript_add(db, 1, 0, "user", m), 0);
	CHECK_INT(room_db_transcript_answer(db, 1, 0, m, 1234), 0);
	CHECK_INT(room_db_transcript_add(db, 2, 0, "user", m), 0);
	CHECK_INT(room_db_transcript_rows(db, 2, &rows, &n), 0);
	CHECK_INT(n, 2);
	CHECK_INT(rows[0].rowid, 2);
	CHECK_INT(rows[0].input_tokens, 1234);
	CHECK_STR(rows[0].role, "assistant");
	CHECK_INT(rows[1].input_tokens, 0);
	CHECK_INT(rows[1].turn, 2);
	CHECK_INT(rows[1].bytes, strlen(json_object_to_json_string_ext(m,
	    JSON_C_TO_STRING_PLAIN)));
	room_db_rows_free(rows, n);

	CHECK_INT(room_db_compaction_get(db, 0, &c), 0);
	CHECK_INT(room_db_compaction_get(db, 1, &c), 0);
	CHECK_INT(room_db_compaction_request(db, 2, "window"), 0);
	CHECK_INT(room_db_compaction_request(db, 2, "refused"), 0); /* one */
	CHECK_INT(room_db_compaction_get(db, 1, &c), 1);
	CHECK_STR(c.reason, "window");
	CHECK(c.pending && c.summary == NULL && c.turn == 2);
	CHECK_INT(room_db_compaction_done(db, c.id, 3, 3, "the summary", 10,
	    5), 0);
	CHECK_INT(room_db_compaction_get(db, 1, &c), 0);
	CHECK_INT(room_db_compaction_get(db, 0, &c), 1);
	CHECK_STR(c.summary, "the summary");
	CHECK_INT(c.cut, 3);
	CHECK_INT(c.upto, 3);
	free(c.summary);
	/* A dropped request leaves the done one in place. */
	CHECK_INT(room_db_compaction_request(db, 3, "refused"), 0);
	CHECK_INT(room_db_compaction_get(db, 1, &c), 1);
	CHECK_INT(room_db_compaction_drop(db, c.id), 0);
	CHECK_INT(room_db_compaction_get(db, 1, &c), 0);
	CHECK_INT(room_db_compaction_get(db, 0, &c), 1);
	free(c.summary);
	/* The stored rows are all kept. */
	CHECK_INT(room_db_transcript_rows(db, 0, &rows, &n), 0);
	CHECK_INT(n, 3);
	room_db_rows_free(rows, n);
	room_db_close(db);
	json_object_put(m);
}

/* A room.db of schema 1 (as the previous atrium-agent made it) with a
 * transcript: it opens migrated to the current schema, its rows whole.
 * (Later migrations read members and audit, which schema 1 has.) */
static void
test_db_migration_1_to_2(void)
{
	struct room_db *db;
	struct room_db_msg *rows;
	struct room_db_compaction c;
	sqlite3 *s;
	size_t n;

	unlink(path);
	CHECK_INT(sqlite3_open(path, &s), SQLITE_OK);
	CHECK_INT(sqlite3_exec(s, "CREATE TABLE transcript (id INTEGER "
	    "PRIMARY KEY, turn INTEGER NOT NULL, step INTEGER NOT NULL, role "
	    "TEXT NOT NULL CHECK (role IN ('user','assistant')), json TEXT NOT "
	    "NULL);"
	    "INSERT INTO transcript (turn, step, role, json) VALUES (1, 0, "
	    "'user', '{\"role\":\"user\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"old\"}]}');"
	    "CREATE TABLE members (user TEXT PRIMARY KEY, first_seen TEXT NOT "
	    "NULL, last_seen TEXT NOT NULL);"
	    "CREATE TABLE audit (id INTEGER PRIMARY KEY, user TEXT NOT NULL,"
	    " kind TEXT NOT NULL, command TEXT NOT NULL, cwd TEXT, exit_code "
	    "INTEGER, signal TEXT, started TEXT NOT NULL, ended TEXT);"
	    "PRAGMA user_version = 1;", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(s);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_transcript_rows(db, 0, &rows, &n), 0);
	CHECK_INT(n, 1);
	CHECK_INT(rows[0].input_tokens, 0);
	CHECK(strstr(json_object_to_json_string(rows[0].msg), "old") != NULL);
	room_db_rows_free(rows, n);
	CHECK_INT(room_db_compaction_get(db, 0, &c), 0);
	CHECK_INT(room_db_compaction_request(db, 1, "window"), 0);
	CHECK_INT(room_db_commit(db), 0);
	room_db_close(db);
	/* and opens again as it is */
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_compaction_get(db, 1, &c), 1);
	room_db_close(db);
}

int
main(void)
{
	snprintf(path, sizeof(path), "/tmp/test-compact-%d.db", (int)getpid());
	TEST(test_window_and_threshold);
	TEST(test_estimate);
	TEST(test_cut_keeps_two_turns);
	TEST(test_cut_never_parts_tool_use_and_result);
	TEST(test_summary_request);
	TEST(test_messages_with_summary);
	TEST(test_summary_text);
	TEST(test_too_long);
	TEST(test_refusal_figures);
	TEST(test_answer_tokens);
	TEST(test_server_reported_window);
	TEST(test_db_summary_rows);
	TEST(test_db_migration_1_to_2);
	{
		char p[80];

		snprintf(p, sizeof(p), "%s-wal", path);
		unlink(p);
		snprintf(p, sizeof(p), "%s-shm", path);
		unlink(p);
		unlink(path);
	}
	return unit_done("test_agent_compact");
}
