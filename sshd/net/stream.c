/*
 * stream.c: exec requests and the sftp subsystem (stream.h).  Started by
 * chan_requests.c (an exec request, the sftp subsystem), then driven by
 * channel.c through chan_ops.
 *
 * The command runs in the room's sandbox, started by atrium-agent; atriumd
 * makes the pipes (or a pty pair), passes the command's ends with the exec
 * line (SCM_RIGHTS) and pumps its own ends:
 *
 *   client data  -> stdin pipe   (what the pipe cannot take stays in libssh,
 *                                 so the client's window closes: backpressure)
 *   stdout pipe  -> channel      through the channel's queues (chan_pump,
 *   stderr pipe  -> channel err   chan_flush): a pipe is read only while its
 *                                 queue has room, and what the channel does
 *                                 not take yet stays queued, so no byte is
 *                                 lost or reordered, whatever libssh returns
 *   client EOF   -> stdin closed
 *   exec_result  -> exit-status or exit-signal, once stdout and stderr hit
 *                   EOF and their queues are out (or after STREAM_LINGER_MS
 *                   without output when a background process keeps them
 *                   open)
 *
 * The sftp subsystem reports its changes: the exec line says so
 * ("reports_changes"), and whenever the client has sent a request that
 * may change the workspace (sftp_flow.h) the agent is told
 * ({"type":"exec_changed","id":ID,"pending":B,"ago_ms":N}), at most
 * once every STREAM_REPORT_MS (and at once at the client's EOF), and
 * again until a line goes out once the last such request was answered:
 * pending false, every change it reports is done, the last answer came
 * ago_ms before the line (so the rate does not make the time late).  The
 * agent stamps the session's audit row with the time each line gives,
 * so that an undo asks the session's user only when it changed files
 * after the undo's point, and a session that only read names nobody
 * (agent/exec.c).
 *
 * Workload: from a byte to gigabytes through stdin or stdout; the pipes are
 * enlarged so each read moves big chunks, and each loop turn moves up to
 * STREAM_TURN_READS chunks per pipe while the client's window allows.
 */
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "agentlink.h"
#include "git_path.h"
#include "log.h"
#include "room_access.h"
#include "monitor_ask.h"
#include "sftp_flow.h"
#include "user_cap.h"
#include "util.h"

#define STREAM_TURN_READS	8	/* reads per pipe per loop turn, at most */
#define STREAM_LINGER_MS	2000
#define STREAM_REPORT_MS	100	/* sftp's changes told at most this
					 * often (see the head) */

struct stream {
	struct chan *c;			/* owner */
	char *command;			/* bash -c this; NULL for sftp */
	int forced;			/* command is the key's command= */
	char *original;			/* with forced: SSH_ORIGINAL_COMMAND,
					 * NULL when the client asked for a
					 * shell */
	char id[32];			/* exec id on the agent link */
	struct agentlink link;		/* to the room's agent */
	int started;			/* exec line sent */
	int tty;			/* a pty instead of pipes */
	int in_fd;			/* stdin pipe (write end) or pty master */
	int out_fd;			/* stdout pipe (read end) or pty master */
	int err_fd;			/* stderr pipe (read end), -1 with tty */
	struct watch w_in, w_out, w_err;
	int in_full;			/* stdin pipe full: wait for POLLOUT */
	int eof_pending;		/* client EOF before the pipes existed */
	int out_eof, err_eof;		/* pipe ended (or failed) */
	int have_result;		/* exec_result (or the end) arrived */
	int code;			/* its exit code */
	char sig[16];			/* its signal name, or "" */
	long long last_io_ms;		/* output seen then */
	int sftp;			/* the sftp subsystem: flow counts */
	int archive;			/* 'e' atrium-export, 'i' atrium-import:
					 * helpers of the monitor, no agent */
	int status_fd;			/* archive: their exit status line */
	struct watch w_status;
	char status[16];		/* what came of it so far */
	size_t status_len;
	struct sftp_flow flow;		/* its requests and responses */
	unsigned long told;		/* sftp: changes the agent knows are
					 * done (sftp_flow_changes) */
	long long told_ms;		/* the last exec_changed, 0: none */
	unsigned long done_changes;	/* changes whose answers all came */
	long long done_ms;		/* when the last of them came */
};

