/*
 * api_files.c: a room's workspace files over HTTP (api_files.h).
 *
 * States of a request: opening (the room and a connection of kind exec
 * to its agent, api_room.h: an exec connection gets no room events, only
 * answers), asking (one file request sent, its answer awaited), ready
 * (the answer is in f->ans, and the descriptor it passed in f->fd), then
 * writing (PUT: the body goes into the descriptor as it comes) and
 * asking again (the commit), or failed.  While it waits the request is
 * suspended and its client watched for a hangup (api_hangup); the agent's
 * answer resumes it.
 *
 * Memory and the loop: a body arrives in MHD's pieces, and each is
 * copied into the request's one buffer of API_FILES_BLOCK and written by
 * the file I/O thread (http_fileio.h) while the request is suspended;
 * the next piece is taken once that write is done.  A file is sent the
 * same way, a block read by the thread ahead of MHD's call for it.  So
 * each request holds one block, and a stalled workspace mount stalls its
 * requests, never the loop.
 *
 * End: MHD's completion frees the state (api_files_free): the descriptor
 * is closed and the agent connection with it, and the agent removes an
 * upload that was not committed.  A write that fails (a full workspace)
 * aborts the upload at once and answers 507.
 */
#include "api_files.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "agentlink.h"
#include "api_files_meta.h"
#include "api_room.h"
#include "http_fileio.h"
#include "api_util.h"
#include "http_req.h"
#include "http_server.h"
#include "jsonl.h"
#include "log.h"

#define API_FILES_ID	"f1"		/* the request on its connection */
#define API_FILES_BLOCK	(64 * 1024)	/* bytes per read of a file */

enum api_files_op { API_FILES_GET, API_FILES_PUT, API_FILES_DELETE };
enum api_files_state {
	API_FILES_OPENING, API_FILES_ASKING, API_FILES_READY,
	API_FILES_WRITING, API_FILES_FAILED
};

struct api_files {
	struct http_req *r;
	struct api_room_wait room;	/* while the room opens */
	struct agentlink link;		/* kind exec */
	struct api_hangup hup;		/* the client, while it waits */
	enum api_files_op op;
	enum api_files_state state;
	int cloudflare;			/* /c/{name}/file/workspace/... */
	unsigned fail_status;		/* FAILED: the answer */
	char fail_why[512];
	json_object *ans;		/* READY: the agent's answer */
	int fd;				/* the file it passed, or -1 */
	int created;			/* PUT: the path was new */
	int committing;			/* PUT: the commit was asked */
	unsigned long long first;	/* GET: the bytes sent, from first */
	unsigned long long count;	/* and how many */
	struct http_fileio_job *job;	/* the one block read or written */
	unsigned long long have_pos;	/* GET: the response offset of the
					 * block in job->buf */
	size_t have_len;		/* and its bytes, 0: none */
	int read_err;			/* GET: a read failed */
};

/* ---- pure parts ---------------------------------------------------------- */

/* A decimal number at *p (advanced past it).  0 or -1 (none, too big). */
static int
api_files_number(const char **p, unsigned long long *v)
{
	const char *s = *p;

	*v = 0;
	if (*s < '0' || *s > '9')
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (*v > (~0ULL - 9) / 10)
			return -1;
		*v = *v * 10 + (unsigned long long)(*s - '0');
	}
	*p = s;
	return 0;
}

int
api_files_range(const char *value, unsigned long long size,
    unsigned long long *first, unsigned long long *last)
{
	const char *p = value;
	unsigned long long a = 0, b = 0;
	int has_a, has_b;

	if (!p || strncmp(p, "bytes=", 6) != 0 || strchr(p, ','))
		return 0;
	p += 6;
	while (*p == ' ')
		p++;
	has_a = api_files_number(&p, &a) == 0;
	if (*p++ != '-')
		return 0;
	has_b = api_files_number(&p, &b) == 0;
	while (*p == ' ')
		p++;
	if (*p || (!has_a && !has_b) || (has_a && has_b && b < a))
		return 0;
	if (!has_a) {			/* the last b bytes */
		if (b == 0 || size == 0)
			return -1;
		*first = b >= size ? 0 : size - b;
		*last = size - 1;
		return 1;
	}
	if (a >= size)
		return -1;
	*first = a;
	*last = has_b && b < size ? b : size - 1;
	return 1;
}

