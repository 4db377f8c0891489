/*
 * import_transcript.h: the agent's own record in an imported room.db
 * (import_transcript.c), checked and rebuilt as the live agent builds it:
 * the transcript the model is sent again, the tool journal a resumed turn
 * reads, the turns' prompts and the summaries.  Called by room_import.c
 * (step 6 of its head) inside its one transaction.
 */
#ifndef ATRIUM_AGENT_IMPORT_TRANSCRIPT_H
#define ATRIUM_AGENT_IMPORT_TRANSCRIPT_H

#include <sqlite3.h>

/* Bounds no live row reaches (a tool's output is capped at
 * TOOL_FILES_MAX_OUTPUT, a protocol line at PROTO_MAX_LINE): larger is an
 * archive's, refused. */
#define IMPORT_TRANSCRIPT_ROW_MAX	(16 * 1024 * 1024)	/* one row */
#define IMPORT_TRANSCRIPT_TEXT_MAX	(2 * 1024 * 1024)	/* one string */
#define IMPORT_TRANSCRIPT_BLOCKS_MAX	1024	/* blocks in a message */
#define IMPORT_TRANSCRIPT_ID_MAX	128	/* a tool call's id */
#define IMPORT_TRANSCRIPT_NAME_MAX	128	/* a tool's name (mcp__SERVER__TOOL) */
#define IMPORT_TRANSCRIPT_DEPTH		32	/* nesting of a tool's input */

/* Check and rebuild every transcript, tool_journal, turns and compactions
 * row of h (path names it in messages) in h's open transaction.  A row
 * that no live agent could have written (a role or block type it does
 * not use, a field of another JSON type or missing, invalid JSON, a
 * size above the bounds, a tool call left started in a turn that is not
 * running, a status no tool ends with) refuses the import, said on
 * stderr with the row; strings are made valid UTF-8 with the control
 * characters removed (tab and newline kept), fields no live row has are
 * dropped.  0 or -1. */
int import_transcript_check(const char *path, sqlite3 *h);

#endif
