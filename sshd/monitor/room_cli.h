/*
 * room_cli.h: `atriumd room ...`, the operator's room commands:
 *
 *   atriumd room list DATA           every room: owner, visibility,
 *                                    members, state
 *   atriumd room delete DATA ROOM    end its sessions, stop its
 *                                    processes, remove its directories
 *
 * With atriumd running on DATA they go through its operator socket
 * (ctl.h), so the room's sessions and processes end first; with none
 * running, they act on DATA directly.
 */
#ifndef ATRIUMD_ROOM_CLI_H
#define ATRIUMD_ROOM_CLI_H

#include <json-c/json.h>

/* Connect to DATA/run/atriumd.sock.  The fd, or -errno. */
int room_cli_connect(const char *data);

/* Send req (a JSON line) on fd and read atriumd's one-line answer: the
 * parsed object (the caller puts it), or NULL after printing why on stderr
 * as who ("atriumd room") says, an error answer included. */
json_object *room_cli_request(int fd, const char *req, const char *who);

/* argv[0] is "room".  The exit status: 0, 1 (failed), 2 (usage). */
int room_cli_main(int argc, char **argv);

#endif
