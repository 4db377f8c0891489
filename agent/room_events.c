/*
 * room_events.c: the room's events, as the rest of the agent makes them
 * (room_events.h): events for the whole room go to the journal (journal.h),
 * which records, commits, then announces them; replies go to one connection and
 * take no seq of their own.  Presence (who is here) is made here too.
 *
 * Presence is about people: only chat connections (a person at a
 * terminal) are announced as joining and leaving and listed by who;
 * control connections (scripts) get the room's events without being
 * announced.
 */
#include "room_events.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "conn.h"
#include "journal.h"
#include "log.h"
#include "proc.h"
#include "room_db.h"
#include "term.h"
#include "text.h"
#include "util.h"

json_object *
room_event_new(const char *type)
{
	json_object *ev = json_object_new_object();

	if (ev)
		json_object_object_add(ev, "type", json_object_new_string(type));
	return ev;
}




/* See room_events.h. */
void
room_send_link(struct conn *c, const char *line)
{
	conn_queue(c, line, strlen(line));
	conn_queue(c, "\n", 1);
}

/* See room_events.h. */
void
room_send_lines(struct conn *c, const char *p, size_t n)
{
	conn_queue(c, p, n);
}


int
room_emit(struct agent *a, json_object *ev, int store)
{
	int r;

	if (!store)
		return journal_live(a->journal, ev);
	if ((r = journal_record(a->journal, ev)) < 0)
		return r;
	return journal_commit(a->journal);
}

int
room_record(struct agent *a, json_object *ev)
{
	return journal_record(a->journal, ev);
}

void
room_send(struct conn *c, json_object *ev)
{
	if (!ev)
		return;
	journal_stamp_reply(c->a->journal, ev);
	conn_queue_event(c, ev);
	json_object_put(ev);
}

void
room_error(struct conn *c, const char *id, const char *fmt, ...)
{
	json_object *ev;
	va_list ap;

	va_start(ap, fmt);
	ev = room_error_vnew(id, fmt, ap);
	va_end(ap);
	room_send(c, ev);
}

json_object *
room_error_vnew(const char *id, const char *fmt, va_list ap)
{
	json_object *ev = room_event_new("error");
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	json_object_object_add(ev, "message", json_object_new_string(msg));
	if (id)
		json_object_object_add(ev, "id", json_object_new_string(id));
	return ev;
}

void
room_unrecorded(struct conn *c, const char *id, const char *what, int err)
{
	room_error(c, id, "the room could not record %s (%s), so nobody was "
	    "told of it; try again once room.db can be written (history and "
	    "who still work)", what, room_db_strerror(err));
}

void
room_notice(struct agent *a, const char *fmt, ...)
{
	json_object *ev = room_event_new("notice");
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_object_add(ev, "text", json_object_new_string(msg));
	room_emit(a, ev, 0);
}

json_object *
room_members(struct agent *a)
{
	json_object *arr = json_object_new_array();

	for (struct conn *c = a->conns; c; c = c->next) {
		int seen = 0;

		if (!conn_is_member(c) || c->closing || c->ending)
			continue;
		for (size_t i = 0; i < json_object_array_length(arr); i++)
			if (strcmp(json_object_get_string(
			    json_object_array_get_idx(arr, i)), c->user) == 0)
				seen = 1;
		if (!seen)
			json_object_array_add(arr,
			    json_object_new_string(c->user));
	}
	return arr;
}

/* 1 when c is a person in an interactive session (the terminal chat):
 * only they are announced as joining and leaving, and listed as here. */
static int
room_is_present(const struct conn *c)
{
	return c->kind == CONN_CHAT && !c->closing && !c->ending;
}

/* The people here (room_is_present), each once, and how long each has
 * been idle ({"alice": seconds}, the least of their sessions). */
static json_object *
room_present(struct agent *a, json_object **idle)
{
	json_object *arr = json_object_new_array(), *prev;
	long long now = time_mono_ms();

	*idle = json_object_new_object();
	for (struct conn *c = a->conns; c; c = c->next) {
		long long secs = (now - c->last_line_ms) / 1000;

		if (!room_is_present(c))
			continue;
		if (json_object_object_get_ex(*idle, c->user, &prev)) {
			if (secs < json_object_get_int64(prev))
				json_object_object_add(*idle, c->user,
				    json_object_new_int64(secs));
			continue;
		}
		json_object_array_add(arr, json_object_new_string(c->user));
		json_object_object_add(*idle, c->user,
		    json_object_new_int64(secs));
	}
	return arr;
}

/* A presence event: users (room_present), their idle seconds. */
json_object *
room_presence_event(struct agent *a)
{
	json_object *ev = room_event_new("presence"), *idle;

	json_object_object_add(ev, "users", room_present(a, &idle));
	json_object_object_add(ev, "idle", idle);
	json_object_object_add(ev, "term", term_members(a));
	return ev;
}








/* A presence event: who is here, and who joined or left. */
void
room_presence(struct agent *a, const char *how, const char *user)
{
	json_object *ev = room_presence_event(a);

	if (how)
		json_object_object_add(ev, how, json_object_new_string(user));
	room_emit(a, ev, 0);
}




void
room_emit_output(struct agent *a, const char *type, const char *id,
    int stream, struct buf *carry, const char *p, size_t n)
{
	json_object *ev;
	struct buf text;
	size_t done;

	if (buf_append(carry, p, n) < 0) {
		log_warn("%s: %zu bytes of output did not fit; dropped", id, n);
		buf_reset(carry);
		return;
	}
	done = utf8_complete(carry->data, carry->len);
	if (!done)
		return;
	buf_init(&text, done * 3 + 4);
	if (utf8_repair(&text, carry->data, done) == 0) {
		ev = room_event_new(type);
		json_object_object_add(ev, "id", json_object_new_string(id));
		json_object_object_add(ev, "stream", json_object_new_string(
		    stream == PROC_STDOUT ? "stdout" : "stderr"));
		json_object_object_add(ev, "text", json_object_new_string_len(
		    text.data, (int)text.len));
		room_emit(a, ev, 0);
	}
	buf_free(&text);
	buf_consume(carry, done);
}
