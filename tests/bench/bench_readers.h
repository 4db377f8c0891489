/*
 * bench_readers.h: many reading clients of one room, for make bench
 * (bench_readers.c): what chat_readers.c (SSH chat members) and ws_readers.c
 * (WebSocket clients) share.  A test tool, not part of Atrium.
 *
 * Each client connects from a loopback address of its own (127.0.B.x, B
 * from the command line), so that per-source limits count each alone and
 * the Python side's addresses never meet these.  Every client is read
 * whenever its socket is, between commands too, so none falls behind the
 * room; the sockets are watched with epoll (a poll over 1,000 of them for
 * each few that are ready cost as much as the reading).  The last TAIL
 * bytes of each client's output are kept to find the awaited text in.
 *
 * Commands on stdin, one a line; answers on stdout:
 *   open N                 N more clients -> "opened TOTAL"
 *   await MS COUNT TEXT    -> "armed"; then, once COUNT clients have seen
 *                          TEXT or MS passed: "got K T1 ... TK", each T
 *                          a client's arrival on CLOCK_MONOTONIC in
 *                          seconds (Python's time.monotonic(): the same
 *                          system-wide clock)
 *   quit
 *
 * What a kind of client does is its readers_ops: connect one (once it is
 * ready to be counted), read what it holds without blocking, close it.
 */
#ifndef BENCH_READERS_H
#define BENCH_READERS_H

#include <stddef.h>
#include <sys/types.h>

#define READERS_TAIL		256	/* bytes of output kept */
#define READERS_MAX_TEXT	128

struct readers;

/* One client. */
struct reader {
	int fd;			/* its socket, watched */
	void *conn;		/* the kind's own (a libssh session) */
	char tail[READERS_TAIL + 1];
	size_t len;
	double seen;		/* arrival of the awaited text, 0: not yet */
	int dead;
};

/* What a kind of client does. */
struct readers_ops {
	const char *name;	/* the program's, for messages */
	/* Connect client i into c (set c->fd, watch it with readers_watch)
	 * and wait until it is ready, serving the others.  0 or -1. */
	int (*open)(struct readers *r, struct reader *c, int i);
	/* Read what c holds now into buf, without blocking: bytes, 0 when
	 * nothing is there now, -1 once it ended. */
	ssize_t (*read)(struct reader *c, char *buf, size_t len);
	/* Close c. */
	void (*close)(struct reader *c);
};

struct readers {
	const struct readers_ops *ops;
	void *arg;		/* the kind's own (the key, the token) */
	int port, block;
	const char *room;
	struct reader *c;
	int n, cap;
	char text[READERS_MAX_TEXT];	/* awaited, "" when none */
	int seen;		/* clients that saw text */
	int ep;			/* epoll: every client's socket, and stdin */
};

/* Now on CLOCK_MONOTONIC, in seconds. */
double readers_now(void);

/* A TCP connection to the server from 127.0.BLOCK+i/250.(1+i%250), with
 * a receive timeout of timeout_s (0: none): the fd, or -1 (said). */
int readers_dial(const struct readers *r, int i, int timeout_s);

/* Keep the last bytes of p in c's tail; stamp the awaited text. */
void readers_scan(struct readers *r, struct reader *c, const char *p,
    size_t n, double t);

/* Read what c holds now (ops->read).  -1 once it ended. */
int readers_drain(struct readers *r, struct reader *c);

/* Watch fd for input, tagged with id (UINT32_MAX: stdin).  0 or -1. */
int readers_watch(struct readers *r, int fd, unsigned id);

/* Wait up to ms for clients' sockets (and stdin when in); read the ready
 * ones.  1 when stdin is readable. */
int readers_serve(struct readers *r, int ms, int in);

/* Serve the commands on stdin until quit or EOF, then close every
 * client.  The exit status: 0, or 1 on a failure. */
int readers_run(struct readers *r);

#endif
