/*
 * bench_readers.c: the loop of make bench's reading clients
 * (bench_readers.h), for chat_readers.c and ws_readers.c.  A test tool, not
 * part of Atrium. One thread: an epoll over every client's socket and stdin.
 */
#include "bench_readers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* See bench_readers.h. */
double
readers_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* See bench_readers.h. */
int
readers_dial(const struct readers *r, int i, int timeout_s)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = src;
	struct timeval tv = { .tv_sec = timeout_s };
	char addr[32];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(addr, sizeof(addr), "127.0.%d.%d", r->block + i / 250,
	    1 + i % 250);
	inet_pton(AF_INET, addr, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons((unsigned short)r->port);
	if (timeout_s > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		fprintf(stderr, "%s: %s: %s\n", r->ops->name, addr,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* See bench_readers.h. */
void
readers_scan(struct readers *r, struct reader *c, const char *p, size_t n,
    double t)
{
	if (n >= READERS_TAIL) {
		p += n - READERS_TAIL;
		n = READERS_TAIL;
	}
	if (c->len + n > READERS_TAIL) {
		size_t drop = c->len + n - READERS_TAIL;

		memmove(c->tail, c->tail + drop, c->len - drop);
		c->len -= drop;
	}
	memcpy(c->tail + c->len, p, n);
	c->len += n;
	c->tail[c->len] = '\0';
	/* A WebSocket frame's header bytes may be NUL: search past them. */
	for (size_t i = 0; i < c->len; i += strlen(c->tail + i) + 1)
		if (r->text[0] && !c->seen && strstr(c->tail + i, r->text)) {
			c->seen = t;
			r->seen++;
			c->len = 0;
			break;
		}
}

/* See bench_readers.h. */
int
readers_drain(struct readers *r, struct reader *c)
{
	char chunk[16384];
	ssize_t n;

	if (c->dead)
		return -1;
	while ((n = r->ops->read(c, chunk, sizeof(chunk))) > 0)
		readers_scan(r, c, chunk, (size_t)n, readers_now());
	if (n < 0) {
		c->dead = 1;
		return -1;
	}
	return 0;
}

/* See bench_readers.h. */
int
readers_serve(struct readers *r, int ms, int in)
{
	struct epoll_event ev[256];
	int n = epoll_wait(r->ep, ev, 256, ms), stdin_ready = 0;

	for (int i = 0; i < n; i++) {
		if (ev[i].data.u32 == UINT32_MAX)
			stdin_ready = in;
		else if (readers_drain(r, &r->c[ev[i].data.u32]) < 0)
			epoll_ctl(r->ep, EPOLL_CTL_DEL,
			    r->c[ev[i].data.u32].fd, NULL);
	}
	return stdin_ready;
}

/* See bench_readers.h. */
int
readers_watch(struct readers *r, int fd, unsigned id)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = id };

	return epoll_ctl(r->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* n more clients, one after the other, each once ready.  0 or -1. */
static int
readers_open(struct readers *r, int n)
{
	if (r->n + n > r->cap) {
		int cap = r->n + n;
		struct reader *c = realloc(r->c, cap * sizeof(*c));

		if (!c)
			return -1;
		r->c = c;
		r->cap = cap;
	}
	for (int i = 0; i < n; i++) {
		struct reader *c = &r->c[r->n];

		memset(c, 0, sizeof(*c));
		c->fd = -1;
		if (r->ops->open(r, c, r->n) < 0)
			return -1;
		r->n++;
	}
	return 0;
}

/* Arm for text, serve until count clients saw it or ms passed; report. */
static void
readers_await(struct readers *r, int ms, int count, const char *text)
{
	double end = readers_now() + ms / 1000.0;

	snprintf(r->text, sizeof(r->text), "%s", text);
	for (int i = 0; i < r->n; i++)
		r->c[i].seen = 0;
	r->seen = 0;
	printf("armed\n");
	fflush(stdout);
	while (r->seen < count && readers_now() < end)
		readers_serve(r, 1, 0);
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
readers_command(struct readers *r, char *line)
{
	int n, ms, count, off;

	line[strcspn(line, "\n")] = '\0';
	if (sscanf(line, "open %d", &n) == 1) {
		if (readers_open(r, n) < 0)
			return -1;
		printf("opened %d\n", r->n);
		fflush(stdout);
		return 0;
	}
	if (sscanf(line, "await %d %d %n", &ms, &count, &off) == 2) {
		readers_await(r, ms, count, line + off);
		return 0;
	}
	return strcmp(line, "quit") == 0 ? 1 : -1;
}

/* See bench_readers.h. */
int
readers_run(struct readers *r)
{
	char line[512];
	int rc = 0;

	if ((r->ep = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
	    readers_watch(r, 0, UINT32_MAX) < 0)
		return 1;
	setvbuf(stdin, NULL, _IONBF, 0);
	while (rc == 0) {
		if (!readers_serve(r, -1, 1))
			continue;
		if (!fgets(line, sizeof(line), stdin))
			break;
		rc = readers_command(r, line);
	}
	for (int i = 0; i < r->n; i++)
		r->ops->close(&r->c[i]);
	free(r->c);
	close(r->ep);
	return rc < 0 ? 1 : 0;
}
