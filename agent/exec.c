/*
 * exec.c: people's commands (exec.h).  Three shapes of one request:
 *
 *   with fds   atriumd's `ssh ROOM@host CMD`: the command reads and writes
 *              the passed fds directly; exec_result carries only the status.
 *   captured   no fds: stdin is the request's string, stdout and stderr are
 *              collected (each capped at PROTO_MAX_CAPTURE) into exec_result.
 *   shared     share = true, the chat's "!cmd": exec_start, exec_output and
 *              exec_result go to every member (start and result stored).
 *              Until its result is stored, a shared command is marked open
 *              in room.db (room_db_exec_open, in its start's transaction),
 *              and each piece of its output is kept beside the mark in
 *              the commit before the room is sent it (exec_save): one
 *              that a restart or a crash cut gets, when the agent starts
 *              again, an exec_result of its own, interrupted, with the
 *              output it had shown, so no block stays open in the record
 *              and what it printed stays in it (exec_recover).
 *
 * Every command is audited in room.db (who, command, cwd, status, times,
 * and whether it changed the workspace: undo_mark_start/end, for undo's
 * attribution).  A command that reports its own changes (atriumd's sftp
 * subsystem, "reports_changes" on an exec connection, which atriumd
 * alone opens) is not marked: a session may stay open for hours while
 * others write, and the count of changes would make it theirs.  Its row
 * says "wrote nothing" from the start, and each exec_changed line from
 * atriumd stamps it with the time of the change (now less its ago_ms:
 * room_db_audit_changed), once more at its end when the last line said
 * changes were still under way; so an undo asks its user only when it
 * changed files after the undo's point.
 * Each exec line from a chat or control connection is answered on that
 * connection alone with exactly one unstamped {"type":"exec_done"} once it
 * is over (refused, or its command ended; exec_done_to): atriumd counts a
 * person's commands across rooms with it (max-commands-per-user) and
 * takes the line out.  It goes only to the connection that asked, so no
 * member can end another's count; execs on atriumd's exec connections
 * (ssh ROOM@host CMD) are counted by their channel instead.
 * A command belongs to the connection that asked for it: when that closes,
 * the command is killed.  exec_result of a command killed by a signal has
 * exitCode 128+N and the signal's name.
 *
 * A `signal` request reaches a command from the connection that started
 * it, and, for a shared command, from any member connection of the person
 * who started it or of the room's owner (or an admin): nobody else may
 * stop another's work.  The last signal sent and who sent it go into the
 * shared command's exec_result (stop_signal, stopped_by), so the room sees
 * how it was stopped, live and in history.
 */
#include "exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "input_limits.h"
#include "journal.h"
#include "log.h"
#include "names.h"
#include "proc.h"
#include "protocol.h"
#include "room_events.h"
#include "room_access_list.h"
#include "room_db.h"
#include "text.h"
#include "undo.h"
#include "utf8.h"

#define EXEC_MAX_ENV	16	/* variables a request may set */
#define EXEC_MAX_ARGV	1024

struct exec {
	struct exec *next;
	struct agent *a;
	struct conn *owner;		/* NULL once it left */
	char id[64];
	char user[64];
	int share;			/* broadcast start, output, result */
	int passed_fds;			/* the command had the client's fds */
	struct proc *proc;		/* NULL once ended */
	long long audit_id;
	struct undo_mark mark;        /* did it change the workspace? */
	int reports;			/* tells its changes (exec_changed);
					 * not marked */
	int unsettled;			/* the last exec_changed said some were
					 * still under way */
	struct buf out[2];		/* captured stdout, stderr */
	int truncated;
	struct buf carry[2];		/* shared output not yet sent: an
				 * unfinished UTF-8 sequence and one chunk */
	long long reserved;		/* room.db bytes promised to its
					 * result (input_limits_take) */
	int stop_sig;			/* the last signal a request sent, 0:
					 * none */
	char stopped_by[64];		/* who sent it */
	size_t saved[2];		/* bytes of out[] kept in room.db */
	int nsaved;			/* pieces of output kept there, -1:
					 * no more (a write failed) */
};

