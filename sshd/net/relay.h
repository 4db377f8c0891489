/*
 * relay.h: the front door of a cluster (man/atriumd.8, CLUSTER): a session
 * whose room lives on another host is relayed there, byte for byte, over
 * an SSH connection between the two hosts.
 *
 * The front's half (relay.c): when the monitor's `use` answers remote
 * (privsep.h) for a channel's room, the channel becomes a relay channel.
 * Its session opens one client connection to the home (libssh, non-
 * blocking, in the shared loop; the socket is made here, so the network
 * process's seccomp allows socket and connect for TCP only), checks that
 * the home's host key is the one etcd lists for it (the answer's
 * hostkey), and authenticates with this host's own host key under a user
 * name that says whom it relays (RELAY_USER_PREFIX ROOM USER FP ADDR:
 * signed with the userauth request, so it is known before any
 * channel and bound to the key).  Each relayed channel then repeats on
 * the home what the client asked (pty-req, env, exec, subsystem or
 * shell) and carries data, EOF, window changes, signals and the exit
 * both ways, never writing more than a window and leaving in libssh what
 * the other side cannot take yet.  A home that goes away ends every
 * relayed channel with RELAY_MOVING_MSG.
 *
 * A relayed session is never relayed on: a home that finds the room is
 * another node's (it moved meanwhile) ends the channel with
 * RELAY_MOVING_MSG, so two nodes that disagree for a moment cannot pass a
 * session back and forth.
 *
 * The home's half (relay_accept.c): a userauth whose user name begins with
 * RELAY_USER_PREFIX is a relay.  The monitor decides (privsep.h: relay)
 * whether the key is a current node's host key (and which node's); the
 * named user must have
 * that key in this host's own authorized_keys (the monitor checks it again
 * on every request, as for any session).  The session is then that user's,
 * from the client's address, with that key's options.
 */
#ifndef ATRIUMD_RELAY_H
#define ATRIUMD_RELAY_H

#include <libssh/libssh.h>

#define RELAY_USER_PREFIX	"atrium-relay "
#define RELAY_MOVING_MSG	"atrium: the room is moving to another host; " \
				"reconnect"
#define RELAY_CONNECT_MS	10000	/* connect, key exchange and auth */
#define RELAY_AUTH_TRIES	4	/* a home refuses a relay at most */
#define RELAY_AUTH_RETRY_MS	400	/* apart (a node it has not seen yet) */

struct chan;
struct session;

/* Where a room lives, as the monitor's `use` answer says. */
struct relay_home {
	char node[64];		/* its node name */
	char addr[80];		/* HOST:PORT, numeric ("[::1]:22" for v6) */
	char hostkey[1024];	/* "ssh-ed25519 AAAA..." */
};

/* Make c, whose request was taken and whose room lives at home, a relay
 * channel: its kind's state is released, what it queued for the client
 * dropped, and the request repeated on the home once the session's link
 * is up.  0, or -errno (c is refused with the reason). */
int relay_chan_start(struct chan *c, const struct relay_home *home);

/* 1 when s's link to the home closed under libssh and no tick has seen
 * it yet (a socket that closes moves no byte: session_due asks). */
int relay_link_due(const struct session *s);

/* Close s's link to the home, if any (session_free, outside callbacks). */
void relay_link_free(struct session *s);

/* The home's half: s's userauth named user (beginning with
 * RELAY_USER_PREFIX) with key in state (libssh's).  Returns the answer
 * for libssh (SSH_AUTH_SUCCESS or SSH_AUTH_DENIED); on success with a
 * signed request, s is the relayed user's session. */
int relay_accept_auth(struct session *s, const char *user, ssh_key key,
    char state);

/* Parse a relay's user name into its fields (each of the given size);
 * 0, or -EINVAL when it is not one (a field missing, too long, or not of
 * its form).  Exposed for the unit test. */
int relay_user_parse(const char *name, char room[80], char user[64],
    char fp[128], char addr[64]);

/* Write the relay user name for these fields into out.  0 or -ENAMETOOLONG. */
int relay_user_format(char *out, size_t len, const char *room,
    const char *user, const char *fp, const char *addr);

#endif
