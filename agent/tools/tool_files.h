/*
 * tool_files.h: the file tools, a small family sharing one way to run:
 *
 *   tool_files.c  starting, cancelling and ending a call: audit, the
 *                 coroutine (wsio.h), the result for the model
 *   tool_read.c   read: numbered lines, capped
 *   tool_write.c  write (atomic replace, parents made) and edit (exact
 *                 replacement)
 *   tool_find.c   ls (list, or find with a glob: pathglob.c) and grep
 *                 (PCRE2 with a budget: tool_regex.c)
 *
 * Every path is resolved beneath the workspace with the sandbox uid's
 * rights (wsio.c).  Errors are results with status "error" and a message
 * for the model, never a failed turn.
 *
 * Time.  A call has the file-tool-timeout setting's budget (wsio_budget);
 * the scans (ls, grep, read) call wsio_pace for each entry, line or chunk,
 * so they give the loop a turn every WSIO_SLICE_MS and stop with an error
 * once the budget is spent.  write and edit are bounded by their sizes and
 * are never cut midway (their temporary file must be removed or renamed).
 */
#ifndef ATRIUM_AGENT_TOOL_FILES_H
#define ATRIUM_AGENT_TOOL_FILES_H

#include <stddef.h>
#include <json-c/json.h>

#include "buf.h"
#include "tools.h"
#include "wsio.h"

struct agent;
struct pathglob;
struct wsio;

#define TOOL_FILES_MAX_OUTPUT	(1024 * 1024)	/* result text at most */
#define TOOL_FILES_OUT_SLACK	(16 * 1024)	/* room for notes past it */
#define TOOL_FILES_MAX_VISIT	10000	/* directory entries per ls/grep */
#define TOOL_READ_MAX_LINES	2000	/* lines per read */
#define TOOL_READ_MAX_BYTES	(256 * 1024)	/* output bytes per read */
#define TOOL_READ_LINE_MAX	(8 * 1024)	/* bytes shown of one line */
#define TOOL_EDIT_MAX_FILE	(16 * 1024 * 1024)	/* editable size */
#define TOOL_GREP_LINE_MAX	512	/* bytes shown of a matching line */
#define TOOL_GREP_MAX_FILE	(64 * 1024 * 1024)	/* larger: skipped */

/* A tool's work, in its coroutine (w is started, root not yet open): the
 * result text goes into out.  0 on success, -1 when out holds an error
 * message for the model. */
typedef int tool_files_fn(struct wsio *w, json_object *input,
    struct buf *out);

tool_files_fn tool_read_run, tool_write_run, tool_edit_run, tool_ls_run,
    tool_grep_run;

#define TOOL_FILES_CWD	WSIO_ROOT	/* what the audit shows as cwd */

/* tools.h's audit, start, cancel and abandon for each file tool. */
const char *tool_files_audit(struct agent *a, const char *name,
    json_object *input, char *buf, size_t buflen, char *err, size_t errlen);
int tool_files_start_read(struct agent *a, const char *call_id,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen);
int tool_files_start_write(struct agent *a, const char *call_id,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen);
int tool_files_start_edit(struct agent *a, const char *call_id,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen);
int tool_files_start_ls(struct agent *a, const char *call_id,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen);
int tool_files_start_grep(struct agent *a, const char *call_id,
    json_object *input, long long audit_id, tool_done_fn *done, void *arg,
    void **run, char *err, size_t errlen);
void tool_files_cancel(void *run);
void tool_files_abandon(void *run);

/* Open the root and turn the model's path (input key, may be absent) into
 * a relative one.  0, or -1 with the message in out. */
int tool_files_path(struct wsio *w, json_object *input, const char *key,
    char *rel, size_t rellen, struct buf *out);

/* ---- pure parts, unit-tested ---- */

/* read's formatter: lines first..first+limit-1 as "%6ld\t" + text, at
 * most max_bytes of output, each line cut at TOOL_READ_LINE_MAX. */
struct tool_read_fmt {
	struct buf *out;
	long first, limit;	/* 1-based first line; lines wanted */
	size_t max_bytes;	/* output cap */
	long line;		/* 1-based number of the line being read */
	long shown;		/* lines written to out */
	int full;		/* 1: limit reached, 2: max_bytes reached */
	int dropped;		/* a line was read but did not fit */
	struct buf cur;		/* the line so far, TOOL_READ_LINE_MAX */
	size_t cur_len;		/* its whole length */
	int in_line;		/* cur holds a started line */
};
void tool_read_fmt_init(struct tool_read_fmt *f, struct buf *out,
    long first, long limit, size_t max_bytes);
void tool_read_fmt_free(struct tool_read_fmt *f);
/* Feed bytes; the count consumed (less than n once full). */
size_t tool_read_fmt_feed(struct tool_read_fmt *f, const char *p, size_t n);
/* End of input: the last line without a newline is written. */
void tool_read_fmt_end(struct tool_read_fmt *f);

/* Replace old (olen > 0) by new in text: every occurrence when all, else
 * exactly one.  *count gets the occurrences found (non-overlapping).
 * 0 with a malloc'd *out, -ENOENT (none), -EEXIST (more than one and not
 * all), -ENOMEM, -EFBIG (result over TOOL_EDIT_MAX_FILE). */
int tool_edit_apply(const char *text, size_t len, const char *old,
    size_t olen, const char *new, size_t nlen, int all, char **out,
    size_t *outlen, size_t *count);

/* ls's and grep's rule for a glob (pathglob.h): a pattern with a '/'
 * matches the path relative to the base; one without matches the last
 * component, at any depth.  1 or 0. */
int tool_find_match(struct pathglob *g, const char *rel);

/* The message for the model when a scan stopped with err from wsio_pace
 * (-ETIMEDOUT: its budget of budget_s seconds is spent), into out: what
 * ("grep in src") stopped, why, and what to do. */
void tool_files_stopped(struct buf *out, const char *what, int err,
    int budget_s);

/* 1 when the bytes look binary (a NUL in them). */
int tool_files_binary(const char *p, size_t n);

#endif
