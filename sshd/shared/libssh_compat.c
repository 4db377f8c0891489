/*
 * libssh_compat.c: what atriumd needs from libssh 0.10 beyond its
 * documentation (libssh_compat.h).  Called by both processes: the
 * monitor's monitor_loop.c (the version check and the listener it binds)
 * and the network process's server.c (the listener it serves), session.c
 * (sockets) and channel.c (channel output and input).
 *
 * Each workaround, and the libssh behaviour it answers (seen with Debian
 * 12's libssh 0.10.6; 0.11 fixes the second):
 *
 *  W1 ssh_channel_write on a non-blocking session returns 0, not an error
 *     and not SSH_AGAIN, while a key re-exchange is in progress, and a short
 *     count when the window runs out.  Bytes it did not take are the
 *     caller's to keep: channel.c's chan_flush is the only caller and keeps
 *     them queued (sshio.write below).
 *  W2 The write-wontblock channel callback fires only when the socket
 *     flushes, not when the client grows the window.  Nothing waits for
 *     it: every loop turn asks compat_can_write.
 *  W3 A writable socket makes libssh send all it holds with a blocking
 *     send, so one client that stops reading would stall every session:
 *     compat_socket_setup makes the socket non-blocking (libssh only sends
 *     after POLLOUT, so a partial send is all that can happen).  And a
 *     client's window may be 4 GiB: compat_can_write answers 0 while libssh
 *     still holds unsent output, so nothing piles up inside libssh.
 *  W4 libssh grants a client about 1.3 MB of window, keeps what arrives
 *     beyond what the data callback takes, and grows the window on every
 *     read however much it holds.  compat_take_held drains all it holds at
 *     once, and only when the caller has taken everything before, which
 *     keeps what libssh holds under one window.
 *  W5 A channel whose maximum packet is tiny (10 bytes) makes every write
 *     loop forever; the API does not show the client's maximum packet, so
 *     compat_remote_maxpacket reads it from the private channel struct,
 *     only on a 0.10 libssh and only when two fields the API does show
 *     match (compat_init decides at start-up).
 *  W6 By default libssh accepts SHA-1 "ssh-rsa" user-auth signatures,
 *     although its server-sig-algs does not offer them; OpenSSH refuses
 *     them.  compat_bind_setup lists the accepted algorithms.
 *  W7 A channel data packet that arrives during a key re-exchange (after
 *     the client's KEXINIT) is rejected by libssh's packet filter, and the
 *     connection ends.  RFC 4253 7.1 forbids such packets; asyncssh before
 *     2.14 sends them.  Nothing outside libssh can change this:
 *     session.c logs the reason when it happens.
 *  W8 An "auth-agent-req" channel request is refused inside libssh unless
 *     a callback is set, and a set callback makes libssh answer success.
 *     So agent forwarding is left to libssh's refusal and goes unlogged
 *     (session.c logs the other refused forwarding requests).
 *  W9 A user-auth request whose signature libssh refuses (W6's SHA-1, for
 *     one) gets no answer: libssh records a fatal error on the session and
 *     drops the request, and the client waits.  session.c closes such a
 *     connection at once, with the reason in the log.
 *  W10 libssh 0.10 offers finite-field Diffie-Hellman groups (up to 8192
 *     bits), group exchange and SHA-1 MACs by default: compat_bind_setup
 *     offers only curve25519 and ECDH, AEAD or CTR ciphers, SHA-2 MACs.
 *  W11 Not libssh's: PuTTY 0.78's exec and scp uploads (plink 'cat > f',
 *     pscp -scp) that meet a key re-exchange stop sending for good about
 *     one time in ten on a loaded host, with window to spare and nothing
 *     queued in either socket, until any packet arrives from the server
 *     (an SSH_MSG_IGNORE sent by hand in the stall resumed every one).
 *     Never against OpenSSH's sshd, which answers with other timing; never
 *     with OpenSSH's clients.  compat_nudge sends one SSH_MSG_IGNORE when
 *     an upload of at least COMPAT_NUDGE_BURST goes quiet, and again with
 *     backoff while it stays quiet: at most COMPAT_NUDGE_MAX tiny packets
 *     per quiet spell, which every client must accept (RFC 4253 11.2).
 *  W12 libssh 0.10 offers zlib compression to clients that ask (asyncssh
 *     and paramiko ask by default, ssh -C does), and zlib's state costs
 *     about 300 KiB per connection (deflate's window and hash chains at
 *     memory level 8, inflate's window): more than the whole of an idle
 *     chat member, chosen by the client.  compat_session_setup offers no
 *     compression (ssh_server_init_kex, since ssh_bind_accept_fd already
 *     made the offer); every client accepts "none".
 *  W13 Not libssh's: OpenSSH's client sets TCP_NODELAY only once an
 *     interactive session starts, so during the key exchange Nagle holds
 *     its ECDH_INIT until its KEXINIT is acknowledged, and Linux delays
 *     that ACK (up to 40 ms) since the server has nothing to send then.
 *     Measured: 47 ms of a 90 ms "ssh HOST true", against 5 ms with the
 *     ACK sent at once.  The handshake threads set TCP_QUICKACK on each
 *     handshaking connection after every poll (the kernel clears it).

 * Two rules that are not workarounds but libssh's threading and callback
 * model: nothing is freed inside a libssh callback (session.c), and an fd
 * leaves the ssh_event only outside ssh_event_dopoll (loop.c).
 */
