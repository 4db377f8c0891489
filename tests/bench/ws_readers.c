/*
 * ws_readers.c: many WebSocket clients of one room, for make bench
 * (tests/bench.py, the http part).  A test tool, not part of Atrium.
 *
 * Why it exists: as with chat_readers.c, one Python process reading 200
 * WebSockets (python3-websockets on asyncio) spends on each message about
 * as much CPU as atriumd-http spends to send it, on the same two cores, so
 * a line's latency to 200 clients would measure the bench as much as the
 * server.  Here each client is a socket served by one epoll loop in C: an
 * arrival costs a read(2) and a search of the bytes, about what a
 * browser's or a program's client costs.
 *
 * Each client connects from a loopback address of its own (127.0.B.x, B
 * from the command line, so that http-per-source counts each alone),
 * sends GET /api/rooms/ROOM/ws with the token as a Bearer header and is
 * ready once its 101 arrived.  Server frames are not masked and a chat
 * line's text is carried as is in its JSON, so the awaited text is looked
 * for in the raw bytes: no frame is parsed, none needs answering (the
 * server sends no ping).
 *
 * Usage: ws_readers PORT TOKEN ROOM BLOCK.  Commands on stdin, one a
 * line; answers on stdout (as chat_readers.c's):
 *   open N                 N more clients -> "opened TOTAL"
 *   await MS COUNT TEXT    -> "armed"; then, once COUNT clients have seen
 *                          TEXT or MS passed: "got K T1 ... TK", each T
 *                          a client's arrival on CLOCK_MONOTONIC in
 *                          seconds (Python's time.monotonic())
 *   quit
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define TAIL		256	/* bytes kept to find a text in */
#define MAX_TEXT	128

struct client {
	int fd;
	char tail[TAIL + 1];
	size_t len;
	double seen;		/* arrival of the awaited text, 0: not yet */
	int dead;
};

struct readers {
	int port, block;
	const char *token, *room;
	struct client *c;
	int n, cap;
	char text[MAX_TEXT];	/* awaited, "" when none */
	int seen;		/* clients that saw text */
	int ep;			/* epoll: every client's socket, and stdin */
};

static double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A TCP connection to the server from 127.0.BLOCK+i/250.(1+i%250): the
 * fd, or -1. */
static int
dial(const struct readers *r, int i)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = src;
	struct timeval tv = { .tv_sec = 30 };
	char addr[32];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(addr, sizeof(addr), "127.0.%d.%d", r->block + i / 250,
	    1 + i % 250);
	inet_pton(AF_INET, addr, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons((unsigned short)r->port);
	/* The handshake blocks, bounded; the frames after it do not. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		fprintf(stderr, "ws_readers: %s: %s\n", addr, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Keep the last TAIL bytes of p in c's tail; stamp the awaited text. */
static void
scan(struct readers *r, struct client *c, const char *p, size_t n, double t)
{
	if (n >= TAIL) {
		p += n - TAIL;
		n = TAIL;
	}
	if (c->len + n > TAIL) {
		size_t drop = c->len + n - TAIL;

		memmove(c->tail, c->tail + drop, c->len - drop);
		c->len -= drop;
	}
	memcpy(c->tail + c->len, p, n);
	c->len += n;
	c->tail[c->len] = '\0';
	/* A frame's header bytes may be NUL: search past them too. */
	for (size_t i = 0; i < c->len; i += strlen(c->tail + i) + 1)
		if (r->text[0] && !c->seen && strstr(c->tail + i, r->text)) {
			c->seen = t;
			r->seen++;
			c->len = 0;
			break;
		}
}

/* Read what c's socket holds now.  -1 once it ended. */
static int
drain(struct readers *r, struct client *c)
{
	char chunk[16384];
	ssize_t n;

	if (c->dead)
		return -1;
	while ((n = recv(c->fd, chunk, sizeof(chunk), MSG_DONTWAIT)) > 0)
		scan(r, c, chunk, (size_t)n, now_mono());
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		c->dead = 1;
		return -1;
	}
	return 0;
}

/* Wait up to ms for clients' sockets (and stdin when in); read the ready
 * ones.  1 when stdin is readable. */
