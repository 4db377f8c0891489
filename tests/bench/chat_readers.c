/*
 * chat_readers.c: many reading members of one room's chat, for make bench
 * (tests/bench.py, the chat part).  A test tool, not part of Atrium.
 *
 * Why it exists: a line's latency to 1,000 members was measured by one
 * Python process decrypting and scanning 1,000 SSH packets per line
 * (asyncssh), some 40 µs of CPU each: about as much as atriumd spent on
 * the line, on the same two cores, so the row measured the bench as much
 * as the server.  Here each member is a libssh client session (OpenSSL's
 * AES-GCM, as OpenSSH's ssh uses) served by one epoll loop in C
 * (bench_readers.h, as ws_readers.c's clients are), so a member's arrival costs
 * a few µs: about what one person's ssh costs to show the line on their
 * terminal.  The client's own work still counts.
 *
 * Each member connects from a loopback address of its own (bench_readers.h),
 * asks for a pty (xterm, 80x24) and a shell, and is ready once "ROOM>"
 * (the prompt) arrived.
 *
 * Usage: chat_readers PORT KEYFILE ROOM BLOCK.  Commands on stdin and
 * answers on stdout as bench_readers.h says (a client is a member).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libssh/libssh.h>

#include "bench_readers.h"

struct chat {
	ssh_key key;
	char prompt[READERS_MAX_TEXT];	/* "ROOM>" */
};

struct member {
	ssh_session s;
	ssh_channel ch;
};

/* readers_ops.read: what m's channel holds now. */
static ssize_t
member_read(struct reader *c, char *buf, size_t len)
{
	struct member *m = c->conn;
	int n = ssh_channel_read_nonblocking(m->ch, buf, (uint32_t)len, 0);

	if (n > 0)
		return n;
	return n == SSH_ERROR || ssh_channel_is_eof(m->ch) ? -1 : 0;
}

/* Connect, authenticate and open the chat of member i, on fd.  0 or -1. */
static int
member_connect(struct readers *r, struct member *m, int fd, int i)
{
	struct chat *chat = r->arg;
	int verbosity = SSH_LOG_NOLOG;

	if (!(m->s = ssh_new()))
		return -1;
	ssh_options_set(m->s, SSH_OPTIONS_FD, &fd);
	ssh_options_set(m->s, SSH_OPTIONS_HOST, "127.0.0.1");
	ssh_options_set(m->s, SSH_OPTIONS_USER, r->room);
	ssh_options_set(m->s, SSH_OPTIONS_LOG_VERBOSITY, &verbosity);
	ssh_options_set(m->s, SSH_OPTIONS_CIPHERS_C_S, "aes128-gcm@openssh.com");
	ssh_options_set(m->s, SSH_OPTIONS_CIPHERS_S_C, "aes128-gcm@openssh.com");
	ssh_options_set(m->s, SSH_OPTIONS_PROCESS_CONFIG, &(int){ 0 });
	if (ssh_connect(m->s) != SSH_OK ||
	    ssh_userauth_publickey(m->s, NULL, chat->key) != SSH_AUTH_SUCCESS ||
	    !(m->ch = ssh_channel_new(m->s)) ||
	    ssh_channel_open_session(m->ch) != SSH_OK ||
	    ssh_channel_request_pty_size(m->ch, "xterm", 80, 24) != SSH_OK ||
	    ssh_channel_request_shell(m->ch) != SSH_OK) {
		fprintf(stderr, "chat_readers: member %d: %s\n", i,
		    ssh_get_error(m->s));
		return -1;
	}
	ssh_set_blocking(m->s, 0);
	return 0;
}

/* Wait (serving the others) until c shows the prompt.  0 or -1. */
static int
member_ready(struct readers *r, struct reader *c)
{
	struct chat *chat = r->arg;
	double end = readers_now() + 120;

	while (readers_now() < end) {
		if (readers_drain(r, c) < 0)
			return -1;
		if (strstr(c->tail, chat->prompt)) {
			c->len = 0;
			return 0;
		}
		readers_serve(r, 10, 0);
	}
	return -1;
}

/* readers_ops.open: member i, once it shows the prompt.  0 or -1. */
static int
member_open(struct readers *r, struct reader *c, int i)
{
	struct member *m = calloc(1, sizeof(*m));
	int fd = readers_dial(r, i, 0);

	c->conn = m;
	if (!m || fd < 0 || member_connect(r, m, fd, i) < 0)
		return -1;
	c->fd = ssh_get_fd(m->s);
	if (readers_watch(r, c->fd, (unsigned)i) < 0)
		return -1;
	if (member_ready(r, c) < 0) {
		fprintf(stderr, "chat_readers: member %d never showed the "
		    "prompt\n", i);
		return -1;
	}
	return 0;
}

/* readers_ops.close */
static void
member_close(struct reader *c)
{
	struct member *m = c->conn;

	ssh_disconnect(m->s);
	ssh_free(m->s);
	free(m);
}

int
main(int argc, char **argv)
{
	static const struct readers_ops ops = {
		"chat_readers", member_open, member_read, member_close,
	};
	struct chat chat = { 0 };
	struct readers r = { .ops = &ops, .arg = &chat };
	int rc;

	if (argc != 5) {
		fprintf(stderr, "usage: chat_readers PORT KEYFILE ROOM BLOCK\n");
		return 2;
	}
	r.port = atoi(argv[1]);
	r.room = argv[3];
	r.block = atoi(argv[4]);
	snprintf(chat.prompt, sizeof(chat.prompt), "%s>", r.room);
	if (ssh_pki_import_privkey_file(argv[2], NULL, NULL, NULL,
	    &chat.key) != SSH_OK) {
		fprintf(stderr, "chat_readers: cannot read key %s\n", argv[2]);
		return 1;
	}
	rc = readers_run(&r);
	ssh_key_free(chat.key);
	return rc;
}