static void stream_start_archive(struct chan *c);
static void stream_report_changes(struct stream *st, int now);

/* Poll set for the current state. */
static void
stream_update(struct stream *st)
{
	short out = 0, in = 0;

	if (st->out_fd >= 0 && !st->out_eof && chan_pump_wants(st->c, 0))
		out |= POLLIN;
	if (st->in_fd >= 0 && st->in_full)
		in |= POLLOUT;
	if (st->tty) {
		loop_want(&st->w_out, out | in);
		return;
	}
	if (st->out_fd >= 0)
		loop_want(&st->w_out, out);
	if (st->err_fd >= 0)
		loop_want(&st->w_err, !st->err_eof && chan_pump_wants(st->c, 1)
		    ? POLLIN : 0);
	if (st->in_fd >= 0)
		loop_want(&st->w_in, in);
}

/* Close our end of stdin (client EOF, or the command stopped reading). */
static void
stream_close_stdin(struct stream *st)
{
	if (st->tty || st->in_fd < 0)
		return;
	loop_del(&st->w_in);
	close(st->in_fd);
	st->in_fd = -1;
	st->in_full = 0;
}

/* Read one chunk of stdout (is_err: stderr) into the channel's queue.
 * 1 when bytes moved; 0 otherwise (EOF and read errors end that pipe). */
static int
stream_read(struct stream *st, int is_err)
{
	int fd = is_err ? st->err_fd : st->out_fd;
	int *eof = is_err ? &st->err_eof : &st->out_eof;
	size_t before = st->c->out.len;
	int r;

	if (fd < 0 || *eof)
		return 0;
	r = chan_pump(st->c, fd, is_err);
	if (r > 0) {
		if (st->sftp && !is_err) {
			sftp_flow_answered(&st->flow, st->c->out.data + before,
			    st->c->out.len - before);
			stream_report_changes(st, 0);
		}
		st->last_io_ms = time_mono_ms();
		return 1;
	}
	if (r == -EAGAIN || r == -ENOMEM)
		return 0;	/* nothing now; out of memory: try again later,
				 * rather than cut the output short */
	if (r < 0)
		log_warn("session %lu: reading the command's %s: %s",
		    st->c->s->num, is_err ? "stderr" : "stdout", strerror(-r));
	*eof = 1;
	return 0;
}

/* Move output while the window and the pipes allow, up to
 * STREAM_TURN_READS chunks a pipe (the loop serves other sessions too). */
static void
stream_pump(struct stream *st)
{
	for (int i = 0; i < STREAM_TURN_READS; i++) {
		int moved;

		chan_flush(st->c);
		moved = stream_read(st, 0);
		if (!st->tty)
			moved += stream_read(st, 1);
		if (!moved)
			break;
	}
	chan_flush(st->c);
}

/* Output side of a pipe or the pty master became ready. */
static void
stream_out_cb(struct watch *w, int revents)
{
	struct stream *st = w->arg;

	if (st->tty && (revents & POLLOUT))
		st->in_full = 0;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		stream_read(st, 0);
	stream_update(st);
}

/* stderr pipe ready. */
static void
stream_err_cb(struct watch *w, int revents)
{
	struct stream *st = w->arg;

	if (revents & (POLLIN | POLLHUP | POLLERR))
		stream_read(st, 1);
	stream_update(st);
}

/* stdin pipe writable again (or its reader went away). */
static void
stream_in_cb(struct watch *w, int revents)
{
	struct stream *st = w->arg;

	if (revents & POLLERR)
		stream_close_stdin(st);
	else
		st->in_full = 0;
	stream_update(st);
}

/* Tell the agent that the sftp session changed the workspace, if it did
 * since it was last told and now may be told (see the head); now: at
 * once, whatever the rate (the client's EOF). */
