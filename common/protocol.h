/*
 * protocol.h: the room protocol's limits and names.  The protocol, spoken
 * on a room's agent socket (DATA/run/ROOM/agent.sock, owned by
 * atrium-agent) and, through atriumd, by clients of the `atrium` SSH
 * subsystem, is documented in atrium-agent(8), PROTOCOL: every request,
 * every event and their fields.  Change the page with the code.
 */
#ifndef ATRIUM_PROTOCOL_H
#define ATRIUM_PROTOCOL_H

#define PROTO_MAX_LINE		(1024 * 1024)	/* one JSON line */
#define PROTO_MAX_TEXT		(64 * 1024)	/* chat / prompt text */
#define PROTO_MAX_CAPTURE	(1024 * 1024)	/* captured stdout/stderr */
#define PROTO_MAX_FDS		3		/* fds passed with one exec */
#define PROTO_TERM_MAX_COLS	500		/* the shared terminal's size */
#define PROTO_TERM_MAX_ROWS	200
#define PROTO_TERM_MAX_INPUT	4096		/* one term_input's data */
#define PROTO_MAX_HISTORY	500		/* events one history answers */

#define AGENT_SOCKET_NAME	"agent.sock"	/* in DATA/run/ROOM/ */
#define WORKSPACE_DIR_NAME	"workspace"	/* mount point in DATA/run/ROOM/ */
#define WORKSPACE_DB_NAME	"workspace.db"	/* in DATA/rooms/ROOM/ */
#define ROOM_DB_NAME		"room.db"	/* in DATA/rooms/ROOM/ */

#endif
