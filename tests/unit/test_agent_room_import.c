/*
 * test_agent_room_import.c: a room.db from an archive (agent/room_import.c):
 * the importer becomes the only owner and the archive's grants are gone;
 * a trigger, an extra table, a damaged file, a newer schema or a bad user
 * name are refused; an older schema is migrated first.  Its events are
 * rebuilt through the stored events' constructors (agent/stored_event.c,
 * checked here one rule at a time): internal types and malformed rows
 * are left out, text is cleaned, and one `imported` mark names the
 * importer and where the archive says it came from.
 */
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../agent/room_db.h"
#include "../../agent/room_import.h"
#include "../../agent/stored_event.h"
#include "event_types.h"
#include "jsonl.h"
#include "log.h"
#include "unit.h"

static char path[64];

/* A current room.db at path owned by alice, with bob a member. */
static void
make_room(void)
{
	struct room_db *db;

	unlink(path);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_access_set(db, "alice", "owner", NULL), 0);
	CHECK_INT(room_db_access_set(db, "bob", "member", "alice"), 0);
	CHECK_INT(room_db_config_set(db, "visibility", "private", "alice"), 0);
	CHECK_INT(room_db_commit(db), 0);
	room_db_close(db);
}

/* Run sql on path with a plain connection. */
static void
poke(const char *sql)
{
	sqlite3 *h;

	CHECK_INT(sqlite3_open(path, &h), SQLITE_OK);
	CHECK_INT(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
}

static void
test_importer_is_the_only_owner(void)
{
	struct room_db *db;
	struct access_list l;

	make_room();
	CHECK_INT(room_import_db(path, "carol"), 0);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "carol");
	CHECK_INT(l.nmembers, 0);
	CHECK_INT(l.visibility, ACCESS_PRIVATE);
	room_db_close(db);
}

static void
test_hostile_files_refused(void)
{
	make_room();
	poke("CREATE TRIGGER t AFTER INSERT ON events BEGIN INSERT INTO access"
	    " VALUES ('eve', 'member', NULL, 'x'); END");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("CREATE VIEW v AS SELECT 1");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("CREATE TABLE extra (x)");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("INSERT INTO members VALUES ('bad name\x1b', 'x', 'x')");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	poke("PRAGMA user_version = 99");
	CHECK_INT(room_import_db(path, "carol"), -1);
	make_room();
	CHECK_INT(room_import_db(path, "not a user"), -1);
	unlink(path);
	{
		FILE *f = fopen(path, "w");

		CHECK(f != NULL);
		fputs("SQLite format 3 but not really", f);
		fclose(f);
	}
	CHECK_INT(room_import_db(path, "carol"), -1);
}

/* A schema 2 file (before access) comes forward, and its migrated
 * owner gives way to the importer. */
static void
test_older_schema_migrated(void)
{
	struct room_db *db;
	struct access_list l;

	make_room();
	poke("DROP TABLE access; DROP TABLE usage_users; DROP TABLE turn_undo;"
	    " ALTER TABLE audit DROP COLUMN wrote;"
	    " PRAGMA user_version = 2;"
	    " INSERT INTO members VALUES ('bob', '2026-01-02', '2026-01-03')");
	CHECK_INT(room_import_db(path, "dave"), 0);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_version(db), ROOM_DB_VERSION);
	CHECK_INT(room_db_access_load(db, &l), 0);
	CHECK_STR(l.owner, "dave");
	CHECK_INT(l.nmembers, 0);
	room_db_close(db);
}

/* ------------------------------------------------ the constructors -- */

#define STAMP "\"seq\":3,\"time\":\"2026-01-02T03:04:05.678Z\""

/* stored_event_build of the JSON text json: its result; the event (to
 * put) into *out when not NULL, and the note into note (256). */
