/*
 * chat_readers.c: many reading members of one room's chat, for make bench
 * (tests/bench.py, the chat part).  A test tool, not part of Atrium.
 *
 * Why it exists: a line's latency to 1,000 members was measured by one
 * Python process decrypting and scanning 1,000 SSH packets per line
 * (asyncssh), some 40 µs of CPU each: about as much as atriumd spent on
 * the line, on the same two cores, so the row measured the bench as much
 * as the server.  Here each member is a libssh client session (OpenSSL's
 * AES-GCM, as OpenSSH's ssh uses) served by one epoll loop in C, so a
 * member's arrival costs a few µs: about what one person's ssh costs to
 * show the line on their terminal.  The client's own work still counts.
 *
 * Each member connects from a loopback address of its own (127.0.B.x,
 * B from the command line, so the Python side's addresses never meet
 * these), asks for a pty (xterm, 80x24) and a shell, and is ready once
 * "ROOM>" (the prompt) arrived.  Every member is read whenever its socket
 * is, between commands too, so none falls behind the room.  The sockets
 * are watched with epoll: a poll over 1,000 of them for each few that are
 * ready cost as much as the reading.
 *
 * Usage: chat_readers PORT KEYFILE ROOM BLOCK.  Commands on stdin, one a
 * line; answers on stdout:
 *   open N                 N more members -> "opened TOTAL"
 *   await MS COUNT TEXT    -> "armed"; then, once COUNT members have seen
 *                          TEXT or MS passed: "got K T1 ... TK", each T
 *                          a member's arrival on CLOCK_MONOTONIC in
 *                          seconds (Python's time.monotonic(): the same
 *                          system-wide clock)
 *   quit
 */
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

#include <libssh/libssh.h>

#define TAIL		256	/* bytes of output kept to find a text in */
#define MAX_TEXT	128

struct member {
	ssh_session s;
	ssh_channel ch;
	char tail[TAIL + 1];
	size_t len;
	double seen;		/* arrival of the awaited text, 0: not yet */
	int dead;
};

struct readers {
	int port, block;
	const char *room;
	ssh_key key;
	struct member *m;
	int n, cap;
	char text[MAX_TEXT];	/* awaited, "" when none */
	char prompt[MAX_TEXT];
	int seen;		/* members that saw text */
	int ep;			/* epoll: every member's socket, and stdin */
};

static double
now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A TCP connection to the server from 127.0.BLOCK+i/250.(1+i%250):
 * the fd, or -1. */
