/*
 * tui_approval.h: the text of an approval request, saying exactly what
 * will run: bash's whole command line; for edit, the file and the lines
 * it takes out ("-") and puts in ("+"); for write, the file and its new
 * content's first lines; for any other tool, its input as JSON.  Pure.
 */
#ifndef ATRIUMD_TUI_APPROVAL_H
#define ATRIUMD_TUI_APPROVAL_H

#include <stddef.h>

#include <json-c/json.h>

#define TUI_APPROVAL_MAX	8192	/* bytes of input shown, at most */
#define TUI_APPROVAL_LINES	40	/* lines of a diff or content shown */

/* The request o (tool, input, seconds, id) as text into out: a first line
 * "approval needed: TOOL WHAT", the details, and how to answer. */
void tui_approval_text(json_object *o, char *out, size_t len);

#endif