static void
stream_report_changes(struct stream *st, int now)
{
	unsigned long changes = sftp_flow_changes(&st->flow);
	long long t = time_mono_ms();
	int pending = !sftp_flow_changes_done(&st->flow);
	json_object *o;

	if (!st->sftp || !st->started || st->have_result || changes == st->told)
		return;
	if (!pending && st->done_changes != changes) {
		st->done_changes = changes;	/* called as the answer came */
		st->done_ms = t;
	}
	if (!now && st->told_ms && t - st->told_ms < STREAM_REPORT_MS) {
		chan_wake_at(st->c, st->told_ms + STREAM_REPORT_MS);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "type", json_object_new_string(
	    "exec_changed"));
	json_object_object_add(o, "id", json_object_new_string(st->id));
	json_object_object_add(o, "pending", json_object_new_boolean(pending));
	json_object_object_add(o, "ago_ms", json_object_new_int64(pending ? 0 :
	    t - st->done_ms));
	agentlink_send(&st->link, o);
	json_object_put(o);
	st->told_ms = t;
	if (!pending)
		st->told = changes;
	else
		chan_wake_at(st->c, t + STREAM_REPORT_MS);
}

/* Client bytes to stdin; 0 taken while not started or the pipe is full. */
static size_t
stream_input(struct chan *c, const char *p, size_t n)
{
	struct stream *st = c->kind;
	ssize_t w;

	if (!st->started && !st->have_result)
		return 0;
	if (st->in_fd < 0)
		return n;	/* nobody reads stdin any more: discard */
	if (st->in_full)
		return 0;
	if (st->sftp && (n = sftp_flow_allowed(&st->flow, p, n)) == 0)
		return 0;	/* sftp-server holds enough: see sftp_flow.h */
	w = write(st->in_fd, p, n);
	if (w > 0) {
		if (st->sftp) {
			sftp_flow_sent(&st->flow, p, (size_t)w);
			stream_report_changes(st, 0);
		}
		if ((size_t)w < n) {
			st->in_full = 1;	/* the pipe is full: wait for POLLOUT */
			stream_update(st);
		}
		return (size_t)w;
	}
	if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
		st->in_full = 1;
		stream_update(st);
		return 0;
	}
	stream_close_stdin(st);
	return n;
}

/* Client EOF: close stdin (later, if the pipes do not exist yet). */
static void
stream_eof(struct chan *c)
{
	struct stream *st = c->kind;

	if (!st->started)
		st->eof_pending = 1;
	stream_report_changes(st, 1);	/* before sftp-server sees the end */
	stream_close_stdin(st);
}

/* The exec is over as far as the agent can tell. */
static void
stream_set_result(struct stream *st, int code, const char *sig)
{
	if (st->have_result)
		return;
	st->have_result = 1;
	st->code = code;
	snprintf(st->sig, sizeof(st->sig), "%s", sig ? sig : "");
	st->last_io_ms = time_mono_ms();
}

/* A line from the agent: our exec_result, or an error. */
static void
stream_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct stream *st = arg;
	const char *type = json_get_string(obj, "type");
	const char *id = json_get_string(obj, "id");

	(void)line; (void)len;
	/* History is not this command's: an exec link asks for none, and a
	 * stored exec_result must never stand for this one's status. */
	if (!type || (id && strcmp(id, st->id) != 0) ||
	    json_get_bool(obj, "replay", 0))
		return;
	if (strcmp(type, "exec_result") == 0) {
		stream_set_result(st, (int)json_get_int(obj, "exitCode", 255),
		    json_get_string(obj, "signal"));
	} else if (strcmp(type, "access_denied") == 0) {
		/* Removed from the room (or refused at hello): the agent
		 * ends the command and the connection. */
		const char *msg = json_get_string(obj, "message");

		if (st->have_result)
			return;
		log_info("session %lu: %s: %s", st->c->s->num,
		    st->c->s->user, msg ? msg : "access denied");
		chan_write_err(st->c, msg ? msg : "atrium: access denied",
		    strlen(msg ? msg : "atrium: access denied"));
		chan_write_err(st->c, "\n", 1);
		stream_set_result(st, 1, NULL);
	} else if (strcmp(type, "error") == 0) {
		const char *msg = json_get_string(obj, "message");

		chan_write_err(st->c, "atrium: ", 8);
		chan_write_err(st->c, msg ? msg : "error", strlen(msg ? msg : "error"));
		chan_write_err(st->c, "\n", 1);
		stream_set_result(st, 1, NULL);
	}
}

