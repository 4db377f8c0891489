/*
 * http_exec.c: a command run in a room for an HTTP request (http_exec.h).
 * The plumbing is atriumd-net's exec channel's (sshd/net/stream.c): the
 * monitor's pipes, the command's ends passed with the exec line on an
 * agent connection of kind exec (SCM_RIGHTS), our ends non-blocking on
 * the loop.  What differs is the consumer: an HTTP response taken by the
 * caller at its own pace, so output is queued per stream up to
 * HTTP_EXEC_MAX_QUEUED and a pipe is polled only while its queue has room.
 *
 * Invariants: w_out/w_err want POLLIN exactly while their pipe is open
 * and its queue has room; w_in wants POLLOUT exactly while stdin is open
 * and the last write found the pipe full.  The exec is over for the caller
 * only once exec_result (or the agent's end) came AND both pipes hit EOF
 * AND both queues are empty: no byte is lost after the status.
 */
#include "http_exec.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentlink.h"
#include "jsonl.h"
#include "log.h"
#include "util.h"

#define HTTP_EXEC_READ	(64 * 1024)	/* one read from a pipe, at most */
#define HTTP_EXEC_ID	"h1"		/* the one exec on its connection */

struct http_exec {
	struct loop *loop;
	struct agentlink link;		/* kind exec, to the room's agent */
	int in_fd;			/* stdin pipe, write end; -1 closed */
	int fd[2];			/* stdout, stderr read ends; -1 */
	struct watch w_in, w_fd[2];
	int in_full;			/* the last stdin write found it full */
	int eof[2];			/* that pipe ended */
	struct buf q[2];		/* read, not yet taken */
	int have_result;		/* exec_result, or the end, came */
	int code;			/* exit status */
	char sig[16];			/* signal name or "" */
	char error[512];		/* the room's error, or "" */
	http_exec_ready_fn on_ready;
	void *arg;
};

/* Poll what the state needs (see the head). */
static void
http_exec_update(struct http_exec *x)
{
	for (int s = 0; s < 2; s++)
		if (x->fd[s] >= 0)
			loop_want(&x->w_fd[s], !x->eof[s] &&
			    buf_room(&x->q[s]) > 0 ? POLLIN : 0);
	if (x->in_fd >= 0)
		loop_want(&x->w_in, x->in_full ? POLLOUT : 0);
}

/* Read one chunk of stream s into its queue: EOF or an error ends it. */
static void
http_exec_read(struct http_exec *x, int s)
{
	size_t room = buf_room(&x->q[s]);
	size_t want = room < HTTP_EXEC_READ ? room : HTTP_EXEC_READ;
	char *tail;
	ssize_t n;

	if (x->fd[s] < 0 || x->eof[s] || want == 0)
		return;
	if (!(tail = buf_tail(&x->q[s], want)))
		return;		/* out of memory: try on the next event */
	n = read(x->fd[s], tail, want);
	if (n > 0) {
		buf_added(&x->q[s], (size_t)n);
		return;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0)
		log_warn("reading the command's %s: %s", s ? "stderr" : "stdout",
		    strerror(errno));
	x->eof[s] = 1;
}

/* A pipe of stdout (arg's w_fd[0]) or stderr is ready. */
static void
http_exec_pipe_cb(struct watch *w, int revents)
{
	struct http_exec *x = w->arg;
	int s = w == &x->w_fd[1];

	if (revents & (POLLIN | POLLHUP | POLLERR))
		http_exec_read(x, s);
	http_exec_update(x);
	x->on_ready(x->arg);
}

/* Close our end of stdin. */
static void
http_exec_close_in(struct http_exec *x)
{
	if (x->in_fd < 0)
		return;
	loop_del(&x->w_in);
	close(x->in_fd);
	x->in_fd = -1;
	x->in_full = 0;
}

/* stdin writable again, or its reader went away (writes then fail and
 * the rest of the body is discarded). */
