/*
 * chan_requests.c: what a session channel is for, picked by its first
 * request (chan_requests_bind sets libssh's callbacks for them):
 *   exec        a command in the room's sandbox (stream.c), or a room
 *               archive, atrium-export or atrium-import (stream.c, run by
 *               the monitor), or atrium-token (tokens for HTTP, kept by
 *               the monitor: whatever the SSH user names, no room is
 *               entered);
 *   subsystem   sftp (stream.c), atrium (the protocol, control.c) or
 *               rooms (one line listing the rooms the user may enter),
 *               or, on a relay session only, atrium-http (HTTP relayed
 *               by another node: http_bridge.h);
 *   shell       the chat (chat.c).
 * The request that picks a room kind is kept (req_kind, req_arg), so that
 * a room that turns out to live on another node of a cluster gets it
 * repeated there (relay.h).
 * Each is refused with a message on stderr when the room name is not one,
 * or when room_access_admit says the user may not do it there; a key's
 * forced command (command=) runs in place of any of them.  A later request
 * on a channel whose kind is picked is rejected.
 */
#include "chan_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "http_bridge.h"
#include "control.h"
#include "jsonl.h"
#include "log.h"
#include "monitor_ask.h"
#include "names.h"
#include "room_access.h"
#include "stream.h"
#include "token_args.h"

/* Shared by exec, subsystem and shell: is this request allowed to pick
 * the channel's kind?  Refuses bad room names with a message.  1 to go
 * on, 0 when refused (request still accepted so the client sees why), -1
 * to reject the request. */
static int
chan_begin(struct chan *c)
{
	char shown[80];

	phases_mark(&c->s->ph, PHASE_REQUEST);
	if (c->ops || c->finish)
		return -1;
	if (!room_name_valid(c->s->room)) {
		session_printable(c->s->room, shown, sizeof(shown));
		chan_refuse(c, "atrium: '%s' is not a room name: use 1-63 "
		    "characters of a-z, 0-9 and '-', starting with a letter "
		    "or digit (ssh -p PORT ROOM@HOST)", shown);
		return 0;
	}
	return 1;
}

/* Keep the request that picks c's kind (kind 'e', 's' or 'h'; arg the
 * command or subsystem), to repeat it on the room's home should the room
 * live on another host (relay.h).  0, or -1 when out of memory. */
static int
chan_remember(struct chan *c, char kind, const char *arg)
{
	c->req_kind = kind;
	if (arg && !(c->req_arg = strdup(arg)))
		return -1;
	return 0;
}

/* A usage error of atrium-token: why and how to use it on stderr, exit
 * status 2 (as a command-line tool's). */
static void
chan_token_usage(struct chan *c, const char *why)
{
	char shown[300], line[400];

	/* why may quote the client's words: printable ASCII only. */
	session_printable(why, shown, sizeof(shown));
	snprintf(line, sizeof(line), "atrium-token: %s\n", shown);
	chan_write_err(c, line, strlen(line));
	chan_write_err(c, token_usage, strlen(token_usage));
	chan_exit(c, 2, NULL);
}

/* The monitor's answer to atrium-token a: its text on stdout and exit
 * status 0, or its reason on stderr and exit status 1. */
static void
chan_token_ask(struct chan *c, const struct token_args *a)
{
	static const char *const ops[] = { "", "create", "list", "revoke" };
	char why[400];
	struct buf out;

	log_info("session %lu: %s: atrium-token %s", c->s->num, c->s->user,
	    ops[a->op]);
	if (monitor_ask_token(c->s, a, &out, why, sizeof(why)) < 0) {
		chan_refuse(c, "atrium-token: %s", why);
	} else {
		chan_write(c, out.data, out.len);
		chan_exit(c, 0, NULL);
	}
	buf_free(&out);
}