/* The agent went away (restart or crash) before the result. */
static void
stream_end(void *arg)
{
	struct stream *st = arg;
	const char *msg = "atrium: the room's agent stopped while the command "
	    "ran; run it again\n";

	if (st->have_result)
		return;
	chan_write_err(st->c, msg, strlen(msg));
	stream_set_result(st, 255, NULL);
}

/* Make the command's stdio: three pipes, or a pty sized like the client.
 * theirs[] gets the command's ends.  0 or -errno. */
static int
stream_make_fds(struct stream *st, int theirs[3], int *ntheirs)
{
	int p[3][2], e;

	if (st->tty) {
		struct winsize ws = { .ws_row = (unsigned short)st->c->rows,
		    .ws_col = (unsigned short)st->c->cols };
		int master, slave;

		if (openpty(&master, &slave, NULL, NULL, &ws) < 0)
			return -errno;
		fd_set_cloexec(master, 1);
		fd_set_cloexec(slave, 1);
		fd_set_nonblock(master, 1);
		st->in_fd = st->out_fd = master;
		theirs[0] = slave;
		*ntheirs = 1;
		return 0;
	}
	/* The monitor makes them: only it may grow a pipe to 1 MiB once
	 * this user's pipes pass the kernel's per-user soft limit. */
	if ((e = monitor_ask_pipes(st->c->s->srv, p)) < 0)
		return e;
	/* Our ends never block the loop (a command that does not read its
	 * stdin would stall every session); theirs stay blocking. */
	for (int i = 0; i < 3; i++)
		fd_set_nonblock(p[i][i == 0 ? 1 : 0], 1);
	st->in_fd = p[0][1];
	theirs[0] = p[0][0];
	st->out_fd = p[1][0];
	theirs[1] = p[1][1];
	st->err_fd = p[2][0];
	theirs[2] = p[2][1];
	*ntheirs = 3;
	return 0;
}

/* SSH_CONNECTION, SSH_CLIENT and SSH_TTY, as sshd(8) sets them (after the
 * client's own, which cannot replace them).  Inside the sandbox a pty is
 * the command's /dev/console, so that is its SSH_TTY. */
static void
stream_ssh_env(struct stream *st, json_object *env)
{
	const char *conn = st->c->s->connection;
	char client[sizeof(st->c->s->connection)];
	const char *sp1, *sp2;

	if (!conn[0] || !(sp1 = strchr(conn, ' ')) ||
	    !(sp2 = strchr(sp1 + 1, ' ')))
		return;
	/* "CLIENT CPORT SERVER SPORT" -> "CLIENT CPORT SPORT" */
	snprintf(client, sizeof(client), "%.*s %s", (int)(sp2 - conn), conn,
	    strrchr(conn, ' ') + 1);
	json_object_object_add(env, "SSH_CONNECTION",
	    json_object_new_string(conn));
	json_object_object_add(env, "SSH_CLIENT", json_object_new_string(client));
	if (st->tty)
		json_object_object_add(env, "SSH_TTY",
		    json_object_new_string("/dev/console"));
}

/* May the client's variable e ("NAME=VALUE") reach the command?  Any,
 * except under a forced command: then LANG and LC_* only (sshd's usual
 * AcceptEnv), since BASH_ENV, PATH or LD_PRELOAD would let the client run
 * what it likes in place of the key's command. */
static int
stream_env_allowed(const struct stream *st, const char *e)
{
	return !st->forced || strncmp(e, "LANG=", 5) == 0 ||
	    strncmp(e, "LC_", 3) == 0;
}

