/*
 * event_types.c: the list of event_types.h.  Keep it in step with the
 * events marked * in atrium-agent(8), PROTOCOL, and with the constructors
 * of agent/stored_event.c (its unit test checks that each type here has
 * one).
 */
#include "event_types.h"

#include <string.h>

const char *const event_types_stored[] = {
	"message", "prompt",			/* people's lines */
	"turn_start", "tool_call", "tool_result", "turn_end",
	"compaction",				/* the agent's turns */
	"approval_request", "approval_result",	/* asked, and answered */
	"exec_start", "exec_result",		/* shared commands */
	"config", "access", "limits", "caps",	/* settings changed */
	"undo_done", "redo_done", "restore_done",
	"consent_request", "consent_answer", "consent_end",	/* undo's */
	"snapshot",	/* a snapshot taken */
	"imported",				/* where history came from */
	NULL,
};

int
event_type_stored(const char *type)
{
	if (!type)
		return 0;
	for (int i = 0; event_types_stored[i]; i++)
		if (strcmp(type, event_types_stored[i]) == 0)
			return 1;
	return 0;
}
