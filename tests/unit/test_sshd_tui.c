/*
 * test_sshd_tui.c: the chat's pure pieces from raw input: the key decoder
 * (sshd/tui_keys.c) fed byte by byte, the line editor (sshd/tui_editor.c),
 * the renderer's sanitising (sshd/tui_draw.c) and the chat commands
 * (sshd/chat.c: chat_command).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "unit.h"
#include "jsonl.h"
#include "../../sshd/chat.h"
#include "../../sshd/tui_draw.h"
#include "../../sshd/tui_editor.h"
#include "../../sshd/tui_keys.h"

/* Decode bytes; the keys into out (at most max), their count. */
static int
decode(const char *bytes, size_t n, struct tui_key *out, int max)
{
	struct tui_keys k;
	struct tui_key two[2];
	int count = 0;

	tui_keys_init(&k);
	for (size_t i = 0; i < n; i++) {
		int got = tui_keys_feed(&k, (unsigned char)bytes[i], two);

		for (int j = 0; j < got && count < max; j++)
			out[count++] = two[j];
	}
	return count;
}

static void
test_keys_ascii_and_controls(void)
{
	struct tui_key k[8];

	CHECK_INT(decode("a\r\x7f\x03\x15", 5, k, 8), 5);
	CHECK(k[0].type == TUI_KEY_CHAR && k[0].cp == 'a');
	CHECK(k[1].type == TUI_KEY_ENTER);
	CHECK(k[2].type == TUI_KEY_BACKSPACE);
	CHECK(k[3].type == TUI_KEY_CTRL && k[3].cp == 'c');
	CHECK(k[4].type == TUI_KEY_CTRL && k[4].cp == 'u');
	/* CR LF is one Enter. */
	CHECK_INT(decode("\r\n", 2, k, 8), 1);
}

static void
test_keys_escape_sequences(void)
{
	struct tui_key k[8];

	CHECK_INT(decode("\x1b[D\x1b[C\x1bOH\x1b[4~\x1b[3~", 17, k, 8), 5);
	CHECK(k[0].type == TUI_KEY_LEFT);
	CHECK(k[1].type == TUI_KEY_RIGHT);
	CHECK(k[2].type == TUI_KEY_HOME);
	CHECK(k[3].type == TUI_KEY_END);
	CHECK(k[4].type == TUI_KEY_DELETE);
	/* Unknown and over-long sequences vanish whole. */
	CHECK_INT(decode("\x1b[200~x", 7, k, 8), 1);
	CHECK(k[0].type == TUI_KEY_CHAR && k[0].cp == 'x');
	CHECK_INT(decode("\x1b[1111111111111111111111111111Zy", 32, k, 8), 1);
	CHECK(k[0].cp == 'y');
}