/* The exec line: command or argv, fds, tty and the client's env. */
static json_object *
stream_exec_line(struct stream *st, int nfds)
{
	json_object *o = json_object_new_object(), *env = json_object_new_object();
	struct chan *c = st->c;

	json_object_object_add(o, "type", json_object_new_string("exec"));
	json_object_object_add(o, "id", json_object_new_string(st->id));
	if (st->command) {
		json_object_object_add(o, "command",
		    json_object_new_string(st->command));
	} else {
		json_object *argv = json_object_new_array();

		json_object_array_add(argv, json_object_new_string(STREAM_SFTP_SERVER));
		json_object_array_add(argv, json_object_new_string("-d"));
		json_object_array_add(argv, json_object_new_string("/workspace"));
		json_object_object_add(o, "argv", argv);
	}
	if (st->sftp)	/* stream_report_changes tells what it changes */
		json_object_object_add(o, "reports_changes",
		    json_object_new_boolean(1));
	json_object_object_add(o, "fds", json_object_new_int(nfds));
	json_object_object_add(o, "tty", json_object_new_boolean(st->tty));
	for (int i = 0; i < c->nenv; i++) {
		char *eq = strchr(c->env[i], '=');

		if (!stream_env_allowed(st, c->env[i]))
			continue;
		*eq = '\0';
		json_object_object_add(env, c->env[i], json_object_new_string(eq + 1));
		*eq = '=';
	}
	if (c->pty && c->term[0])
		json_object_object_add(env, "TERM", json_object_new_string(c->term));
	stream_ssh_env(st, env);
	if (st->original)
		json_object_object_add(env, "SSH_ORIGINAL_COMMAND",
		    json_object_new_string(st->original));
	json_object_object_add(o, "env", env);
	return o;
}

/* Send exec with the command's fds (the monitor wrote the hello). */
static int
stream_send_exec(struct stream *st)
{
	int theirs[3], n = 0, r;
	json_object *exec;

	if ((r = stream_make_fds(st, theirs, &n)) < 0)
		return r;
	exec = stream_exec_line(st, n);
	r = agentlink_send_fds(&st->link, exec, theirs, n);
	json_object_put(exec);
	for (int i = 0; i < n; i++)
		close(theirs[i]);
	return r;
}

/* Watch fd with fn (arg st) on the server's loop; its firing pokes the
 * session, whose tick then moves what came (session.h: session_due). */
static void
stream_watch(struct stream *st, struct watch *w, int fd, short want,
    watch_fn fn)
{
	loop_add(&st->c->s->srv->loop, w, fd, want, fn, st);
	loop_mark(w, &st->c->s->poke);
}

/* Room ready: connect, send, start pumping. */
static void
stream_start(struct chan *c)
{
	static const struct monitor_hello exec_hello = {
		.kind = "exec", .since = -1,
	};
	struct stream *st = c->kind;
	int rc;

	rc = chan_start_agent(c, &st->link, &exec_hello, stream_line,
	    stream_end, st);
	if (rc > 0)
		return;		/* the agent is restarting */
	if (rc < 0 || (rc = stream_send_exec(st)) < 0) {
		log_error("session %lu: cannot start the command in %s: %s",
		    c->s->num, c->s->room, strerror(-rc));
		chan_refuse(c, "atrium: cannot start the command in room '%s' "
		    "(%s); try again", c->s->room, strerror(-rc));
		return;
	}
	st->started = 1;
	st->last_io_ms = time_mono_ms();
	if (st->tty) {
		stream_watch(st, &st->w_out, st->out_fd, POLLIN, stream_out_cb);
	} else {
		stream_watch(st, &st->w_out, st->out_fd, POLLIN, stream_out_cb);
		stream_watch(st, &st->w_err, st->err_fd, POLLIN, stream_err_cb);
		stream_watch(st, &st->w_in, st->in_fd, 0, stream_in_cb);
	}
	if (st->eof_pending)
		stream_close_stdin(st);
}

/* Move output (libssh 0.10 does not say when the client grows its window,
 * so every turn looks: libssh_compat.c W2); finish once the command is
 * over and everything it wrote is out. */
static void
stream_tick(struct chan *c)
{
	struct stream *st = c->kind;
	int out_done, err_done;

	if (st->archive && !st->started && !st->have_result)
		stream_start_archive(c);
	if (!st->started)
		return;
	stream_pump(st);
	stream_update(st);
	stream_report_changes(st, 0);
	out_done = st->out_eof || st->out_fd < 0;
	err_done = st->tty || st->err_eof || st->err_fd < 0;
	if (!st->have_result)
		return;
	/* Queued output is the client being slow, not a stuck command. */
	if (!(out_done && err_done) && (c->out.len || c->err.len ||
	    time_mono_ms() - st->last_io_ms < STREAM_LINGER_MS)) {
		chan_wake_soon(c);	/* the linger is polled */
		return;
	}
	/* Killed by the stop (the room stops with atriumd): say so. */
	if (c->s->srv->stopping)
		chan_end(c, SERVER_STOP_MSG);
	chan_exit(c, st->code, st->sig[0] ? st->sig : NULL);
}

