/*
 * tool_files.c: how a file tool call runs (tool_files.h).  turn_tools.c
 * starts a call through tools.c once its audit row (user "agent", kind "tool", the
 * tool's name and path as its command: tool_files_audit) is written with
 * the call's journal start and, for write and edit, committed (tools.h:
 * "Auditing"; read, ls and grep may commit it with their end, turn.c's
 * "Held steps"); then its body runs in a
 * coroutine (wsio.h) started from a 0 ms timer, so that done is never
 * called inside start.  When the body returns, on the loop's stack: the
 * audit is ended, the text is made valid UTF-8 and done gets it.
 *
 * Cancel marks the call: the operation in flight completes, the body
 * unwinds (every later operation fails with -ECANCELED) and the call is
 * freed without done.  Abandon (shutdown) frees it at once unless an
 * operation is in flight, whose buffers the kernel may still write: then
 * the call's memory is left for the process's exit.
 */
#include "tool_files.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "jsonl.h"
#include "log.h"
#include "room_db.h"
#include "text.h"
#include "wsio.h"

struct tool_files_run {
	struct wsio w;			/* first: the coroutine's state */
	struct agent *a;
	const char *name;		/* the tool's */
	tool_files_fn *fn;
	json_object *input;		/* our reference */
	struct buf out;			/* the result text */
	int failed;			/* fn returned an error */
	long long audit_id;
	tool_done_fn *done;		/* NULL once cancelled */
	void *arg;
};

static void
tool_files_free(struct tool_files_run *r)
{
	json_object_put(r->input);
	buf_free(&r->out);
	free(r);
}

/* Record how the tool ended.  It has run: a failure (logged by room_db)
 * leaves its audit row without an end, which says so. */
static void
tool_files_audit_end(struct tool_files_run *r, int code)
{
	int rc = r->audit_id > 0 ? room_db_audit_end(r->a->db, r->audit_id,
	    code, NULL) : 0;

	if (rc < 0)
		log_error("%s: the end of audit row %lld not recorded: %s",
		    r->name, r->audit_id, room_db_strerror(rc));
}

static void
tool_files_body(struct wsio *w)
{
	struct tool_files_run *r = w->arg;

	r->failed = r->fn(w, r->input, &r->out) < 0;
}

/* The body has returned: audit, answer, free. */
static void
tool_files_finished(struct wsio *w)
{
	struct tool_files_run *r = w->arg;
	struct buf text;

	tool_files_audit_end(r, r->failed || !r->done ? 1 : 0);
	wsio_release(w);
	if (r->done) {
		buf_init(&text, r->out.len * 3 + 64);
		if (utf8_repair(&text, r->out.data ? r->out.data : "",
		    r->out.len) < 0 || !text.data)
			buf_printf(&text, "%s", r->out.len ? "(the result could "
			    "not be encoded)" : "");
		r->done(r->arg, r->failed ? "error" : "ok", text.data ?
		    text.data : "");
		buf_free(&text);
	}
	tool_files_free(r);
}

/* The arguments are an object, as every file tool needs.  0 or -EINVAL
 * (err). */
static int
tool_files_input(const char *name, json_object *input, char *err,
    size_t errlen)
{
	if (input && json_object_is_type(input, json_type_object))
		return 0;
	snprintf(err, errlen, "the %s tool needs a JSON object of arguments",
	    name);
	return -EINVAL;
}

/* What the audit shows: "NAME PATH" or "grep PATTERN PATH", in buf. */
const char *
tool_files_audit(struct agent *a, const char *name, json_object *input,
    char *buf, size_t buflen, char *err, size_t errlen)
{
	const char *path, *pat;

	if (tool_files_input(name, input, err, errlen) < 0)
		return NULL;
	path = json_get_string(input, "path");
	pat = json_get_string(input, "pattern");
	snprintf(buf, buflen, "%s%s%.200s%s%.1000s%s", name, pat ? " " : "",
	    pat ? pat : "", path ? " " : "", path ? path : "",
	    strcmp(name, "ls") == 0 && !path ? " ." : "");
	return buf;
}

