/*
 * ws_readers.c: many WebSocket clients of one room, for make bench
 * (tests/bench.py, the http part).  A test tool, not part of Atrium.
 *
 * Why it exists: as with chat_readers.c, one Python process reading 200
 * WebSockets (python3-websockets on asyncio) spends on each message about
 * as much CPU as atriumd-http spends to send it, on the same two cores, so
 * a line's latency to 200 clients would measure the bench as much as the
 * server.  Here each client is a socket served by one epoll loop in C
 * (bench_readers.h, as chat_readers.c's members are): an arrival costs a
 * read(2) and a search of the bytes, about what a browser's or a
 * program's client costs.
 *
 * Each client connects from a loopback address of its own (bench_readers.h),
 * sends GET /api/rooms/ROOM/ws with the token as a Bearer header and is
 * ready once its 101 arrived.  Server frames are not masked and a chat
 * line's text is carried as is in its JSON, so the awaited text is looked
 * for in the raw bytes: no frame is parsed, none needs answering (the
 * server sends no ping).
 *
 * Usage: ws_readers PORT TOKEN ROOM BLOCK.  Commands on stdin and answers
 * on stdout as bench_readers.h says.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_readers.h"

#define WS_HANDSHAKE_S	30	/* the handshake blocks, bounded */

/* readers_ops.read: what c's socket holds now. */
static ssize_t
client_read(struct reader *c, char *buf, size_t len)
{
	ssize_t n = recv(c->fd, buf, len, MSG_DONTWAIT);

	if (n > 0)
		return n;
	return n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
}

/* Send the upgrade on c and read its answer's head: 0 when it is a 101
 * (what came after the head is kept), else -1. */
static int
handshake(struct readers *r, struct reader *c)
{
	const char *token = r->arg;
	char req[1024], head[4096];
	size_t got = 0;
	char *end = NULL;
	int n = snprintf(req, sizeof(req), "GET /api/rooms/%s/ws HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Authorization: Bearer %s\r\n\r\n", r->room, r->port, token);

	if (send(c->fd, req, (size_t)n, MSG_NOSIGNAL) != n)
		return -1;
	while (!end && got < sizeof(head) - 1) {
		ssize_t k = recv(c->fd, head + got, sizeof(head) - 1 - got, 0);

		if (k <= 0)
			return -1;
		got += (size_t)k;
		head[got] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	if (!end || strncmp(head, "HTTP/1.1 101 ", 13) != 0) {
		fprintf(stderr, "ws_readers: no upgrade: %.*s\n",
		    (int)strcspn(head, "\r\n"), head);
		return -1;
	}
	end += 4;
	readers_scan(r, c, end, got - (size_t)(end - head), readers_now());
	return 0;
}

/* readers_ops.open: client i, once upgraded.  0 or -1. */
static int
client_open(struct readers *r, struct reader *c, int i)
{
	if ((c->fd = readers_dial(r, i, WS_HANDSHAKE_S)) < 0 ||
	    handshake(r, c) < 0 || readers_watch(r, c->fd, (unsigned)i) < 0)
		return -1;
	readers_serve(r, 0, 0);		/* the others go on being read */
	return 0;
}

/* readers_ops.close */
static void
client_close(struct reader *c)
{
	close(c->fd);
}

int
main(int argc, char **argv)
{
	static const struct readers_ops ops = {
		"ws_readers", client_open, client_read, client_close,
	};
	struct readers r = { .ops = &ops };

	if (argc != 5) {
		fprintf(stderr, "usage: ws_readers PORT TOKEN ROOM BLOCK\n");
		return 2;
	}
	r.port = atoi(argv[1]);
	r.arg = argv[2];
	r.room = argv[3];
	r.block = atoi(argv[4]);
	return readers_run(&r);
}