/* Forward window changes to the pty. */
static void
stream_resize(struct chan *c)
{
	struct stream *st = c->kind;
	struct winsize ws = { .ws_row = (unsigned short)c->rows,
	    .ws_col = (unsigned short)c->cols };

	if (st->tty && st->out_fd >= 0)
		ioctl(st->out_fd, TIOCSWINSZ, &ws);
}

/* Send a signal line for our exec. */
static void
stream_send_signal(struct stream *st, const char *sig)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string("signal"));
	json_object_object_add(o, "id", json_object_new_string(st->id));
	json_object_object_add(o, "signal", json_object_new_string(sig));
	agentlink_send(&st->link, o);
	json_object_put(o);
}

/* A signal request from the client, for our running exec. */
static void
stream_signal(struct chan *c, const char *sig)
{
	struct stream *st = c->kind;

	if (st->started && !st->have_result)
		stream_send_signal(st, sig);
}

/* Channel gone: kill a command still running, close everything. */
static void
stream_free(struct chan *c)
{
	struct stream *st = c->kind;

	if (st->started && !st->have_result && !st->archive) {
		log_info("session %lu: client left during %s; killing it",
		    c->s->num, st->id);
		stream_send_signal(st, "KILL");
	}
	/* An archive's helpers see their pipes close and end (an import
	 * cut short removes its room). */
	loop_del(&st->w_status);
	if (st->status_fd >= 0)
		close(st->status_fd);
	agentlink_close(&st->link);
	loop_del(&st->w_in);
	loop_del(&st->w_out);
	loop_del(&st->w_err);
	if (st->in_fd >= 0 && st->in_fd != st->out_fd)
		close(st->in_fd);
	if (st->out_fd >= 0)
		close(st->out_fd);
	if (st->err_fd >= 0)
		close(st->err_fd);
	free(st->command);
	free(st->original);
	free(st);
}

/* The status line of an archive's helpers: its exit status once whole
 * (a status pipe that closes without one: the monitor went away). */
static void
stream_status_cb(struct watch *w, int revents)
{
	struct stream *st = w->arg;
	ssize_t n = read(st->status_fd, st->status + st->status_len,
	    sizeof(st->status) - 1 - st->status_len);

	(void)revents;
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		st->status_len += (size_t)n;
		st->status[st->status_len] = '\0';
		if (!strchr(st->status, '\n') &&
		    st->status_len < sizeof(st->status) - 1)
			return;
	}
	loop_del(&st->w_status);
	close(st->status_fd);
	st->status_fd = -1;
	stream_set_result(st, strchr(st->status, '\n') ?
	    (int)strtol(st->status, NULL, 10) : 255, NULL);
	chan_wake_soon(st->c);
}

/* atrium-export or atrium-import: the monitor starts the helpers and
 * hands over their pipes (room_transfer.h); they are pumped as a
 * command's are. */
static void
stream_start_archive(struct chan *c)
{
	struct stream *st = c->kind;
	char why[256];
	int f[3], r;

	r = monitor_ask_transfer(c->s, st->archive == 'i', f, why, sizeof(why));
	if (r < 0) {
		log_info("session %lu: %s: %s of room %s refused: %s",
		    c->s->num, c->s->user, st->archive == 'i' ? "import" :
		    "export", c->s->room, why);
		chan_refuse(c, "atrium: %s", why);
		stream_set_result(st, 1, NULL);
		return;
	}
	if (st->archive == 'i')
		st->in_fd = f[0];
	else
		st->out_fd = f[0];
	st->err_fd = f[1];
	st->status_fd = f[2];
	for (int i = 0; i < 3; i++)
		fd_set_nonblock(f[i], 1);
	st->started = 1;
	st->last_io_ms = time_mono_ms();
	if (st->out_fd >= 0)
		stream_watch(st, &st->w_out, st->out_fd, POLLIN, stream_out_cb);
	stream_watch(st, &st->w_err, st->err_fd, POLLIN, stream_err_cb);
	if (st->in_fd >= 0)
		stream_watch(st, &st->w_in, st->in_fd, 0, stream_in_cb);
	stream_watch(st, &st->w_status, st->status_fd, POLLIN,
	    stream_status_cb);
	if (st->eof_pending)
		stream_close_stdin(st);
}

