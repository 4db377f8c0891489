/*
 * status.h: `atriumd status [DATA]`, the operator's view of a running
 * atriumd: one line per active room.
 *
 *   ROOM     STATE   CONNS  PROCS   MEMORY  WORKSPACE  AGENT
 *   demo     ready       2      5   61.2M      1.4M    pid 4121, answered 3s ago
 *
 * CONNS are the connections to the room's agent from people and programs
 * (a chat, a command, an sftp session, a protocol client: one each);
 * PROCS and MEMORY (resident) cover the room's atrium-fs, its atrium-agent
 * and everything they started (sandboxed commands included); WORKSPACE is
 * the size of workspace.db and its WAL; AGENT is the agent's process and
 * when it last answered atriumd's watchdog (agentwatch.h: a hung agent
 * stops answering and is restarted).
 *
 * The monitor builds the answer (status_json) for the operator socket's
 * {"type":"status"} request (ctl.h); status_cli_main asks it and prints.
 */
#ifndef ATRIUMD_STATUS_H
#define ATRIUMD_STATUS_H

#include <json-c/json.h>

#include "room.h"

/* {"type":"status","rooms":[{"room","state","connections","processes",
 * "memory","workspace","agent_pid","agent_answered_s"}, ...]}, one per room with processes;
 * NULL when out of memory. */
json_object *status_json(const struct rooms *rs);

/* argv[0] is "status".  Exit status: 0, 1 (atriumd not running or
 * failed), 2 (usage). */
int status_cli_main(int argc, char **argv);

#endif