static void
http_exec_in_cb(struct watch *w, int revents)
{
	struct http_exec *x = w->arg;

	(void)revents;
	x->in_full = 0;
	http_exec_update(x);
	x->on_ready(x->arg);
}

/* The command is over as far as the room can tell. */
static void
http_exec_set_result(struct http_exec *x, int code, const char *sig)
{
	if (x->have_result)
		return;
	x->have_result = 1;
	x->code = code;
	snprintf(x->sig, sizeof(x->sig), "%s", sig ? sig : "");
}

/* A line from the agent: our exec_result, or an error about it.  An
 * exec connection replays no history (see stream.c:stream_line). */
static void
http_exec_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct http_exec *x = arg;
	const char *type = json_get_string(obj, "type");
	const char *id = json_get_string(obj, "id");
	const char *msg = json_get_string(obj, "message");

	(void)line; (void)len;
	if (!type || (id && strcmp(id, HTTP_EXEC_ID) != 0) ||
	    json_get_bool(obj, "replay", 0) || x->have_result)
		return;
	if (strcmp(type, "exec_result") == 0) {
		http_exec_set_result(x, (int)json_get_int(obj, "exitCode", 255),
		    json_get_string(obj, "signal"));
	} else if (strcmp(type, "error") == 0 ||
	    strcmp(type, "access_denied") == 0) {
		snprintf(x->error, sizeof(x->error), "%s",
		    msg ? msg : "the room refused the command");
		http_exec_set_result(x, 255, NULL);
	} else {
		return;
	}
	x->on_ready(x->arg);
}

/* The agent went away (restart, crash) before the result. */
static void
http_exec_link_end(void *arg)
{
	struct http_exec *x = arg;

	if (x->have_result)
		return;
	snprintf(x->error, sizeof(x->error), "the room's agent stopped while "
	    "the command ran; run it again");
	http_exec_set_result(x, 255, NULL);
	x->on_ready(x->arg);
}

/* The exec line: the spec's command or argv, cwd and env, our id, 3 fds. */
static json_object *
http_exec_line_new(json_object *spec)
{
	static const char *const keys[] = { "command", "argv", "cwd", "env" };
	json_object *o = json_object_new_object(), *v;

	json_object_object_add(o, "type", json_object_new_string("exec"));
	json_object_object_add(o, "id", json_object_new_string(HTTP_EXEC_ID));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_object_get_ex(spec, keys[i], &v) && v)
			json_object_object_add(o, keys[i], json_object_get(v));
	json_object_object_add(o, "fds", json_object_new_int(3));
	return o;
}

/* Send the exec line with the command's ends; then close them here (the
 * agent holds its copies).  0 or -errno. */
static int
http_exec_send(struct http_exec *x, int p[3][2], json_object *spec)
{
	int theirs[3] = { p[0][0], p[1][1], p[2][1] };
	json_object *line = http_exec_line_new(spec);
	int r = agentlink_send_fds(&x->link, line, theirs, 3);

	json_object_put(line);
	for (int i = 0; i < 3; i++) {
		close(theirs[i]);
		p[i][i == 0 ? 0 : 1] = -1;
	}
	return r;
}

/* Take our ends of the pipes: non-blocking, on the loop. */
static void
http_exec_take_pipes(struct http_exec *x, int p[3][2])
{
	x->in_fd = p[0][1];
	x->fd[0] = p[1][0];
	x->fd[1] = p[2][0];
	p[0][1] = p[1][0] = p[2][0] = -1;
	fd_set_nonblock(x->in_fd, 1);
	loop_add(x->loop, &x->w_in, x->in_fd, 0, http_exec_in_cb, x);
	for (int s = 0; s < 2; s++) {
		fd_set_nonblock(x->fd[s], 1);
		loop_add(x->loop, &x->w_fd[s], x->fd[s], POLLIN,
		    http_exec_pipe_cb, x);
	}
}

/* Close every fd of p still open (-1 skipped). */
static void
http_exec_close_pipes(int p[3][2])
{
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 2; j++)
			if (p[i][j] >= 0) {
				close(p[i][j]);
				p[i][j] = -1;
			}
}

