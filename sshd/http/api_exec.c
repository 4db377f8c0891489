/*
 * api_exec.c: POST /api/rooms/{room}/exec, Atrium's own command over HTTP
 * (api_exec.h).  A row of http_routes.c; the command runs through
 * http_exec.h.
 *
 *   request   the command in the query: command=TEXT (bash -c) or one
 *             arg=WORD per argument (run directly), cwd=DIR (inside
 *             /workspace, the default); the body is the command's stdin,
 *             given to it as it arrives (an empty body: EOF at once)
 *   response  200, Content-Type application/x-ndjson, chunked: one JSON
 *             object per line, as the command writes
 *               {"stream":"stdout","data":BASE64}
 *               {"stream":"stderr","data":BASE64}
 *             and last
 *               {"exit":N}  (N = 128+S and "signal":"NAME" when killed by
 *                           signal S; "error":TEXT when the room gave an
 *                           error instead of running it, N = 255)
 *             A stream cut before {"exit"} means the command's end is not
 *             known (the server stopped).
 *
 * HTTP/1.1 through libmicrohttpd is half duplex: the response starts once
 * the whole body is in.  Until then the command's output waits in its
 * pipes and queues (1 MiB and HTTP_EXEC_MAX_QUEUED a stream), so a
 * command that writes more than that before it has read all its stdin
 * waits for the body to end (as `cat` with a large body does); `wc -c`,
 * `tar x` and the like read first.
 *
 * The request's state (ctx) lives until MHD's completion notice; a
 * client that goes away first has its command killed (http_exec_free).
 */
#include "api_exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

#include "api_room.h"
#include "api_util.h"
#include "http_cap.h"
#include "http_ask.h"
#include "http_exec.h"
#include "http_req.h"
#include "http_server.h"
#include "log.h"

#define API_EXEC_CHUNK	(48 * 1024)	/* raw bytes per record, at most */
#define API_EXEC_BLOCK	(64 * 1024)	/* MHD's block for the response */
#define API_EXEC_MAX_ARGS 256

enum api_exec_state { API_EXEC_OPENING, API_EXEC_RUNNING, API_EXEC_FAILED };

struct api_exec {
	struct http_req *r;
	struct api_room_wait room;	/* while the room opens */
	enum api_exec_state state;
	unsigned fail_status;		/* FAILED: the answer */
	char fail_why[512];
	json_object *spec;		/* command or argv, cwd */
	struct http_exec *x;		/* RUNNING: the command */
	struct buf pend;		/* a record not yet given to MHD */
	struct api_hangup hup;		/* the client, while it waits */
	int ended;			/* the {"exit"} record was made */
	struct http_cap cap;		/* the command, counted against its
					 * user's max-commands-per-user */
};

/* The request's state; freed at its completion (r->ctx_free). */
static void
api_exec_free(void *arg)
{
	struct api_exec *e = arg;

	if (!e)
		return;
	api_room_cancel(&e->room);
	api_hangup_stop(&e->hup);
	http_exec_free(e->x);
	http_cap_release(e->r->srv, &e->cap);
	json_object_put(e->spec);
	buf_free(&e->pend);
	free(e);
}

/* Something changed for the command: let MHD call us again. */
static void
api_exec_ready(void *arg)
{
	struct api_exec *e = arg;

	http_req_resume(e->r);
}

/* Start the command on the room's agent connection fd (taken).  0 or
 * -errno. */
static int
api_exec_start(struct api_exec *e, int fd)
{
	struct http_req *r = e->r;
	int p[3][2], rc;

	if ((rc = api_ask_pipes(r, p)) < 0) {
		close(fd);
		return rc;
	}
	/* http_exec_start owns fd and the pipes, also when it fails. */
	return http_exec_start(&e->x, &r->srv->loop, fd, p, e->spec,
	    api_exec_ready, e);
}

/* The room's agent connection came (or a refusal): start the command,
 * then let MHD call again. */
static void
api_exec_opened(struct http_req *r, int fd, unsigned status, const char *why)
{
	struct api_exec *e = r->ctx;
	int rc;

	if (fd < 0) {
		e->state = API_EXEC_FAILED;
		e->fail_status = status;
		snprintf(e->fail_why, sizeof(e->fail_why), "%s", why);
	} else if ((rc = api_exec_start(e, fd)) < 0) {
		log_warn("room %s: cannot start a command over HTTP: %s",
		    r->room, strerror(-rc));
		e->state = API_EXEC_FAILED;
		e->fail_status = 503;
		snprintf(e->fail_why, sizeof(e->fail_why), "cannot start the "
		    "command in room '%s' (%s); try again", r->room,
		    strerror(-rc));
	} else {
		e->state = API_EXEC_RUNNING;
	}
	http_req_resume(r);
}

/* The exec spec from the query (see the head).  NULL with why. */
static json_object *
api_exec_spec(struct http_req *r, char *why, size_t len)
{
	char cmdbuf[API_QUERY_MAX], cwdbuf[API_QUERY_MAX];
	const char *cmd = api_query(r, "command", cmdbuf, sizeof(cmdbuf));
	const char *cwd = api_query(r, "cwd", cwdbuf, sizeof(cwdbuf));
	json_object *spec = json_object_new_object(), *argv;

	if (!spec)
		return NULL;
	argv = api_query_all(r, "arg", API_EXEC_MAX_ARGS);
	if ((cmd && argv) || (!cmd && !argv)) {
		snprintf(why, len, "say the command once: ?command=TEXT (run "
		    "by bash -c) or ?arg=WORD&arg=WORD... (run directly)");
		json_object_put(argv);
		json_object_put(spec);
		return NULL;
	}
	if (cmd)
		json_object_object_add(spec, "command",
		    json_object_new_string(cmd));
	else
		json_object_object_add(spec, "argv", argv);
	if (cwd && !api_cwd_valid(cwd)) {
		snprintf(why, len, "cwd must be a directory inside /workspace");
		json_object_put(spec);
		return NULL;
	}
	if (cwd)
		json_object_object_add(spec, "cwd", json_object_new_string(cwd));
	return spec;
}