int
exec_count(struct agent *a)
{
	int n = 0;

	for (struct exec *e = a->execs; e; e = e->next)
		n++;
	return n;
}

static void
exec_free(struct exec *e)
{
	/* Its result is stored, or will never be. */
	if (e->a)
		input_limits_release(e->a, e->reserved);
	for (int i = 0; i < 2; i++) {
		buf_free(&e->out[i]);
		buf_free(&e->carry[i]);
	}
	free(e);
}

/* Take e off the agent's list. */
static void
exec_unlink(struct agent *a, struct exec *e)
{
	for (struct exec **pp = &a->execs; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			return;
		}
	}
}

/* Bytes of b from its start that end on a whole UTF-8 sequence: an
 * unfinished one at its end waits for the bytes that finish it. */
static size_t
exec_whole_utf8(const struct buf *b)
{
	size_t n = b->len, back = 0;

	while (back < 3 && back < n &&
	    ((unsigned char)b->data[n - 1 - back] & 0xc0) == 0x80)
		back++;
	if (back < n) {
		unsigned char lead = (unsigned char)b->data[n - 1 - back];
		size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 :
		    lead >= 0xc0 ? 2 : 1;

		if (need > back + 1 && need <= 4)
			return n - 1 - back;
	}
	return n;
}

/* Take the NUL bytes out of t: one would end the stored text, and the
 * chat shows none anyway. */
static void
exec_drop_nuls(struct buf *t)
{
	size_t o = 0;

	for (size_t i = 0; i < t->len; i++)
		if (t->data[i] != '\0')
			t->data[o++] = t->data[i];
	t->len = o;
}

/* Keep in room.db, in the loop's transaction, the output of stream s
 * (0 stdout, 1 stderr) that came since the last time: committed before
 * the loop sends what it announced, so what the room was shown of a
 * shared command is in room.db when a restart cuts it (exec_recover).  A
 * failure is logged once, and no more is kept: the command runs on, and
 * its result, if it ends, holds its output all the same. */
static void
exec_save(struct exec *e, int s)
{
	size_t end = exec_whole_utf8(&e->out[s]);
	struct buf t;
	int r;

	if (e->nsaved < 0 || end <= e->saved[s])
		return;
	buf_init(&t, (end - e->saved[s]) * 3 + 1);
	r = utf8_repair(&t, e->out[s].data + e->saved[s], end - e->saved[s]);
	if (r == 0)
		exec_drop_nuls(&t);
	if (r == 0)
		r = room_db_exec_output_add(e->a->db, e->id, s, e->nsaved,
		    t.data ? t.data : "", t.len);
	buf_free(&t);
	if (r < 0) {
		log_error("%s: its output is no longer kept as it comes (a "
		    "restart would lose it): %s", e->id, room_db_strerror(r));
		e->nsaved = -1;
		return;
	}
	e->saved[s] = end;
	e->nsaved++;
}

static void
exec_on_output(void *arg, int stream, const char *p, size_t n)
{
	struct exec *e = arg;
	struct buf *b = &e->out[stream - 1];
	size_t take = n < buf_room(b) ? n : buf_room(b);

	if (e->share)
		room_emit_output(e->a, "exec_output", e->id, stream,
		    &e->carry[stream - 1], p, n);
	if (take < n)
		e->truncated = 1;
	buf_append(b, p, take);
	if (e->share && take)
		exec_save(e, stream - 1);
}

/* Add the captured text of one stream to ev, as valid UTF-8. */
static void
exec_add_capture(json_object *ev, const char *key, struct buf *b)
{
	struct buf t;

	buf_init(&t, b->len * 3 + 4);
	if (utf8_repair(&t, b->data ? b->data : "", b->len) == 0)
		json_object_object_add(ev, key, json_object_new_string_len(
		    t.data ? t.data : "", (int)t.len));
	buf_free(&t);
}

/* Room left in one protocol line for an exec_result's other fields. */
#define EXEC_RESULT_SLACK	4096