/* See http_exec.h. */
int
http_exec_start(struct http_exec **out, struct loop *loop, int agent_fd,
    int p[3][2], json_object *spec, http_exec_ready_fn on_ready, void *arg)
{
	struct http_exec *x = calloc(1, sizeof(*x));
	int r;

	*out = NULL;
	if (!x) {
		close(agent_fd);
		http_exec_close_pipes(p);
		return -ENOMEM;
	}
	x->loop = loop;
	x->in_fd = x->fd[0] = x->fd[1] = -1;
	x->on_ready = on_ready;
	x->arg = arg;
	for (int s = 0; s < 2; s++)
		buf_init(&x->q[s], HTTP_EXEC_MAX_QUEUED);
	agentlink_init(&x->link);
	r = agentlink_attach(&x->link, loop, agent_fd, http_exec_line,
	    http_exec_link_end, x);
	if (r == 0)
		r = http_exec_send(x, p, spec);
	if (r < 0) {
		http_exec_close_pipes(p);
		http_exec_free(x);
		return r;
	}
	http_exec_take_pipes(x, p);
	*out = x;
	return 0;
}

/* See http_exec.h. */
long
http_exec_stdin(struct http_exec *x, const char *p, size_t n)
{
	ssize_t w;

	if (x->in_fd < 0)
		return -EPIPE;
	if (x->in_full || n == 0)
		return 0;
	w = write(x->in_fd, p, n);
	if (w >= 0) {
		if ((size_t)w < n)
			x->in_full = 1;
		http_exec_update(x);
		return (long)w;
	}
	if (errno == EAGAIN || errno == EINTR) {
		x->in_full = 1;
		http_exec_update(x);
		return 0;
	}
	/* EPIPE: the command stopped reading; the rest is not its. */
	http_exec_close_in(x);
	return (long)n;
}

/* See http_exec.h. */
void
http_exec_stdin_close(struct http_exec *x)
{
	http_exec_close_in(x);
}

/* See http_exec.h. */
struct buf *
http_exec_queue(struct http_exec *x, int stream)
{
	return &x->q[stream ? 1 : 0];
}

/* See http_exec.h. */
void
http_exec_taken(struct http_exec *x)
{
	for (int s = 0; s < 2; s++)
		if (x->q[s].len == 0)
			buf_shrink(&x->q[s], 0);
	http_exec_update(x);
}

/* See http_exec.h. */
int
http_exec_done(struct http_exec *x, int *code, char *sig, size_t siglen)
{
	*code = 0;
	if (siglen)
		sig[0] = '\0';
	if (!x->have_result)
		return 0;
	/* An agent gone or a refusal: the pipes may never end. */
	if (!x->error[0] && (!(x->eof[0] || x->fd[0] < 0) ||
	    !(x->eof[1] || x->fd[1] < 0)))
		return 0;
	if (x->q[0].len || x->q[1].len)
		return 0;
	*code = x->code;
	if (siglen)
		snprintf(sig, siglen, "%s", x->sig);
	return 1;
}

/* See http_exec.h. */
const char *
http_exec_error(const struct http_exec *x)
{
	return x->error;
}

/* See http_exec.h. */
void
http_exec_free(struct http_exec *x)
{
	if (!x)
		return;
	if (!x->have_result && x->link.fd >= 0) {
		json_object *o = json_object_new_object();

		log_info("the HTTP client left while its command ran; killing it");
		json_object_object_add(o, "type", json_object_new_string("signal"));
		json_object_object_add(o, "id", json_object_new_string(HTTP_EXEC_ID));
		json_object_object_add(o, "signal", json_object_new_string("KILL"));
		agentlink_send(&x->link, o);
		json_object_put(o);
	}
	agentlink_close(&x->link);
	http_exec_close_in(x);
	for (int s = 0; s < 2; s++) {
		loop_del(&x->w_fd[s]);
		if (x->fd[s] >= 0)
			close(x->fd[s]);
		buf_free(&x->q[s]);
	}
	free(x);
}