/* r's state, made (and the room asked for) on first use.  NULL with r
 * answered. */
static struct api_exec *
api_exec_get(struct http_req *r)
{
	struct api_exec *e = r->ctx;
	char why[256];

	if (e)
		return e;
	if (!(e = calloc(1, sizeof(*e)))) {
		http_reply_error(r, 503, "out of memory; try again");
		return NULL;
	}
	e->r = r;
	buf_init(&e->pend, API_EXEC_BLOCK * 2);
	r->ctx = e;
	r->ctx_free = api_exec_free;
	api_hangup_watch(&e->hup, r);
	if (!(e->spec = api_exec_spec(r, why, sizeof(why)))) {
		http_reply_error(r, 400, why);
		return NULL;
	}
	if (http_cap_take(r->srv, r->token, r->addr, &e->cap, why,
	    sizeof(why)) != 0) {
		http_reply_error(r, 429, why);
		return NULL;
	}
	e->state = API_EXEC_OPENING;
	api_room_open(&e->room, r, "exec", 0, api_exec_opened);
	return e;
}

/* See api_exec.h. */
ssize_t
api_exec_body(struct http_req *r, const char *data, size_t len)
{
	struct api_exec *e = api_exec_get(r);
	long n;

	if (!e || e->hup.gone)
		return -1;	/* answered, or the client is gone: MHD closes */
	if (e->state == API_EXEC_OPENING)
		return 0;
	if (e->state == API_EXEC_FAILED) {
		http_reply_error(r, e->fail_status, e->fail_why);
		return -1;
	}
	n = http_exec_stdin(e->x, data, len);
	return n < 0 ? (ssize_t)len : (ssize_t)n;	/* stdin closed: the
							 * rest is dropped */
}

/* One record for the bytes at the head of stream s's queue into pend. */
static void
api_exec_record(struct api_exec *e, int s)
{
	struct buf *q = http_exec_queue(e->x, s);
	size_t n = q->len < API_EXEC_CHUNK ? q->len : API_EXEC_CHUNK;

	buf_printf(&e->pend, "{\"stream\":\"%s\",\"data\":\"",
	    s ? "stderr" : "stdout");
	api_base64(&e->pend, q->data, n);
	buf_append(&e->pend, "\"}\n", 3);
	buf_consume(q, n);
	http_exec_taken(e->x);
}

/* The last record: exit status, signal, error. */
static void
api_exec_end_record(struct api_exec *e, int code, const char *sig)
{
	json_object *o = json_object_new_object();
	const char *err = http_exec_error(e->x);
	const char *s;

	json_object_object_add(o, "exit", json_object_new_int(code));
	if (sig[0])
		json_object_object_add(o, "signal", json_object_new_string(sig));
	if (err[0])
		json_object_object_add(o, "error", json_object_new_string(err));
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	buf_append(&e->pend, s, strlen(s));
	buf_append(&e->pend, "\n", 1);
	json_object_put(o);
	e->ended = 1;
	http_cap_release(e->r->srv, &e->cap);	/* the command is over */
}

/* MHD_ContentReaderCallback: the next records, as they come. */
static ssize_t
api_exec_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct api_exec *e = cls;
	char sig[16];
	int code;
	size_t n;

	(void)pos;
	if (e->hup.gone)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (e->pend.len == 0) {
		if (http_exec_queue(e->x, 0)->len)
			api_exec_record(e, 0);
		else if (http_exec_queue(e->x, 1)->len)
			api_exec_record(e, 1);
		else if (!e->ended && http_exec_done(e->x, &code, sig,
		    sizeof(sig)))
			api_exec_end_record(e, code, sig);
		else if (e->ended)
			return MHD_CONTENT_READER_END_OF_STREAM;
	}
	if (e->pend.len == 0) {
		/* Nothing yet: wait for the command (api_exec_ready). */
		e->r->suspended = 1;
		MHD_suspend_connection(e->r->conn);
		return 0;
	}
	n = e->pend.len < max ? e->pend.len : max;
	memcpy(out, e->pend.data, n);
	buf_consume(&e->pend, n);
	e->r->bytes += n;
	return (ssize_t)n;
}

/* The body is in: stdin ends, the answer streams. */
static int
api_exec_respond(struct http_req *r, struct api_exec *e)
{
	struct MHD_Response *resp;

	http_exec_stdin_close(e->x);
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN,
	    API_EXEC_BLOCK, api_exec_read, e, NULL);
	if (!resp)
		return http_reply_error(r, 503, "out of memory; try again");
	MHD_add_response_header(resp, "Content-Type", "application/x-ndjson");
	return http_reply_queue(r, 200, resp);	/* it drops resp */
}

/* See api_exec.h. */
int
api_exec_run(struct http_req *r)
{
	struct api_exec *e = api_exec_get(r);

	if (!e)
		return MHD_YES;
	if (e->hup.gone)
		return MHD_NO;
	if (e->state == API_EXEC_FAILED)
		return http_reply_error(r, e->fail_status, e->fail_why);
	if (e->state == API_EXEC_OPENING) {
		r->suspended = 1;
		MHD_suspend_connection(r->conn);
		return MHD_YES;
	}
	return api_exec_respond(r, e);
}