static int
build(const char *json, json_object **out, char *note)
{
	const char *err;
	json_object *in = jsonl_parse_object(json, strlen(json), &err), *ev;
	int r;

	CHECK(in != NULL);
	r = stored_event_build(in, &ev, note, 256);
	json_object_put(in);
	if (out)
		*out = ev;
	else
		json_object_put(ev);
	return r;
}

/* Text is cleaned as a live chat line is; a field no constructor makes
 * is left out and said; the rest stays as it was, in its order. */
static void
test_constructor_cleans_and_keeps_its_fields(void)
{
	char note[256];
	json_object *ev;

	CHECK_INT(build("{\"type\":\"message\",\"user\":\"alice\","
	    "\"text\":\"a\\u0007b\\u001b[2Jc\\u009bd\\te\\u0000\",\"admin\":true,"
	    "\"replay\":true," STAMP "}", &ev, note), 0);
	CHECK_STR(json_get_string(ev, "text"), "ab[2Jcd\te");
	CHECK_STR(json_get_string(ev, "user"), "alice");
	CHECK(!json_object_object_get_ex(ev, "admin", NULL));
	CHECK(!json_object_object_get_ex(ev, "replay", NULL));
	CHECK(strstr(note, "admin") && strstr(note, "replay"));
	CHECK_STR(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN),
	    "{\"type\":\"message\",\"user\":\"alice\",\"text\":"
	    "\"ab[2Jcd\\te\",\"seq\":3,\"time\":"
	    "\"2026-01-02T03:04:05.678Z\"}");
	json_object_put(ev);
	/* A command's output keeps its controls (repaired only), as live;
	 * invalid UTF-8 becomes U+FFFD. */
	CHECK_INT(build("{\"type\":\"exec_result\",\"id\":\"x\","
	    "\"exitCode\":1,\"stdout\":\"\\u001b[1mbold\",\"truncated\":true,"
	    STAMP "}", &ev, note), 0);
	CHECK_STR(json_get_string(ev, "stdout"), "\x1b[1mbold");
	CHECK_INT(note[0], 0);
	json_object_put(ev);
	/* Live shapes: nulls where live code writes them, a number that is
	 * not whole, nested objects and any JSON as a tool's input. */
	CHECK_INT(build("{\"type\":\"limits\",\"memory\":null,\"pids\":5,"
	    "\"cpus\":1.5,\"max\":{\"memory\":1024,\"pids\":null,\"cpus\":2},"
	    "\"by\":\"alice\",\"text\":\"t\"," STAMP "}", NULL, note), 0);
	CHECK_INT(build("{\"type\":\"tool_call\",\"turn\":1,\"id\":\"c\","
	    "\"name\":\"write\",\"input\":{\"path\":\"a\",\"n\":[1,{\"k\":"
	    "null}]}," STAMP "}", &ev, note), 0);
	CHECK_STR(json_object_to_json_string_ext(json_object_object_get(ev,
	    "input"), JSON_C_TO_STRING_PLAIN),
	    "{\"path\":\"a\",\"n\":[1,{\"k\":null}]}");
	json_object_put(ev);
}

