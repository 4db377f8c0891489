/*
 * libssh_compat.h: every place where atriumd depends on how libssh 0.10
 * behaves beyond its documentation, or works around what it does wrong,
 * in one file (libssh_compat.c says which behaviour each one answers).
 *
 * It also holds sshio, the table of libssh calls on the output path, so
 * that a test can make a channel write return 0, short counts or errors
 * (after SQLite's replaceable syscall table).
 */
#ifndef ATRIUMD_LIBSSH_COMPAT_H
#define ATRIUMD_LIBSSH_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include <libssh/libssh.h>
#include <libssh/server.h>

struct buf;

/* The libssh calls that move a channel's output; tests replace them. */
struct sshio {
	/* ssh_channel_write / _stderr: bytes taken (0 and short counts are
	 * normal), or SSH_ERROR. */
	int (*write)(ssh_channel ch, const void *p, uint32_t n);
	int (*write_stderr)(ssh_channel ch, const void *p, uint32_t n);
	/* The client's window on ch. */
	uint32_t (*window)(ssh_channel ch);
	/* Nonzero while libssh holds output its socket has not taken. */
	int (*pending)(ssh_session s);
	/* Nonzero while ch may be written to. */
	int (*is_open)(ssh_channel ch);
};

extern struct sshio sshio;

/* At start-up: check the linked libssh and learn whether its private
 * channel layout is the one compat_remote_maxpacket reads.  Logs what
 * applies.  0, or -ENOTSUP when libssh is older than 0.10. */
int compat_init(void);

/* Options for the listener that libssh's defaults get wrong for a
 * server: only cheap, modern key exchanges, ciphers and MACs, and no SHA-1
 * "ssh-rsa" signatures.  0 or -EINVAL (logged). */
int compat_bind_setup(ssh_bind bind);

/* A session's own options, after ssh_bind_accept_fd copied the
 * listener's (W12): no compression.  0 or -EINVAL (logged). */
int compat_session_setup(ssh_session s);

/* Acknowledge the client's next segment at once (W13); call again after
 * each poll while the handshake goes on: the kernel may turn it off. */
void compat_quickack(int fd);

/* An accepted socket made ready for libssh: non-blocking, no Nagle,
 * close-on-exec. */
void compat_socket_setup(int fd);

/* Bytes that may be written to ch now: its window, or 0 while libssh
 * still holds output the socket has not taken. */
uint32_t compat_can_write(ssh_session s, ssh_channel ch);

/* The client's maximum packet size on ch, or -1 when unknown. */
long compat_remote_maxpacket(ssh_session s, ssh_channel ch);

/* Move every byte libssh holds for ch's stdout into q (at most
 * max_held).  Returns bytes moved, 0 when none, -EMSGSIZE when libssh
 * holds more than max_held (the client ignored its window), -ENOMEM, or
 * -EIO when libssh fails.  After -ENOMEM or -EIO input may be lost, so
 * the caller ends the connection. */
int compat_take_held(ssh_channel ch, struct buf *q, size_t max_held);

/* W11: a client's upload that goes quiet gets an SSH_MSG_IGNORE, which
 * wakes a client that stopped after a key re-exchange.  One per session,
 * zeroed with it; compat_nudge_rx on each arrival of channel data,
 * compat_nudge_tick every loop turn. */
struct compat_nudge {
	uint64_t burst;		/* bytes arrived since the last full round */
	long long last_rx_ms;	/* when data last arrived */
	int sent;		/* nudges sent since then */
};

void compat_nudge_rx(struct compat_nudge *n, size_t len, long long now_ms);
/* Send a nudge when one is due; returns when the next one may be (ms,
 * monotonic), or 0 when none is wanted. */
long long compat_nudge_tick(struct compat_nudge *n, ssh_session s,
    long long now_ms);

#endif
