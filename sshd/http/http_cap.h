/*
 * http_cap.h: max-commands-per-user for atriumd-http's commands (http_cap.c).
 *
 * The count is the monitor's, shared with SSH (sshd/monitor/cmd_cap.h):
 * before a command starts (POST /api/rooms/{room}/exec, Duet's and
 * Cloudflare's exec, an exec line on a WebSocket) its holder asks
 * cmd_begin with the request's token; refused, the client gets the
 * monitor's words (HTTP 429, or an error event on a WebSocket).  What a
 * holder was granted it gives back with cmd_end once the command is over
 * (http_cap_sync, http_cap_release); whatever this process still holds
 * when it ends the monitor forgets at once.
 */
#ifndef ATRIUMD_HTTP_CAP_H
#define ATRIUMD_HTTP_CAP_H

#include <stddef.h>

struct http_server;

/* What one request or stream holds (zeroed: nothing). */
struct http_cap {
	char user[64];		/* whom the monitor counted them for */
	int held;		/* commands counted, not yet given back */
};

/* One more command for token from addr: 0 when counted into cap; 1 when
 * refused, with the words for the client in why; -errno (why says so). */
int http_cap_take(struct http_server *srv, const char *token,
    const char *addr, struct http_cap *cap, char *why, size_t len);

/* Give back what cap holds beyond running, the commands still running. */
void http_cap_sync(struct http_server *srv, struct http_cap *cap,
    int running);

/* Give back all cap holds. */
void http_cap_release(struct http_server *srv, struct http_cap *cap);

#endif
