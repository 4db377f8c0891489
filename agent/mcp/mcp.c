/*
 * mcp.c: the room's MCP servers on the agent's loop (mcp.h).
 *
 * One struct mcp_server per configured server, in a->mcp's list:
 *
 *   state   what is in flight                    leaves by
 *   IDLE    nothing (never started, or stopped)  mcp_prepare: spawn,
 *                                                initialize sent
 *   INIT    initialize, start timer              result: initialized sent,
 *                                                tools/list sent
 *   LIST    tools/list (pages), start timer      last page: READY
 *   READY   at most one tools/call, its timer    death, bad output: DEAD
 *   DEAD    nothing; why says why                mcp_prepare of a later turn
 *
 * Every server message is one line of at most MCP_MAX_LINE bytes
 * (jsonl.h); a line that is not a JSON-RPC 2.0 message, or one too long,
 * makes the server DEAD at once (killed), so garbage is never half
 * understood.  Responses whose id is not the one awaited are stale (a
 * call that timed out) and dropped.  The server's stderr is kept only as
 * its last MCP_ERR_TAIL bytes, shown when it dies.
 *
 * Lifetime: a server struct is freed only when its process is gone
 * (proc's exit callback has run): by mcp_configure or mcp_prepare when it
 * was removed from the config, or in its exit callback when it had been
 * retired while running; mcp_free abandons all at shutdown.  Callbacks
 * into the turn (a call's done, the prepare waiter) come last in any
 * function, after which the server is not touched again.
 */
#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "buf.h"
#include "jsonl.h"
#include "log.h"
#include "loop_uring.h"
#include "mcp_config.h"
#include "mcp_proto.h"
#include "proc.h"
#include "room_events.h"
#include "room_db.h"
#include "tools.h"
#include "utf8.h"
#include "util.h"

#define MCP_ERR_TAIL	512		/* bytes of stderr kept */
#define MCP_MAX_OUT	(8 * 1024 * 1024)	/* bytes queued to a server */

enum mcp_state { MCP_IDLE, MCP_INIT, MCP_LIST, MCP_READY, MCP_DEAD };

struct mcp_server;

/* One tools/call in flight. */
struct mcp_call {
	struct mcp_server *s;
	long long rpc_id;		/* the request's id */
	long long timer;		/* its time limit */
	int timeout_s;
	char tool[MCP_TOOL_NAME_MAX + 8];	/* mcp__SERVER__TOOL */
	tool_done_fn *done;
	void *arg;
};

struct mcp_server {
	struct mcp_server *next;
	struct agent *a;
	char name[MCP_NAME_MAX + 1];
	json_object *cfg;		/* {name, command, args, env} (owned) */
	enum mcp_state state;
	int retired;			/* not configured any more: freed
					 * when its process ends */
	long long tried_turn;		/* the turn it was last started for */
	struct proc *proc;		/* its process, NULL when gone */
	long long audit_id;		/* audit row of the process */
	int in_fd;			/* our end of its stdin, -1 */
	struct buf out;			/* lines not yet written to it */
	struct jsonl in;		/* its stdout, framed */
	char err_tail[MCP_ERR_TAIL + 1];	/* the last of its stderr */
	long long next_id;		/* the next request id */
	long long wait_id;		/* initialize / tools/list awaited */
	long long timer;		/* start timer, 0 */
	int pages;			/* tools/list pages read */
	json_object *tools;		/* the model's tool objects */
	json_object *names;		/* model's name -> the server's */
	int skipped;			/* tools left out */
	char note[240];			/* why the first was */
	char why[400];			/* DEAD: why */
	struct mcp_call *call;		/* READY: the call in flight */
};

struct mcp {
	struct mcp_server *servers;
	mcp_ready_fn *ready;		/* mcp_prepare's waiter, or NULL */
	void *ready_arg;
	long long ready_timer;		/* a 0 ms timer calling the waiter */
};

static const struct tool_def mcp_tool_def;

/* ---- the list ----------------------------------------------------------- */

static struct mcp *
mcp_get(struct agent *a)
{
	if (!a->mcp)
		a->mcp = calloc(1, sizeof(*a->mcp));
	return a->mcp;
}

