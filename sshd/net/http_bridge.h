/*
 * http_bridge.h: the home's end of HTTP relayed from another node of a
 * cluster (man/atriumd.8, CLUSTER; ARCHITECTURE.md, "The front door (a
 * cluster)").  A front whose atriumd-http got a request for a room that
 * lives here opens, on its relay session to this host (relay.h), a
 * channel asking for the subsystem HTTP_BRIDGE_SUBSYSTEM; the channel's
 * bytes are one HTTP connection, as the client would have sent it here.
 *
 * The channel is bridged to one end of a socket pair the monitor makes
 * (privsep.h, http_conn); the monitor hands the other end to this host's
 * atriumd-http, which serves it as a connection from the relayed user's
 * address.  Only a relay session (a current node's host key) may ask for
 * it: never a user's own session.
 */
#ifndef ATRIUMD_HTTP_BRIDGE_H
#define ATRIUMD_HTTP_BRIDGE_H

#include "session.h"

#define HTTP_BRIDGE_SUBSYSTEM	"atrium-http"

/* Make c, on a relayed session, a bridge to this host's atriumd-http.
 * 0 (c refused with the reason when the monitor says no), or -ENOMEM. */
int http_bridge_open(struct chan *c);

#endif