unsigned
api_files_status(const char *code, const char *method)
{
	static const struct { const char *code; unsigned status; } map[] = {
		{ "not_found", 404 }, { "exists", 409 },
		{ "not_empty", 409 }, { "is_directory", 409 },
		{ "not_file", 409 }, { "denied", 403 }, { "symlink", 403 },
		{ "bad_path", 400 }, { "no_space", 507 }, { "busy", 403 },
		{ "too_many", 429 }, { "read_only", 403 },
	};

	if (!code)
		return 400;
	if (strcmp(code, "not_directory") == 0)
		return strcmp(method, "GET") == 0 ||
		    strcmp(method, "HEAD") == 0 ? 404 : 409;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].code, code) == 0)
			return map[i].status;
	return 500;
}

/* ---- the agent's side ---------------------------------------------------- */

static void
api_files_free(void *arg)
{
	struct api_files *f = arg;

	if (!f)
		return;
	api_room_cancel(&f->room);
	api_hangup_stop(&f->hup);
	agentlink_close(&f->link);
	if (http_fileio_orphan(f->job))
		f->fd = -1;	/* its I/O runs on: its end closes the fd */
	if (f->fd >= 0)
		close(f->fd);
	json_object_put(f->ans);
	free(f);
}

/* Failed with status and why; the request goes on to answer it. */
static void
api_files_fail(struct api_files *f, unsigned status, const char *why)
{
	if (f->state == API_FILES_FAILED)
		return;
	f->state = API_FILES_FAILED;
	f->fail_status = status;
	snprintf(f->fail_why, sizeof(f->fail_why), "%s", why ? why : "");
	http_req_resume(f->r);
}

/* A line from the agent: the answer to our request, or an error. */
static void
api_files_line(void *arg, json_object *obj, const char *line, size_t len)
{
	struct api_files *f = arg;
	const char *type = json_get_string(obj, "type");
	const char *id = json_get_string(obj, "id");

	(void)line;
	(void)len;
	if (!type || f->state != API_FILES_ASKING)
		return;
	if (strcmp(type, "access_denied") == 0) {
		api_files_fail(f, 403, json_get_string(obj, "message"));
		return;
	}
	if (!id || strcmp(id, API_FILES_ID) != 0)
		return;
	json_object_put(f->ans);
	f->ans = json_object_get(obj);
	if (json_get_int(obj, "fds", 0) == 1) {
		if (f->fd >= 0)
			close(f->fd);
		f->fd = agentlink_take_fd(&f->link);
	}
	f->state = API_FILES_READY;
	http_req_resume(f->r);
}

static void
api_files_link_end(void *arg)
{
	struct api_files *f = arg;

	if (f->state == API_FILES_ASKING || f->state == API_FILES_OPENING)
		api_files_fail(f, 503, "the room's agent stopped; try again");
}

/* Send the file request type (mode for file_open, or NULL). */
static void
api_files_ask(struct api_files *f, const char *type, const char *mode)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "type", json_object_new_string(type));
	json_object_object_add(o, "id", json_object_new_string(API_FILES_ID));
	json_object_object_add(o, "path", json_object_new_string(f->r->rest));
	if (mode)
		json_object_object_add(o, "mode", json_object_new_string(mode));
	f->state = API_FILES_ASKING;
	if (agentlink_send(&f->link, o) < 0)
		api_files_fail(f, 503, "cannot reach the room's agent; try "
		    "again");
	json_object_put(o);
}

/* The first request of the route's op. */
static void
api_files_first(struct api_files *f)
{
	if (f->op == API_FILES_GET)
		api_files_ask(f, "file_open", "read");
	else if (f->op == API_FILES_PUT)
		api_files_ask(f, "file_open", "write");
	else
		api_files_ask(f, "file_delete", NULL);
}