/* What no stored event can be is refused, with the reason. */
static void
test_constructor_refuses(void)
{
	static const char *const bad[] = {
		/* internal types: atriumd acts on them */
		"{\"type\":\"exec_done\"," STAMP "}",
		"{\"type\":\"access_denied\",\"message\":\"m\"," STAMP "}",
		"{\"type\":\"synced\",\"id\":\"x\"," STAMP "}",
		"{\"type\":\"welcome\",\"user\":\"a\"," STAMP "}",
		"{\"type\":\"agent_delta\",\"text\":\"t\"," STAMP "}",
		"{\"type\":\"no_such\"," STAMP "}",
		"{\"text\":\"t\"," STAMP "}",
		/* fields of the wrong JSON type, or missing */
		"{\"type\":\"message\",\"user\":\"a\",\"text\":7," STAMP "}",
		"{\"type\":\"message\",\"user\":\"a\",\"text\":\"t\","
		    "\"turn\":\"1\"," STAMP "}",
		"{\"type\":\"message\",\"user\":\"a\"," STAMP "}",
		"{\"type\":\"message\",\"user\":\"a\",\"text\":null," STAMP "}",
		"{\"type\":\"exec_result\",\"id\":\"x\",\"exitCode\":\"0\","
		    STAMP "}",
		"{\"type\":\"exec_result\",\"id\":\"x\",\"exitCode\":0,"
		    "\"truncated\":1," STAMP "}",
		"{\"type\":\"turn_end\",\"turn\":1,\"stop_reason\":\"s\","
		    "\"usage\":{\"input_tokens\":\"9\"}," STAMP "}",
		"{\"type\":\"access\",\"visibility\":\"open\",\"members\":"
		    "[\"ok\",\"not ok\"]," STAMP "}",
		"{\"type\":\"config\",\"user\":\"a\",\"allow_list\":[1]," STAMP
		    "}",
		/* names and times */
		"{\"type\":\"message\",\"user\":\"bad name\",\"text\":\"t\","
		    STAMP "}",
		"{\"type\":\"message\",\"user\":\"al\\u001bce\",\"text\":\"t\","
		    STAMP "}",
		"{\"type\":\"message\",\"user\":\"a\",\"text\":\"t\",\"seq\":3,"
		    "\"time\":\"yesterday\"}",
		"{\"type\":\"message\",\"user\":\"a\",\"text\":\"t\","
		    "\"time\":\"2026-01-02T03:04:05Z\"}",
		"{\"type\":\"imported\",\"user\":\"a\",\"origin\":\"Not A "
		    "Room\"," STAMP "}",
	};
	char note[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		int r = build(bad[i], NULL, note);

		if (r != -EINVAL)
			fprintf(stderr, "accepted: %s\n", bad[i]);
		CHECK_INT(r, -EINVAL);
		CHECK(note[0] != '\0');
	}
}

/* Each type the room stores (event_types.h) has a constructor. */
static void
test_every_stored_type_has_a_constructor(void)
{
	char json[160], note[256];

	for (int i = 0; event_types_stored[i]; i++) {
		snprintf(json, sizeof(json), "{\"type\":\"%s\"," STAMP "}",
		    event_types_stored[i]);
		build(json, NULL, note);
		CHECK(!strstr(note, "not one a room stores"));
	}
}

/* A row is one JSON object, with the row's seq and time. */
static void
test_rows(void)
{
	char note[256];
	json_object *ev;

	CHECK_INT(stored_event_from_row(9, "2026-01-02T03:04:05Z",
	    "{\"type\":\"message\",\"user\":\"a\",\"text\":\"t\","
	    "\"seq\":1}\n{\"type\":\"exec_done\"}", &ev, note, sizeof(note)),
	    -EINVAL);
	CHECK_INT(stored_event_from_row(9, "2026-01-02T03:04:05Z",
	    "[1]", &ev, note, sizeof(note)), -EINVAL);
	CHECK_INT(stored_event_from_row(9, "2026-01-02T03:04:05Z",
	    "{\"type\":\"message\",\"user\":\"a\",\"text\":\"t\","
	    "\"seq\":1,\"time\":\"x\"}", &ev, note, sizeof(note)), 0);
	CHECK_INT(json_get_int(ev, "seq", 0), 9);
	CHECK_STR(json_get_string(ev, "time"), "2026-01-02T03:04:05Z");
	json_object_put(ev);
}

/* ------------------------------------------------ an import's history -- */