static const struct chan_ops stream_ops = {
	.name = "exec",
	.input = stream_input,
	.eof = stream_eof,
	.start = stream_start,
	.tick = stream_tick,
	.resize = stream_resize,
	.signal = stream_signal,
	.free = stream_free,
};

/* The command to run for what the client asked: git's absolute paths
 * fall back to the workspace (git_path.h).  NULL when out of memory. */
static char *
stream_command(const char *asked)
{
	size_t len = 2 * strlen(asked) + 96;
	char *cmd = malloc(len);

	if (cmd && git_path_command(asked, cmd, len) != 1)
		snprintf(cmd, len, "%s", asked);
	return cmd;
}

/* See stream.h. */
int
stream_busy(const struct chan *c)
{
	return c->ops == &stream_ops &&
	    !((const struct stream *)c->kind)->have_result;
}

/* See stream.h. */
int
stream_sftp(const struct chan *c)
{
	return c->ops == &stream_ops &&
	    ((const struct stream *)c->kind)->sftp;
}

/* Refuse c when its user already runs max-commands-per-user commands
 * (user_cap.h).  1 when refused. */
static int
stream_over_user_cap(struct chan *c)
{
	char msg[512];

	if (!user_cap_full(c, msg, sizeof(msg)))
		return 0;
	chan_refuse(c, "%s", msg);
	return 1;
}

/* Make st c's kind and wait for the room. */
static void
stream_attach(struct chan *c, struct stream *st)
{
	st->c = c;
	st->in_fd = st->out_fd = st->err_fd = st->status_fd = -1;
	agentlink_init(&st->link);
	chan_new_id(c, st->id, sizeof(st->id));
	c->kind = st;
	c->ops = &stream_ops;
	chan_wait_room(c);
}

/* See stream.h. */
int
stream_open(struct chan *c, const char *command)
{
	struct stream *st;

	if (stream_over_user_cap(c))
		return 0;
	st = calloc(1, sizeof(*st));
	if (!st || (command && !(st->command = stream_command(command)))) {
		free(st);
		return -ENOMEM;
	}
	st->tty = command && c->pty;
	st->sftp = !command;
	stream_attach(c, st);
	return 0;
}

/* See stream.h. */
int
stream_open_archive(struct chan *c, int import)
{
	struct stream *st;

	if (stream_over_user_cap(c))
		return 0;
	if (!(st = calloc(1, sizeof(*st))))
		return -ENOMEM;
	st->archive = import ? 'i' : 'e';
	st->c = c;
	st->in_fd = st->out_fd = st->err_fd = st->status_fd = -1;
	agentlink_init(&st->link);
	chan_new_id(c, st->id, sizeof(st->id));
	c->kind = st;
	c->ops = &stream_ops;
	chan_wake_soon(c);	/* the next tick asks the monitor */
	return 0;
}

/* See stream.h. */
int
stream_open_forced(struct chan *c, const char *command, const char *original)
{
	struct stream *st;

	if (original && strlen(original) > STREAM_MAX_ORIGINAL)
		return -E2BIG;
	if (stream_over_user_cap(c))
		return 0;
	if (!(st = calloc(1, sizeof(*st))))
		return -ENOMEM;
	st->command = strdup(command);	/* the operator's: run as written */
	st->original = original ? strdup(original) : NULL;
	if (!st->command || (original && !st->original)) {
		free(st->command);
		free(st->original);
		free(st);
		return -ENOMEM;
	}
	st->forced = 1;
	st->tty = c->pty;
	stream_attach(c, st);
	return 0;
}
