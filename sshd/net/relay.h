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
struct server;
struct session;
struct ssh_counter_struct;

/* Where a room lives, as the monitor's `use` answer says. */
struct relay_home {
	char node[64];		/* its node name */
	char addr[80];		/* HOST:PORT, numeric ("[::1]:22" for v6) */
	char hostkey[1024];	/* "ssh-ed25519 AAAA..." */
};

enum link_step { LINK_DIAL, LINK_KEX, LINK_AUTH, LINK_UP, LINK_DOWN };

/* Whom a link relays for, and how its owner is told to look at it: a
 * user's session (its channels relayed), or a connection of this host's
 * atriumd-http relayed whole (http_relay.h). */
struct relay_owner {
	struct server *srv;
	const char *what;	/* "session", "http relay": for the log */
	unsigned long num;	/* its number, for the log */
	char room[80], user[64], fp[128], peer[64]; /* the relay's user name */
	int *poke;		/* set when the link's socket fires */
	struct ssh_counter_struct *io;	/* the link's bytes counted here */
	void (*wake_at)(void *arg, long long when_ms);	/* a deadline */
	void *arg;
};

struct relay_link;

/* A link to home for o (dialled at once; up, or down with why, after
 * some ticks).  NULL when out of memory. */
struct relay_link *relay_link_new(const struct relay_owner *o,
    const struct relay_home *home);

/* Move the link on as far as it goes now (each of its owner's ticks). */
void relay_link_tick(struct relay_link *l);

/* The link's libssh session once it is up (authenticated), else NULL;
 * *why says why it is down, when it is. */
ssh_session relay_link_ssh(const struct relay_link *l, const char **why);

/* 1 when the link is down (for good). */
int relay_link_is_down(const struct relay_link *l);

/* Close l (NULL: nothing), outside libssh's callbacks. */
void relay_link_close(struct relay_link *l);

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
