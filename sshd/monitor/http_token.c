/*
 * http_token.c: bearer tokens for the HTTP front (http_token.h), over the
 * token store (tokens.h).  Called by http_front.c for every request of
 * atriumd-http that acts for someone.
 */
#include "http_token.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "monitor_identity.h"
#include "tokens.h"

/* The grant's room list into id, comma separated. */
static void
http_token_rooms(const struct token_grant *g, struct monitor_identity *id)
{
	size_t o = 0;

	id->token_rooms = g->nrooms > 0;
	id->rooms[0] = '\0';
	for (int i = 0; i < g->nrooms && o < sizeof(id->rooms); i++) {
		int n = snprintf(id->rooms + o, sizeof(id->rooms) - o, "%s%s",
		    i ? "," : "", g->rooms[i]);

		if (n < 0 || (size_t)n >= sizeof(id->rooms) - o) {
			id->rooms[o] = '\0';	/* fail closed: fewer rooms */
			break;
		}
		o += (size_t)n;
	}
}

/* See http_token.h. */
int
http_token_identity(struct monitor *srv, const char *token, const char *addr,
    struct monitor_identity *id, char *why, size_t len)
{
	struct token_grant grant;
	int r;

	memset(&grant, 0, sizeof(grant));
	r = tokens_identity(srv, token, addr, id, &grant, why, len);
	if (r == -EIO)
		r = -EACCES;	/* the store cannot be read: fail closed */
	if (r < 0)
		return r;
	id->read_only = grant.read_only;
	snprintf(id->token_id, sizeof(id->token_id), "%s", grant.id);
	snprintf(id->token_key, sizeof(id->token_key), "%s", grant.key);
	http_token_rooms(&grant, id);
	return 0;
}