static void
test_keys_utf8(void)
{
	struct tui_key k[8];

	/* é, €, 😀 */
	CHECK_INT(decode("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9, k, 8), 3);
	CHECK_INT(k[0].cp, 0xe9);
	CHECK_INT(k[1].cp, 0x20ac);
	CHECK_INT(k[2].cp, 0x1f600);
	/* A broken sequence: U+FFFD, then the byte that broke it. */
	CHECK_INT(decode("\xe2\x82z", 3, k, 8), 2);
	CHECK_INT(k[0].cp, 0xfffd);
	CHECK_INT(k[1].cp, 'z');
	/* Overlong encoding of '/'. */
	CHECK_INT(decode("\xc0\xaf", 2, k, 8), 1);
	CHECK_INT(k[0].cp, 0xfffd);
}

static void
test_editor(void)
{
	struct tui_editor e;
	char s[64];

	tui_editor_init(&e, 8);
	for (const char *p = "abd"; *p; p++)
		CHECK_INT(tui_editor_insert(&e, (uint32_t)*p), 0);
	tui_editor_left(&e);
	tui_editor_insert(&e, 'c');
	tui_editor_utf8(&e, 0, e.len, s, sizeof(s));
	CHECK_STR(s, "abcd");
	CHECK_INT(e.cursor, 3);
	tui_editor_backspace(&e);
	tui_editor_home(&e);
	tui_editor_delete(&e);
	tui_editor_utf8(&e, 0, e.len, s, sizeof(s));
	CHECK_STR(s, "bd");
	/* The byte limit counts UTF-8 bytes. */
	tui_editor_end(&e);
	CHECK_INT(tui_editor_insert(&e, 0x20ac), 0);
	CHECK_INT(e.bytes, 5);
	CHECK_INT(tui_editor_insert(&e, 0x20ac), 0);
	CHECK_INT(tui_editor_insert(&e, 0x20ac), -ENOBUFS);
	tui_editor_left(&e);
	tui_editor_kill_start(&e);
	tui_editor_utf8(&e, 0, e.len, s, sizeof(s));
	CHECK_STR(s, "\xe2\x82\xac");
	CHECK_INT(e.cursor, 0);
	CHECK_INT(e.bytes, 3);
	tui_editor_clear(&e);
	CHECK_INT(e.len, 0);
	/* Controls (ESC, DEL, C1 CSI), surrogates, past U+10FFFF: refused. */
	CHECK_INT(tui_editor_insert(&e, 0x1b), -EINVAL);
	CHECK_INT(tui_editor_insert(&e, 0x7f), -EINVAL);
	CHECK_INT(tui_editor_insert(&e, 0x9b), -EINVAL);
	CHECK_INT(tui_editor_insert(&e, 0xd800), -EINVAL);
	CHECK_INT(tui_editor_insert(&e, 0x110000), -EINVAL);
	CHECK_INT(tui_editor_insert(&e, 0xa0), 0);
	CHECK_INT(e.len, 1);
	tui_editor_clear(&e);
	tui_editor_backspace(&e);	/* at the start: nothing */
	tui_editor_free(&e);
}

static void
test_draw_sanitizes(void)
{
	struct buf b;
	struct tui_draw d;

	buf_init(&b, 4096);
	tui_draw_sanitize(&b, "a\x1b[2Jb\nc\xc2\x9b" "d\x07", 12, "\r\n");
	CHECK_STR(b.data, "a[2Jb\r\ncd");
	buf_reset(&b);
	/* A raw C1 byte (CSI to some terminals) is invalid UTF-8. */
	tui_draw_sanitize(&b, "x\x9b" "2Jy\xff\n", 7, "|");
	CHECK_STR(b.data, "x\xef\xbf\xbd" "2Jy\xef\xbf\xbd|");
	buf_reset(&b);
	tui_draw_init(&d, 0, 0, 80, 24);
	tui_draw_line(&d, &b, TUI_STYLE_MESSAGE, "alice", "hi\nthere");
	CHECK_STR(b.data, "alice: hi\nthere\n");
	CHECK_INT(tui_draw_color("alice"), tui_draw_color("alice"));
	tui_draw_free(&d);
	buf_free(&b);
}

static void
test_chat_commands(void)
{
	json_object *o;
	char reply[2048];

	CHECK_INT(chat_command("hello @agent", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "chat");
	CHECK_STR(json_get_string(o, "text"), "hello @agent");
	json_object_put(o);
	CHECK_INT(chat_command("!make test", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "exec");
	CHECK_STR(json_get_string(o, "command"), "make test");
	CHECK(json_get_bool(o, "share", 0));
	json_object_put(o);
	CHECK_INT(chat_command("/approve t1", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "id"), "t1");
	CHECK(json_get_bool(o, "approve", 0) == 1);
	json_object_put(o);
	CHECK_INT(chat_command("/deny t1", NULL, &o, reply, sizeof(reply)), 1);
	CHECK(json_get_bool(o, "approve", 1) == 0);
	json_object_put(o);
	CHECK_INT(chat_command("/policy ask", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "approval"), "ask");
	json_object_put(o);
	CHECK_INT(chat_command("/policy maybe", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "usage") != NULL);
	CHECK_INT(chat_command("/model m2", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "model"), "m2");
	json_object_put(o);
	CHECK_INT(chat_command("/stop", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "stop");
	json_object_put(o);
	CHECK_INT(chat_command("/who", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "who");
	json_object_put(o);
	CHECK_INT(chat_command("/quit", NULL, &o, reply, sizeof(reply)), 2);
	CHECK_INT(chat_command("   ", NULL, &o, reply, sizeof(reply)), 3);
	CHECK_INT(chat_command("/help", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "/approve") != NULL);
	CHECK_INT(chat_command("/frob x", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "unknown command /frob") != NULL);
	CHECK(strstr(reply, "/quit") != NULL);
	/* Answers to the approval request that waits. */
	CHECK_INT(chat_command("/approve", NULL, &o, reply, sizeof(reply)), 0);
	CHECK_STR(reply, "no approval request is waiting");
	CHECK_INT(chat_command("y", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "chat");
	json_object_put(o);
	CHECK_INT(chat_command("y", "t9", &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "approve");
	CHECK_STR(json_get_string(o, "id"), "t9");
	CHECK(json_get_bool(o, "approve", 0) == 1);
	json_object_put(o);
	CHECK_INT(chat_command("No", "t9", &o, reply, sizeof(reply)), 1);
	CHECK(json_get_bool(o, "approve", 1) == 0);
	json_object_put(o);
	CHECK_INT(chat_command("/deny", "t9", &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "id"), "t9");
	CHECK(json_get_bool(o, "approve", 1) == 0);
	json_object_put(o);
	CHECK_INT(chat_command("/approve t1", "t9", &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "id"), "t1");
	json_object_put(o);
	CHECK_INT(chat_command("yes please", "t9", &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "chat");
	json_object_put(o);
	CHECK_INT(chat_command("/approve", NULL, &o, reply, sizeof(reply)), 0);
	CHECK_INT(chat_command("!", NULL, &o, reply, sizeof(reply)), 0);
}

/* Found by tests/fuzz/fuzz_tui_editor.c: Ctrl-U on a line never typed in
 * did pointer arithmetic on its NULL code points (undefined behaviour). */
static void
test_editor_kill_empty(void)
{
	struct tui_editor e;

	tui_editor_init(&e, 64);
	tui_editor_kill_start(&e);
	CHECK_INT(e.len, 0);
	CHECK_INT(e.cursor, 0);
	CHECK_INT(tui_editor_insert(&e, 'a'), 0);
	tui_editor_home(&e);
	tui_editor_kill_start(&e);
	CHECK_INT(e.len, 1);
	CHECK_INT(e.bytes, 1);
	tui_editor_free(&e);
}

int
main(void)
{
	TEST(test_keys_ascii_and_controls);
	TEST(test_keys_escape_sequences);
	TEST(test_keys_utf8);
	TEST(test_editor);
	TEST(test_editor_kill_empty);
	TEST(test_draw_sanitizes);
	TEST(test_chat_commands);
	return unit_done("test_sshd_tui");
}
