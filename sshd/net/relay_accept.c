/*
 * relay_accept.c: the home's half of the relay (relay.h).  session.c hands
 * it every userauth whose user name begins with RELAY_USER_PREFIX.
 *
 * Rules: the key must be a current node's host key, which only the
 * monitor can say (it has the cluster: privsep.h, relay), and it refuses
 * every relay when this host is not in one (no --cluster); the relayed
 * user must be the one this host's own authorized_keys names for the
 * relayed fingerprint, from the relayed address, now (so a node cannot
 * lend anyone rights this host would not give them); --open guests are
 * not relayed.  A refused relay counts as a refused authentication, as a
 * wrong key does, and is logged with the name it claimed.  A relayed
 * session's commands see the user's address in SSH_CONNECTION and
 * SSH_CLIENT, with port 0 (relay_connection), not the front's.
 */
#include "relay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chan_int.h"
#include "log.h"
#include "monitor_ask.h"
#include "names.h"

/* key as "TYPE BASE64", as etcd's /atrium/nodes/NODE lists it.  0 or -1. */
static int
relay_key_text(ssh_key key, char *out, size_t len)
{
	char *b64 = NULL;
	const char *type = ssh_key_type_to_char(ssh_key_type(key));
	int n;

	if (!type || ssh_pki_export_pubkey_base64(key, &b64) != SSH_OK)
		return -1;
	n = snprintf(out, len, "%s %s", type, b64);
	ssh_string_free_char(b64);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The relayed identity against this host's authorized_keys: 0 with
 * s's options kept, or -1 (why says why). */
static int
relay_identity(struct session *s, const char *user, const char *fp,
    const char *addr, char *why, size_t len)
{
	struct authkeys_found found;
	int r;

	authkeys_refresh_fd(s->srv->keys, monitor_ask_authkeys(s->srv));
	r = authkeys_match_fp(s->srv->keys, fp, addr, time(NULL), &found);
	if (r <= 0) {
		snprintf(why, len, "key %s %s", fp, r == 0 ? "is not in this "
		    "host's authorized_keys" : found.why);
		return -1;
	}
	if (strcmp(found.user, user) != 0) {
		snprintf(why, len, "key %s is %s's here, not %s's", fp,
		    found.user, user);
		return -1;
	}
	authkey_opts_free(&s->opts);	/* a probe's copy, before */
	if (found.opts && authkey_opts_copy(&s->opts, found.opts) < 0) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	return 0;
}

/* SSH_CONNECTION of a relayed session: the user's address, as the front
 * saw it, in place of the front's; port 0, as the relay does not say the
 * user's port; then this host's own address and port, as the front
 * reached them. */
static void
relay_connection(struct session *s, const char *addr)
{
	const char *p = strchr(s->connection, ' ');
	char local[sizeof(s->connection)];

	p = p ? strchr(p + 1, ' ') : NULL;
	if (!p) {
		s->connection[0] = '\0';
		return;
	}
	snprintf(local, sizeof(local), "%s", p + 1);
	if ((size_t)snprintf(s->connection, sizeof(s->connection), "%s 0 %s",
	    addr, local) >= sizeof(s->connection))
		s->connection[0] = '\0';
}

/* The session is now the relayed user's. */
static void
relay_adopt(struct session *s, const char *node, const char *room,
    const char *user, const char *fp, const char *addr)
{
	s->authed = 1;
	s->relayed = 1;
	phases_mark(&s->ph, PHASE_AUTH);
	snprintf(s->relay_node, sizeof(s->relay_node), "%s", node);
	snprintf(s->room, sizeof(s->room), "%s", room);
	snprintf(s->user, sizeof(s->user), "%s", user);
	snprintf(s->fp, sizeof(s->fp), "%s", fp);
	snprintf(s->peer, sizeof(s->peer), "%s", addr);
	relay_connection(s, addr);
	log_info("session %lu: %s authenticated with %s for room '%s', "
	    "relayed by node %s for %s", s->num, user, fp, room, node, addr);
}

/* See relay.h. */
int
relay_accept_auth(struct session *s, const char *name, ssh_key key,
    char state)
{
	char room[80], user[64], fp[128], addr[64], hostkey[1024];
	char node[64], why[1024], shown[400];

	if (relay_user_parse(name, room, user, fp, addr) < 0 ||
	    !room_name_valid(room) || !user_name_valid(user)) {
		session_printable(name, shown, sizeof(shown));
		log_info("session %lu: relay from %s refused: '%s' is not a "
		    "relay's user name", s->num, s->peer, shown);
		return SSH_AUTH_DENIED;
	}
	if (relay_key_text(key, hostkey, sizeof(hostkey)) < 0 ||
	    monitor_ask_relay(s->srv, hostkey, node, sizeof(node), why,
	    sizeof(why)) <= 0) {
		log_info("session %lu: relay from %s for %s refused: %s",
		    s->num, s->peer, user, why);
		return SSH_AUTH_DENIED;
	}
	if (relay_identity(s, user, fp, addr, why, sizeof(why)) < 0) {
		log_warn("session %lu: relay from node %s (%s) for %s refused: "
		    "%s", s->num, node, s->peer, user, why);
		return SSH_AUTH_DENIED;
	}
	if (state == SSH_PUBLICKEY_STATE_VALID)
		relay_adopt(s, node, room, user, fp, addr);
	else if (state != SSH_PUBLICKEY_STATE_NONE)
		return SSH_AUTH_DENIED;
	return SSH_AUTH_SUCCESS;
}
