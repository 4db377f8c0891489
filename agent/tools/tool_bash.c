/*
 * tool_bash.c: the bash tool (tool_bash.h).  The command runs through
 * proc.c in the room's sandbox with /workspace as its cwd and no
 * environment of the agent's; every run is audited (user "agent").  Both
 * streams go to the room as they come and into one outcap, in arrival
 * order, which is what the model sees.
 *
 * When the output is more than the model is sent (head and tail, 64 KiB),
 * its first OUTPUT_SAVE_MAX bytes are also kept in memory and, once the
 * command has ended, saved in the workspace (output_save.h); the result
 * says where, or why not, and only then goes to the model.  A save that
 * fails (a full quota, say) never fails the call.
 */
#include "tool_bash.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "log.h"
#include "output_save.h"
#include "proc.h"
#include "room_events.h"
#include "room_db.h"
#include "text.h"

struct tool_run {
	struct agent *a;
	char id[128];			/* the model's tool call id */
	struct proc *proc;
	struct outcap cap;
	struct buf full;		/* the output's first OUTPUT_SAVE_MAX
					 * bytes, for the saved file */
	struct output_save *save;	/* saving it, after the command ended */
	char *ended;			/* the result but for the saved file's
					 * note, while saving */
	int ended_ok;			/* the command exited 0 */
	struct buf carry[2];		/* output not yet streamed, per stream */
	long long audit_id;
	int timeout_s;
	tool_bash_done_fn *done;	/* NULL once cancelled */
	void *arg;
};

char *
tool_bash_result(const char *output, int exited, int code,
    const char *signame, int timed_out, int timeout_s)
{
	size_t n = strlen(output) + 160;
	char *s = malloc(n);
	const char *sep = output[0] && output[strlen(output) - 1] != '\n' ?
	    "\n" : "";

	if (!s)
		return NULL;
	if (timed_out)
		snprintf(s, n, "%s%scommand timed out after %d s and was "
		    "killed", output, sep, timeout_s);
	else if (!exited)
		snprintf(s, n, "%s%skilled by signal %s", output, sep,
		    signame ? signame : "?");
	else if (code != 0)
		snprintf(s, n, "%s%sexit status %d", output, sep, code);
	else
		snprintf(s, n, "%s", output);
	return s;
}

static void
tool_bash_on_output(void *arg, int stream, const char *p, size_t n)
{
	struct tool_run *r = arg;

	outcap_add(&r->cap, p, n);
	buf_append(&r->full, p, n < buf_room(&r->full) ? n :
	    buf_room(&r->full));
	if (r->done)
		room_emit_output(r->a, "tool_output", r->id, stream,
		    &r->carry[stream - 1], p, n);
}

static void
tool_bash_free(struct tool_run *r)
{
	outcap_free(&r->cap);
	buf_free(&r->full);
	free(r->ended);
	buf_free(&r->carry[0]);
	buf_free(&r->carry[1]);
	free(r);
}

/* Record how the command ended.  It has run: a failure (logged by
 * room_db) leaves its audit row without an end, which says so. */
static void
tool_bash_audit_end(struct tool_run *r, int code, const char *sig)
{
	int rc = r->audit_id > 0 ? room_db_audit_end(r->a->db, r->audit_id,
	    code, sig) : 0;

	if (rc < 0)
		log_error("%s: the end of audit row %lld not recorded: %s",
		    r->id, r->audit_id, room_db_strerror(rc));
}

/* The note after a cut output: where the whole of it is, or why not. */
static void
tool_bash_save_note(struct tool_run *r, int err, const char *path,
    char *out, size_t outlen)
{
	size_t total = r->cap.total;

	if (err < 0)
		snprintf(out, outlen, "[the whole output (%zu bytes) could not "
		    "be saved in the workspace: %s]", total, err == -ENOSPC ||
		    err == -EDQUOT ? "the workspace is full (its quota)" :
		    strerror(-err));
	else if (total > r->full.len)
		snprintf(out, outlen, "[the output was %zu bytes; its first %zu "
		    "are saved in %s]", total, r->full.len, path);
	else
		snprintf(out, outlen, "[the whole output (%zu bytes) is saved in "
		    "%s]", total, path);
}

/* The save ended: the result, with the note after the output, goes to
 * the model. */
static void
tool_bash_saved(void *arg, int err, const char *path)
{
	struct tool_run *r = arg;
	char note[512];
	char *res;
	size_t n;

	r->save = NULL;
	tool_bash_save_note(r, err, path, note, sizeof(note));
	n = strlen(r->ended) + strlen(note) + 2;
	res = malloc(n);
	if (res)
		snprintf(res, n, "%s\n%s", r->ended, note);
	r->done(r->arg, r->ended_ok ? "ok" : "error", res ? res : r->ended);
	free(res);
	tool_bash_free(r);
}

/* The output with the end of the command after it, as the model gets it
 * (before any note of a saved file).  NULL on no memory. */
