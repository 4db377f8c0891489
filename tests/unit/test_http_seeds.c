/*
 * test_http_seeds.c: the pure pieces of the command and seed routes
 * (sshd/http/api_util.c, api_rhema.c): a working directory inside
 * /workspace or not, base64 against known answers, a room event's time,
 * rhema's approval names both ways, and the room's events as rhema's
 * (names, the fields kept, those left out, events with no rhema meaning).
 */
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "buf.h"
#include "event_time.h"
#include "jsonl.h"
#include "../../sshd/http/api_rhema.h"
#include "../../sshd/http/api_util.h"

static void
test_cwd(void)
{
	static const char *const good[] = { "/workspace", "/workspace/",
	    "/workspace/a/b", "a", "a/./b", "./x", "" };
	static const char *const bad[] = { "/", "/etc", "/workspacex",
	    "/workspace/..", "/workspace/a/../../etc", "..", "a/../..",
	    "a/..", "/tmp/workspace", "a\nb" };

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(api_cwd_valid(good[i]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!api_cwd_valid(bad[i]));
}

static void
test_base64(void)
{
	static const char *const pairs[][2] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" }, { "\xff\xfe\x00", "//4A" },
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		struct buf b;
		size_t n = i == 7 ? 3 : strlen(pairs[i][0]);

		buf_init(&b, 64);
		api_base64(&b, pairs[i][0], n);
		CHECK_STR(b.data ? b.data : "", pairs[i][1]);
		buf_free(&b);
	}
}

static void
test_time(void)
{
	long long ms;

	CHECK_INT(event_time_ms("1970-01-01T00:00:01.500Z", &ms), 0);
	CHECK_INT(ms, 1500);
	CHECK_INT(event_time_ms("2026-11-30T03:44:26.123Z", &ms), 0);
	CHECK_INT(ms, 1796010266123LL);
	CHECK(event_time_ms("yesterday", &ms) < 0 && ms == 0);
	CHECK(event_time_ms(NULL, &ms) < 0);
}

static void
test_approval_names(void)
{
	CHECK_STR(api_rhema_approval("ask_client", 1), "ask");
	CHECK_STR(api_rhema_approval("ask", 0), "ask_client");
	CHECK_STR(api_rhema_approval("allow_list", 1), "allow_list");
	CHECK_STR(api_rhema_approval("deny_all", 0), "deny_all");
	CHECK(api_rhema_approval("ask", 1) == NULL);
	CHECK(api_rhema_approval("ask_client", 0) == NULL);
	CHECK(api_rhema_approval("sometimes", 1) == NULL);
	CHECK(api_rhema_approval(NULL, 1) == NULL);
}

/* rhema's event for the room's line text, as a JSON string ("" when
 * none). */
static char *
mapped(const char *text)
{
	const char *err;
	json_object *ev = jsonl_parse_object(text, strlen(text), &err), *o;
	char *s;

	o = ev ? api_rhema_event(ev) : NULL;
	s = strdup(o ? json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN) : "");
	json_object_put(o);
	json_object_put(ev);
	return s;
}

static void
test_events(void)
{
	static const char *const cases[][2] = {
		{ "{\"type\":\"agent_delta\",\"turn\":3,\"text\":\"Hi\",\"seq\":9,"
		  "\"time\":\"T\"}",
		  "{\"type\":\"text_delta\",\"text\":\"Hi\",\"turn\":3,\"seq\":9,"
		  "\"time\":\"T\"}" },
		{ "{\"type\":\"message\",\"user\":\"agent\",\"text\":\"done\","
		  "\"turn\":3}",
		  "{\"type\":\"assistant_message\",\"text\":\"done\",\"turn\":3}" },
		{ "{\"type\":\"message\",\"user\":\"bob\",\"text\":\"hey\"}",
		  "{\"type\":\"user_message\",\"user\":\"bob\",\"text\":\"hey\"}" },
		{ "{\"type\":\"approval_request\",\"id\":\"t1\",\"tool\":\"bash\","
		  "\"input\":{},\"seconds\":120,\"secret\":1}",
		  "{\"type\":\"approval_request\",\"id\":\"t1\",\"tool\":\"bash\","
		  "\"input\":{},\"timeout_s\":120}" },
		{ "{\"type\":\"config\",\"approval\":\"ask\",\"model\":\"m\"}",
		  "{\"type\":\"config\",\"model\":\"m\",\"approval\":\"ask_client\"}" },
		{ "{\"type\":\"presence\",\"users\":[]}", "" },
		{ "{\"type\":\"term_screen\"}", "" },
		{ "{\"text\":\"no type\"}", "" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *s = mapped(cases[i][0]);

		CHECK_STR(s, cases[i][1]);
		free(s);
	}
}

int
main(void)
{
	TEST(test_cwd);
	TEST(test_base64);
	TEST(test_time);
	TEST(test_approval_names);
	TEST(test_events);
	return unit_done("test_http_seeds");
}
