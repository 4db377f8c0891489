/*
 * http_tunnel.h: a WebSocket relayed to its room's home (http_proxy.h).
 * The upgrade request went to the home like any relayed request; when
 * the home answers 101, the client is answered 101 with the home's
 * headers (MHD_create_response_for_upgrade), and from then on the
 * client's socket and the relay's socket are pumped raw, both ways,
 * HTTP_TUNNEL_HIGH bytes held each way at most: the WebSocket is the
 * home's (its frames, its pings, its close), this host only carries it.
 * Either side's end ends both.
 *
 * Until MHD hands the client's socket over (its upgrade handler, called
 * once the 101 is sent), the tunnel is its request's (*holder): MHD's
 * response names it, so it is not freed before one of two calls, the
 * hand-over or the request's end without one (the client went before
 * the 101 was out: MHD then completes the request and never calls the
 * handler), which frees it with http_tunnel_drop.  A side that ends
 * before the hand-over only closes the relay's socket.
 */
#ifndef ATRIUMD_HTTP_TUNNEL_H
#define ATRIUMD_HTTP_TUNNEL_H

#include <stddef.h>

#define HTTP_TUNNEL_HIGH	(64 * 1024)

struct http_server;
struct http_tunnel;
struct MHD_Response;

/* A tunnel for fd (owned from now on), whose first bytes from the home
 * (after its 101 head) are head_rest[0..n), held by *holder until MHD
 * hands it the client's socket (*holder set to NULL then, or when it is
 * freed).  NULL when out of memory (fd closed). */
struct http_tunnel *http_tunnel_new(struct http_server *srv, int fd,
    const char *head_rest, size_t n, struct http_tunnel **holder);

/* t's request ended before MHD handed it the client's socket: t is
 * freed (its relay's socket closed, so the home ends the WebSocket). */
void http_tunnel_drop(struct http_tunnel *t);

/* MHD's response for the client: 101, to be given the home's headers;
 * once MHD hands the client's socket over, t pumps.  NULL when out of
 * memory (t freed). */
struct MHD_Response *http_tunnel_response(struct http_tunnel *t);

/* Close every tunnel (the process drains or stops): their clients see
 * the connection end, and reconnect. */
void http_tunnel_end_all(struct http_server *srv);

#endif