/* The room's agent connection (or a refusal). */
static void
api_files_opened(struct http_req *r, int fd, unsigned status,
    const char *why)
{
	struct api_files *f = r->ctx;

	if (fd < 0) {
		api_files_fail(f, status, why);
		return;
	}
	if (agentlink_attach(&f->link, &r->srv->loop, fd, api_files_line,
	    api_files_link_end, f) < 0) {
		api_files_fail(f, 503, "cannot reach the room's agent; try "
		    "again");
		return;
	}
	api_files_first(f);
}

/* r's state, made (and the room asked for) on first use.  NULL with r
 * answered. */
static struct api_files *
api_files_get_state(struct http_req *r, enum api_files_op op, int cloudflare)
{
	struct api_files *f = r->ctx;

	if (f)
		return f;
	if (!(f = calloc(1, sizeof(*f)))) {
		http_reply_error(r, 503, "out of memory; try again");
		return NULL;
	}
	f->r = r;
	f->op = op;
	f->fd = -1;
	f->cloudflare = cloudflare;
	agentlink_init(&f->link);
	if (!(f->job = http_fileio_job_new(API_FILES_BLOCK))) {
		free(f);
		http_reply_error(r, 503, "out of memory; try again");
		return NULL;
	}
	f->job->arg = f;
	r->ctx = f;
	r->ctx_free = api_files_free;
	api_hangup_watch(&f->hup, r);
	f->state = API_FILES_OPENING;
	api_room_open(&f->room, r, "exec", 0, api_files_opened);
	return f;
}

/* Suspend r until the agent answers.  MHD's result. */
static int
api_files_wait(struct http_req *r)
{
	r->suspended = 1;
	MHD_suspend_connection(r->conn);
	return MHD_YES;
}

/* The agent's error answer, as the client's. */
static int
api_files_error(struct api_files *f)
{
	const char *msg = json_get_string(f->ans, "message");
	const char *code = json_get_string(f->ans, "code");

	if (!code && msg && strstr(msg, "read-only"))
		code = "read_only";
	return http_reply_error(f->r, api_files_status(code, f->r->method),
	    msg ? msg : "the room refused the request");
}

/* 1 when the answer in f is of type. */
static int
api_files_is(const struct api_files *f, const char *type)
{
	const char *t = json_get_string(f->ans, "type");

	return t && strcmp(t, type) == 0;
}

/* ---- GET and HEAD -------------------------------------------------------- */

/* A block was read (or not): MHD may ask again. */
static void
api_files_was_read(struct http_fileio_job *j)
{
	struct api_files *f = j->arg;

	if (j->res <= 0) {
		log_warn("room %s: reading %s: %s", f->r->room, f->r->rest,
		    j->res < 0 ? strerror((int)-j->res) : "it got shorter");
		f->read_err = 1;
	} else {
		f->have_len = (size_t)j->res;
	}
	http_req_resume(f->r);
}

/* MHD_ContentReaderCallback: the next bytes of the file, from the block
 * read ahead; when it is used up, the next block is asked for and the
 * request waits for it. */
static ssize_t
api_files_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct api_files *f = cls;
	struct http_fileio_job *j = f->job;
	size_t n;

	if (f->hup.gone || f->read_err)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	if (pos >= f->count)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (!j->busy && f->have_len && pos >= f->have_pos &&
	    pos < f->have_pos + f->have_len) {
		size_t at = (size_t)(pos - f->have_pos);

		n = f->have_len - at < max ? f->have_len - at : max;
		memcpy(out, j->buf + at, n);
		f->r->bytes += n;
		return (ssize_t)n;
	}
	if (!j->busy) {
		j->fd = f->fd;
		j->write = 0;
		j->off = (off_t)(f->first + pos);
		j->len = f->count - pos < API_FILES_BLOCK ?
		    (size_t)(f->count - pos) : API_FILES_BLOCK;
		j->done = api_files_was_read;
		f->have_pos = pos;
		f->have_len = 0;
		if (http_fileio_post(f->r->srv, j) < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
	}
	f->r->suspended = 1;
	MHD_suspend_connection(f->r->conn);
	return 0;
}

