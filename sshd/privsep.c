/*
 * privsep.c: frames between atriumd's monitor and its network process
 * (privsep.h).  Called by monitor.c and monitor_client.c.
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
privsep_send(int sock, json_object *obj, int fd)
{
	const char *text = json_object_to_json_string_ext(obj,
	    JSON_C_TO_STRING_PLAIN);
	size_t len = text ? strlen(text) : 0;
	uint32_t n = (uint32_t)len;
	ssize_t sent;

	if (!text || len == 0 || len > PRIVSEP_MAX_ANSWER)
		return -EINVAL;
	sent = fdpass_send(sock, &n, sizeof(n), fd >= 0 ? &fd : NULL,
	    fd >= 0 ? 1 : 0);
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

/* The length prefix, and the fd that came with its first byte. */
static int
privsep_recv_length(int sock, uint32_t *len, int *fd)
{
	int fds[1], nfds = 0;
	ssize_t n;

	n = fdpass_recv(sock, len, sizeof(*len), fds, &nfds, 1);
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return n == -EAGAIN ? -ETIMEDOUT : (int)n;
	*fd = nfds ? fds[0] : -1;
	if ((size_t)n < sizeof(*len)) {
		int r = privsep_read_all(sock, (char *)len + n,
		    sizeof(*len) - (size_t)n);

		if (r < 0) {
			if (*fd >= 0)
				close(*fd);
			*fd = -1;
			return r;
		}
	}
	return 0;
}

/* See privsep.h. */
int
privsep_recv(int sock, size_t max, json_object **out, int *fd)
{
	uint32_t len = 0;
	const char *why;
	char *text;
	int got = -1, r;

	*out = NULL;
	if (fd)
		*fd = -1;
	if ((r = privsep_recv_length(sock, &len, &got)) < 0)
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
	if (fd)
		*fd = got;
	else if (got >= 0)
		close(got);
	return 0;
fail:
	if (got >= 0)
		close(got);
	return r;
}