static int
serve(struct readers *r, int ms, int in)
{
	struct epoll_event ev[256];
	int n = epoll_wait(r->ep, ev, 256, ms), stdin_ready = 0;

	for (int i = 0; i < n; i++) {
		if (ev[i].data.u32 == UINT32_MAX)
			stdin_ready = in;
		else if (drain(r, &r->c[ev[i].data.u32]) < 0)
			epoll_ctl(r->ep, EPOLL_CTL_DEL,
			    r->c[ev[i].data.u32].fd, NULL);
	}
	return stdin_ready;
}

/* Watch fd for input, tagged with id (UINT32_MAX: stdin).  0 or -1. */
static int
watch(struct readers *r, int fd, uint32_t id)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = id };

	return epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* Send the upgrade on c and read its answer's head: 0 when it is a 101
 * (what came after the head is kept), else -1. */
static int
handshake(struct readers *r, struct client *c)
{
	char req[1024], head[4096];
	size_t got = 0;
	char *end = NULL;
	int n = snprintf(req, sizeof(req), "GET /api/rooms/%s/ws HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	    "Authorization: Bearer %s\r\n\r\n", r->room, r->port, r->token);

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
	scan(r, c, end, got - (size_t)(end - head), now_mono());
	return 0;
}

/* n more clients, one after the other, each once upgraded.  0 or -1. */
static int
open_clients(struct readers *r, int n)
{
	if (r->n + n > r->cap) {
		int cap = r->n + n;
		struct client *c = realloc(r->c, cap * sizeof(*c));

		if (!c)
			return -1;
		r->c = c;
		r->cap = cap;
	}
	for (int i = 0; i < n; i++) {
		struct client *c = &r->c[r->n];

		memset(c, 0, sizeof(*c));
		if ((c->fd = dial(r, r->n)) < 0 || handshake(r, c) < 0 ||
		    watch(r, c->fd, (uint32_t)r->n) < 0)
			return -1;
		r->n++;
		serve(r, 0, 0);		/* the others go on being read */
	}
	return 0;
}

/* Arm for text, serve until count clients saw it or ms passed; report. */
static void
await_text(struct readers *r, int ms, int count, const char *text)
{
	double end = now_mono() + ms / 1000.0;

	snprintf(r->text, sizeof(r->text), "%s", text);
	for (int i = 0; i < r->n; i++)
		r->c[i].seen = 0;
	r->seen = 0;
	printf("armed\n");
	fflush(stdout);
	while (r->seen < count && now_mono() < end)
		serve(r, 1, 0);
	r->text[0] = '\0';
	printf("got %d", r->seen);
	for (int i = 0; i < r->n; i++)
		if (r->c[i].seen > 0)
			printf(" %.9f", r->c[i].seen);
	printf("\n");
	fflush(stdout);
}

/* One command line; 0 to go on, 1 to quit, -1 on failure. */
static int
command(struct readers *r, char *line)
{
	int n, ms, count, off;

	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "open %d", &n) == 1) {
		if (open_clients(r, n) < 0)
			return -1;
		printf("opened %d\n", r->n);
		fflush(stdout);
		return 0;
	}
	if (sscanf(line, "await %d %d %n", &ms, &count, &off) == 2) {
		await_text(r, ms, count, line + off);
		return 0;
	}
	return strcmp(line, "quit") == 0 ? 1 : -1;
}

int
main(int argc, char **argv)
{
	struct readers r = { 0 };
	char line[512];
	int rc = 0;

	if (argc != 5) {
		fprintf(stderr, "usage: ws_readers PORT TOKEN ROOM BLOCK\n");
		return 2;
	}
	r.port = atoi(argv[1]);
	r.token = argv[2];
	r.room = argv[3];
	r.block = atoi(argv[4]);
	if ((r.ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    watch(&r, 0, UINT32_MAX) < 0)
		return 1;
	setvbuf(stdin, NULL, _IONBF, 0);
	while (rc == 0) {
		if (!serve(&r, -1, 1))
			continue;
		if (!fgets(line, sizeof(line), stdin))
			break;
		rc = command(&r, line);
	}
	for (int i = 0; i < r.n; i++)
		close(r.c[i].fd);
	free(r.c);
	close(r.ep);
	return rc < 0 ? 1 : 0;
}