static struct mcp_server *
mcp_server_by_name(struct agent *a, const char *name, size_t len)
{
	for (struct mcp_server *s = a->mcp ? a->mcp->servers : NULL; s;
	    s = s->next)
		if (strlen(s->name) == len && strncmp(s->name, name, len) == 0)
			return s;
	return NULL;
}

static void
mcp_server_free(struct mcp_server *s)
{
	if (!s)
		return;
	if (s->timer)
		loop_del_timer(s->a->loop, s->timer);
	if (s->in_fd >= 0) {
		loop_del_fd(s->a->loop, s->in_fd);
		close(s->in_fd);
	}
	buf_free(&s->out);
	jsonl_free(&s->in);
	json_object_put(s->cfg);
	json_object_put(s->tools);
	json_object_put(s->names);
	free(s);
}

/* Unlink s from the list. */
static void
mcp_server_unlink(struct agent *a, struct mcp_server *s)
{
	for (struct mcp_server **p = &a->mcp->servers; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			return;
		}
}

/* ---- writing to a server ------------------------------------------------ */

static void mcp_server_fail(struct mcp_server *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Write what is queued; wait for the pipe when it is full. */
static void
mcp_server_flush(struct mcp_server *s)
{
	ssize_t n;

	while (s->in_fd >= 0 && s->out.len > 0) {
		n = write(s->in_fd, s->out.data, s->out.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;		/* the caller waits for the pipe */
		if (n < 0) {	/* EPIPE: it stopped reading; its exit tells */
			buf_reset(&s->out);
			return;
		}
		buf_consume(&s->out, (size_t)n);
	}
}

static void
mcp_on_writable(struct loop *l, int fd, int mask, void *arg)
{
	struct mcp_server *s = arg;

	(void)l; (void)mask;
	loop_del_fd(s->a->loop, fd);
	mcp_server_flush(s);
	if (s->in_fd >= 0 && s->out.len > 0)
		loop_add_fd(s->a->loop, s->in_fd, LOOP_WRITE, mcp_on_writable,
		    s);
}

/* Queue message m (taken) as one line and write it.  0 or -errno. */
static int
mcp_server_send(struct mcp_server *s, json_object *m)
{
	int r = s->in_fd < 0 ? -EPIPE : jsonl_format(&s->out, m);

	json_object_put(m);
	if (r < 0)
		return r;
	mcp_server_flush(s);
	if (s->in_fd >= 0 && s->out.len > 0)
		loop_add_fd(s->a->loop, s->in_fd, LOOP_WRITE, mcp_on_writable,
		    s);
	return 0;
}

/* Send request method with params (taken); its id, or -errno. */
static long long
mcp_server_request(struct mcp_server *s, const char *method,
    json_object *params)
{
	long long id = ++s->next_id;
	int r = mcp_server_send(s, mcp_proto_request(id, method, params));

	return r < 0 ? r : id;
}

/* ---- calls -------------------------------------------------------------- */

static void
mcp_call_free(struct mcp_call *c)
{
	if (!c)
		return;
	if (c->timer)
		loop_del_timer(c->s->a->loop, c->timer);
	if (c->s->call == c)
		c->s->call = NULL;
	free(c);
}

/* End the call in flight on s with status and text: the turn's done is
 * called last. */
static void
mcp_call_end(struct mcp_server *s, const char *status, const char *text)
{
	struct mcp_call *c = s->call;
	tool_done_fn *done = c->done;
	void *arg = c->arg;

	mcp_call_free(c);
	if (done)
		done(arg, status, text);
}

/* A tools/call response for the call in flight. */
static void
mcp_call_answered(struct mcp_server *s, json_object *m, enum mcp_msg kind)
{
	json_object *res = NULL;
	char line[400], *text;
	int is_error = 0;

	if (kind == MCP_MSG_ERROR) {
		mcp_proto_error_text(m, line, sizeof(line));
		text = NULL;
	} else {
		json_object_object_get_ex(m, "result", &res);
		text = mcp_proto_call_text(res, &is_error);
	}
	if (!text) {
		char msg[600];

		snprintf(msg, sizeof(msg), "error: the MCP server %s answered "
		    "the call with %s", s->name, kind == MCP_MSG_ERROR ? line :
		    "no content (or not enough memory to read it)");
		mcp_call_end(s, "error", msg);
		return;
	}
	mcp_call_end(s, is_error ? "error" : "ok", text);
	free(text);
}

static long
mcp_call_timeout(struct loop *l, long long id, void *arg)
{
	struct mcp_call *c = arg;
	struct mcp_server *s = c->s;
	json_object *p = json_object_new_object();
	char msg[300];

	(void)l; (void)id;
	c->timer = 0;
	json_object_object_add(p, "requestId",
	    json_object_new_int64(c->rpc_id));
	json_object_object_add(p, "reason",
	    json_object_new_string("timed out"));
	mcp_server_send(s, mcp_proto_notification("notifications/cancelled",
	    p));
	room_notice(s->a, "the MCP server %s did not answer %s within %d s: "
	    "the call was cancelled", s->name, c->tool, c->timeout_s);
	snprintf(msg, sizeof(msg), "error: the MCP server %s did not answer "
	    "within %d s; the call was cancelled (the server may still have "
	    "done part of it)", s->name, c->timeout_s);
	mcp_call_end(s, "error", msg);
	return LOOP_NOMORE;
}

/* ---- starting: initialize, tools/list ----------------------------------- */

static void mcp_check_ready(struct agent *a);

/* s finished starting (READY or DEAD): tell the room when it failed or
 * left tools out, then maybe the waiter. */
static void
mcp_server_started(struct mcp_server *s)
{
	if (s->timer)
		loop_del_timer(s->a->loop, s->timer);
	s->timer = 0;
	if (s->state == MCP_READY) {
		log_info("MCP server %s ready with %zu tools", s->name,
		    json_object_array_length(s->tools));
		if (s->skipped)
			room_notice(s->a, "the MCP server %s: %d of its tools "
			    "were left out (%s)", s->name, s->skipped, s->note);
	}
	mcp_check_ready(s->a);
}

/* Ask for the next page of tools (cursor may be NULL). */
static void
mcp_server_list(struct mcp_server *s, const char *cursor)
{
	json_object *p = json_object_new_object();

	if (cursor)
		json_object_object_add(p, "cursor",
		    json_object_new_string(cursor));
	s->state = MCP_LIST;
	s->wait_id = mcp_server_request(s, "tools/list", p);
	if (s->wait_id < 0)
		mcp_server_fail(s, "its stdin could not be written");
}

/* The answer to initialize. */
static void
mcp_server_initialized(struct mcp_server *s, json_object *m)
{
	json_object *res = NULL;
	const char *ver;

	json_object_object_get_ex(m, "result", &res);
	ver = json_get_string(res, "protocolVersion");
	if (!ver) {
		mcp_server_fail(s, "its answer to initialize has no "
		    "protocolVersion");
		return;
	}
	if (strcmp(ver, MCP_PROTOCOL_VERSION) != 0)
		log_info("MCP server %s speaks protocol %.40s (we asked for "
		    "%s)", s->name, ver, MCP_PROTOCOL_VERSION);
	if (mcp_server_send(s, mcp_proto_notification(
	    "notifications/initialized", NULL)) < 0) {
		mcp_server_fail(s, "its stdin could not be written");
		return;
	}
	mcp_server_list(s, NULL);
}

/* One page of tools/list. */
static void
mcp_server_listed(struct mcp_server *s, json_object *m)
{
	json_object *res = NULL;
	const char *cursor;

	json_object_object_get_ex(m, "result", &res);
	if (mcp_proto_add_tools(res, s->name, s->tools, s->names,
	    MCP_MAX_TOOLS, &s->skipped, s->note, sizeof(s->note)) < 0) {
		mcp_server_fail(s, "its tools/list answer has no tools array");
		return;
	}
	cursor = mcp_proto_next_cursor(res);
	if (cursor && ++s->pages < MCP_MAX_PAGES &&
	    json_object_array_length(s->tools) < MCP_MAX_TOOLS) {
		mcp_server_list(s, cursor);
		return;
	}
	s->wait_id = 0;
	s->state = MCP_READY;
	mcp_server_started(s);
}

static long
mcp_start_timeout(struct loop *l, long long id, void *arg)
{
	struct mcp_server *s = arg;

	(void)l; (void)id;
	s->timer = 0;
	mcp_server_fail(s, "it did not finish starting (initialize and "
	    "tools/list) within %d s", MCP_START_TIMEOUT_S);
	return LOOP_NOMORE;
}

/* ---- reading from a server ---------------------------------------------- */

/* A response with id: to what s awaits, or stale. */
static void
mcp_server_response(struct mcp_server *s, json_object *m, enum mcp_msg kind,
    long long id)
{
	char line[400];

	if (s->wait_id && id == s->wait_id) {
		if (kind == MCP_MSG_ERROR) {
			mcp_proto_error_text(m, line, sizeof(line));
			mcp_server_fail(s, "it refused %s: %s", s->state ==
			    MCP_INIT ? "initialize" : "tools/list", line);
		} else if (s->state == MCP_INIT) {
			mcp_server_initialized(s, m);
		} else {
			mcp_server_listed(s, m);
		}
		return;
	}
	if (s->call && id == s->call->rpc_id) {
		mcp_call_answered(s, m, kind);
		return;
	}
	log_info("MCP server %s: a stale answer (id %lld) dropped", s->name,
	    id);
}

/* One line from s's stdout. */
static void
mcp_server_line(struct mcp_server *s, const char *line, size_t len)
{
	const char *err = NULL;
	json_object *m = jsonl_parse_object(line, len, &err), *ans;
	enum mcp_msg kind;
	long long id;

	if (!m) {
		mcp_server_fail(s, "it wrote a line that is not a JSON object "
		    "(%s) on stdout, where only MCP messages may go", err);
		return;
	}
	kind = mcp_proto_classify(m, &id);
	switch (kind) {
	case MCP_MSG_INVALID:
		mcp_server_fail(s, "it wrote a message that is not JSON-RPC "
		    "2.0 on stdout");
		break;
	case MCP_MSG_REQUEST:
		if ((ans = mcp_proto_answer(m)))
			mcp_server_send(s, ans);
		break;
	case MCP_MSG_NOTIFICATION:
		break;		/* logging, list_changed: read at next start */
	case MCP_MSG_RESULT:
	case MCP_MSG_ERROR:
		mcp_server_response(s, m, kind, id);
		break;
	}
	json_object_put(m);
}

/* Keep the last MCP_ERR_TAIL bytes of stderr. */
static void
mcp_server_stderr(struct mcp_server *s, const char *p, size_t n)
{
	size_t have = strlen(s->err_tail), keep;

	if (n >= MCP_ERR_TAIL) {
		memcpy(s->err_tail, p + n - MCP_ERR_TAIL, MCP_ERR_TAIL);
		s->err_tail[MCP_ERR_TAIL] = '\0';
		return;
	}
	keep = have + n > MCP_ERR_TAIL ? MCP_ERR_TAIL - n : have;
	memmove(s->err_tail, s->err_tail + have - keep, keep);
	memcpy(s->err_tail + keep, p, n);
	s->err_tail[keep + n] = '\0';
}

static void
mcp_on_output(void *arg, int stream, const char *p, size_t n)
{
	struct mcp_server *s = arg;
	char *line;
	size_t len;
	int r;

	if (stream == PROC_STDERR) {
		mcp_server_stderr(s, p, n);
		return;
	}
	if (s->state == MCP_DEAD || s->state == MCP_IDLE)
		return;		/* killed: what is left is not read */
	if (jsonl_feed(&s->in, p, n) < 0) {
		mcp_server_fail(s, "it wrote faster than it could be read");
		return;
	}
	while (s->state != MCP_DEAD && (r = jsonl_next(&s->in, &line,
	    &len)) != 0) {
		if (r == -EMSGSIZE) {
			mcp_server_fail(s, "it wrote a message over %d KiB",
			    MCP_MAX_LINE / 1024);
			return;
		}
		mcp_server_line(s, line, len);
	}
}

/* ---- ending ------------------------------------------------------------- */

/* A short, clean version of s's stderr tail for a message. */
static void
mcp_server_err_note(struct mcp_server *s, char *out, size_t outlen)
{
	char *clean = s->err_tail[0] ? utf8_clean_str(s->err_tail) : NULL;

	if (clean && *clean)
		snprintf(out, outlen, "; its last output on stderr: %.300s",
		    clean);
	else
		out[0] = '\0';
	free(clean);
}

/* Make s DEAD with the reason, kill it, and fail what waited on it. */
static void
mcp_server_fail(struct mcp_server *s, const char *fmt, ...)
{
	va_list ap;
	char msg[600], why[300];
	enum mcp_state was = s->state;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(s->why, sizeof(s->why), "%s", why);
	s->state = MCP_DEAD;
	s->wait_id = 0;
	if (s->proc)
		proc_kill(s->proc);
	log_warn("MCP server %s stopped: %s", s->name, why);
	room_notice(s->a, "the MCP server %s was stopped: %s", s->name, why);
	if (was == MCP_INIT || was == MCP_LIST)
		mcp_server_started(s);
	if (s->call) {
		snprintf(msg, sizeof(msg), "error: the MCP server %s was "
		    "stopped during this call: %s", s->name, why);
		mcp_call_end(s, "error", msg);
	}
}

/* The process of s ended (proc frees itself after this). */
static void
mcp_on_exit(void *arg, const struct proc_end *end)
{
	struct mcp_server *s = arg;
	char how[64], err[400], msg[700];

	int sig = end->how.how == SANDBOX_SIGNALED ? end->how.code : 0;

	s->proc = NULL;
	if (sig)
		snprintf(how, sizeof(how), "was killed by signal %d", sig);
	else
		snprintf(how, sizeof(how), "exited with status %d",
		    end->how.code);
	room_db_audit_end(s->a->db, s->audit_id, sig ? 128 + sig :
	    end->how.code, sig ? proc_signal_name(sig) : NULL);
	if (s->in_fd >= 0) {
		loop_del_fd(s->a->loop, s->in_fd);
		close(s->in_fd);
		s->in_fd = -1;
	}
	buf_reset(&s->out);
	if (s->retired) {
		mcp_server_free(s);
		return;
	}
	if (s->state != MCP_DEAD) {
		mcp_server_err_note(s, err, sizeof(err));
		snprintf(msg, sizeof(msg), "it %s%s", how, err);
		mcp_server_fail(s, "%s", msg);
	}
}

/* ---- spawning ----------------------------------------------------------- */

/* argv of s: command then args, NULL-ended (pointers into s->cfg), or
 * NULL. */
static char **
mcp_server_argv(struct mcp_server *s)
{
	json_object *args = json_object_object_get(s->cfg, "args");
	size_t n = json_object_array_length(args);
	char **argv = calloc(n + 2, sizeof(*argv));

	if (!argv)
		return NULL;
	argv[0] = (char *)json_get_string(s->cfg, "command");
	for (size_t i = 0; i < n; i++)
		argv[i + 1] = (char *)json_object_get_string(
		    json_object_array_get_idx(args, i));
	return argv;
}

static void
mcp_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* env of s as NAME=VALUE strings, NULL-ended (each malloc'd), or NULL. */
static char **
mcp_server_env(struct mcp_server *s)
{
	json_object *env = json_object_object_get(s->cfg, "env");
	char **out = calloc((size_t)json_object_object_length(env) + 1,
	    sizeof(*out));
	size_t i = 0;

	if (!out)
		return NULL;
	json_object_object_foreach(env, k, v) {
		if (asprintf(&out[i], "%s=%s", k,
		    json_object_get_string(v)) < 0) {
			out[i] = NULL;
			mcp_strv_free(out);
			return NULL;
		}
		i++;
	}
	return out;
}

/* The audit line of s: "mcp NAME: command args...". */
static void
mcp_server_audit_line(struct mcp_server *s, char **argv, struct buf *b)
{
	buf_printf(b, "mcp %s:", s->name);
	for (size_t i = 0; argv[i]; i++)
		buf_printf(b, " %s", argv[i]);
}

/* Spawn s's process with its stdin a pipe of ours.  0 or -errno (why
 * set). */
static int
mcp_server_spawn(struct mcp_server *s)
{
	struct proc_opts o = { .fds = { -1, -1, -1 }, .capture = 1 };
	char **argv = mcp_server_argv(s), **env = mcp_server_env(s);
	struct buf line;
	int p[2] = { -1, -1 }, r = -ENOMEM;

	buf_init(&line, 16384);
	if (!argv || !env)
		goto out;
	mcp_server_audit_line(s, argv, &line);
	if ((r = room_db_audit_start(s->a->db, "agent", "tool",
	    line.data ? line.data : s->name, "/workspace",
	    &s->audit_id)) < 0)
		goto out;
	if (pipe2(p, O_CLOEXEC) < 0) {
		r = -errno;
		goto out;
	}
	o.argv = argv;
	o.env = env;
	o.fds[0] = p[0];
	o.output = mcp_on_output;
	o.exit = mcp_on_exit;
	o.arg = s;
	r = proc_spawn(s->a, &o, &s->proc);
	close(p[0]);
	if (r < 0) {
		close(p[1]);
		room_db_audit_end(s->a->db, s->audit_id, 126, NULL);
		goto out;
	}
	s->in_fd = p[1];
	fd_set_nonblock(s->in_fd, 1);
out:
	buf_free(&line);
	free(argv);
	mcp_strv_free(env);
	return r;
}

/* Start s: spawn it and send initialize.  The outcome (READY or DEAD)
 * comes later, except a failure to spawn, which is DEAD at once. */
static void
mcp_server_start(struct mcp_server *s, long long turn)
{
	int r;

	s->tried_turn = turn;
	s->state = MCP_INIT;
	s->why[0] = s->err_tail[0] = s->note[0] = '\0';
	s->skipped = s->pages = 0;
	json_object_put(s->tools);
	json_object_put(s->names);
	s->tools = json_object_new_array();
	s->names = json_object_new_object();
	jsonl_free(&s->in);
	jsonl_init(&s->in, MCP_MAX_LINE);
	buf_reset(&s->out);
	if ((r = mcp_server_spawn(s)) < 0) {
		mcp_server_fail(s, "it could not be started in the sandbox "
		    "(%s)", strerror(-r));
		return;
	}
	s->timer = loop_add_timer(s->a->loop, MCP_START_TIMEOUT_S * 1000L,
	    mcp_start_timeout, s);
	if (s->timer < 0)
		s->timer = 0;
	s->wait_id = mcp_server_request(s, "initialize",
	    mcp_proto_initialize_params());
	if (s->wait_id < 0)
		mcp_server_fail(s, "its stdin could not be written");
}

/* ---- the API ------------------------------------------------------------ */

/* Stop s (removed or changed in the config): freed now when its process
 * is gone, else when it ends. */
static void
mcp_server_retire(struct agent *a, struct mcp_server *s)
{
	mcp_server_unlink(a, s);
	if (s->call)
		mcp_call_end(s, "error", "error: the room's MCP servers were "
		    "reconfigured during this call");
	if (!s->proc) {
		mcp_server_free(s);
		return;
	}
	s->retired = 1;
	proc_kill(s->proc);
}

/* 1 when servers (checked) has an entry equal to s's config. */
static int
mcp_config_has(json_object *servers, struct mcp_server *s)
{
	const char *mine = json_object_to_json_string_ext(s->cfg,
	    JSON_C_TO_STRING_PLAIN);

	for (size_t i = 0; i < json_object_array_length(servers); i++)
		if (strcmp(json_object_to_json_string_ext(
		    json_object_array_get_idx(servers, i),
		    JSON_C_TO_STRING_PLAIN), mine) == 0)
			return 1;
	return 0;
}

/* A new IDLE server for checked config e, appended to the list. */
static int
mcp_server_add(struct agent *a, json_object *e)
{
	struct mcp_server *s = calloc(1, sizeof(*s)), **p;

	if (!s)
		return -ENOMEM;
	s->a = a;
	s->in_fd = -1;
	snprintf(s->name, sizeof(s->name), "%s", json_get_string(e, "name"));
	s->cfg = json_object_get(e);
	buf_init(&s->out, MCP_MAX_OUT);
	jsonl_init(&s->in, MCP_MAX_LINE);
	s->tools = json_object_new_array();
	s->names = json_object_new_object();
	for (p = &a->mcp->servers; *p; p = &(*p)->next)
		;
	*p = s;
	return 0;
}

int
mcp_configure(struct agent *a, json_object *servers)
{
	struct mcp_server *s, *next;

	if (!mcp_get(a))
		return -ENOMEM;
	for (s = a->mcp->servers; s; s = next) {
		next = s->next;
		if (!mcp_config_has(servers, s))
			mcp_server_retire(a, s);
	}
	for (size_t i = 0; i < json_object_array_length(servers); i++) {
		json_object *e = json_object_array_get_idx(servers, i);
		const char *name = json_get_string(e, "name");

		if (!mcp_server_by_name(a, name, strlen(name)) &&
		    mcp_server_add(a, e) < 0)
			return -ENOMEM;
	}
	return 0;
}

static long
mcp_ready_cb(struct loop *l, long long id, void *arg)
{
	struct agent *a = arg;
	mcp_ready_fn *fn = a->mcp->ready;
	void *fn_arg = a->mcp->ready_arg;

	(void)l; (void)id;
	a->mcp->ready_timer = 0;
	a->mcp->ready = NULL;
	a->mcp->ready_arg = NULL;
	if (fn)
		fn(fn_arg);
	return LOOP_NOMORE;
}

/* When nothing is starting any more, call the waiter from a timer (never
 * from inside a server's callback). */
static void
mcp_check_ready(struct agent *a)
{
	struct mcp *m = a->mcp;

	if (!m->ready || m->ready_timer)
		return;
	for (struct mcp_server *s = m->servers; s; s = s->next)
		if (s->state == MCP_INIT || s->state == MCP_LIST)
			return;
	m->ready_timer = loop_add_timer(a->loop, 0, mcp_ready_cb, a);
	if (m->ready_timer < 0)
		m->ready_timer = 0;
}

int
mcp_prepare(struct agent *a, long long turn, mcp_ready_fn *ready, void *arg)
{
	struct mcp *m = mcp_get(a);
	int starting = 0;

	if (!m)
		return 0;
	for (struct mcp_server *s = m->servers; s; s = s->next) {
		if (s->state == MCP_IDLE || (s->state == MCP_DEAD &&
		    !s->proc && s->tried_turn != turn))
			mcp_server_start(s, turn);
		if (s->state == MCP_INIT || s->state == MCP_LIST)
			starting = 1;
	}
	if (!starting)
		return 0;
	m->ready = ready;
	m->ready_arg = arg;
	return 1;
}

void
mcp_unwait(struct agent *a, void *arg)
{
	struct mcp *m = a->mcp;

	if (!m || m->ready_arg != arg)
		return;
	m->ready = NULL;
	m->ready_arg = NULL;
	if (m->ready_timer)
		loop_del_timer(a->loop, m->ready_timer);
	m->ready_timer = 0;
}

void
mcp_tools_add(struct agent *a, json_object *tools)
{
	for (struct mcp_server *s = a->mcp ? a->mcp->servers : NULL; s;
	    s = s->next)
		if (s->state == MCP_READY)
			for (size_t i = 0; i < json_object_array_length(
			    s->tools); i++)
				json_object_array_add(tools, json_object_get(
				    json_object_array_get_idx(s->tools, i)));
}

/* The server named in name (mcp__SERVER__...), or NULL. */
static struct mcp_server *
mcp_server_of(struct agent *a, const char *name)
{
	const char *p, *end;

	if (!name || strncmp(name, "mcp__", 5) != 0)
		return NULL;
	p = name + 5;
	end = strstr(p, "__");
	return end ? mcp_server_by_name(a, p, (size_t)(end - p)) : NULL;
}

const struct tool_def *
mcp_tool_find(struct agent *a, const char *name)
{
	struct mcp_server *s = mcp_server_of(a, name);

	return s && s->state == MCP_READY && json_object_object_get_ex(
	    s->names, name, NULL) ? &mcp_tool_def : NULL;
}

/* The tools of s for a message to the model. */
static void mcp_tool_list(struct mcp_server *s, char *out, size_t outlen);

int
mcp_tool_missing(struct agent *a, const char *name, char *out,
    size_t outlen)
{
	struct mcp_server *s = mcp_server_of(a, name);
	char list[1024];

	if (!name || strncmp(name, "mcp__", 5) != 0)
		return 0;
	if (!s) {
		snprintf(out, outlen, "error: there is no MCP server for the "
		    "tool \"%.80s\" in this room", name);
	} else if (s->state != MCP_READY) {
		snprintf(out, outlen, "error: the MCP server %s is not running "
		    "(%s); it is started again at the next turn", s->name,
		    s->why[0] ? s->why : "not started yet");
	} else {
		mcp_tool_list(s, list, sizeof(list));
		snprintf(out, outlen, "error: the MCP server %s has no tool "
		    "\"%.80s\"; its tools are: %s", s->name, name, list);
	}
	return 1;
}

void
mcp_free(struct agent *a)
{
	struct mcp_server *s, *next;

	if (!a->mcp)
		return;
	for (s = a->mcp->servers; s; s = next) {
		next = s->next;
		if (s->call) {
			s->call->done = NULL;
			mcp_call_free(s->call);
		}
		if (s->proc) {
			room_db_audit_end(a->db, s->audit_id, 137, "KILL");
			proc_abandon(s->proc);
		}
		mcp_server_free(s);
	}
	if (a->mcp->ready_timer)
		loop_del_timer(a->loop, a->mcp->ready_timer);
	free(a->mcp);
	a->mcp = NULL;
}

/* ---- the tool ----------------------------------------------------------- */

static void
mcp_tool_list(struct mcp_server *s, char *out, size_t outlen)
{
	size_t used = 0;

	out[0] = '\0';
	json_object_object_foreach(s->names, k, v) {
		int n;

		(void)v;
		n = snprintf(out + used, outlen - used, "%s%s", used ? ", " :
		    "", k);
		if (n < 0 || (size_t)n >= outlen - used)
			break;
		used += (size_t)n;
	}
}

static int
mcp_tool_start(struct agent *a, const char *name, const char *call_id,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen)
{
	struct mcp_server *s = mcp_server_of(a, name);
	json_object *orig = NULL, *p;
	struct mcp_call *c;
	char list[1024];
	int timeout = a->cfg.command_timeout > 0 ? a->cfg.command_timeout :
	    AGENT_DEFAULT_TOOL_TIMEOUT;

	(void)call_id;
	*run = NULL;
	if (!s || s->state != MCP_READY) {
		snprintf(err, errlen, "error: the MCP server %s is not running "
		    "(%s); it is started again before the next step",
		    s ? s->name : "?", s && s->why[0] ? s->why : "not started");
		return -EIO;
	}
	if (!json_object_object_get_ex(s->names, name, &orig)) {
		mcp_tool_list(s, list, sizeof(list));
		snprintf(err, errlen, "error: the MCP server %s has no tool "
		    "%.80s; its tools are: %s", s->name, name, list);
		return -ENOENT;
	}
	if (s->call || !(c = calloc(1, sizeof(*c)))) {
		snprintf(err, errlen, "error: the MCP server %s is busy",
		    s->name);
		return -EBUSY;
	}
	c->s = s;
	c->done = done;
	c->arg = arg;
	c->timeout_s = timeout;
	snprintf(c->tool, sizeof(c->tool), "%s", name);
	p = json_object_new_object();
	json_object_object_add(p, "name", json_object_get(orig));
	json_object_object_add(p, "arguments", input ? json_object_get(input) :
	    json_object_new_object());
	c->rpc_id = mcp_server_request(s, "tools/call", p);
	if (c->rpc_id < 0) {
		free(c);
		snprintf(err, errlen, "error: the MCP server %s could not be "
		    "sent the call", s->name);
		return -EIO;
	}
	c->timer = loop_add_timer(a->loop, timeout * 1000L, mcp_call_timeout,
	    c);
	if (c->timer < 0)
		c->timer = 0;
	s->call = c;
	*run = c;
	return 0;
}

/* The turn was stopped: tell the server, forget the call. */
static void
mcp_tool_cancel(void *run)
{
	struct mcp_call *c = run;
	json_object *p = json_object_new_object();

	json_object_object_add(p, "requestId",
	    json_object_new_int64(c->rpc_id));
	json_object_object_add(p, "reason", json_object_new_string("stopped"));
	mcp_server_send(c->s, mcp_proto_notification("notifications/cancelled",
	    p));
	c->done = NULL;
	mcp_call_free(c);
}

static void
mcp_tool_abandon(void *run)
{
	struct mcp_call *c = run;

	c->done = NULL;
	mcp_call_free(c);
}

static const struct tool_def mcp_tool_def = {
	.name = "mcp",
	.modifies = 1,		/* unknown: a server may change anything */
	.cancel = mcp_tool_cancel,
	.abandon = mcp_tool_abandon,
	.start_named = mcp_tool_start,
};
