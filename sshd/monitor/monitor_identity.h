/*
 * monitor_identity.h: who a request of the network process is for, as
 * the monitor establishes it (monitor_identity.c).  Every request that
 * acts for a user (privsep.h: use, agent, why, access, rooms, delete,
 * export, import, token) names the user, the fingerprint of the public
 * key the session authenticated with, and the client's address; the monitor looks the key
 * up in DATA/authorized_keys itself and takes the user's rights (admin,
 * the rooms it may create) from its own parse of the key's line, never
 * from the request.
 */
#ifndef ATRIUMD_MONITOR_IDENTITY_H
#define ATRIUMD_MONITOR_IDENTITY_H

#include <stddef.h>

#include <json-c/json.h>

#include "authkeys.h"

struct monitor;

struct monitor_identity {
	char user[64];			/* the user the key's line names */
	int admin;			/* that line has atrium-admin */
	int guest;			/* an --open guest: no line at all */
	const struct authkey_opts *opts; /* the line's options; NULL for a
					 * guest.  Valid for this request
					 * only (a refresh replaces them) */
	/* A token's own grant, narrower than its key's (http_front.h);
	 * never set for an SSH session. */
	int read_only;			/* the hello says so: the agent
					 * refuses what changes the room */
	int token_rooms;		/* the token names its rooms: only
					 * those in rooms[] */
	char rooms[1024];		/* the token's room list, comma
					 * separated, when token_rooms */
	char token_id[16];		/* the token's id (for logs), "" */
	char token_key[AUTHKEYS_FP_MAX]; /* the token's key's fingerprint
					 * (a relay names it), "" */
};

/* Who req is for: its "user", "key" (a SHA256 fingerprint, as
 * authkeys_fingerprint writes it) and "addr" (the client's numeric
 * address).  0 with *id filled; -EPROTO when a field is missing or not
 * well formed (the network process never sends such a request: it broke
 * the rules); -EACCES when the key is not, or no longer, one that
 * authorized_keys (or --open) lets in as that user from that address now,
 * with why (for the log and the client). */
int monitor_identity_get(struct monitor *srv, json_object *req,
    struct monitor_identity *id, char *why, size_t len);

/* May id create the room called room (it does not exist yet)?  1 or 0:
 * the key's rooms= (atrium-admin and guests: any room). */
int monitor_identity_may_create(const struct monitor_identity *id,
    const char *room);

#endif