/* exec atrium-token (command): the monitor's tokens (privsep.h, token),
 * for whatever room the SSH user names, since none is entered.  A key
 * with a forced command runs that one, and only when it is atrium-token
 * itself: a token from any other restricted key would reach rooms past
 * its restriction.  The request's result for libssh: 0, or -1. */
static int
chan_token(struct chan *c, const char *command)
{
	struct token_args a;
	char why[300];

	phases_mark(&c->s->ph, PHASE_REQUEST);
	if (c->ops || c->finish)
		return -1;
	if (c->s->opts.command && !token_is_command(c->s->opts.command)) {
		log_info("session %lu: %s: atrium-token refused (forced "
		    "command)", c->s->num, c->s->user);
		chan_refuse(c, "atrium-token: this key has a forced command "
		    "(command= in authorized_keys), so it may not make or "
		    "manage tokens: a token would reach rooms past that "
		    "restriction");
		return 0;
	}
	if (c->s->opts.command)
		command = c->s->opts.command;
	if (token_args_parse(command, &a, why, sizeof(why)) < 0)
		chan_token_usage(c, why);
	else if (a.op == TOKEN_OP_HELP) {
		chan_write(c, token_usage, strlen(token_usage));
		chan_exit(c, 0, NULL);
	} else
		chan_token_ask(c, &a);
	return 0;
}

/* The key's command="..." in place of what the client asked (asked: the
 * command, the subsystem's name, or NULL for a shell), as sshd does.
 * The request's result for libssh: 0, or -1 when out of memory. */
static int
chan_forced(struct chan *c, const char *what, const char *asked)
{
	int r;

	if (token_is_command(c->s->opts.command))
		return chan_token(c, c->s->opts.command);
	log_info("session %lu: %s in %s: %s replaced by the key's forced "
	    "command", c->s->num, c->s->user, c->s->room, what);
	r = stream_open_forced(c, c->s->opts.command, asked);
	if (r == -E2BIG)
		chan_refuse(c, "atrium: this key has a forced command, and the "
		    "command asked for is longer than %d bytes, the most "
		    "SSH_ORIGINAL_COMMAND can pass on", STREAM_MAX_ORIGINAL);
	return r == -ENOMEM ? -1 : 0;
}

/* The room archive commands, which atriumd runs itself rather than in
 * the sandbox: 'e' for atrium-export, 'i' for atrium-import, else 0. */
static int
chan_archive_kind(const char *command)
{
	return strcmp(command, "atrium-export") == 0 ? 'e' :
	    strcmp(command, "atrium-import") == 0 ? 'i' : 0;
}

/* exec request: a command in the sandbox, or a room archive.  Whoever
 * may enter the room may export it; whoever may create it, while it does
 * not exist, may import it (the monitor checks the rest). */
static int
chan_exec_cb(ssh_session ssh, ssh_channel ch, const char *command, void *ud)
{
	struct chan *c = ud;
	int r, kind = chan_archive_kind(command);

	(void)ssh; (void)ch;
	if (token_is_command(command) || (c->s->opts.command &&
	    token_is_command(c->s->opts.command)))
		return chan_token(c, command);
	if ((r = chan_begin(c)) <= 0)
		return r;
	if (chan_remember(c, 'e', command) < 0)
		return -1;
	if (!room_access_admit(c, kind == 'e' ? "export" : kind == 'i' ?
	    "import" : "exec"))
		return 0;
	if (c->s->opts.command)
		return chan_forced(c, "exec", command);
	if (kind) {
		log_info("session %lu: %s in %s: %s", c->s->num, c->s->user,
		    c->s->room, command);
		return stream_open_archive(c, kind == 'i') < 0 ? -1 : 0;
	}
	log_info("session %lu: %s in %s: exec", c->s->num, c->s->user,
	    c->s->room);
	return stream_open(c, command) < 0 ? -1 : 0;
}

/* The listing came for the rooms subsystem (ev NULL: refused): its line,
 * then exit status 0 (1 when refused). */
