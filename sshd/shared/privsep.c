/*
 * privsep.c: frames between atriumd's monitor and its network process
 * (privsep.h).  Called by the monitor (sshd/monitor/monitor_main.c, monitor.c,
 * http_front.c) and by the processes that ask it (sshd/net/monitor_ask.c,
 * sshd/http/http_ask.c, sshd/http/http_server.c).
 *
 * Both ends block: the network process waits for each answer (the monitor
 * answers at once, from its own loop), and the monitor reads a frame only
 * when its socket is readable, with a timeout on each read and write
 * (privsep_set_timeout) so that a network process that sends half a frame
 * or stops reading cannot hold the monitor.
 */
#include "privsep.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "fdpass.h"
#include "jsonl.h"
#include "util.h"

/* See privsep.h. */
int
privsep_set_timeout(int sock, int timeout_ms)
{
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};

	if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

/* See privsep.h. */
int
privsep_send(int sock, json_object *obj, const int *fds, int nfds)
{
	const char *text = json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN);
	size_t len = text ? strlen(text) : 0;
	uint32_t n = (uint32_t)len;
	ssize_t sent;

	if (!text || len == 0 || len > PRIVSEP_MAX_ANSWER || nfds < 0 ||
	    nfds > PRIVSEP_MAX_FDS)
		return -EINVAL;
	sent = fdpass_send(sock, &n, sizeof(n), fds, nfds);
	if (sent < 0)
		return (int)sent;
	if ((size_t)sent < sizeof(n) &&
	    write_all(sock, (const char *)&n + sent, sizeof(n) - (size_t)sent)
	    < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	if (write_all(sock, text, len) < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	return 0;
}

/* Read exactly len bytes (no fds).  0, -EPIPE at end, -errno. */
static int
privsep_read_all(int sock, void *p, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(sock, (char *)p + got, len - got);

		if (n == 0)
			return -EPIPE;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		got += (size_t)n;
	}
	return 0;
}

/* Close fds[0..n). */
static void
privsep_close_all(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* The length prefix, and the fds that came with its first byte. */
static int
privsep_recv_length(int sock, uint32_t *len, int *fds, int *nfds, int max)
{
	ssize_t n;
	int r;

	n = fdpass_recv(sock, len, sizeof(*len), fds, nfds, max);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return n == -EAGAIN ? -ETIMEDOUT : (int)n;
	if ((size_t)n < sizeof(*len) && (r = privsep_read_all(sock,
	    (char *)len + n, sizeof(*len) - (size_t)n)) < 0) {
		privsep_close_all(fds, *nfds);
		*nfds = 0;
		return r;
	}
	return 0;
}

/* See privsep.h. */
int
privsep_recv(int sock, size_t max, json_object **out, int *fds,
    int *nfds, int maxfds)
{
	int got[PRIVSEP_MAX_FDS], ngot = 0, r;
	uint32_t len = 0;
	const char *why;
	char *text;

	*out = NULL;
	if (nfds)
		*nfds = 0;
	if (!fds || !nfds)
		maxfds = 0;
	else if (maxfds > PRIVSEP_MAX_FDS)
		maxfds = PRIVSEP_MAX_FDS;
	if ((r = privsep_recv_length(sock, &len, got, &ngot, maxfds)) < 0)
		return r;
	if (len == 0 || len > max || !(text = malloc((size_t)len + 1))) {
		r = len == 0 || len > max ? -EPROTO : -ENOMEM;
		goto fail;
	}
	r = privsep_read_all(sock, text, len);
	if (r == 0 && !(*out = jsonl_parse_object(text, len, &why)))
		r = -EPROTO;
	free(text);
	if (r < 0)
		goto fail;
	if (ngot > 0) {
		memcpy(fds, got, sizeof(int) * (size_t)ngot);
		*nfds = ngot;
	}
	return 0;
fail:
	privsep_close_all(got, ngot);
	return r;
}
