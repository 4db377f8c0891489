/*
 * http_relay.h: the front's end of relayed HTTP (man/atriumd.8, CLUSTER;
 * ARCHITECTURE.md, "The front door (a cluster)").  This host's
 * atriumd-http got a request for a room that lives on another node; the
 * monitor made a socket pair for it (privsep.h, http_relay) and handed
 * this process one end with the home's node, address and host key, and
 * the token's user, key fingerprint and client's address.
 *
 * Each such socket gets a link to the home, shared with the other
 * relays of the same identity and room (http_link.h; relay.h: the same
 * host-key check and userauth with this host's key, naming the token's
 * user, key and client address), and one channel on it asking for the
 * subsystem HTTP_BRIDGE_SUBSYSTEM (http_bridge.h), whose bytes are the
 * socket's, both ways, within the channel's window and with no more than
 * HTTP_RELAY_BUF held from the home.  The home's EOF (or its link going
 * down) closes the socket; atriumd-http then answers or ends the
 * request (sshd/http/http_proxy.h).
 */
#ifndef ATRIUMD_HTTP_RELAY_H
#define ATRIUMD_HTTP_RELAY_H

#include <json-c/json.h>

#define HTTP_RELAY_BUF		(64 * 1024)	/* the home's bytes held */
#define HTTP_RELAY_MAX		256	/* relayed HTTP connections at once;
					 * atriumd-http's own cap is lower */

struct server;
struct http_relay;

/* Start relaying fd (owned from now on) as the monitor's event ev says.
 * 0, or -errno with fd closed and the reason logged. */
int http_relay_start(struct server *srv, json_object *ev, int fd);

/* Each turn, after the poll: move every relay's bytes, free those done. */
void http_relay_turn(struct server *srv);

/* Close every relay (the process stops). */
void http_relay_free_all(struct server *srv);

#endif