static int
dial(const struct readers *r, int i)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = src;
	char addr[32];
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	snprintf(addr, sizeof(addr), "127.0.%d.%d", r->block + i / 250,
	    1 + i % 250);
	inet_pton(AF_INET, addr, &src.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	dst.sin_port = htons((unsigned short)r->port);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) < 0 ||
	    connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0) {
		fprintf(stderr, "chat_readers: %s: %s\n", addr,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Keep the last TAIL bytes of p in m's tail; stamp the awaited text. */
static void
scan(struct readers *r, struct member *m, const char *p, size_t n,
    double t)
{
	if (n >= TAIL) {
		p += n - TAIL;
		n = TAIL;
	}
	if (m->len + n > TAIL) {
		size_t drop = m->len + n - TAIL;

		memmove(m->tail, m->tail + drop, m->len - drop);
		m->len -= drop;
	}
	memcpy(m->tail + m->len, p, n);
	m->len += n;
	m->tail[m->len] = '\0';
	if (r->text[0] && !m->seen && strstr(m->tail, r->text)) {
		m->seen = t;
		r->seen++;
		m->len = 0;
	}
}

/* Read what m's session holds now, without blocking.  -1 once it ended. */
static int
drain(struct readers *r, struct member *m)
{
	char chunk[16384];
	int n;

	if (m->dead)
		return -1;
	while ((n = ssh_channel_read_nonblocking(m->ch, chunk,
	    sizeof(chunk), 0)) > 0)
		scan(r, m, chunk, (size_t)n, now_mono());
	if (n == SSH_ERROR || ssh_channel_is_eof(m->ch)) {
		m->dead = 1;
		return -1;
	}
	return 0;
}

/* Wait up to ms for members' sockets (and stdin when in); read the ready
 * ones.  1 when stdin is readable. */
static int
serve(struct readers *r, int ms, int in)
{
	struct epoll_event ev[256];
	int n = epoll_wait(r->ep, ev, 256, ms), stdin_ready = 0;

	for (int i = 0; i < n; i++) {
		if (ev[i].data.u32 == UINT32_MAX)
			stdin_ready = in;
		else if (drain(r, &r->m[ev[i].data.u32]) < 0)
			epoll_ctl(r->ep, EPOLL_CTL_DEL, ssh_get_fd(
			    r->m[ev[i].data.u32].s), NULL);
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

/* Connect, authenticate and open the chat of one member.  0 or -1. */
static int
member_open(struct readers *r, struct member *m)
{
	int fd = dial(r, r->n), verbosity = SSH_LOG_NOLOG;

	memset(m, 0, sizeof(*m));
	if (fd < 0 || !(m->s = ssh_new()))
		return -1;
	ssh_options_set(m->s, SSH_OPTIONS_FD, &fd);
	ssh_options_set(m->s, SSH_OPTIONS_HOST, "127.0.0.1");
	ssh_options_set(m->s, SSH_OPTIONS_USER, r->room);
	ssh_options_set(m->s, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
	ssh_options_set(m->s, SSH_OPTIONS_CIPHERS_C_S, "aes128-gcm@openssh.com");
	ssh_options_set(m->s, SSH_OPTIONS_CIPHERS_S_C, "aes128-gcm@openssh.com");
	ssh_options_set(m->s, SSH_OPTIONS_PROCESS_CONFIG, &(int){ 0 });
	if (ssh_connect(m->s) != SSH_OK ||
	    ssh_userauth_publickey(m->s, NULL, r->key) != SSH_AUTH_SUCCESS ||
	    !(m->ch = ssh_channel_new(m->s)) ||
	    ssh_channel_open_session(m->ch) != SSH_OK ||
	    ssh_channel_request_pty_size(m->ch, "xterm", 80, 24) != SSH_OK ||
	    ssh_channel_request_shell(m->ch) != SSH_OK) {
		fprintf(stderr, "chat_readers: member %d: %s\n", r->n,
		    ssh_get_error(m->s));
		return -1;
	}
	ssh_set_blocking(m->s, 0);
	return watch(r, ssh_get_fd(m->s), (uint32_t)r->n);
}

/* Wait (serving the others) until m shows the prompt.  0 or -1. */
static int
member_ready(struct readers *r, struct member *m)
{
	double end = now_mono() + 120;

	while (now_mono() < end) {
		if (drain(r, m) < 0)
			return -1;
		if (strstr(m->tail, r->prompt)) {
			m->len = 0;
			return 0;
		}
		serve(r, 10, 0);
	}
	return -1;
}

/* n more members, one after the other.  0 or -1. */
static int
open_members(struct readers *r, int n)
{
	if (r->n + n > r->cap) {
		int cap = r->n + n;
		struct member *m = realloc(r->m, cap * sizeof(*m));

		if (!m)
			return -1;
		r->m = m;
		r->cap = cap;
	}
	for (int i = 0; i < n; i++) {
		struct member *m = &r->m[r->n];

		if (member_open(r, m) < 0)
			return -1;
		r->n++;
		if (member_ready(r, m) < 0) {
			fprintf(stderr, "chat_readers: member %d never showed "
			    "the prompt\n", r->n - 1);
			return -1;
		}
	}
	return 0;
}

/* Arm for text, serve until count members saw it or ms passed; report. */
static void
await_text(struct readers *r, int ms, int count, const char *text)
{
	double end = now_mono() + ms / 1000.0;

	snprintf(r->text, sizeof(r->text), "%s", text);
	for (int i = 0; i < r->n; i++)
		r->m[i].seen = 0;
	r->seen = 0;
	printf("armed\n");
	fflush(stdout);
	while (r->seen < count && now_mono() < end)
		serve(r, 1, 0);
	r->text[0] = '\0';
	printf("got %d", r->seen);
	for (int i = 0; i < r->n; i++)
		if (r->m[i].seen > 0)
			printf(" %.9f", r->m[i].seen);
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
		if (open_members(r, n) < 0)
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
		fprintf(stderr, "usage: chat_readers PORT KEYFILE ROOM BLOCK\n");
		return 2;
	}
	r.port = atoi(argv[1]);
	r.room = argv[3];
	r.block = atoi(argv[4]);
	snprintf(r.prompt, sizeof(r.prompt), "%s>", r.room);
	if (ssh_pki_import_privkey_file(argv[2], NULL, NULL, NULL,
	    &r.key) != SSH_OK) {
		fprintf(stderr, "chat_readers: cannot read key %s\n", argv[2]);
		return 1;
	}
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
	for (int i = 0; i < r.n; i++) {
		ssh_disconnect(r.m[i].s);
		ssh_free(r.m[i].s);
	}
	ssh_key_free(r.key);
	free(r.m);
	close(r.ep);
	return rc < 0 ? 1 : 0;
}
