/*
 * tui_approval.h: the text of an approval request, saying exactly what
 * will run: bash's whole command line; for edit, the file and the lines
 * it takes out ("-") and puts in ("+"); for write, the file and its new
 * content's first lines; for any other tool, its input as JSON.  How to
 * answer ends its first line, "(y/n, 120 s)", with the request's id only
 * when several wait.  And which typed lines answer one: "y", "n" and
 * "n REASON" alone; anything else ("yes", "no way", "y?") is chat.  Pure.
 */
#ifndef ATRIUMD_TUI_APPROVAL_H
#define ATRIUMD_TUI_APPROVAL_H

#include <stddef.h>

#include <json-c/json.h>

#define TUI_APPROVAL_MAX	8192	/* bytes of input shown, at most */
#define TUI_APPROVAL_LINES	40	/* lines of a diff or content shown */

/* The request o (tool, input, seconds, id) as text into out: a first line
 * "approval needed: TOOL WHAT (y/n, 120 s)", then the details (an edit's
 * lines).  several: others wait too, so the line names its id. */
void tui_approval_text(json_object *o, int several, char *out, size_t len);

/* What line says to a waiting request: 1 yes ("y"), 0 no ("n", or "n
 * REASON" with *reason pointing at REASON in line, else NULL), -1 it is
 * not an answer (case aside, nothing else is). */
int tui_approval_answer(const char *line, const char **reason);

#endif