/* The opened file's ETag (quoted) into out. */
static void
api_files_etag(const struct api_files *f, char *out, size_t len)
{
	snprintf(out, len, "\"%llx-%llx-%llx-%llx\"",
	    (unsigned long long)json_get_int(f->ans, "ino", 0),
	    (unsigned long long)json_get_int(f->ans, "size", 0),
	    (unsigned long long)json_get_int(f->ans, "mtime", 0),
	    (unsigned long long)json_get_int(f->ans, "mtime_ns", 0));
}

/* Last-Modified and ETag of the opened file onto resp (a 304 has only
 * these). */
static void
api_files_validators(struct api_files *f, struct MHD_Response *resp)
{
	time_t mtime = (time_t)json_get_int(f->ans, "mtime", 0);
	char date[64], etag[96];
	struct tm tm;

	if (gmtime_r(&mtime, &tm) && strftime(date, sizeof(date),
	    "%a, %d %b %Y %H:%M:%S GMT", &tm))
		MHD_add_response_header(resp, "Last-Modified", date);
	api_files_etag(f, etag, sizeof(etag));
	MHD_add_response_header(resp, "ETag", etag);
}

/* The validators, Accept-Ranges and the file's type (api_files_meta.h:
 * a document type goes as an attachment; Cloudflare's route is always
 * octet-stream, as its example says) onto resp. */
static void
api_files_headers(struct api_files *f, struct MHD_Response *resp)
{
	struct api_files_type t = api_files_type_of(f->r->rest);

	api_files_validators(f, resp);
	MHD_add_response_header(resp, "Accept-Ranges", "bytes");
	if (f->cloudflare)
		t.content_type = "application/octet-stream";
	MHD_add_response_header(resp, "Content-Type", t.content_type);
	if (t.attachment)
		MHD_add_response_header(resp, "Content-Disposition",
		    "attachment");
}

/* 1 when the client's copy is current (If-None-Match, If-Modified-Since)
 * and a 304 answers. */
static int
api_files_is_current(struct api_files *f)
{
	struct MHD_Connection *c = f->r->conn;
	char etag[96];

	api_files_etag(f, etag, sizeof(etag));
	return api_files_not_modified(
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match"),
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    "If-Modified-Since"), etag,
	    (time_t)json_get_int(f->ans, "mtime", 0));
}

/* 304 Not Modified: the validators, no body. */
static int
api_files_send_current(struct api_files *f)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(0, "",
	    MHD_RESPMEM_PERSISTENT);

	if (!resp)
		return MHD_NO;
	api_files_validators(f, resp);
	return http_reply_queue(f->r, 304, resp);
}

/* The opened file as the response: whole, or the one range asked, or
 * 304 when the client has it already. */
static int
api_files_send(struct api_files *f)
{
	struct http_req *r = f->r;
	unsigned long long size = (unsigned long long)json_get_int(f->ans,
	    "size", 0), last = 0;
	const char *range = MHD_lookup_connection_value(r->conn,
	    MHD_HEADER_KIND, "Range");
	struct MHD_Response *resp;
	char cr[96];
	int rg = api_files_range(range, size, &f->first, &last);
	unsigned status = 200;

	if (api_files_is_current(f))
		return api_files_send_current(f);
	if (rg < 0) {
		resp = MHD_create_response_from_buffer(0, "",
		    MHD_RESPMEM_PERSISTENT);
		if (!resp)
			return MHD_NO;
		snprintf(cr, sizeof(cr), "bytes */%llu", size);
		MHD_add_response_header(resp, "Content-Range", cr);
		MHD_add_response_header(resp, "Accept-Ranges", "bytes");
		return http_reply_queue(r, 416, resp);
	}
	f->count = rg ? last - f->first + 1 : size;
	if (!rg)
		f->first = 0;
	resp = MHD_create_response_from_callback(f->count, API_FILES_BLOCK,
	    api_files_read, f, NULL);
	if (!resp)
		return http_reply_error(r, 503, "out of memory; try again");
	api_files_headers(f, resp);
	if (rg) {
		snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", f->first,
		    last, size);
		MHD_add_response_header(resp, "Content-Range", cr);
		status = 206;
	}
	return http_reply_queue(r, status, resp);
}