/* Bytes of ev as one protocol line. */
static size_t
exec_line_len(json_object *ev)
{
	return strlen(json_object_to_json_string_ext(ev,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Add the outputs out (stdout, stderr) to ev.  Escaping can make them take
 * up to six times their bytes, and a line over PROTO_MAX_LINE would be
 * refused whole, result and exit status with it: so while the line is too
 * long, the captures are halved (keeping their heads) and marked
 * truncated. */
static void
exec_add_outputs(json_object *ev, struct buf out[2], int *truncated)
{
	for (;;) {
		exec_add_capture(ev, "stdout", &out[0]);
		exec_add_capture(ev, "stderr", &out[1]);
		if (exec_line_len(ev) + EXEC_RESULT_SLACK <= PROTO_MAX_LINE)
			break;
		for (int i = 0; i < 2; i++)
			buf_truncate(&out[i], out[i].len / 2);
		*truncated = 1;
	}
	if (*truncated)
		json_object_object_add(ev, "truncated",
		    json_object_new_boolean(1));
}

/* The same with e's captures. */
static void
exec_add_captures(json_object *ev, struct exec *e)
{
	exec_add_outputs(ev, e->out, &e->truncated);
}

/* The words /history finds a shared command by when someone stopped it,
 * as the chat shows them ("alice's command ended by SIGINT", "... from
 * bob", "exit 1 (bob sent SIGTERM)"), into ev's text. */
static void
exec_stopped_text(struct exec *e, json_object *ev)
{
	const char *sig = json_get_string(ev, "signal");
	const char *stop = proc_signal_name(e->stop_sig) ?: "unknown";
	char text[256];
	int n;

	if (sig)
		n = snprintf(text, sizeof(text), "%s's command ended by SIG%s",
		    e->user, sig);
	else
		n = snprintf(text, sizeof(text), "exit %lld",
		    json_get_int(ev, "exitCode", -1));
	if (n > 0 && (size_t)n < sizeof(text) && (!sig ||
	    strcmp(e->stopped_by, e->user) || strcmp(stop, sig)))
		snprintf(text + n, sizeof(text) - (size_t)n, sig && !strcmp(stop,
		    sig) ? " from %s" : " (%s sent SIG%s)", e->stopped_by, stop);
	json_object_object_add(ev, "text", json_object_new_string(text));
}

/* The exec_result event for e's end. */
static json_object *
exec_result_event(struct exec *e, const struct proc_end *end)
{
	json_object *ev = room_event_new("exec_result");
	const char *sig = NULL;
	int code = end->how.code;

	json_object_object_add(ev, "id", json_object_new_string(e->id));
	if (e->share)
		json_object_object_add(ev, "user", json_object_new_string(e->user));
	if (e->share && e->stop_sig) {
		json_object_object_add(ev, "stop_signal", json_object_new_string(
		    proc_signal_name(e->stop_sig) ?: "unknown"));
		json_object_object_add(ev, "stopped_by",
		    json_object_new_string(e->stopped_by));
	}
	if (end->how.how == SANDBOX_SIGNALED) {
		sig = proc_signal_name(code);
		code += 128;
	}
	json_object_object_add(ev, "exitCode", json_object_new_int(code));
	if (end->how.how == SANDBOX_SIGNALED)
		json_object_object_add(ev, "signal",
		    json_object_new_string(sig ? sig : "unknown"));
	if (end->timed_out)
		json_object_object_add(ev, "timedOut",
		    json_object_new_boolean(1));
	if (e->share && e->stop_sig)
		exec_stopped_text(e, ev);
	if (!e->passed_fds)
		exec_add_captures(ev, e);
	return ev;
}

/* Record that e changed the workspace ago_ms before now (see the
 * head).  Logged on failure. */
static void
exec_stamp_change(struct agent *a, struct exec *e, long long ago_ms)
{
	int r = room_db_audit_changed(a->db, e->audit_id, ago_ms);

	if (r < 0)
		log_error("%s: a change of audit row %lld not recorded: %s",
		    e->id, e->audit_id, room_db_strerror(r));
}

/* Record how e ended.  The command has run: a failure (logged by room_db)
 * leaves its audit row without an end, which says so. */
static void
exec_audit_end(struct agent *a, struct exec *e, int code, const char *sig)
{
	int r = room_db_audit_end(a->db, e->audit_id, code, sig);

	if (r == 0 && !e->reports)
		undo_mark_end(a, &e->mark, e->audit_id);
	else if (r == 0 && e->unsettled)	/* done by now: it has ended */
		exec_stamp_change(a, e, 0);
	if (r < 0)
		log_error("%s: the end of audit row %lld not recorded: %s",
		    e->id, e->audit_id, room_db_strerror(r));
}

/* Tell atriumd that an exec line of c is over (see the head). */
static void
exec_done_to(struct conn *c)
{
	if (c && c->kind != CONN_EXEC)
		room_send_link(c, "{\"type\":\"exec_done\"}");
}

/* Store and announce ev, the exec_result of the shared command id, which
 * is then open no more.  Takes ev.  0, or -errno when room.db did not take
 * it (nobody was told). */
static int
exec_record_end(struct agent *a, const char *id, json_object *ev)
{
	int r = room_db_exec_closed(a->db, id);

	if (r < 0) {
		json_object_put(ev);
		journal_abort(a->journal, r);
		return r;
	}
	return room_emit(a, ev, 1);
}

static void
exec_on_exit(void *arg, const struct proc_end *end)
{
	struct exec *e = arg;
	struct agent *a = e->a;
	json_object *ev = exec_result_event(e, end);
	char signame[16] = "";

	if (end->how.how == SANDBOX_SIGNALED)
		snprintf(signame, sizeof(signame), "%s",
		    proc_signal_name(end->how.code) ?
		    proc_signal_name(end->how.code) : "unknown");
	exec_audit_end(a, e, end->how.how == SANDBOX_EXITED ?
	    end->how.code : 128 + end->how.code, signame[0] ? signame : NULL);
	exec_done_to(e->owner);
	for (int s = 0; e->share && s < 2; s++)
		if (e->carry[s].len)
			room_emit_output(a, "exec_output", e->id, s + 1,
			    &e->carry[s], "", 0);
	if (e->share) {
		if (e->owner && e->owner->kind == CONN_EXEC)
			room_send(e->owner, json_object_get(ev));
		if (exec_record_end(a, e->id, ev) < 0 && e->owner &&
		    e->owner->kind != CONN_EXEC)
			room_error(e->owner, e->id, "command %s ended, but the "
			    "room could not record its result, so the room was "
			    "not shown it", e->id);
	} else if (e->owner) {
		room_send(e->owner, ev);
	} else {
		json_object_put(ev);
	}
	e->proc = NULL;
	exec_unlink(a, e);
	exec_free(e);
}

/* A shared command whose start the room was shown, but which could not
 * be started (the error went to whoever asked): its end, exit 126 as a
 * shell says of a command it cannot run, so its block does not stay
 * open. */
static void
exec_not_run(struct agent *a, struct exec *e)
{
	json_object *ev = room_event_new("exec_result");
	int r;

	json_object_object_add(ev, "id", json_object_new_string(e->id));
	json_object_object_add(ev, "exitCode", json_object_new_int(126));
	if ((r = exec_record_end(a, e->id, ev)) < 0)
		log_error("%s: the end of a command that did not start was not "
		    "recorded: %s", e->id, room_db_strerror(r));
}

/* The request's cwd inside the sandbox, into out.  0 or -EPERM. */
static int
exec_cwd(const char *cwd, char *out, size_t outlen)
{
	char rel[PATH_MAX];
	int r;

	if (!cwd || !*cwd) {
		snprintf(out, outlen, "/workspace");
		return 0;
	}
	if (strncmp(cwd, "/workspace", 10) == 0 &&
	    (cwd[10] == '/' || cwd[10] == '\0'))
		cwd += 10;
	else if (cwd[0] == '/')
		return -EPERM;
	r = workspace_path_normalize(cwd, rel, sizeof(rel));
	if (r < 0)
		return r;
	if (strcmp(rel, ".") == 0)
		rel[0] = '\0';
	if (strlen(rel) + 12 > outlen)
		return -ENAMETOOLONG;
	memcpy(out, "/workspace", 10);
	out[10] = rel[0] ? '/' : '\0';
	memcpy(out + 11, rel, strlen(rel) + 1);
	return 0;
}

/* NAME=VALUE strings from the request's env object (at most
 * EXEC_MAX_ENV).  0, or -EINVAL with a reason sent to c. */
static int
exec_env(struct conn *c, json_object *req, char **env, char *store,
    size_t storelen)
{
	json_object *obj = NULL;
	size_t used = 0;
	int n = 0;

	env[0] = NULL;
	if (!json_object_object_get_ex(req, "env", &obj) || !obj)
		return 0;
	if (!json_object_is_type(obj, json_type_object))
		return -EINVAL;
	json_object_object_foreach(obj, k, v) {
		int len;

		if (n == EXEC_MAX_ENV || !json_object_is_type(v,
		    json_type_string) || strspn(k, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(k) ||
		    !*k || (k[0] >= '0' && k[0] <= '9'))
			return -EINVAL;
		len = snprintf(store + used, storelen - used, "%s=%s", k,
		    json_object_get_string(v));
		if (len < 0 || (size_t)len >= storelen - used)
			return -EINVAL;
		env[n++] = store + used;
		used += (size_t)len + 1;
	}
	env[n] = NULL;
	return 0;
}

/* argv from the request's array into v (NULL-terminated).  Count, or
 * -EINVAL. */
static int
exec_argv(json_object *arr, char **v)
{
	size_t n = json_object_array_length(arr);

	if (n == 0 || n >= EXEC_MAX_ARGV)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(arr, i);

		if (!json_object_is_type(s, json_type_string))
			return -EINVAL;
		v[i] = (char *)json_object_get_string(s);
	}
	v[n] = NULL;
	return (int)n;
}

/* Take the fds the line announced.  Count taken (0 when none), or -EBADF
 * (reported to c). */
static int
exec_fds(struct conn *c, json_object *req, const char *id, int tty, int *fds)
{
	long long n = json_get_int(req, "fds", 0);

	if (n == 0)
		return 0;
	if (!((n == 3 && !tty) || (n == 1 && tty)) ||
	    conn_take_fds(c, fds, (int)n) < 0) {
		room_error(c, id, "exec announced %lld fds but %s: send 3 "
		    "(stdin, stdout, stderr) or 1 with tty, with the line",
		    n, c->nfds < n ? "fewer arrived" : "that count is wrong");
		/* Those that came with this line serve nothing now. */
		conn_drop_fds(c);
		return -EBADF;
	}
	if (n == 1)
		fds[1] = fds[2] = fds[0];
	return (int)n;
}

/* Start e's process with the request's settings.  0 or -errno (reported). */
static int
exec_spawn(struct agent *a, struct conn *c, struct exec *e, json_object *req,
    char **argv, const char *cwd, int *fds, int nfds)
{
	struct proc_opts o = { .fds = { -1, -1, -1 } };
	char *env[EXEC_MAX_ENV + 1], envstore[8192];
	json_object *js;
	int r;

	if (exec_env(c, req, env, envstore, sizeof(envstore)) < 0) {
		room_error(c, e->id, "env must be an object of at most %d "
		    "NAME: \"value\" pairs", EXEC_MAX_ENV);
		return -EINVAL;
	}
	o.shell = argv ? NULL : json_get_string(req, "command");
	o.argv = argv;
	o.cwd = cwd;
	o.env = env;
	o.tty = json_get_bool(req, "tty", 0);
	if (nfds)
		memcpy(o.fds, fds, sizeof(o.fds));
	o.capture = !nfds;
	js = NULL;
	json_object_object_get_ex(req, "stdin", &js);
	if (!nfds && js && json_object_is_type(js, json_type_string)) {
		o.stdin_data = json_object_get_string(js);
		o.stdin_len = (size_t)json_object_get_string_len(js);
	}
	/* People's commands (ssh exec, sftp sessions, sshfs mounts) may run
	 * as long as they like unless the operator set a limit. */
	o.timeout_s = a->cfg.exec_timeout;
	o.output = exec_on_output;
	o.exit = exec_on_exit;
	o.arg = e;
	r = proc_spawn(a, &o, &e->proc);
	if (r == -ENOTSUP) {
		room_error(c, e->id, "the command was not run: its resource "
		    "limits (memory, pids, CPU cgroups) cannot be applied on "
		    "this server; ask the operator to fix the cgroup setup "
		    "(atriumd's log says what is missing)");
		return r;
	}
	if (r < 0) {
		room_error(c, e->id, "could not start the command in the "
		    "sandbox; the agent's log says why");
		return -EIO;
	}
	return 0;
}

/* Validate the request's shape.  The command text for the audit, or NULL
 * (error sent). */
static const char *
exec_check(struct agent *a, struct conn *c, json_object *req, const char *id,
    char **argv, char *cwd, size_t cwdlen)
{
	const char *cmd = json_get_string(req, "command");
	json_object *arr = NULL;

	if (exec_count(a) >= EXEC_MAX_RUNNING) {
		room_error(c, id, "%d commands are running in this room, the "
		    "most allowed: wait for one to end", EXEC_MAX_RUNNING);
		return NULL;
	}
	if (!cmd && (!json_object_object_get_ex(req, "argv", &arr) ||
	    !json_object_is_type(arr, json_type_array) ||
	    exec_argv(arr, argv) < 0)) {
		room_error(c, id, "exec needs \"command\" (a string) or "
		    "\"argv\" (an array of strings)");
		return NULL;
	}
	if (exec_cwd(json_get_string(req, "cwd"), cwd, cwdlen) < 0) {
		room_error(c, id, "cwd must be a directory inside /workspace");
		return NULL;
	}
	return cmd ? cmd : json_object_to_json_string_ext(arr,
	    JSON_C_TO_STRING_PLAIN);
}

/* Write e's audit row (what, in cwd), marked or reporting its changes
 * (see the head).  0, or -errno when room.db could not record it. */
static int
exec_audit_start(struct agent *a, struct conn *c, struct exec *e,
    json_object *req, const char *what, const char *cwd)
{
	int r;

	e->reports = c->kind == CONN_EXEC &&
	    json_get_bool(req, "reports_changes", 0);
	if (!e->reports)
		undo_mark_start(a, &e->mark);
	r = room_db_audit_start(a->db, c->user, "exec", what, cwd,
	    &e->audit_id);
	if (r == 0 && e->reports)
		r = room_db_audit_wrote(a->db, e->audit_id, 0);
	return r;
}

/* exec_request's work: 1 when the command started, 0 when it was
 * refused (reported to c). */
static int
exec_start(struct agent *a, struct conn *c, json_object *req)
{
	const char *id = json_get_string(req, "id"), *what;
	char *argv[EXEC_MAX_ARGV], cwd[PATH_MAX], gen[32], *shown;
	int fds[3] = { -1, -1, -1 }, nfds, tty = json_get_bool(req, "tty", 0);
	json_object *arr = NULL, *ev;
	struct exec *e;
	int r, started = 0;

	if (!id) {
		snprintf(gen, sizeof(gen), "x%lld", journal_seq(a->journal) + 1);
		id = gen;
	}
	nfds = exec_fds(c, req, id, tty, fds);
	if (nfds < 0)
		return 0;
	what = exec_check(a, c, req, id, argv, cwd, sizeof(cwd));
	json_object_object_get_ex(req, "argv", &arr);
	if (!what || !(e = calloc(1, sizeof(*e)))) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return 0;
	}
	e->a = a;
	e->owner = c;
	snprintf(e->id, sizeof(e->id), "%s", id);
	snprintf(e->user, sizeof(e->user), "%s", c->user);
	e->share = json_get_bool(req, "share", 0);
	e->passed_fds = nfds > 0;
	if (e->share)
		e->reserved = input_limits_take(a);
	for (int i = 0; i < 2; i++) {
		buf_init(&e->out[i], PROTO_MAX_CAPTURE);
		buf_init(&e->carry[i], PROC_CHUNK + 4);
	}
	/* No command runs without its audit row on disk. */
	if ((r = exec_audit_start(a, c, e, req, what, cwd)) < 0) {
		room_error(c, e->id, "the command was not run: the room could "
		    "not record it in its audit (%s); try again once room.db "
		    "can be written", room_db_strerror(r));
		exec_free(e);
		goto out;
	}
	if (e->share) {
		ev = room_event_new("exec_start");
		json_object_object_add(ev, "id", json_object_new_string(e->id));
		json_object_object_add(ev, "user", json_object_new_string(e->user));
		/* Shown to everyone: cleaned; the command runs as sent. */
		shown = utf8_clean_str(what);
		json_object_object_add(ev, "command",
		    json_object_new_string(shown ? shown : ""));
		free(shown);
		if ((r = room_db_exec_open(a->db, e->id, e->user)) < 0) {
			json_object_put(ev);
			journal_abort(a->journal, r);
		} else {
			r = room_emit(a, ev, 1);
		}
		if (r < 0) {
			room_unrecorded(c, e->id, "the start of this shared "
			    "command", r);
			exec_audit_end(a, e, 126, NULL);
			exec_free(e);
			goto out;
		}
	}
	if (exec_spawn(a, c, e, req, json_get_string(req, "command") ? NULL :
	    argv, cwd, fds, nfds) < 0) {
		exec_audit_end(a, e, 126, NULL);
		if (e->share)
			exec_not_run(a, e);
		exec_free(e);
	} else {
		e->next = a->execs;
		a->execs = e;
		started = 1;
	}
out:
	for (int i = 0; i < nfds; i++)	/* the sandbox has its copies */
		if (i == 0 || fds[i] != fds[0])
			close(fds[i]);
	return started;
}

void
exec_request(struct agent *a, struct conn *c, json_object *req)
{
	if (!exec_start(a, c, req))
		exec_done_to(c);
}

void
exec_refused(struct conn *c)
{
	exec_done_to(c);
}

/* May c signal e?  1, or 0 with the reason sent to c (see the head). */
static int
exec_may_signal(struct agent *a, struct conn *c, struct exec *e)
{
	char what[200];

	if (e->owner == c)
		return 1;
	if (!e->share || !conn_is_member(c)) {
		room_error(c, e->id, "no command %s of yours is running", e->id);
		return 0;
	}
	if (strcmp(e->user, c->user) == 0)
		return 1;
	snprintf(what, sizeof(what), "stop %s's command (%s may too)",
	    e->user, e->user);
	return room_access_may_manage(a, c, what);
}

void
exec_signal(struct agent *a, struct conn *c, json_object *req)
{
	const char *id = json_get_string(req, "id");
	int sig = proc_signal_parse(json_get_string(req, "signal"));

	if (!sig) {
		room_error(c, id, "unknown signal \"%s\": use INT, TERM, KILL "
		    "or HUP", json_get_string(req, "signal") ?
		    json_get_string(req, "signal") : "");
		return;
	}
	for (struct exec *e = a->execs; e; e = e->next) {
		if (!id || strcmp(e->id, id) != 0 || !e->proc)
			continue;
		if (!exec_may_signal(a, c, e))
			return;
		log_info("%s: %s sends SIG%s to %s's command", e->id, c->user,
		    proc_signal_name(sig) ?: "?", e->user);
		e->stop_sig = sig;
		snprintf(e->stopped_by, sizeof(e->stopped_by), "%s", c->user);
		proc_signal(e->proc, sig);
		return;
	}
	room_error(c, id, "no command %s is running", id ? id : "");
}

void
exec_changed(struct agent *a, struct conn *c, json_object *req)
{
	const char *id = json_get_string(req, "id");

	for (struct exec *e = a->execs; e; e = e->next) {
		if (e->owner != c || !id || strcmp(e->id, id) != 0)
			continue;
		if (!e->reports || !e->proc)
			return;		/* nothing to stamp: ignored */
		e->unsettled = json_get_bool(req, "pending", 1);
		exec_stamp_change(a, e, json_get_int(req, "ago_ms", 0));
		return;
	}
}

void
exec_conn_gone(struct agent *a, struct conn *c)
{
	for (struct exec *e = a->execs; e; e = e->next) {
		if (e->owner != c)
			continue;
		e->owner = NULL;
		if (e->proc)
			proc_kill(e->proc);
	}
}

void
exec_kill_all(struct agent *a)
{
	struct exec *e;

	while ((e = a->execs)) {
		a->execs = e->next;
		/* Its mark stays: the next start records it interrupted, with
		 * the output it had shown (exec_save kept it). */
		if (e->proc)
			proc_abandon(e->proc);
		exec_audit_end(a, e, 128 + SIGKILL, "KILL");
		exec_free(e);
	}
}

/* room_db_exec_open_each's callback: the id, kept in the array arg (the
 * rows are changed only once the walk is over). */
static int
exec_recover_collect(const char *id, const char *user, void *arg)
{
	json_object *pair = json_object_new_array();

	if (!pair)
		return 1;
	json_object_array_add(pair, json_object_new_string(id ? id : ""));
	json_object_array_add(pair, json_object_new_string(user ? user : ""));
	return json_object_array_add(arg, pair) < 0;
}

/* Add to ev the output the command id had shown when it was cut, as
 * room.db kept it (exec_save): stdout, stderr, as many bytes as a result
 * may hold (exec_add_outputs). */
static void
exec_recover_output(struct agent *a, const char *id, json_object *ev)
{
	struct buf out[2];
	int truncated = 0, r;

	for (int i = 0; i < 2; i++)
		buf_init(&out[i], PROTO_MAX_CAPTURE);
	if ((r = room_db_exec_output_each(a->db, id, out, &truncated)) < 0)
		log_error("%s: the output it had is lost: %s", id,
		    room_db_strerror(r));
	else if (out[0].len || out[1].len)
		exec_add_outputs(ev, out, &truncated);
	for (int i = 0; i < 2; i++)
		buf_free(&out[i]);
}

/* The exec_result of the command id that a restart cut, with the output
 * it had shown, recorded and its mark removed, for the next commit.  0
 * or -errno. */
static int
exec_recover_one(struct agent *a, const char *id, const char *user)
{
	json_object *ev = room_event_new("exec_result");
	int r;

	json_object_object_add(ev, "id", json_object_new_string(id));
	if (user && *user)
		json_object_object_add(ev, "user", json_object_new_string(user));
	json_object_object_add(ev, "exitCode", json_object_new_int(-1));
	exec_recover_output(a, id, ev);
	json_object_object_add(ev, "interrupted", json_object_new_boolean(1));
	json_object_object_add(ev, "text",
	    json_object_new_string(EXEC_INTERRUPTED_TEXT));
	if ((r = room_db_exec_closed(a->db, id)) < 0) {
		json_object_put(ev);
		return r;
	}
	return room_record(a, ev);	/* it takes ev */
}

void
exec_recover(struct agent *a)
{
	json_object *ids = json_object_new_array();
	size_t n;
	int r = ids ? room_db_exec_open_each(a->db, exec_recover_collect,
	    ids) : -ENOMEM;

	n = r < 0 ? 0 : json_object_array_length(ids);
	for (size_t i = 0; i < n && r >= 0; i++) {
		json_object *pair = json_object_array_get_idx(ids, i);

		r = exec_recover_one(a, json_object_get_string(
		    json_object_array_get_idx(pair, 0)), json_object_get_string(
		    json_object_array_get_idx(pair, 1)));
	}
	json_object_put(ids);
	if (r >= 0 && n == 0)
		return;
	/* The ids came from room.db (an archive, maybe): counted, not
	 * logged. */
	if (r < 0 && n > 0)
		journal_abort(a->journal, r);	/* nothing half-recorded */
	else if (r >= 0 && (r = journal_commit(a->journal)) >= 0) {
		log_info("%zu shared command%s cut by a restart: recorded as "
		    "interrupted", n, n == 1 ? "" : "s");
		return;
	}
	log_error("the commands a restart cut could not be recorded as "
	    "interrupted: %s", room_db_strerror(r));
}