#include "libssh_compat.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "buf.h"
#include "log.h"
#include "util.h"

/* Key exchange, ciphers and MACs offered (W10): modern and cheap only.
 * No finite-field Diffie-Hellman (one group18 handshake cost 126 ms of the
 * loop's CPU here, a gift to a flood), no group exchange, no SHA-1, no CBC. */
#define COMPAT_KEX \
	"curve25519-sha256,curve25519-sha256@libssh.org," \
	"ecdh-sha2-nistp256,ecdh-sha2-nistp384,ecdh-sha2-nistp521"
#define COMPAT_CIPHERS \
	"chacha20-poly1305@openssh.com,aes256-gcm@openssh.com," \
	"aes128-gcm@openssh.com,aes256-ctr,aes192-ctr,aes128-ctr"
#define COMPAT_MACS \
	"hmac-sha2-256-etm@openssh.com,hmac-sha2-512-etm@openssh.com," \
	"hmac-sha2-256,hmac-sha2-512"

/* Signature algorithms accepted for user authentication (W6): OpenSSH's
 * default set, without "ssh-rsa" (SHA-1). */
#define COMPAT_USER_SIG_ALGS \
	"ssh-ed25519,ecdsa-sha2-nistp256,ecdsa-sha2-nistp384," \
	"ecdsa-sha2-nistp521,sk-ssh-ed25519@openssh.com," \
	"sk-ecdsa-sha2-nistp256@openssh.com,rsa-sha2-512,rsa-sha2-256"

static int
sshio_pending(ssh_session s)
{
	return (ssh_get_poll_flags(s) & SSH_WRITE_PENDING) != 0;
}

/* libssh's real calls; a test may replace any of them. */
struct sshio sshio = {
	.write = ssh_channel_write,
	.write_stderr = ssh_channel_write_stderr,
	.window = ssh_channel_window_size,
	.pending = sshio_pending,
	.is_open = ssh_channel_is_open,
};

/* Set by compat_init: the private channel layout may be read (W5).  Fixed
 * after start-up, like configuration. */
static int compat_layout_known;

/* See libssh_compat.h. */
int
compat_init(void)
{
	const char *v = ssh_version(0);
	int major = 0, minor = 0;

	if (!v || sscanf(v, "%d.%d", &major, &minor) != 2 ||
	    (major == 0 && minor < 10)) {
		log_error("libssh %s is too old: atriumd needs 0.10 or newer",
		    v ? v : "(unknown)");
		return -ENOTSUP;
	}
	compat_layout_known = major == 0 && minor == 10;
	if (!compat_layout_known)
		log_info("libssh %s: the check of a client's maximum packet "
		    "size is off (it reads libssh 0.10's channel layout)", v);
	return 0;
}

/* See libssh_compat.h. */
int
compat_bind_setup(ssh_bind bind)
{
	static const struct {
		enum ssh_bind_options_e opt;
		const char *value, *what;
	} set[] = {
		{ SSH_BIND_OPTIONS_KEY_EXCHANGE, COMPAT_KEX, "key exchanges" },
		{ SSH_BIND_OPTIONS_CIPHERS_C_S, COMPAT_CIPHERS, "ciphers" },
		{ SSH_BIND_OPTIONS_CIPHERS_S_C, COMPAT_CIPHERS, "ciphers" },
		{ SSH_BIND_OPTIONS_HMAC_C_S, COMPAT_MACS, "MACs" },
		{ SSH_BIND_OPTIONS_HMAC_S_C, COMPAT_MACS, "MACs" },
		{ SSH_BIND_OPTIONS_PUBKEY_ACCEPTED_KEY_TYPES, COMPAT_USER_SIG_ALGS,
		    "user-auth signature algorithms" },
	};

	for (size_t i = 0; i < sizeof(set) / sizeof(*set); i++) {
		if (ssh_bind_options_set(bind, set[i].opt, set[i].value) < 0) {
			log_error("cannot set the %s: %s", set[i].what,
			    ssh_get_error(bind));
			return -EINVAL;
		}
	}
	return 0;
}

