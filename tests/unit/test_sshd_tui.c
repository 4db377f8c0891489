/*
 * test_sshd_tui.c: the chat's pure pieces from raw input: the key decoder
 * (sshd/chat/tui_keys.c) fed byte by byte, the line editor
 * (sshd/chat/tui_editor.c), the renderer's sanitising and row counting
 * (sshd/chat/tui_draw.c), the width of text (sshd/chat/tui_width.c), the
 * recent-lines model (sshd/chat/tui_model.c), the chat commands
 * (sshd/chat/chat.c: chat_command), the editor's cut and word keys, the input
 * history (tui_history.c), Tab completion (tui_complete.c), the status line
 * (tui_status.c), approval texts (tui_approval.c) and event times (tui_time.c).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "event_time.h"
#include "unit.h"
#include "jsonl.h"
#include "../../sshd/chat/chat.h"
#include "../../sshd/chat/chat_commands.h"
#include "../../sshd/chat/chat_int.h"
#include "../../sshd/chat/tui_draw.h"
#include "../../sshd/chat/tui_editor.h"
#include "../../sshd/chat/tui_keys.h"
#include "../../sshd/chat/tui_model.h"
#include "../../sshd/chat/tui_wrap.h"
#include "../../sshd/chat/tui_width.h"
#include "../../sshd/chat/tui_approval.h"
#include "../../sshd/chat/tui_complete.h"
#include "../../sshd/chat/tui_history.h"
#include "../../sshd/chat/tui_status.h"
#include "../../sshd/chat/tui_time.h"

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
	CHECK_INT(decode("\x1b[209~x", 7, k, 8), 1);
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
	tui_draw_init(&d, 0, 0, 0, 80, 24);
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
	char reply[4096];

	CHECK_INT(chat_command("hello @agent", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "chat");
	CHECK_STR(json_get_string(o, "text"), "hello @agent");
	json_object_put(o);
	/* /mouse on|off is the chat's own; anything else is its usage. */
	CHECK_INT(chat_command("/mouse on", NULL, &o, reply, sizeof(reply)), 5);
	CHECK_INT(chat_command("/mouse off", NULL, &o, reply, sizeof(reply)), 6);
	CHECK(o == NULL);
	CHECK_INT(chat_command("/mouse", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "usage: /mouse") != NULL);
	CHECK_INT(chat_command("/mouse sideways", NULL, &o, reply,
	    sizeof(reply)), 0);
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
	CHECK_INT(chat_command("/me waves", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "chat");
	CHECK_STR(json_get_string(o, "text"), "/me waves");
	json_object_put(o);
	CHECK_INT(chat_command("/history fix bug", NULL, &o, reply,
	    sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "history");
	CHECK_STR(json_get_string(o, "match"), "fix bug");
	json_object_put(o);
	CHECK_INT(chat_command("/history", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "usage: /history TEXT") != NULL);
	/* /undo asks for a preview only: confirming is the y after it. */
	CHECK_INT(chat_command("/undo", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "undo");
	CHECK(json_get_bool(o, "confirm", 0) == 0);
	json_object_put(o);
	CHECK_INT(chat_command("/redo", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "redo");
	json_object_put(o);
	CHECK_INT(chat_command("/snapshot before-refactor", NULL, &o, reply,
	    sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "snapshot");
	CHECK_STR(json_get_string(o, "name"), "before-refactor");
	json_object_put(o);
	CHECK_INT(chat_command("/restore", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "usage: /restore NAME") != NULL);
	CHECK_INT(chat_command("/snapshot a b", NULL, &o, reply, sizeof(reply)),
	    0);
	CHECK_INT(chat_command("/snapshots", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "snapshots");
	json_object_put(o);
	CHECK_INT(chat_command("/cost", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "usage");
	json_object_put(o);
	CHECK_INT(chat_command("/term", NULL, &o, reply, sizeof(reply)), 4);
	CHECK(o == NULL);
	CHECK_INT(chat_command("/model m2", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "model"), "m2");
	json_object_put(o);
	CHECK_INT(chat_command("/stop", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "stop");
	json_object_put(o);
	CHECK_INT(chat_command("/who", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "who");
	json_object_put(o);
	CHECK_INT(chat_command("/limits", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "limits");
	CHECK(!json_object_object_get_ex(o, "memory", NULL));
	json_object_put(o);
	CHECK_INT(chat_command("/limits memory 1G pids 200 cpus 0.5", NULL, &o,
	    reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "memory"), "1G");
	CHECK_STR(json_get_string(o, "pids"), "200");
	CHECK_STR(json_get_string(o, "cpus"), "0.5");
	json_object_put(o);
	CHECK_INT(chat_command("/limits disk 1G", NULL, &o, reply,
	    sizeof(reply)), 0);
	CHECK(o == NULL && strstr(reply, "usage: /limits") != NULL);
	CHECK_INT(chat_command("/limits memory", NULL, &o, reply,
	    sizeof(reply)), 0);
	CHECK(o == NULL);
	CHECK_INT(chat_command("/caps", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "caps");
	json_object_put(o);
	CHECK_INT(chat_command("/caps steps 10 tokens 5000", NULL, &o, reply,
	    sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "max_steps"), "10");
	CHECK_STR(json_get_string(o, "max_tokens_per_day"), "5000");
	json_object_put(o);
	CHECK_INT(chat_command("/caps memory 1G", NULL, &o, reply,
	    sizeof(reply)), 0);
	CHECK(o == NULL && strstr(reply, "usage: /caps") != NULL);
	CHECK_INT(chat_command("/cost", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "usage");
	json_object_put(o);
	CHECK_INT(chat_command("/quit", NULL, &o, reply, sizeof(reply)), 2);
	CHECK_INT(chat_command("   ", NULL, &o, reply, sizeof(reply)), 3);
	CHECK_INT(chat_command("/help", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "/approve") != NULL);
	/* A table: one command a line, each line short enough for 80. */
	CHECK(strstr(reply, "\n  /quit ") != NULL);
	for (const char *l = reply, *e; *l; l = e + (*e != '\0')) {
		e = strchr(l, '\n') ?: l + strlen(l);
		CHECK(e - l <= 78 || strncmp(l, "keys:", 5) == 0);
	}
	/* Every command of the table has its line in /help, and parses. */
	for (const struct chat_cmd *c = chat_cmds; c->name; c++) {
		char want[64];

		snprintf(want, sizeof(want), "\n  %s%s", c->name, c->args ?
		    " " : "");
		CHECK(c->name[0] == '/' && c->help && c->parse);
		CHECK(strstr(reply, want) != NULL);
		CHECK(chat_cmd_find(c->name, strlen(c->name)) == c);
	}
	for (const struct chat_cmd *c = chat_cmds; c->name; c++) {
		char r2[4096];

		CHECK(chat_command(c->name, NULL, &o, r2, sizeof(r2)) >= 0);
		if (o)
			json_object_put(o);
	}
	CHECK(strstr(reply, "/kick USER") && strstr(reply, "/remove USER"));
	CHECK_INT(chat_command("/exit", NULL, &o, reply, sizeof(reply)), 2);
	CHECK_INT(chat_command("/kick bob", NULL, &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "kick");
	CHECK_STR(json_get_string(o, "user"), "bob");
	json_object_put(o);
	CHECK_INT(chat_command("/remove bob", NULL, &o, reply, sizeof(reply)),
	    1);
	CHECK_STR(json_get_string(o, "type"), "remove");
	json_object_put(o);
	CHECK_INT(chat_command("/kick bob  shouting, again", NULL, &o, reply,
	    sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "user"), "bob");
	CHECK_STR(json_get_string(o, "reason"), "shouting, again");
	json_object_put(o);
	CHECK_INT(chat_command("/kick", NULL, &o, reply, sizeof(reply)), 0);
	CHECK_STR(reply, "usage: /kick USER [REASON]");
	CHECK_INT(chat_command("/remove bob carol", NULL, &o, reply,
	    sizeof(reply)), 0);
	CHECK_STR(reply, "usage: /remove USER");
	CHECK_INT(chat_command("/policy maybe", NULL, &o, reply, sizeof(reply)),
	    0);
	CHECK(strstr(reply, "allow_list") != NULL);
	CHECK_INT(chat_command("/frob x", NULL, &o, reply, sizeof(reply)), 0);
	CHECK(strstr(reply, "unknown command /frob") != NULL);
	CHECK(strstr(reply, "/help") != NULL);
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
	CHECK_INT(chat_command("N", "t9", &o, reply, sizeof(reply)), 1);
	CHECK(json_get_bool(o, "approve", 1) == 0);
	CHECK(json_get_string(o, "reason") == NULL);
	json_object_put(o);
	/* n REASON: a denial that says why. */
	CHECK_INT(chat_command("n  not on main", "t9", &o, reply,
	    sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "approve");
	CHECK(json_get_bool(o, "approve", 1) == 0);
	CHECK_STR(json_get_string(o, "reason"), "not on main");
	json_object_put(o);
	/* Only y and n answer: yes, no and the rest are chat. */
	CHECK_INT(chat_command("yes", "t9", &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "chat");
	json_object_put(o);
	CHECK_INT(chat_command("no", "t9", &o, reply, sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "type"), "chat");
	json_object_put(o);
	CHECK_INT(chat_command("/deny t1 too wide", "t9", &o, reply,
	    sizeof(reply)), 1);
	CHECK_STR(json_get_string(o, "id"), "t1");
	CHECK_STR(json_get_string(o, "reason"), "too wide");
	json_object_put(o);
	CHECK_INT(chat_command("/approve t1 now", "t9", &o, reply,
	    sizeof(reply)), 0);
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

/* Columns and rows of a C string. */
#define W(s)		tui_width_str(s, strlen(s))
#define ROWS(s, cols)	tui_wrap_rows(s, strlen(s), cols)

static void
test_width(void)
{
	int w;

	/* ASCII, CJK (wide), a combining accent, escapes: no columns. */
	CHECK_INT(W("abc"), 3);
	CHECK_INT(W("\xe4\xbd\xa0\xe5\xa5\xbd"), 4);
	CHECK_INT(W("e\xcc\x81"), 1);
	CHECK_INT(W("\x1b[1;31magent:\x1b[0m x"), 8);
	CHECK_INT(W("\x1b]0;title\x07ok"), 2);
	/* An emoji ZWJ sequence and a heart with its emoji selector are one
	 * cluster each, two columns wide. */
	CHECK_INT((int)tui_width_next("\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f"
	    "\x92\xbbx", 12, &w), 11);
	CHECK_INT(w, 2);
	CHECK_INT((int)tui_width_next("\xe2\x9d\xa4\xef\xb8\x8f", 6, &w), 6);
	CHECK_INT(w, 2);
	CHECK_INT(tui_width_cp(0x1f600), 2);
	CHECK_INT(tui_width_cp(0x200d), 0);
	CHECK_INT(tui_width_cp(0x301), 0);
	/* Rows: exactly the width is one row; escapes do not count; a wide
	 * character that would straddle the edge starts the next row. */
	CHECK_INT(ROWS("", 10), 1);
	CHECK_INT(ROWS("0123456789", 10), 1);
	CHECK_INT(ROWS("01234567890", 10), 2);
	CHECK_INT(ROWS("\x1b[1;35magent:\x1b[0m 12", 10), 1);
	CHECK_INT(ROWS("012345678\xe4\xbd\xa0", 10), 2);
	CHECK_INT((int)tui_width_fit("012345678\xe4\xbd\xa0", 12, 10, &w), 9);
	CHECK_INT(w, 9);
}

static void
test_editor_wide(void)
{
	struct tui_editor e;
	size_t from, to;
	int col;
	static const uint32_t text[] = { 0x4f60, 0x597d, 'a', 0x1f469, 0x200d,
	    0x1f4bb, 'e', 0x301 };

	tui_editor_init(&e, 256);
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		CHECK_INT(tui_editor_insert(&e, text[i]), 0);
	/* The cursor is at column 2+2+1+2+1 = 8. */
	tui_editor_view(&e, 40, &from, &to, &col);
	CHECK_INT((int)from, 0);
	CHECK_INT((int)to, 8);
	CHECK_INT(col, 8);
	/* Left steps over "e" + accent, then the whole ZWJ sequence. */
	tui_editor_left(&e);
	CHECK_INT((int)e.cursor, 6);
	tui_editor_left(&e);
	CHECK_INT((int)e.cursor, 3);
	tui_editor_backspace(&e);	/* "a" */
	CHECK_INT((int)e.cursor, 2);
	tui_editor_delete(&e);		/* the ZWJ sequence */
	CHECK_INT((int)e.len, 4);
	/* Narrow view: scrolled so the cursor stays inside it. */
	tui_editor_end(&e);
	tui_editor_view(&e, 4, &from, &to, &col);
	CHECK(col < 4);
	CHECK(tui_width_cps(e.cps, from, to) <= 4);
	tui_editor_free(&e);
}

/* Count how many rows the bottom region says it spans after drawing. */
static void
test_draw_stream_rows(void)
{
	struct tui_draw d;
	struct tui_editor e;
	struct buf b;
	char line[64];

	buf_init(&b, 1 << 20);
	tui_editor_init(&e, 64);
	tui_draw_init(&d, 1, 1, 1, 20, 10);
	/* "agent: " is 7 columns: 13 more fill the row exactly. */
	tui_draw_stream(&d, &b, "0123456789abc");
	tui_draw_bottom(&d, &b, "room", &e);
	CHECK_INT(d.bottom_rows, 1);
	/* Past the row: two rows (the region is counted by width, not by
	 * bytes, the colour escapes of "agent:" aside). */
	tui_draw_clear_bottom(&d, &b);
	tui_draw_stream(&d, &b, "\xe4\xbd\xa0\xe5\xa5\xbd");
	tui_draw_bottom(&d, &b, "room", &e);
	CHECK_INT(d.bottom_rows, 2);
	/* Long CJK text streamed in pieces: the region grows to the
	 * screen's height less two rows (8 of 10), never past it; the
	 * third character of a piece never straddles the edge. */
	for (int i = 0; i < 30; i++) {
		tui_draw_clear_bottom(&d, &b);
		tui_draw_stream(&d, &b, "\xe6\xbc\xa2\xe5\xad\x97\xe3\x81\xa7");
		tui_draw_bottom(&d, &b, "room", &e);
		CHECK(d.bottom_rows <= 8);
		CHECK_INT(d.bottom_rows, tui_wrap_rows(d.stream.data,
		    d.stream.len, 20) - d.stream_shown);
	}
	CHECK_INT(d.bottom_rows, 8);
	CHECK(d.stream_shown > 0);
	tui_draw_clear_bottom(&d, &b);
	tui_draw_stream_end(&d, &b);
	/* The model holds the line whole (the rows printed early too), for
	 * a redraw to wrap again. */
	{
		size_t pos = 0, len;
		const char *l;
		int n = 0;

		while (tui_model_prev(&d.model, &pos, &l, &len))
			n++;
		CHECK_INT(n, 1);
	}
	/* A tab is expanded to spaces up to the next stop. */
	buf_reset(&b);
	tui_draw_line(&d, &b, TUI_STYLE_OUTPUT, NULL, "a\tb");
	snprintf(line, sizeof(line), "a       b\x1b[0m\r\n");
	CHECK_STR(b.data, line);
	tui_draw_free(&d);
	tui_editor_free(&e);
	buf_free(&b);
}

static void
test_draw_no_color(void)
{
	struct tui_draw d;
	struct buf b;

	buf_init(&b, 4096);
	tui_draw_init(&d, 1, 0, 1, 80, 24);
	tui_draw_line(&d, &b, TUI_STYLE_MESSAGE, "alice", "hi");
	tui_draw_line(&d, &b, TUI_STYLE_ERROR, NULL, "bad");
	/* Bold stays; no colour (SGR 30-37) anywhere. */
	CHECK(strstr(b.data, "\x1b[1malice:") != NULL);
	CHECK(strstr(b.data, "\x1b[3") == NULL);
	CHECK(strstr(b.data, ";3") == NULL);
	tui_draw_free(&d);
	buf_free(&b);
}

static void
test_model(void)
{
	struct tui_model m;
	char big[TUI_MODEL_MAX_LINE * 2];
	const char *l;
	size_t pos = 0, len;
	int n = 0;

	tui_model_init(&m);
	tui_model_add(&m, "one", 3);
	tui_model_add(&m, "two\nignored", 12);
	CHECK_INT(tui_model_prev(&m, &pos, &l, &len), 1);
	CHECK(len == 3 && memcmp(l, "two", 3) == 0);
	CHECK_INT(tui_model_prev(&m, &pos, &l, &len), 1);
	CHECK(len == 3 && memcmp(l, "one", 3) == 0);
	CHECK_INT(tui_model_prev(&m, &pos, &l, &len), 0);
	/* Long lines are cut; old lines go; it never passes its budget. */
	memset(big, 'x', sizeof(big));
	for (int i = 0; i < 40; i++)
		tui_model_add(&m, big, sizeof(big));
	CHECK(m.lines.len <= TUI_MODEL_MAX);
	pos = 0;
	while (tui_model_prev(&m, &pos, &l, &len)) {
		CHECK(len <= TUI_MODEL_MAX_LINE);
		n++;
	}
	CHECK(n >= 7);
	tui_model_free(&m);
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


/* The line as UTF-8, for checks. */
static const char *
line_of(const struct tui_editor *e)
{
	static char out[256];

	tui_editor_utf8(e, 0, e->len, out, sizeof(out));
	return out;
}

static void
test_editor_cut_and_words(void)
{
	struct tui_editor e;
	char shown[64];

	tui_editor_init(&e, 64);
	CHECK_INT(tui_editor_set(&e, "git commit  -m fix"), 0);
	/* Ctrl-W: the word before the cursor and the blanks after it. */
	tui_editor_kill_word(&e);
	CHECK_STR(line_of(&e), "git commit  -m ");
	tui_editor_kill_word(&e);
	CHECK_STR(line_of(&e), "git commit  ");
	/* Ctrl-Y puts back what went last. */
	CHECK_INT(tui_editor_yank(&e), 0);
	CHECK_STR(line_of(&e), "git commit  -m ");
	/* Alt-B/F: words of letters and digits. */
	tui_editor_word_left(&e);
	CHECK_INT(e.cursor, 13);	/* at "m" */
	tui_editor_word_left(&e);
	CHECK_INT(e.cursor, 4);		/* at "commit" */
	tui_editor_word_right(&e);
	CHECK_INT(e.cursor, 10);
	/* Ctrl-K from there; Ctrl-U from the start to the cursor. */
	tui_editor_kill_end(&e);
	CHECK_STR(line_of(&e), "git commit");
	tui_editor_left(&e);
	tui_editor_kill_start(&e);
	CHECK_STR(line_of(&e), "t");
	CHECK_INT(tui_editor_yank(&e), 0);
	CHECK_STR(line_of(&e), "git commit");
	/* A pasted line break stays in the line, shown as an arrow of one
	 * column; tui_editor_set keeps newlines and drops other controls. */
	CHECK_INT(tui_editor_set(&e, "a\nb\x1b[31m"), 0);
	CHECK_STR(line_of(&e), "a\nb[31m");
	tui_editor_show(&e, 0, e.len, shown, sizeof(shown));
	CHECK_STR(shown, "a\xe2\x86\xb5" "b[31m");
	CHECK_INT(tui_width_cps(e.cps, 0, e.len), 7);
	/* The limit holds for newlines, yanks and set as for typing. */
	tui_editor_free(&e);
	tui_editor_init(&e, 4);
	CHECK_INT(tui_editor_set(&e, "abcdef"), -ENOBUFS);
	CHECK_STR(line_of(&e), "abcd");
	CHECK_INT(tui_editor_newline(&e), -ENOBUFS);
	tui_editor_kill_start(&e);
	CHECK_INT(tui_editor_yank(&e), 0);
	CHECK_INT(tui_editor_yank(&e), -ENOBUFS);
	CHECK_INT(e.bytes, 4);
	tui_editor_free(&e);
}

static void
test_keys_alt_pages_paste(void)
{
	struct tui_key k[8];

	CHECK_INT(decode("\x1b" "b\x1b[5~\x1b[6~\t", 11, k, 8), 4);
	CHECK(k[0].type == TUI_KEY_ALT && k[0].cp == 'b');
	CHECK(k[1].type == TUI_KEY_PGUP);
	CHECK(k[2].type == TUI_KEY_PGDN);
	CHECK(k[3].type == TUI_KEY_TAB);
	CHECK_INT(decode("\x1b[200~a\rb\x1b[201~", 15, k, 8), 5);
	CHECK(k[0].type == TUI_KEY_PASTE_START);
	CHECK(k[2].type == TUI_KEY_ENTER);
	CHECK(k[4].type == TUI_KEY_PASTE_END);
}

/* Mouse reports: the wheel scrolls (SGR and legacy, with modifiers);
 * clicks, drags, releases, other buttons and malformed or over-long
 * reports give nothing, and never text. */
static void
test_keys_mouse(void)
{
	static const char wheel[] = "\x1b[<64;10;5M\x1b[<65;1;1M"
	    "\x1b[<80;3;4M\x1b[M`!!\x1b[Ma!!";
	static const char *const ignored[] = {
		"\x1b[<0;10;5M", "\x1b[<0;10;5m", "\x1b[<2;1;1M",
		"\x1b[<32;4;4M", "\x1b[<66;1;1M", "\x1b[<64;1;1m",
		"\x1b[<64;1M", "\x1b[<64;1;1;1M", "\x1b[<;1;1M",
		"\x1b[<64;1;1X", "\x1b[<6:4;1;1M", "\x1b[<64;999999;1M",
		"\x1b[<64;1111111111111111111111111111;1M",
		"\x1b[M !!", "\x1b[M\x01" "ab", "\x1b[M\xff\xff\xff",
	};
	struct tui_key k[8];

	CHECK_INT(decode(wheel, sizeof(wheel) - 1, k, 8), 5);
	CHECK(k[0].type == TUI_KEY_WHEEL_UP);
	CHECK(k[1].type == TUI_KEY_WHEEL_DOWN);
	CHECK(k[2].type == TUI_KEY_WHEEL_UP);	/* Ctrl+wheel */
	CHECK(k[3].type == TUI_KEY_WHEEL_UP);	/* legacy: 96 - 32 */
	CHECK(k[4].type == TUI_KEY_WHEEL_DOWN);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++) {
		char in[96];
		int n = snprintf(in, sizeof(in), "%sz", ignored[i]);

		CHECK_INT(decode(in, (size_t)n, k, 8), 1);
		CHECK(k[0].type == TUI_KEY_CHAR && k[0].cp == 'z');
	}
	/* Keypad Enter (SS3 M) is not a mouse report. */
	CHECK_INT(decode("\x1bOMz", 4, k, 8), 1);
	CHECK(k[0].cp == 'z');
}

static void
test_history(void)
{
	struct tui_history h;

	tui_history_init(&h);
	tui_history_add(&h, "typed now", 0);
	/* Lines from the room come before this session's, oldest first. */
	tui_history_add(&h, "old one", 1);
	tui_history_add(&h, "old two", 1);
	tui_history_add(&h, "old two", 1);	/* a repeat is kept once */
	tui_history_add(&h, "  ", 0);		/* blank: not kept */
	CHECK_INT(h.n, 3);
	CHECK_STR(tui_history_up(&h, "draft"), "typed now");
	CHECK_STR(tui_history_up(&h, "typed now"), "old two");
	CHECK_STR(tui_history_up(&h, "old two"), "old one");
	CHECK(tui_history_up(&h, "old one") == NULL);
	CHECK_STR(tui_history_down(&h), "old two");
	CHECK_STR(tui_history_down(&h), "typed now");
	CHECK_STR(tui_history_down(&h), "draft");
	CHECK(tui_history_down(&h) == NULL);
	/* Full: the oldest goes. */
	for (int i = 0; i < TUI_HISTORY_MAX + 5; i++) {
		char line[32];

		snprintf(line, sizeof(line), "line %d", i);
		tui_history_add(&h, line, 0);
	}
	CHECK_INT(h.n, TUI_HISTORY_MAX);
	CHECK_STR(tui_history_up(&h, ""), "line 204");
	tui_history_free(&h);
}

static void
test_complete(void)
{
	const char *names[] = { "@agent", "@alice", "@albert", "@bob" };
	char out[64];

	/* A command: the one that fits, and a space after it. */
	const char *cmds[64];
	int ncmds = 0;

	for (const struct chat_cmd *c = chat_cmds; c->name && ncmds < 64; c++)
		cmds[ncmds++] = c->name;
	CHECK_INT(tui_complete_from("/hi", cmds, ncmds, out, sizeof(out)), 1);
	CHECK_STR(out, "story ");
	/* Several: their common part, and the caller lists them. */
	CHECK_INT(tui_complete_from("@al", names, 4, out, sizeof(out)), 2);
	CHECK_STR(out, "");
	CHECK_INT(tui_complete_from("@a", names, 4, out, sizeof(out)), 3);
	CHECK_INT(tui_complete_from("@b", names, 4, out, sizeof(out)), 1);
	CHECK_STR(out, "ob ");
	CHECK_INT(tui_complete_from("@z", names, 4, out, sizeof(out)), 0);
	/* What the word before the cursor takes. */
	CHECK_INT(tui_complete_word_start("/kick bo", 8), 6);
	CHECK_INT(tui_complete_kind("/kick bo", 6), 'a');
	CHECK_INT(tui_complete_kind("hi bo", 3), 'n');
	CHECK_INT(tui_complete_kind("/ki", 0), 'c');
	CHECK_INT(tui_complete_kind("hi @ag", 3), '@');
	CHECK_INT(tui_complete_kind("!cat sr", 5), 'p');
	/* The commands that had drifted out of completion are in it. */
	CHECK_INT(tui_complete_from("/ca", cmds, ncmds, out, sizeof(out)), 1);
	CHECK_STR(out, "ps ");
	CHECK_INT(tui_complete_from("/mo", cmds, ncmds, out, sizeof(out)), 2);
	CHECK_INT(tui_complete_from("/mou", cmds, ncmds, out, sizeof(out)), 1);
	CHECK_STR(out, "se ");
}

/* An event from JSON text, for the status line. */
static json_object *
ev(const char *json)
{
	return json_tokener_parse(json);
}

static void
test_status(void)
{
	struct tui_status st;
	char text[256];
	json_object *o;

	tui_status_init(&st, "alice");
	o = ev("{\"usage_today\":{\"input_tokens\":100,\"output_tokens\":5}}");
	tui_status_event(&st, "welcome", o, 0, 0);
	json_object_put(o);
	o = ev("{\"users\":[\"alice\",\"bob\"]}");
	tui_status_event(&st, "presence", o, 0, 0);
	json_object_put(o);
	o = ev("{\"user\":\"bob\"}");
	tui_status_event(&st, "typing", o, 0, 1000);
	json_object_put(o);
	o = ev("{\"id\":\"t1\",\"name\":\"bash\",\"input\":{\"command\":"
	    "\"make test\\nmore\"}}");
	tui_status_event(&st, "tool_call", o, 5000, 1000);
	json_object_put(o);
	tui_status_text(&st, "lab", 2000, text, sizeof(text));
	CHECK_STR(text, "lab | here: alice, bob | bob is typing | agent: "
	    "running `make test` | 105 tokens today");
	/* Typing shows for a while; a replayed turn end adds no tokens,
	 * a live one does. */
	o = ev("{\"replay\":true,\"usage\":{\"input_tokens\":7}}");
	tui_status_event(&st, "turn_end", o, 0, 0);
	json_object_put(o);
	o = ev("{\"usage\":{\"input_tokens\":7,\"output_tokens\":3}}");
	tui_status_event(&st, "turn_end", o, 0, 0);
	json_object_put(o);
	tui_status_text(&st, "lab", 1000 + TUI_STATUS_TYPING_MS, text,
	    sizeof(text));
	CHECK_STR(text, "lab | here: alice, bob | agent: idle | 115 tokens "
	    "today");
	o = ev("{\"tool\":\"bash\",\"input\":{\"command\":\"rm -rf x\"}}");
	tui_status_event(&st, "approval_request", o, 0, 0);
	json_object_put(o);
	tui_status_text(&st, "lab", 0, text, sizeof(text));
	CHECK(strstr(text, "agent: waiting for approval of `rm -rf x`"));
	/* The tool call's duration, once. */
	CHECK(tui_status_took(&st, "t1", 7500) == 2500);
	CHECK(tui_status_took(&st, "t1", 7500) == -1);
	/* Cut to the buffer, never past it. */
	tui_status_text(&st, "lab", 0, text, 10);
	CHECK_STR(text, "lab | her");
}

/* A chat line from someone who was not shown as typing leaves the line
 * as it reads: it takes no typist's place (four are shown at most), and
 * the member's screen is not drawn again for it. */
static void
test_status_line_from_a_non_typist(void)
{
	static const char *const typists[] = { "bob", "carol", "dave", "erin" };
	struct tui_status st;
	char text[256];
	json_object *o;

	tui_status_init(&st, "alice");
	for (int i = 0; i < 4; i++) {
		char json[64];

		snprintf(json, sizeof(json), "{\"user\":\"%s\"}", typists[i]);
		o = ev(json);
		CHECK_INT(tui_status_event(&st, "typing", o, 0, 1000 + i), 1);
		json_object_put(o);
	}
	o = ev("{\"user\":\"frank\",\"text\":\"hi\"}");
	CHECK_INT(tui_status_event(&st, "message", o, 0, 2000), 0);
	json_object_put(o);
	tui_status_text(&st, "lab", 2000, text, sizeof(text));
	CHECK(strstr(text, "| bob, carol, dave, erin are typing |"));
	/* A typist's own line ends their typing. */
	o = ev("{\"user\":\"bob\",\"text\":\"done\"}");
	CHECK_INT(tui_status_event(&st, "message", o, 0, 2000), 1);
	json_object_put(o);
	tui_status_text(&st, "lab", 2000, text, sizeof(text));
	CHECK(strstr(text, "| carol, dave, erin are typing |"));
}

static void
test_approval_text(void)
{
	char text[1024];
	json_object *o;

	o = ev("{\"id\":\"c1\",\"tool\":\"bash\",\"seconds\":120,\"input\":"
	    "{\"command\":\"rm -rf build && make\"}}");
	tui_approval_text(o, 0, text, sizeof(text));
	json_object_put(o);
	CHECK_STR(text, "approval needed: bash rm -rf build && make "
	    "(y/n, 120 s)");
	/* The id only when several wait. */
	o = ev("{\"id\":\"c1\",\"tool\":\"bash\",\"seconds\":5,\"input\":"
	    "{\"command\":\"ls\"}}");
	tui_approval_text(o, 1, text, sizeof(text));
	json_object_put(o);
	CHECK_STR(text, "approval needed: bash ls (y/n, 5 s; /approve c1 or "
	    "/deny c1 for this one)");
	o = ev("{\"id\":\"c2\",\"tool\":\"edit\",\"seconds\":9,\"input\":"
	    "{\"path\":\"src/a.c\",\"old_string\":\"x = 1;\\ny = 2;\","
	    "\"new_string\":\"x = 3;\"}}");
	tui_approval_text(o, 0, text, sizeof(text));
	json_object_put(o);
	CHECK_STR(text, "approval needed: edit src/a.c (y/n, 9 s)\n"
	    "- x = 1;\n- y = 2;\n+ x = 3;");
	/* Bounded whatever the input's size. */
	o = ev("{\"tool\":\"write\",\"input\":{\"path\":\"f\",\"content\":"
	    "\"a\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na"
	    "\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na"
	    "\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\\na\"}}");
	tui_approval_text(o, 0, text, 64);
	json_object_put(o);
	CHECK_INT((int)strlen(text), 63);
}

static void
test_approval_answer(void)
{
	const char *why;

	CHECK_INT(tui_approval_answer("y", &why), 1);
	CHECK(why == NULL);
	CHECK_INT(tui_approval_answer("Y", &why), 1);
	CHECK_INT(tui_approval_answer("n", &why), 0);
	CHECK(why == NULL);
	CHECK_INT(tui_approval_answer("n ", &why), 0);
	CHECK(why == NULL);
	CHECK_INT(tui_approval_answer("N  too risky", &why), 0);
	CHECK_STR(why, "too risky");
	CHECK_INT(tui_approval_answer("yes", &why), -1);
	CHECK_INT(tui_approval_answer("no", &why), -1);
	CHECK_INT(tui_approval_answer("y please", &why), -1);
	CHECK_INT(tui_approval_answer("nope", &why), -1);
	CHECK_INT(tui_approval_answer("", &why), -1);
}

static void
test_time(void)
{
	long long ms;
	char out[64];

	CHECK_INT(event_time_ms("2026-11-30T03:44:26.123Z", &ms), 0);
	CHECK(ms == 1796010266123LL);
	CHECK_INT(event_time_ms("2026-13-30T03:44:26Z", &ms), -EINVAL);
	CHECK_INT(event_time_ms("yesterday", &ms), -EINVAL);
	CHECK_INT(event_time_ms(NULL, &ms), -EINVAL);
	CHECK_INT(event_time_ms("2026-11-30T03:44:26Z", &ms), 0);
	CHECK(ms == 1796010266000LL);
	CHECK_INT(event_time_ms("2026-11-30 03:44:26Z", &ms), -EINVAL);
	CHECK_INT(event_time_ms("2026-1-30T03:44:26Z", &ms), -EINVAL);
	CHECK_INT(event_time_ms("2026-11-30T03:44", &ms), -EINVAL);
	tui_time_duration(210, out, sizeof(out));
	CHECK_STR(out, "0.21 s");
	tui_time_duration(184000, out, sizeof(out));
	CHECK_STR(out, "3 min 4 s");
}

static void
test_model_tags_and_scrollback(void)
{
	struct tui_model m, older;
	const char *l;
	size_t pos = 0, len;

	tui_model_init(&m);
	tui_model_init_max(&older, 1 << 20);
	m.tag = 0;
	tui_model_add(&m, "welcome", 7);	/* no event of its own */
	m.tag = 41;
	tui_model_add(&m, "forty-one", 9);
	m.tag = 42;
	tui_model_add(&m, "forty-two", 9);
	CHECK(tui_model_first_tag(&m) == 41);
	CHECK_INT((int)tui_model_count(&m), 3);
	/* The tag never shows in the line given back. */
	CHECK_INT(tui_model_prev(&m, &pos, &l, &len), 1);
	CHECK(len == 9 && memcmp(l, "forty-two", 9) == 0);
	/* Older lines go before: the walk goes on into them. */
	older.tag = 7;
	tui_model_add(&older, "seven", 5);
	CHECK_INT(tui_model_prepend(&m, &older), 0);
	CHECK(tui_model_first_tag(&m) == 7);
	pos = 0;
	for (int i = 0; i < 4; i++)
		CHECK_INT(tui_model_prev(&m, &pos, &l, &len), 1);
	CHECK(len == 5 && memcmp(l, "seven", 5) == 0);
	CHECK_INT(tui_model_prev(&m, &pos, &l, &len), 0);
	tui_model_free(&m);
	tui_model_free(&older);
}

/* A line found by its tag and words is replaced in place, its tag and
 * the lines after it kept; the first line of an event is the one found. */
static void
test_model_find_and_replace(void)
{
	struct tui_model m;
	const char *l;
	size_t at, len, after = 0, pos = 0;

	tui_model_init(&m);
	m.tag = 5;
	tui_model_add(&m, "before", 6);
	m.tag = 6;
	tui_model_add(&m, "asked: ls (y/n, 8 s)", 20);
	tui_model_add(&m, "+ quoted (y/n, 8 s)", 19);
	m.tag = 7;
	tui_model_add(&m, "after", 5);
	CHECK_INT(tui_model_find(&m, 6, "(y/n, ", &at, &l, &len, &after), 1);
	CHECK(len == 20 && memcmp(l, "asked: ls (y/n, 8 s)", 20) == 0);
	CHECK(after == 2);
	CHECK_INT(tui_model_find(&m, 9, "(y/n, ", &at, &l, &len, &after), 0);
	CHECK_INT(tui_model_replace(&m, at, "ls: approved", 12), 0);
	CHECK_INT((int)tui_model_count(&m), 4);
	for (int i = 0; i < 3; i++)
		CHECK_INT(tui_model_prev(&m, &pos, &l, &len), 1);
	CHECK(len == 12 && memcmp(l, "ls: approved", 12) == 0);
	CHECK(tui_model_first_tag(&m) == 5);
	/* Now the quoted line is the first with the words: never a line
	 * holding a newline. */
	CHECK_INT(tui_model_find(&m, 6, "(y/n, ", &at, &l, &len, &after), 1);
	CHECK(after == 1);
	CHECK(tui_model_replace(&m, at, "a\nb", 3) < 0);
	tui_model_free(&m);
}

static void
test_draw_status_time_and_highlight(void)
{
	struct tui_draw d;
	struct tui_editor e;
	struct buf b;
	long long ms;

	buf_init(&b, 1 << 16);
	tui_editor_init(&e, 64);
	tui_draw_init(&d, 1, 1, 1, 30, 10);
	/* A time: the date line first, then HH:MM before the line, and the
	 * gutter under it for command output. */
	CHECK_INT(event_time_ms("2026-11-30T03:44:26.123Z", &ms), 0);
	tui_draw_set_time(&d, ms);
	tui_draw_line(&d, &b, TUI_STYLE_MESSAGE, "alice", "hi");
	tui_draw_line(&d, &b, TUI_STYLE_OUTPUT, NULL, "out");
	CHECK(strstr(b.data, "-- ") != NULL);
	CHECK(strstr(b.data, "2026 --") != NULL);
	CHECK(strstr(b.data, "\r\n      out") != NULL);
	/* The date line comes once per date. */
	CHECK(strstr(strstr(b.data, "2026 --") + 1, "2026 --") == NULL);
	/* /history's match in reverse video, whatever its case. */
	buf_reset(&b);
	snprintf(d.highlight, sizeof(d.highlight), "alpha");
	tui_draw_line(&d, &b, TUI_STYLE_MESSAGE, "bob", "an ALPHA test");
	CHECK(strstr(b.data, "an \x1b[7mALPHA\x1b[27m test") != NULL);
	d.highlight[0] = '\0';
	/* The status line: one row in reverse, cut to the width, counted
	 * in the region above the prompt. */
	buf_reset(&b);
	tui_draw_set_status(&d, "room | here: alice, bob | agent: idle | 12 "
	    "tokens today");
	tui_draw_bottom(&d, &b, "room", &e);
	CHECK_INT(d.bottom_rows, 1);
	CHECK(strstr(b.data, "\x1b[7mroom | here: alice, bob | age\x1b[0m") !=
	    NULL);
	tui_draw_free(&d);
	tui_editor_free(&e);
	buf_free(&b);
}

/* /cost's lines: plain integers, the cost only where the room gave one. */
static void
test_chat_cost_text(void)
{
	json_object *o = json_tokener_parse("{\"type\":\"usage\","
	    "\"day\":\"2026-12-01\",\"month\":\"2026-12\","
	    "\"today\":{\"input_tokens\":1234567,\"output_tokens\":89,"
	    "\"requests\":3,\"cost\":3.70503,\"models\":[{\"model\":"
	    "\"m1\",\"input_tokens\":1234567,\"output_tokens\":89,"
	    "\"cost\":3.70503}],\"users\":[{\"user\":\"bob\","
	    "\"input_tokens\":7,\"output_tokens\":1}]},"
	    "\"this_month\":{\"input_tokens\":2000000,\"output_tokens\":90,"
	    "\"requests\":4,\"models\":[],\"users\":[]},"
	    "\"max_steps\":50,\"max_tokens_per_day\":null}");
	char text[2048];

	chat_cost_text(o, text, sizeof(text));
	CHECK(strstr(text, "today (2026-12-01, UTC): 1234567 tokens in, 89 "
	    "out, 3 requests, cost $3.7050") != NULL);
	CHECK(strstr(text, "\n  model m1: 1234567 in, 89 out, cost $3.7050")
	    != NULL);
	CHECK(strstr(text, "\n  by bob: 7 in, 1 out") != NULL);
	CHECK(strstr(text, "this month (2026-12): 2000000 tokens in, 90 out, "
	    "4 requests\n") != NULL);
	CHECK(strstr(text, "caps: 50 steps per turn, no cap on tokens") != NULL);
	json_object_put(o);
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
	TEST(test_width);
	TEST(test_editor_wide);
	TEST(test_draw_stream_rows);
	TEST(test_draw_no_color);
	TEST(test_model);
	TEST(test_editor_cut_and_words);
	TEST(test_keys_alt_pages_paste);
	TEST(test_keys_mouse);
	TEST(test_history);
	TEST(test_complete);
	TEST(test_status);
	TEST(test_status_line_from_a_non_typist);
	TEST(test_approval_text);
	TEST(test_approval_answer);
	TEST(test_time);
	TEST(test_model_tags_and_scrollback);
	TEST(test_model_find_and_replace);
	TEST(test_draw_status_time_and_highlight);
	TEST(test_chat_cost_text);
	return unit_done("test_sshd_tui");
}