/* A directory's listing, as the agent gave it. */
static int
api_files_listing(struct api_files *f)
{
	json_object *entries = NULL;

	json_object_object_get_ex(f->ans, "entries", &entries);
	if (!entries)
		return http_reply_error(f->r, 502, "the room's agent gave no "
		    "listing");
	return http_reply_json(f->r, 200, entries);
}

/* GET and HEAD once the agent answered. */
static int
api_files_get_ready(struct api_files *f)
{
	if (api_files_is(f, "file_opened") && f->fd >= 0)
		return api_files_send(f);
	if (api_files_is(f, "file_listing"))
		return api_files_listing(f);
	if (api_files_is(f, "error") && !f->cloudflare &&
	    strcmp(json_get_string(f->ans, "code") ?: "", "is_directory") ==
	    0) {
		api_files_ask(f, "file_list", NULL);
		return api_files_wait(f->r);
	}
	if (api_files_is(f, "error") && f->cloudflare &&
	    strcmp(json_get_string(f->ans, "code") ?: "", "is_directory") ==
	    0)
		return http_reply_error(f->r, 400, "that path is a directory: "
		    "GET reads files");
	if (api_files_is(f, "error"))
		return api_files_error(f);
	return http_reply_error(f->r, 502, "the room's agent gave an answer "
	    "this server does not know");
}

/* A route without a body: wait for the agent, then answer. */
static int
api_files_run(struct http_req *r, enum api_files_op op, int cloudflare)
{
	struct api_files *f = api_files_get_state(r, op, cloudflare);

	if (!f)
		return MHD_YES;
	if (f->hup.gone)
		return MHD_NO;
	if (f->state == API_FILES_FAILED)
		return http_reply_error(r, f->fail_status, f->fail_why);
	if (f->state != API_FILES_READY)
		return api_files_wait(r);
	if (op == API_FILES_GET)
		return api_files_get_ready(f);
	if (api_files_is(f, "file_done"))
		return http_reply_text(r, 204, "text/plain", "", 0);
	return api_files_error(f);
}

int
api_files_get(struct http_req *r)
{
	return api_files_run(r, API_FILES_GET, 0);
}

int
api_files_cf_get(struct http_req *r)
{
	return api_files_run(r, API_FILES_GET, 1);
}

int
api_files_delete(struct http_req *r)
{
	return api_files_run(r, API_FILES_DELETE, 0);
}

/* ---- PUT ----------------------------------------------------------------- */

/* The agent's answer to the open for writing: take its descriptor.  0,
 * or -1 failed (answered once the body is in). */
static int
api_files_put_opened(struct api_files *f)
{
	const char *code = json_get_string(f->ans, "code");
	const char *msg = json_get_string(f->ans, "message");

	if (api_files_is(f, "file_opened") && f->fd >= 0) {
		f->created = json_get_bool(f->ans, "created", 0);
		f->state = API_FILES_WRITING;
		return 0;
	}
	if (!code && msg && strstr(msg, "read-only"))
		code = "read_only";
	if (api_files_is(f, "error"))
		api_files_fail(f, api_files_status(code, f->r->method),
		    msg ? msg : "the room refused the request");
	else
		api_files_fail(f, 502, "the room's agent gave an answer this "
		    "server does not know");
	return -1;
}

/* A write failed with err: the upload is aborted (nothing of it is
 * kept); the client is told once its body is in (MHD answers no request
 * whose body is still coming). */
static void
api_files_write_failed(struct api_files *f, int err)
{
	char why[256];

	api_files_ask(f, "file_abort", NULL);
	close(f->fd);
	f->fd = -1;
	if (err == ENOSPC || err == EDQUOT) {
		api_files_fail(f, 507, "the workspace is full (its quota): "
		    "nothing of the file was kept; delete files and try again");
		return;
	}
	snprintf(why, sizeof(why), "the file could not be written (%s); "
	    "nothing of it was kept", strerror(err));
	api_files_fail(f, 500, why);
}

/* A block was written (or not): MHD may give the next piece. */
static void
api_files_written(struct http_fileio_job *j)
{
	struct api_files *f = j->arg;

	if (j->res < 0)
		api_files_write_failed(f, (int)-j->res);
	http_req_resume(f->r);
}

