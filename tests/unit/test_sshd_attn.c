/*
 * test_sshd_attn.c: the pure pieces of the chat's attention and stopping
 * (sshd/chat/chat_attn.c): mentions found in hostile and ordinary lines
 * (tui_mention.c), /kill and /set as chat_command reads them, how a
 * command's end reads for everyone (chat_exec_end_text), and /term's news
 * on the status row, cleaned of whatever a line carried
 * (term_view_news).
 */
#include <string.h>

#include "../../sshd/chat/chat.h"
#include "../../sshd/chat/chat_int.h"
#include "../../sshd/chat/term_view.h"
#include "../../sshd/chat/tui_mention.h"
#include "jsonl.h"
#include "unit.h"

static void
test_mentions(void)
{
	CHECK(tui_mention("@bob look", "bob"));
	CHECK(tui_mention("look, bob.", "bob"));
	CHECK(tui_mention("BOB: the build", "bob"));
	CHECK(tui_mention("ask bob...", "bob"));
	CHECK(tui_mention("(bob) and @bob", "bob"));
	CHECK(tui_mention("bobby and bob", "bob"));	/* the second one */
	CHECK(!tui_mention("bobby", "bob"));
	CHECK(!tui_mention("jimbob", "bob"));
	CHECK(!tui_mention("bob-ci failed", "bob"));
	CHECK(!tui_mention("bob_2 and bob.smith", "bob"));
	CHECK(!tui_mention("", "bob"));
	CHECK(!tui_mention("bob", ""));
	CHECK(!tui_mention(NULL, "bob"));
	CHECK(!tui_mention("bob", NULL));
	CHECK(tui_mention("a.b, hi", "a.b"));
	CHECK(tui_mention("\x07" "bob\x1b[0m", "bob"));
}

/* chat_command on line: its result, with the request's type in type. */
static int
command(const char *line, char *type, size_t len, json_object **out)
{
	char reply[4096];
	int r = chat_command(line, NULL, out, reply, sizeof(reply));

	snprintf(type, len, "%s", *out ? json_get_string(*out, "type") : "");
	return r;
}

static void
test_kill_and_set_commands(void)
{
	json_object *o;
	char type[32];

	CHECK_INT(command("/kill", type, sizeof(type), &o), 1);
	CHECK_STR(type, "signal");
	CHECK(json_get_string(o, "user") == NULL);
	json_object_put(o);
	CHECK_INT(command("/kill bob", type, sizeof(type), &o), 1);
	CHECK_STR(json_get_string(o, "user"), "bob");
	json_object_put(o);
	CHECK_INT(command("/set", type, sizeof(type), &o), 1);
	CHECK_STR(type, "pref");
	CHECK_STR(json_get_string(o, "key"), "bell");
	CHECK(json_get_string(o, "value") == NULL);
	json_object_put(o);
	CHECK_INT(command("/set bell off", type, sizeof(type), &o), 1);
	CHECK_STR(json_get_string(o, "value"), "off");
	json_object_put(o);
	CHECK_INT(command("/set bell on", type, sizeof(type), &o), 1);
	CHECK_STR(json_get_string(o, "value"), "on");
	json_object_put(o);
	CHECK_INT(command("/set bell loud", type, sizeof(type), &o), 0);
	CHECK(o == NULL);
	CHECK_INT(command("/set colour red", type, sizeof(type), &o), 0);
	CHECK(o == NULL);
}

/* chat_exec_end_text of the JSON text ev. */
static void
end_text(const char *ev, char *text, size_t len)
{
	json_object *o = json_tokener_parse(ev);

	chat_exec_end_text(o, text, len);
	json_object_put(o);
}

static void
test_exec_end_text(void)
{
	char t[256];

	end_text("{\"exitCode\":3,\"user\":\"alice\"}", t, sizeof(t));
	CHECK_STR(t, "exit 3");
	end_text("{\"exitCode\":130,\"signal\":\"INT\",\"user\":\"alice\","
	    "\"stop_signal\":\"INT\",\"stopped_by\":\"alice\"}", t, sizeof(t));
	CHECK_STR(t, "alice's command ended by SIGINT");
	end_text("{\"exitCode\":143,\"signal\":\"TERM\",\"user\":\"bob\","
	    "\"stop_signal\":\"TERM\",\"stopped_by\":\"alice\"}", t, sizeof(t));
	CHECK_STR(t, "bob's command ended by SIGTERM from alice");
	end_text("{\"exitCode\":1,\"user\":\"bob\",\"stop_signal\":\"INT\","
	    "\"stopped_by\":\"bob\"}", t, sizeof(t));
	CHECK_STR(t, "exit 1 (bob sent SIGINT)");
	end_text("{\"exitCode\":137,\"signal\":\"KILL\",\"user\":\"bob\","
	    "\"timedOut\":true}", t, sizeof(t));
	CHECK_STR(t, "bob's command ended by SIGKILL at its time limit");
	/* A room of before "user": the signal still shows. */
	end_text("{\"exitCode\":137,\"signal\":\"KILL\"}", t, sizeof(t));
	CHECK_STR(t, "the command ended by SIGKILL");
	end_text("{\"exitCode\":130,\"signal\":\"INT\",\"user\":\"alice\"}",
	    t, 8);
	CHECK_INT(strlen(t), 7);
}

static void
test_term_news_is_cleaned(void)
{
	struct term_view *tv = term_view_new(1);
	char long_news[600];
	struct buf b;

	buf_init(&b, 1 << 20);
	term_view_news(tv, "alice: look\x1b[2J\x07 here\nsecond line", &b, 80,
	    10, "room");
	CHECK(strstr(b.data, "\x1b[10;1H") != NULL);	/* the status row */
	CHECK(strstr(b.data, "| alice: look[2J here second line |") != NULL);
	CHECK(strstr(b.data, "\x07") == NULL);
	CHECK(strstr(b.data, "Ctrl-] back to the chat") != NULL);
	/* Cut at a whole character, however long. */
	for (size_t i = 0; i + 3 < sizeof(long_news); i += 3)
		memcpy(long_news + i, "\xe6\xbc\xa2", 3);
	long_news[sizeof(long_news) - 3] = '\0';
	buf_reset(&b);
	term_view_news(tv, long_news, &b, 400, 10, "room");
	CHECK(b.len > 0);
	buf_reset(&b);
	term_view_news(tv, "", &b, 80, 10, "room");
	CHECK(strstr(b.data, " Ctrl-] back to the chat | room's terminal") !=
	    NULL);
	buf_free(&b);
	term_view_free(tv);
}

int
main(void)
{
	TEST(test_mentions);
	TEST(test_kill_and_set_commands);
	TEST(test_exec_end_text);
	TEST(test_term_news_is_cleaned);
	return unit_done("test_sshd_attn");
}