static void
chan_rooms_done(void *arg, json_object *ev)
{
	struct chan *c = arg;
	struct buf line;

	c->rooms_ask = NULL;
	if (!ev) {
		chan_refuse(c, "atrium: cannot list the rooms now; try again");
		return;
	}
	buf_init(&line, CHAN_MAX_OUT);
	if (jsonl_format(&line, ev) == 0)
		chan_write(c, line.data, line.len);
	buf_free(&line);
	chan_exit(c, 0, NULL);
}

/* subsystem rooms: one `rooms` line (the rooms the user may enter), then
 * exit status 0, once the monitor answers (the loop does not wait for
 * it).  Under a forced command, the command runs instead. */
static int
chan_rooms(struct chan *c)
{
	int r = chan_begin(c);

	if (r <= 0)
		return r;
	if (c->s->opts.command)	/* it runs in the room: admitted first */
		return room_access_admit(c, "subsystem rooms") ?
		    chan_forced(c, "subsystem rooms", "rooms") : 0;
	log_info("session %lu: %s: subsystem rooms", c->s->num, c->s->user);
	if (!(c->rooms_ask = monitor_ask_rooms(c->s, chan_rooms_done, c)))
		return -1;
	return 0;
}

/* subsystem atrium-http (http_bridge.h): on a relay session only (a
 * node's host key, relay_accept.c); from anyone else it is rejected as
 * an unknown subsystem is. */
static int
chan_http_bridge(struct chan *c)
{
	int r;

	if (!c->s->relayed)
		return -1;
	if ((r = chan_begin(c)) <= 0)
		return r;
	return http_bridge_open(c) < 0 ? -1 : 0;
}

/* subsystem request: sftp, atrium, rooms, or atrium-http on a relay;
 * others are rejected. */
static int
chan_subsystem_cb(ssh_session ssh, ssh_channel ch, const char *name, void *ud)
{
	struct chan *c = ud;
	int r;

	(void)ssh; (void)ch;
	if (strcmp(name, "rooms") == 0)
		return chan_rooms(c);
	if (strcmp(name, HTTP_BRIDGE_SUBSYSTEM) == 0)
		return chan_http_bridge(c);
	if (strcmp(name, "sftp") != 0 && strcmp(name, "atrium") != 0)
		return -1;
	if ((r = chan_begin(c)) <= 0)
		return r;
	if (chan_remember(c, 's', name) < 0)
		return -1;
	if (!room_access_admit(c, strcmp(name, "sftp") == 0 ? "sftp" :
	    "the atrium subsystem"))
		return 0;
	if (c->s->opts.command)	/* sshd's forced command overrides these too */
		return chan_forced(c, strcmp(name, "sftp") == 0 ?
		    "subsystem sftp" : "subsystem atrium", name);
	log_info("session %lu: %s in %s: subsystem %s", c->s->num, c->s->user,
	    c->s->room, name);
	r = strcmp(name, "sftp") == 0 ? stream_open(c, NULL) : control_open(c);
	return r < 0 ? -1 : 0;
}

/* shell request: the chat. */
static int
chan_shell_cb(ssh_session ssh, ssh_channel ch, void *ud)
{
	struct chan *c = ud;
	int r = chan_begin(c);

	(void)ssh; (void)ch;
	if (r <= 0)
		return r;
	if (chan_remember(c, 'h', NULL) < 0)
		return -1;
	if (!room_access_admit(c, "chat"))
		return 0;
	if (c->s->opts.command)
		return chan_forced(c, "shell", NULL);
	log_info("session %lu: %s in %s: chat", c->s->num, c->s->user,
	    c->s->room);
	return chat_open(c) < 0 ? -1 : 0;
}

/* See chan_int.h. */
void
chan_requests_bind(struct ssh_channel_callbacks_struct *cb)
{
	cb->channel_exec_request_function = chan_exec_cb;
	cb->channel_subsystem_request_function = chan_subsystem_cb;
	cb->channel_shell_request_function = chan_shell_cb;
}