/* Start any file tool (audit row audit_id committed).  0 with *run, or
 * -errno with a message in err. */
static int
tool_files_start(struct agent *a, const char *name, tool_files_fn *fn,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen)
{
	struct tool_files_run *r;

	*run = NULL;
	if (tool_files_input(name, input, err, errlen) < 0)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r || wsio_init(&r->w, a, tool_files_body, tool_files_finished,
	    r) < 0) {
		free(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->a = a;
	r->name = name;
	r->fn = fn;
	r->input = json_object_get(input);
	r->audit_id = audit_id;
	r->done = done;
	r->arg = arg;
	buf_init(&r->out, TOOL_FILES_MAX_OUTPUT + TOOL_FILES_OUT_SLACK);
	wsio_budget(&r->w, a->cfg.file_tool_timeout);
	if (wsio_start(&r->w) < 0) {	/* tools_start ends the audit row */
		wsio_release(&r->w);
		tool_files_free(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	*run = r;
	return 0;
}

#define TOOL_FILES_STARTER(tool) \
int \
tool_files_start_##tool(struct agent *a, const char *call_id, \
    json_object *input, long long audit_id, tool_done_fn *done, void *arg, \
    void **run, char *err, size_t errlen) \
{ \
	return tool_files_start(a, #tool, tool_##tool##_run, input, \
	    audit_id, done, arg, run, err, errlen); \
}

TOOL_FILES_STARTER(read)
TOOL_FILES_STARTER(write)
TOOL_FILES_STARTER(edit)
TOOL_FILES_STARTER(ls)
TOOL_FILES_STARTER(grep)

void
tool_files_cancel(void *run)
{
	struct tool_files_run *r = run;

	if (!r)
		return;
	r->done = NULL;
	if (wsio_stop(&r->w)) {	/* never started: finished will not run */
		tool_files_audit_end(r, 1);
		tool_files_free(r);
	}
}

void
tool_files_abandon(void *run)
{
	struct tool_files_run *r = run;
	char what[64];

	if (!r)
		return;
	tool_files_audit_end(r, 1);
	snprintf(what, sizeof(what), "%s tool", r->name);
	if (!wsio_abandon(&r->w, what))
		tool_files_free(r);
}

int
tool_files_path(struct wsio *w, json_object *input, const char *key,
    char *rel, size_t rellen, struct buf *out)
{
	json_object *v = NULL;
	const char *path = NULL;
	char err[512];
	int r;

	if (json_object_object_get_ex(input, key, &v) && v &&
	    !json_object_is_type(v, json_type_string)) {
		buf_printf(out, "\"%s\" must be a string", key);
		return -1;
	}
	if (v) {
		path = json_object_get_string(v);
		if (strlen(path) != (size_t)json_object_get_string_len(v)) {
			buf_printf(out, "\"%s\" must not contain a NUL "
			    "character", key);
			return -1;
		}
	}
	if (wsio_path(path, rel, rellen, err, sizeof(err)) < 0) {
		buf_printf(out, "%s", err);
		return -1;
	}
	r = wsio_open_root(w);
	if (r < 0) {
		buf_printf(out, "the workspace cannot be opened (%s): is it "
		    "mounted? The agent's log says more", strerror(-r));
		return -1;
	}
	return 0;
}

void
tool_files_stopped(struct buf *out, const char *what, int err, int budget_s)
{
	if (err == -ETIMEDOUT)
		buf_printf(out, "%s stopped: it ran out of its time budget (%d "
		    "s for one file tool call, the file-tool-timeout setting); "
		    "give a narrower path, glob or pattern", what, budget_s);
	else if (err == -ECANCELED)
		buf_printf(out, "%s stopped: the call was stopped", what);
	else
		buf_printf(out, "%s failed: %s", what, strerror(-err));
}

int
tool_files_binary(const char *p, size_t n)
{
	return memchr(p, '\0', n) != NULL;
}