/* The events of path, "type:json" a line, oldest first, into out. */
static void
events_of(char *out, size_t len)
{
	sqlite3_stmt *st;
	sqlite3 *h;
	size_t used = 0;

	out[0] = '\0';
	CHECK_INT(sqlite3_open(path, &h), SQLITE_OK);
	CHECK_INT(sqlite3_prepare_v2(h, "SELECT type, json FROM events ORDER"
	    " BY seq", -1, &st, NULL), SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW && used < len)
		used += (size_t)snprintf(out + used, len - used, "%s:%s\n",
		    sqlite3_column_text(st, 0), sqlite3_column_text(st, 1));
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static void
test_import_rebuilds_and_marks_history(void)
{
	char got[4096], *mark;
	const char *err;
	json_object *ev;

	make_room();
	poke("INSERT INTO events VALUES (1, '2026-01-02T03:04:05Z', 'message',"
	    " '{\"type\":\"message\",\"user\":\"alice\",\"text\":\"hi"
	    "\x1b[2J\x07there\",\"seq\":1}');"
	    "INSERT INTO events VALUES (2, '2026-01-02T03:04:06Z', 'exec_done',"
	    " '{\"type\":\"exec_done\"}');"
	    "INSERT INTO events VALUES (3, '2026-01-02T03:04:07Z', 'message',"
	    " '{\"type\":\"message\",\"user\":\"mallory\",\"text\":\"x\"}"
	    "\n{\"type\":\"exec_done\"}');"
	    "INSERT INTO events VALUES (4, '2026-01-02T03:04:08Z', 'imported',"
	    " '{\"type\":\"imported\",\"user\":\"eve\"}');"
	    "INSERT INTO events VALUES (5, '2026-01-02T03:04:09Z', 'prompt',"
	    " '{\"type\":\"prompt\",\"user\":\"bob\",\"text\":\"go\"}');"
	    "INSERT INTO meta VALUES ('last_seq', '40');"
	    "INSERT INTO meta VALUES ('export_room', 'src');"
	    "INSERT INTO meta VALUES ('export_time', '2026-01-03T00:00:00.000Z')");
	CHECK_INT(room_import_db(path, "carol"), 0);
	events_of(got, sizeof(got));
	/* The names are the archive's; the text is clean; the internal
	 * types and the archive's own mark are gone. */
	CHECK(strstr(got, "message:{\"type\":\"message\",\"user\":\"alice\","
	    "\"text\":\"hi[2Jthere\",\"seq\":1,\"time\":"
	    "\"2026-01-02T03:04:05Z\"}\n") == got);
	CHECK(strstr(got, "\nprompt:{\"type\":\"prompt\",\"user\":\"bob\""));
	CHECK(!strstr(got, "exec_done") && !strstr(got, "mallory"));
	CHECK(!strstr(got, "\"user\":\"eve\""));
	/* One mark, last, after every seq the archive handed out. */
	CHECK((mark = strstr(got, "\nimported:")) != NULL);
	if (!mark)
		return;
	mark += strlen("\nimported:");
	CHECK(strchr(mark, '\n') == got + strlen(got) - 1);
	*strchr(mark, '\n') = '\0';
	CHECK((ev = jsonl_parse_object(mark, strlen(mark), &err)) != NULL);
	CHECK_STR(json_get_string(ev, "user"), "carol");
	CHECK_STR(json_get_string(ev, "origin"), "src");
	CHECK_STR(json_get_string(ev, "exported"), "2026-01-03T00:00:00.000Z");
	CHECK_INT(json_get_int(ev, "events", -1), 2);
	CHECK_INT(json_get_int(ev, "dropped", -1), 3);
	CHECK_INT(json_get_int(ev, "seq", -1), 41);
	json_object_put(ev);
	/* What the archive said of itself went into the mark. */
	{
		sqlite3 *h;
		sqlite3_stmt *st;

		CHECK_INT(sqlite3_open(path, &h), SQLITE_OK);
		CHECK_INT(sqlite3_prepare_v2(h, "SELECT count(*) FROM meta WHERE"
		    " key LIKE 'export%'", -1, &st, NULL), SQLITE_OK);
		CHECK_INT(sqlite3_step(st), SQLITE_ROW);
		CHECK_INT(sqlite3_column_int(st, 0), 0);
		sqlite3_finalize(st);
		sqlite3_close(h);
	}
}

/* An archive that says nothing of where it came from, or says it
 * wrongly, still gets its mark, without an origin. */
static void
test_import_mark_without_origin(void)
{
	char got[2048];

	make_room();
	poke("INSERT INTO meta VALUES ('export_room', 'no such/room')");
	CHECK_INT(room_import_db(path, "dave"), 0);
	events_of(got, sizeof(got));
	CHECK(strstr(got, "imported:{\"type\":\"imported\",\"user\":\"dave\","
	    "\"events\":0,\"dropped\":0,\"input_tokens\":0,\"output_tokens\":0,"
	    "\"requests\":0,\"seq\":1,") == got);
}

/* The archive's model usage is the old room's: it leaves the tables that
 * count the new room's own, for one total kept apart (with what an
 * earlier import kept), also in the mark; a stranger's negative count
 * counts nothing. */
static void
test_import_keeps_usage_apart(void)
{
	struct room_db *db;
	long long in = -1, out = -1;
	char got[2048], kept[64];

	make_room();
	poke("INSERT INTO usage VALUES ('2026-12-01', 'm1', 100, 10, 2);"
	    " INSERT INTO usage VALUES ('2026-12-02', 'm2', 50, 5, 1);"
	    " INSERT INTO usage_users VALUES ('2026-12-01', 'alice', 'm1', 100,"
	    " 10, 2);"
	    " INSERT INTO meta VALUES ('imported_usage', '1000 100 7')");
	CHECK_INT(room_import_db(path, "dave"), 0);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_meta_get(db, "imported_usage", kept, sizeof(kept)),
	    1);
	CHECK_STR(kept, "1150 115 10");
	CHECK_INT(room_db_usage_today(db, &in, &out), 0);
	CHECK(in == 0 && out == 0);
	room_db_close(db);
	events_of(got, sizeof(got));
	CHECK(strstr(got, "\"input_tokens\":1150,\"output_tokens\":115,"
	    "\"requests\":10,") != NULL);
	make_room();
	poke("INSERT INTO usage VALUES ('2026-12-01', 'm1', -100, 10, 2);"
	    " INSERT INTO meta VALUES ('imported_usage', 'lots')");
	CHECK_INT(room_import_db(path, "dave"), 0);
	CHECK_INT(room_db_open(path, &db), 0);
	CHECK_INT(room_db_meta_get(db, "imported_usage", kept, sizeof(kept)),
	    1);
	CHECK_STR(kept, "0 0 0");
	room_db_close(db);
}

