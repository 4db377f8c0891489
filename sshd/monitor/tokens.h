/*
 * tokens.h: bearer tokens tied to SSH identities (tokens.c), for the
 * programs and browsers that reach rooms over HTTP.  A user makes one over
 * SSH (`ssh HOST atrium-token create`: the `token` request, privsep.h);
 * the monitor keeps it in DATA/tokens.db (its one writer) as a SHA-256
 * only, with the user and the key it was made with, and on every use
 * resolves it to that key and re-checks the key's line in authorized_keys
 * as for an SSH session (monitor_identity.h): a key removed, expired or
 * not allowed from the client's address takes its tokens with it.
 *
 * A token is "atrium_" and 43 base64url digits (32 random bytes).  Its id,
 * the first 12 hex digits of its hash, names it in lists, revocations and
 * logs; the token itself is never logged nor stored.
 */
#ifndef ATRIUMD_TOKENS_H
#define ATRIUMD_TOKENS_H

#include <stddef.h>

#include <json-c/json.h>

#include "monitor_identity.h"
#include "token_args.h"

#define TOKENS_PREFIX		"atrium_"
#define TOKENS_DIGITS		43	/* base64url of 32 bytes, unpadded */
#define TOKENS_LEN		(sizeof(TOKENS_PREFIX) - 1 + TOKENS_DIGITS)
#define TOKENS_MAX_PER_USER	100	/* a create past it is refused */
#define TOKENS_TOUCH_S		60	/* last_used is written at most this
					 * often per token */

struct monitor;
struct tokens;

/* What a token grants beyond its key's own rights, which still apply. */
struct token_grant {
	char id[TOKEN_ID_LEN + 1];	/* the token's id: for logs */
	char rooms[TOKEN_MAX_ROOMS][64];	/* the only rooms it may enter */
	int nrooms;			/* 0: every room the key may */
	int read_only;			/* no request that changes a room */
	long long expires;		/* unix time; 0: never */
	char key[AUTHKEYS_FP_MAX];	/* its key's fingerprint (a relay
					 * to a room's home names it) */
};

/* The store for DATA/tokens.db; nothing is opened yet (the file is made,
 * root's and 0600, at the first use).  NULL on ENOMEM. */
struct tokens *tokens_new(const char *data_dir);
void tokens_free(struct tokens *t);

/* Who token (as the client sent it) acts for, from a client at addr:
 * 0 with *id (as monitor_identity_get fills it for the token's key; its
 * opts valid for this request only) and *grant filled.  -EACCES with why
 * (for the log and the client; it names the token's id, never the token)
 * for a token that is malformed, unknown, revoked or expired, or whose key
 * is gone from authorized_keys, expired, not allowed from addr or no
 * longer the user's; -EIO with why when DATA/tokens.db cannot be read
 * (fail closed: its log line says what is wrong); -EPROTO when addr is
 * missing or not a numeric address (the front that asked broke the
 * rules, as with monitor_identity_get).  Every result but 0 is a
 * refusal.  Updates the token's last_used at most once a minute. */
int tokens_identity(struct monitor *srv, const char *token, const char *addr,
    struct monitor_identity *id, struct token_grant *grant, char *why,
    size_t len);

/* May a request under grant enter room?  1 or 0 (the room's own access
 * list and the key's rooms= are checked as for a key besides). */
int token_grant_allows(const struct token_grant *grant, const char *room);

/* The `token` request (privsep.h) for id, a key's user: create, list or
 * revoke.  Fills ans with {text} (what the client prints; with create,
 * {token} too) or {error} (why not).  0, or -1 when the request is
 * malformed (the network process never sends one: it broke the rules). */
int tokens_serve(struct monitor *srv, json_object *req,
    const struct monitor_identity *id, json_object *ans);

/* For tokens_serve.c and the tests: a new token's text into out
 * (TOKENS_LEN + 1 bytes), from getrandom.  0 or -EIO (logged). */
int tokens_make(char *out);

/* text's SHA-256 into hash and its id into id.  0 or -EIO (logged). */
int tokens_hash(const char *text, unsigned char hash[32],
    char id[TOKEN_ID_LEN + 1]);

/* Unix time t as "2027-01-05 16:33 UTC" ("never" for 0). */
void tokens_when(long long t, char *out, size_t len);

#endif