/* See libssh_compat.h (W12). */
int
compat_session_setup(ssh_session s)
{
	/* The list itself: libssh's "no" means "none,zlib@openssh.com".
	 * ssh_bind_accept_fd already built the offer from the listener's
	 * options: build it again from the session's. */
	if (ssh_options_set(s, SSH_OPTIONS_COMPRESSION, "none") < 0 ||
	    ssh_server_init_kex(s) != SSH_OK) {
		log_error("cannot turn compression off: %s", ssh_get_error(s));
		return -EINVAL;
	}
	return 0;
}

/* See libssh_compat.h (W13). */
void
compat_quickack(int fd)
{
	int one = 1;

	/* Best effort: without it a handshake is only slower. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
}

/* See libssh_compat.h (W3). */
void
compat_socket_setup(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	fd_set_cloexec(fd, 1);
	fd_set_nonblock(fd, 1);
}

/* See libssh_compat.h (W2, W3). */
uint32_t
compat_can_write(ssh_session s, ssh_channel ch)
{
	if (sshio.pending(s))
		return 0;
	return sshio.window(ch);
}

/* libssh 0.10's channel as laid out in its private channels.h, up to the
 * client's maximum packet size (W5). */
struct compat_chan010 {
	ssh_session session;
	uint32_t local_channel, local_window;
	int local_eof;
	uint32_t local_maxpacket, remote_channel, remote_window;
	int remote_eof;
	uint32_t remote_maxpacket;
};

/* See libssh_compat.h (W5). */
long
compat_remote_maxpacket(ssh_session s, ssh_channel ch)
{
	struct compat_chan010 h;

	if (!compat_layout_known)
		return -1;
	memcpy(&h, (const void *)ch, sizeof(h));
	if (h.session != s || h.remote_window != ssh_channel_window_size(ch))
		return -1;
	return (long)h.remote_maxpacket;
}

/* See libssh_compat.h (W4). */
int
compat_take_held(ssh_channel ch, struct buf *q, size_t max_held)
{
	int avail = ssh_channel_poll(ch, 0), n, r;
	char *tmp;

	if (avail <= 0)
		return 0;
	if ((size_t)avail > max_held)
		return -EMSGSIZE;
	if (!(tmp = malloc((size_t)avail)))
		return -ENOMEM;
	n = ssh_channel_read_nonblocking(ch, tmp, (uint32_t)avail, 0);
	r = n > 0 ? buf_append(q, tmp, (size_t)n) : 0;
	free(tmp);
	if (n == SSH_ERROR)
		return -EIO;
	if (r < 0)
		return r;
	return n > 0 ? n : 0;
}

/* W11: an upload this big that goes quiet is nudged, after
 * COMPAT_NUDGE_FIRST_MS, then four times longer each time, at most
 * COMPAT_NUDGE_MAX times.  Typing never reaches the burst. */
#define COMPAT_NUDGE_BURST	(1u << 20)
#define COMPAT_NUDGE_FIRST_MS	200
#define COMPAT_NUDGE_MAX	3

/* See libssh_compat.h (W11). */
void
compat_nudge_rx(struct compat_nudge *n, size_t len, long long now_ms)
{
	n->burst += len;
	n->last_rx_ms = now_ms;
	n->sent = 0;
}

/* See libssh_compat.h (W11). */
long long
compat_nudge_tick(struct compat_nudge *n, ssh_session s, long long now_ms)
{
	long long wait = (long long)COMPAT_NUDGE_FIRST_MS << (2 * n->sent);

	if (n->burst < COMPAT_NUDGE_BURST)
		return 0;
	if (now_ms - n->last_rx_ms < wait)
		return n->last_rx_ms + wait;
	/* Queued like any packet; an error shows on the session's status. */
	ssh_send_ignore(s, "");
	if (++n->sent == COMPAT_NUDGE_MAX) {
		n->burst = 0;
		return 0;
	}
	return n->last_rx_ms + ((long long)COMPAT_NUDGE_FIRST_MS <<
	    (2 * n->sent));
}
