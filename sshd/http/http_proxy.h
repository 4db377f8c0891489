/*
 * http_proxy.h: a request for a room that lives on another node of the
 * cluster, relayed whole to the home's own atriumd-http (man/atriumd.8,
 * CLUSTER; ARCHITECTURE.md, "The front door (a cluster)").
 *
 * On MHD's first call for a request that names a room (a route with a
 * token, HTTP_AUTH), once its token is checked here, the monitor is asked
 * where the room lives (privsep.h, http_relay).  When it is this host's,
 * or in no cluster, nothing changes.  When another node serves it, the
 * monitor answers with one end of a socket pair whose other end
 * atriumd-net links to that node (sshd/net/http_relay.h), and the request
 * goes through it: its line and end-to-end headers (never the
 * connection's own: Connection, Keep-Alive, TE, Upgrade but a
 * WebSocket's, Proxy-*, nor
 * X-Forwarded-For, as this host resolved the client's address, which the
 * relay names), "Connection: close", then its body as it comes (chunked
 * when the client's was), never more than HTTP_PROXY_HIGH held.  The
 * home's answer comes back the same way: its head parsed (http_wire.h),
 * its end-to-end headers kept, its body handed to MHD as it arrives
 * (MHD frames it for the client), the connection suspended while nothing
 * is there.  The home checks the token itself (tokens are the same on
 * every node), so its answers are the client's, 401 and 403 included.
 *
 * A relayed request (http_auth_relayed) is never relayed on: when its
 * room is not here either, it is answered 503 "the room is moving to
 * another host; try again".  At most HTTP_PROXY_MAX requests are relayed
 * at once (a relayed WebSocket counts for its life); past that the
 * answer is 503.  A WebSocket's upgrade is relayed with its Upgrade and
 * Connection headers, and a 101 from the home makes the connection a
 * tunnel (http_tunnel.h).
 */
#ifndef ATRIUMD_HTTP_PROXY_H
#define ATRIUMD_HTTP_PROXY_H

#include <stddef.h>

#define HTTP_PROXY_MAX		128		/* relayed at once */
#define HTTP_PROXY_HIGH		(64 * 1024)	/* held each way */
#define HTTP_PROXY_DECIDE_MS	10000	/* the cluster says where a room
						 * lives by then, or 503 */
#define HTTP_PROXY_MOVING	"the room is moving to another host; " \
				"try again"

struct http_req;

/* r's first call, its token checked: 0 to serve it here; 1 when it is
 * relayed (r->proxy set) or answered (*ret MHD's result either way).
 * url is the path as MHD gave it (not unescaped). */
int http_proxy_first(struct http_req *r, const char *url, int *ret);

/* MHD's later calls for r with r->proxy set: a piece of its body (*size
 * bytes, *size left at what was not taken), or its end (*size 0).  1
 * with *ret MHD's result; 0 when the room turned out to be this host's
 * (r->proxy is NULL again: the call goes on as any other). */
int http_proxy_access(struct http_req *r, const char *data, size_t *size,
    int *ret);

/* The monitor's wake (all), or a turn: the requests waiting to learn
 * where their room lives ask again (all), or are answered once they
 * waited HTTP_PROXY_DECIDE_MS. */
struct http_server;
void http_proxy_wake(struct http_server *srv, int all);

#endif