/* The json of transcript row id (a new string), or NULL. */
static char *
transcript_json(long long id)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	char *out = NULL;

	CHECK_INT(sqlite3_open(path, &h), SQLITE_OK);
	CHECK_INT(sqlite3_prepare_v2(h, "SELECT json FROM transcript WHERE"
	    " id = ?", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW)
		out = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(h);
	return out;
}

/* A room with one done turn whose transcript is a prompt, a tool call
 * and its result, the texts carrying ESC and BEL, one block with a field
 * no live block has; then sql on top. */
static void
make_transcript(const char *sql)
{
	make_room();
	poke("INSERT INTO turns (id, user, prompt, state, created) VALUES"
	    " (1, 'alice', 'go\x1b[2J', 'done', '2026-01-02T03:04:05Z');"
	    "INSERT INTO transcript (id, turn, step, role, json) VALUES"
	    " (1, 1, 0, 'user', '{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"text\",\"text\":\"go\x1b[2J\x07\"}]}'),"
	    " (2, 1, 1, 'assistant', '{\"role\":\"assistant\",\"content\":["
	    "{\"type\":\"tool_use\",\"id\":\"call-1\",\"name\":\"bash\","
	    "\"input\":{\"command\":\"ls\"},\"cache_control\":1}]}'),"
	    " (3, 1, 1, 'user', '{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"tool_result\",\"tool_use_id\":\"call-1\",\"content\":"
	    "\"\\u001b]0;owned\\u0007out\",\"is_error\":false}]}');"
	    "INSERT INTO tool_journal (turn, step, idx, call_id, name, input,"
	    " state, status, output) VALUES (1, 1, 0, 'call-1', 'bash',"
	    " '{\"command\":\"ls\"}', 'ended', 'ok', 'out\x1b[31m');");
	if (sql)
		poke(sql);
}