static char *
tool_bash_text(struct tool_run *r, const struct proc_end *end,
    const char *sig)
{
	char *out = NULL, *res = NULL;

	if (outcap_text(&r->cap, &out) == 0)
		res = tool_bash_result(out, end->how.how == SANDBOX_EXITED,
		    end->how.code, sig, end->timed_out, r->timeout_s);
	free(out);
	return res;
}

static void
tool_bash_on_exit(void *arg, const struct proc_end *end)
{
	struct tool_run *r = arg;
	const char *sig = end->how.how == SANDBOX_SIGNALED ?
	    proc_signal_name(end->how.code) : NULL;
	int exited = end->how.how == SANDBOX_EXITED;
	char *res;

	r->a->tool_procs--;
	r->proc = NULL;
	tool_bash_audit_end(r, exited ? end->how.code : 128 + end->how.code,
	    sig);
	if (!r->done) {
		tool_bash_free(r);
		return;
	}
	res = tool_bash_text(r, end, sig);
	r->ended_ok = exited && end->how.code == 0 && !end->timed_out;
	if (res && r->cap.total > TOOL_BASH_HEAD + TOOL_BASH_TAIL &&
	    output_save_start(r->a, r->id, r->full.data, r->full.len,
	    tool_bash_saved, r, &r->save) == 0) {
		r->ended = res;		/* the model hears when it is saved */
		return;
	}
	r->done(r->arg, r->ended_ok ? "ok" : "error",
	    res ? res : "(the agent ran out of memory for the output)");
	free(res);
	tool_bash_free(r);
}

/* The command and timeout from the model's input.  0 or -EINVAL (err). */
static int
tool_bash_input(struct agent *a, json_object *input, const char **cmd,
    int *timeout_s, char *err, size_t errlen)
{
	int max = a->cfg.command_timeout > 0 ? a->cfg.command_timeout :
	    AGENT_DEFAULT_TOOL_TIMEOUT;
	long long t = input ? json_get_int(input, "timeout", 0) : 0;

	*cmd = input ? json_get_string(input, "command") : NULL;
	if (!*cmd || !**cmd) {
		snprintf(err, errlen, "the bash tool needs {\"command\": "
		    "\"...\"} with a non-empty command string");
		return -EINVAL;
	}
	*timeout_s = t > 0 && t < max ? (int)t : max;
	return 0;
}

const char *
tool_bash_audit(struct agent *a, const char *name, json_object *input,
    char *buf, size_t buflen, char *err, size_t errlen)
{
	const char *cmd;
	int timeout_s;

	return tool_bash_input(a, input, &cmd, &timeout_s, err, errlen) < 0 ?
	    NULL : cmd;
}

int
tool_bash_start(struct agent *a, const char *call_id, json_object *input,
    long long audit_id, tool_bash_done_fn *done, void *arg,
    struct tool_run **out, char *err, size_t errlen)
{
	struct proc_opts o = { .fds = { -1, -1, -1 }, .capture = 1 };
	struct tool_run *r;
	const char *cmd;
	int timeout_s, rc;

	*out = NULL;
	rc = tool_bash_input(a, input, &cmd, &timeout_s, err, errlen);
	if (rc < 0)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r || outcap_init(&r->cap, TOOL_BASH_HEAD, TOOL_BASH_TAIL) < 0) {
		free(r);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->a = a;
	snprintf(r->id, sizeof(r->id), "%s", call_id);
	buf_init(&r->full, OUTPUT_SAVE_MAX);
	buf_init(&r->carry[0], PROC_CHUNK + 4);
	buf_init(&r->carry[1], PROC_CHUNK + 4);
	r->timeout_s = timeout_s;
	r->done = done;
	r->arg = arg;
	o.shell = cmd;
	o.timeout_s = timeout_s;
	o.output = tool_bash_on_output;
	o.exit = tool_bash_on_exit;
	o.arg = r;
	r->audit_id = audit_id;
	rc = proc_spawn(a, &o, &r->proc);
	if (rc < 0) {		/* tools_start ends the audit row */
		tool_bash_free(r);
		if (rc == -ENOTSUP)
			snprintf(err, errlen, "the command was not run: the "
			    "room's resource limits (cgroups) cannot be applied "
			    "on this server; the operator must fix that (see "
			    "atriumd's log)");
		else
			snprintf(err, errlen, "the command could not be started "
			    "in the sandbox (%s)", strerror(-rc));
		return rc;
	}
	a->tool_procs++;
	*out = r;
	return 0;
}

void
tool_bash_cancel(struct tool_run *r)
{
	if (!r)
		return;
	r->done = NULL;
	if (r->save) {		/* the command has ended: drop the save */
		output_save_cancel(r->save);
		tool_bash_free(r);
		return;
	}
	proc_kill(r->proc);
}

void
tool_bash_abandon(struct tool_run *r)
{
	if (!r)
		return;
	if (r->save) {		/* the command has ended and is audited */
		output_save_abandon(r->save);
		tool_bash_free(r);
		return;
	}
	r->a->tool_procs--;
	tool_bash_audit_end(r, 137, "KILL");
	proc_abandon(r->proc);
	tool_bash_free(r);
}