static ssize_t
api_files_body(struct http_req *r, const char *data, size_t len,
    int cloudflare)
{
	struct api_files *f = api_files_get_state(r, API_FILES_PUT,
	    cloudflare);
	struct http_fileio_job *j;

	if (!f || f->hup.gone)
		return -1;
	if (f->state == API_FILES_FAILED)
		return (ssize_t)len;	/* dropped: the end answers */
	if (f->state == API_FILES_OPENING || f->state == API_FILES_ASKING)
		return 0;	/* suspended until the agent answers */
	if (f->state == API_FILES_READY && api_files_put_opened(f) < 0)
		return (ssize_t)len;
	j = f->job;
	if (j->busy)
		return 0;	/* suspended until the block is written */
	j->fd = f->fd;
	j->write = 1;
	j->len = len < API_FILES_BLOCK ? len : API_FILES_BLOCK;
	memcpy(j->buf, data, j->len);
	j->done = api_files_written;
	if (http_fileio_post(r->srv, j) < 0) {
		api_files_write_failed(f, EAGAIN);
		return (ssize_t)len;
	}
	return (ssize_t)j->len;
}

ssize_t
api_files_put_body(struct http_req *r, const char *data, size_t len)
{
	return api_files_body(r, data, len, 0);
}

ssize_t
api_files_cf_put_body(struct http_req *r, const char *data, size_t len)
{
	return api_files_body(r, data, len, 1);
}

/* The body is in: close the file (a late write error shows here), then
 * ask for the commit. */
static int
api_files_commit(struct api_files *f)
{
	int r = close(f->fd), err = errno;

	f->fd = -1;
	if (r < 0) {
		api_files_write_failed(f, err);
		return http_reply_error(f->r, f->fail_status, f->fail_why);
	}
	f->committing = 1;
	api_files_ask(f, "file_commit", NULL);
	return api_files_wait(f->r);
}

/* The commit is done: 201 with the path and size for a new file, 204
 * for one replaced. */
static int
api_files_stored(struct api_files *f)
{
	json_object *o;
	int ret;

	if (!f->created)
		return http_reply_text(f->r, 204, "text/plain", "", 0);
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(
	    json_get_string(f->ans, "path") ?: ""));
	json_object_object_add(o, "size", json_object_new_int64(
	    json_get_int(f->ans, "size", 0)));
	ret = http_reply_json(f->r, 201, o);
	json_object_put(o);
	return ret;
}

static int
api_files_put_run(struct http_req *r, int cloudflare)
{
	struct api_files *f = api_files_get_state(r, API_FILES_PUT,
	    cloudflare);

	if (!f)
		return MHD_YES;
	if (f->hup.gone)
		return MHD_NO;
	if (f->state == API_FILES_FAILED)
		return http_reply_error(r, f->fail_status, f->fail_why);
	if (f->state == API_FILES_OPENING || f->state == API_FILES_ASKING)
		return api_files_wait(r);
	if (f->state == API_FILES_READY && !f->committing &&
	    api_files_put_opened(f) < 0)
		return http_reply_error(r, f->fail_status, f->fail_why);
	if (f->state == API_FILES_WRITING && f->job->busy)
		return api_files_wait(r);	/* the last block */
	if (f->state == API_FILES_WRITING)
		return api_files_commit(f);
	if (api_files_is(f, "file_done"))
		return api_files_stored(f);
	return api_files_error(f);
}

int
api_files_put(struct http_req *r)
{
	return api_files_put_run(r, 0);
}

int
api_files_cf_put(struct http_req *r)
{
	return api_files_put_run(r, 1);
}

/* ---- Cloudflare's paths outside /workspace ------------------------------- */

int
api_files_cf_outside(struct http_req *r)
{
	return http_reply_error(r, 400, "only paths under /workspace are "
	    "served: /c/NAME/file/workspace/PATH");
}

ssize_t
api_files_cf_outside_body(struct http_req *r, const char *data, size_t len)
{
	(void)r;
	(void)data;
	return (ssize_t)len;	/* dropped: the end answers 400 */
}