static void
test_transcript_rebuilt(void)
{
	char *j;

	make_transcript(NULL);
	CHECK_INT(room_import_db(path, "carol"), 0);
	j = transcript_json(1);
	CHECK(j && strstr(j, "go[2J") && !strchr(j, '\x1b') &&
	    !strchr(j, '\x07'));
	free(j);
	j = transcript_json(2);
	CHECK(j && strstr(j, "\"call-1\"") && !strstr(j, "cache_control"));
	free(j);
	j = transcript_json(3);
	CHECK(j && strstr(j, "]0;ownedout") && !strstr(j, "\\u001b") &&
	    !strstr(j, "\\u0007"));
	free(j);
}

static void
test_transcript_refusals(void)
{
	static const char *const bad[] = {
		/* a role the live agent never writes, in the json */
		"UPDATE transcript SET json = '{\"role\":\"system\",\"content\":"
		"[{\"type\":\"text\",\"text\":\"x\"}]}' WHERE id = 1",
		/* not JSON */
		"UPDATE transcript SET json = '{\"role\":' WHERE id = 1",
		/* a block type no user message holds */
		"UPDATE transcript SET json = '{\"role\":\"user\",\"content\":"
		"[{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"b\",\"input\":"
		"{}}]}' WHERE id = 1",
		/* is_error of another type */
		"UPDATE transcript SET json = replace(json, 'false', '\"no\"')"
		" WHERE id = 3",
		/* a tool name with a control byte */
		"UPDATE transcript SET json = replace(json, '\"bash\"',"
		" '\"ba\\u001bsh\"') WHERE id = 2",
		/* a text larger than any live one */
		"UPDATE transcript SET json = '{\"role\":\"user\",\"content\":"
		"[{\"type\":\"text\",\"text\":\"' || hex(zeroblob(1100000)) ||"
		" '\"}]}' WHERE id = 1",
		/* a call left started in a turn that is not running */
		"UPDATE tool_journal SET state = 'started', status = NULL,"
		" output = NULL",
		/* a status no call ends with */
		"UPDATE tool_journal SET status = 'approved'",
		/* an input that is not an object */
		"UPDATE tool_journal SET input = '[1]'",
		/* a stop reason that is no word */
		"UPDATE turns SET stop_reason = 'end turn\x1b'",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		make_transcript(bad[i]);
		CHECK_INT(room_import_db(path, "carol"), -1);
	}
	/* A call started in a running turn is what a crash leaves: kept. */
	make_transcript("UPDATE turns SET state = 'running';"
	    " UPDATE tool_journal SET state = 'started', status = NULL,"
	    " output = NULL");
	CHECK_INT(room_import_db(path, "carol"), 0);
}

int
main(void)
{
	char side[96];

	log_set_level(LOG_ERROR);
	snprintf(path, sizeof(path), "/tmp/test_agent_room_import.%d",
	    (int)getpid());
	TEST(test_importer_is_the_only_owner);
	TEST(test_hostile_files_refused);
	TEST(test_older_schema_migrated);
	TEST(test_constructor_cleans_and_keeps_its_fields);
	TEST(test_constructor_refuses);
	TEST(test_every_stored_type_has_a_constructor);
	TEST(test_rows);
	TEST(test_import_rebuilds_and_marks_history);
	TEST(test_import_mark_without_origin);
	TEST(test_import_keeps_usage_apart);
	TEST(test_transcript_rebuilt);
	TEST(test_transcript_refusals);
	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	return unit_done("test_agent_room_import");
}
